"""How often a memory was used: given to a prompt, or said again.

Each use adds one to `access_count` and sets `last_accessed` in the memory's attributes. The counts
rank the session-start block (`session_start`), and a candidate used often enough is confirmed
(`candidates`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from octygraph.memory.candidates import confirm, is_candidate
from octygraph.store import GraphStore, Node
from octygraph.store.model import utcnow


def access_count(node: Node) -> int:
    value = node.attributes.get("access_count")
    return value if isinstance(value, int) and value > 0 else 0


def record_access(store: GraphStore, ids: Iterable[str]) -> None:
    """Count one more use (given, or said again) of each memory: `access_count` + 1 and
    `last_accessed` now, in its attributes; uses noted with `note_access` are written too."""
    uses = _take_pending(store.location)
    for node_id in ids:
        uses[node_id] = uses.get(node_id, 0) + 1
    now = utcnow()
    for node in store.get_nodes(list(uses)):
        count = access_count(node) + uses[node.id]
        store.set_attributes(node.id, access_count=count, last_accessed=now)
        if is_candidate(node) and count >= USES_CONFIRM:
            confirm(store, node.id, "used")


USES_CONFIRM = 2
"""A candidate given or said again this many times is confirmed by use (`octygraph.memory.candidates`)."""

_PENDING: dict[str, dict[str, int]] = {}
_PENDING_LOCK = threading.Lock()
MAX_PENDING = 200
"""Noted uses written at once when this many memories wait (else at the next session start)."""


def note_access(store: GraphStore, ids: Iterable[str]) -> None:
    """Count a use of each memory a prompt was given, written later in one go (`record_access`).

    Every write changes the store's revision, and the resident service's caches of the gazetteer,
    global rules and keyword pieces are rebuilt on the next prompt: written after each prompt, the
    counts cost the next one 35 ms at 20,000 memories. They only rank the session-start block, so
    they are written when the next block is built, or once `MAX_PENDING` memories wait. A service
    that is killed loses the uses it had not written yet."""
    with _PENDING_LOCK:
        uses = _PENDING.setdefault(store.location, {})
        for node_id in ids:
            uses[node_id] = uses.get(node_id, 0) + 1
        full = len(uses) >= MAX_PENDING
    if full:
        record_access(store, ())


def write_noted(store: GraphStore) -> None:
    """Write the uses `note_access` has noted for this store, if any."""
    with _PENDING_LOCK:
        noted = bool(_PENDING.get(store.location))
    if noted:
        record_access(store, ())


def _take_pending(location: str) -> dict[str, int]:
    with _PENDING_LOCK:
        return _PENDING.pop(location, {})

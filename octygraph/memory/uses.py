"""How often a memory was used: given to a prompt, needed by one, or said again.

Each use adds one to `access_count` and sets `last_accessed` in the memory's attributes. The counts
rank the session-start block (`session_start`), and a candidate used often enough is confirmed
(`candidates`). The block's own gives are not uses; they are counted apart (`shown_unused`, back to
zero at each use), so that a memory the block keeps giving and no prompt ever needs leaves it.
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


def shown_unused(node: Node) -> int:
    """How many session-start blocks gave this memory since it was last used."""
    value = node.attributes.get("shown_unused")
    return value if isinstance(value, int) and value > 0 else 0


def record_access(store: GraphStore, ids: Iterable[str]) -> None:
    """Count one more use (given, needed, or said again) of each memory: `access_count` + 1,
    `last_accessed` now and `shown_unused` 0, in its attributes; what `note_access` and `note_shown`
    noted is written too."""
    uses = _take_pending(_PENDING, store.location)
    shows = _take_pending(_PENDING_SHOWS, store.location)
    for node_id in ids:
        uses[node_id] = uses.get(node_id, 0) + 1
    now = utcnow()
    for node in store.get_nodes(list(uses)):
        count = access_count(node) + uses[node.id]
        store.set_attributes(node.id, access_count=count, last_accessed=now, shown_unused=0)
        if is_candidate(node) and count >= USES_CONFIRM:
            confirm(store, node.id, "used")
    for node in store.get_nodes([i for i in shows if i not in uses]):
        store.set_attributes(node.id, shown_unused=shown_unused(node) + shows[node.id])


USES_CONFIRM = 2
"""A candidate given or said again this many times is confirmed by use (`octygraph.memory.candidates`)."""

_PENDING: dict[str, dict[str, int]] = {}
_PENDING_SHOWS: dict[str, dict[str, int]] = {}
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


def note_shown(store: GraphStore, ids: Iterable[str]) -> None:
    """Count one more session-start block that gave each memory, written with the uses."""
    with _PENDING_LOCK:
        shows = _PENDING_SHOWS.setdefault(store.location, {})
        for node_id in ids:
            shows[node_id] = shows.get(node_id, 0) + 1


def write_noted(store: GraphStore) -> None:
    """Write the uses and shows noted for this store, if any."""
    with _PENDING_LOCK:
        noted = bool(_PENDING.get(store.location) or _PENDING_SHOWS.get(store.location))
    if noted:
        record_access(store, ())


def _take_pending(pending: dict[str, dict[str, int]], location: str) -> dict[str, int]:
    with _PENDING_LOCK:
        return pending.pop(location, {})

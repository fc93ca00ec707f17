"""When a session ends: settle the candidates it stored.

Claude Code's SessionEnd hook hands the session over to the service (it gives hooks 1.5 s in all), which
then writes the uses it noted (`uses.note_access`; a candidate given often enough is confirmed
by use) and merges restatements: a candidate that says again what an ordinary memory says is dropped
(that memory counts one more use), and of two candidates that say the same thing the older one is
confirmed and the newer dropped. Dropped means archived, as `memory forget` does: it can be restored.
Each step is its own transaction, so a pass cut short loses nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from octygraph.candidates import confirm, is_candidate
from octygraph.pipeline.tools.writes import is_restatement
from octygraph.store import AdminStore
from octygraph.uses import record_access, write_noted

RESTATEMENT_HITS = 4
MEMORY_TYPES = ["fact", "opinion", "event", "instruction", "plan"]


@dataclass
class Settled:
    """What a consolidation pass did, by memory id."""

    confirmed: list[str] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)
    """Candidates archived because another memory says the same."""


def consolidate(store: AdminStore, session_ids: Iterable[str]) -> Settled:
    """Settle the candidates among `session_ids` (what one session stored); see the module doc."""
    write_noted(store)  # the uses noted so far: a candidate given often enough is confirmed
    settled = Settled()
    # Times have one-second resolution: on a tie, what the session stored first is older, and
    # anything from before the session older still.
    stored_order = {node_id: i for i, node_id in enumerate(dict.fromkeys(session_ids))}
    for node_id in stored_order:
        node = store.get_node(node_id)  # as it is now: an earlier merge may have settled it
        if node is None or not is_candidate(node) or node.superseded_by:
            continue
        for hit in store.search(
            node.content, types=MEMORY_TYPES, limit=RESTATEMENT_HITS, mode="vector"
        ):
            other = hit.node
            if other.id == node.id or other.superseded_by:
                continue
            if not is_restatement(node.content, other.content, hit.cosine):
                continue
            if is_candidate(other):
                older, newer = sorted(
                    (node, other), key=lambda n: (n.created_at, stored_order.get(n.id, -1))
                )
                if confirm(store, older.id, "restated") is not None:
                    settled.confirmed.append(older.id)
                store.archive_node(newer.id)
                settled.merged.append(newer.id)
            else:
                record_access(store, [other.id])
                store.archive_node(node.id)
                settled.merged.append(node.id)
            break
    return settled

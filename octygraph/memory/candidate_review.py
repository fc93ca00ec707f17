"""Reviewing candidate memories: list them, approve them, retire those left waiting unused
(`octygraph.memory.candidates` says what they are).

The CLI (`octygraph memory review`, `memory approve`) and the review page's Candidates tab both go
through these functions, so the two agree on what can be approved and say so in the same words.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from octygraph.memory.candidates import confirm, is_candidate
from octygraph.memory.uses import access_count
from octygraph.store import ARCHIVED, AdminStore, Node, StoreError
from octygraph.store.model import TIME_FORMAT, utcnow


class NotACandidate(StoreError):
    """The memory exists but cannot be approved: it is ordinary already, forgotten or replaced."""


def list_candidates(store: AdminStore, limit: int | None = 200) -> list[Node]:
    """Current candidate memories, newest first (the store's order: by time, then insertion)."""
    found = [n for n in store.list_nodes(limit=None, include_superseded=False) if is_candidate(n)]
    return found if limit is None else found[:limit]


def expire_unused(store: AdminStore, days: float, now: datetime | None = None) -> list[str]:
    """Archive the candidates stored more than `days` ago that nobody approved, restated or was given
    since: they stop waiting for review (`memory restore` brings one back). Their ids; none when
    `days` is 0."""
    if days <= 0:
        return []
    cutoff = ((now or datetime.now(UTC)) - timedelta(days=days)).strftime(TIME_FORMAT)
    expired = []
    for node in list_candidates(store, None):
        if node.created_at and node.created_at < cutoff and not access_count(node):
            store.set_attributes(node.id, expired_at=utcnow())
            store.archive_node(node.id)
            expired.append(node.id)
    return expired


def approvable(node: Node) -> Node:
    """`node` when it is a current candidate, else NotACandidate with one sentence saying why."""
    if node.superseded_by == ARCHIVED:
        raise NotACandidate(f"Memory {node.id} is forgotten; restore it before approving it.")
    if node.superseded_by:
        raise NotACandidate(
            f"Memory {node.id} was replaced by {node.superseded_by}; approve that one instead."
        )
    if not is_candidate(node):
        raise NotACandidate(
            f"Memory {node.id} is not a candidate; it is an ordinary memory already."
        )
    return node


def approve(store: AdminStore, node_id: str) -> Node:
    """Make a current candidate an ordinary memory; errors in one sentence otherwise."""
    node = store.get_node(node_id.strip())
    if node is None:
        raise StoreError(f"No memory with id {node_id!r}.")
    approvable(node)
    confirmed = confirm(store, node.id, "approved")
    if confirmed is None:  # approved (or forgotten) by someone else meanwhile
        raise NotACandidate(f"Memory {node.id} is not a candidate any more.")
    return confirmed

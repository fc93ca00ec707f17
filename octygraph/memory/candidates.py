"""Candidate memories: stored because they might last, not given unprompted until confirmed.

The storage verdict is sure of few real statements; the rest it is unsure of would be lost if unsure
meant no. Such a statement is stored as a *candidate*: a memory whose attributes carry
`candidate: true` (and the verdict's probability). It is searchable (`octygraph search`, MCP) and listed
for review, but injected unprompted only when the relevance model is fairly sure it applies, and never in
the session-start block. It becomes an ordinary memory when the user approves it, when it is
confirmed by use (said again, or given to a session that went on to use it), or when the end-of-session
judge keeps it (`octygraph.session.consolidation`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from octygraph.store import GraphStore, Node

CANDIDATE = "candidate"
"""The attribute that marks a candidate memory."""
Confirmation = Literal["approved", "restated", "used", "judged"]
"""Why a candidate became ordinary: the user approved it, said it again, used it, or the end-of-session
judge (`octygraph.session.consolidation`) kept it."""


def is_candidate(node: Node) -> bool:
    """Whether `node` is an unconfirmed memory."""
    return node.attributes.get(CANDIDATE) is True


def candidate_attributes(probability: float) -> dict[str, object]:
    """What a new candidate's attributes say: that it is one, and how sure the verdict was."""
    return {CANDIDATE: True, "verdict_p": round(probability, 4)}


def confirm(
    store: GraphStore, node_id: str, reason: Confirmation, **details: object
) -> Node | None:
    """Make a candidate an ordinary memory; None when it is not a candidate (or not there).

    `details` are attributes written with the confirmation (e.g. why the judge kept it).
    """
    node = store.get_node(node_id)
    if node is None or not is_candidate(node):
        return None
    return store.set_attributes(node_id, **details, **confirmed_attributes(reason))


def confirmed_attributes(reason: Confirmation) -> dict[str, object]:
    """What a confirmed memory's attributes say: no longer a candidate, why and when."""
    return {CANDIDATE: False, "confirmed": reason, "confirmed_at": datetime.now(UTC).isoformat()}


def corrected_attributes(old: Node, reason: Confirmation) -> dict[str, object]:
    """What the new version of `old` says of it, written with it: a correction the user makes (edits,
    or states) is what they hold now, so the new version of a candidate is confirmed by `reason`."""
    return confirmed_attributes(reason) if is_candidate(old) else {}

"""Reviewing memory by hand or by the model: remember, forget (soft), restore, edit, rules, contradictions.

The CLI, the MCP server and the review page all change memory through these functions, so the three agree
on what "forget" means (archive, restorable) and on how a contradiction is resolved.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from octygraph.fallback import reconcile as wording
from octygraph.memory.candidates import corrected_attributes, is_candidate
from octygraph.safety.checks import redact_secrets
from octygraph.store import ARCHIVED, DEFAULT_SCOPE, NODE_TYPES, SUBTYPES, AdminStore, Node
from octygraph.store import StoreError as ReviewError

__all__ = [
    "Contradiction",
    "ReviewError",
    "contradictions",
    "edit",
    "forget",
    "kind",
    "reconcile_rule",
    "remember",
    "resolve",
    "restore",
    "standing_rules",
    "status",
]

Resolution = Literal["keep_new", "keep_old", "keep_both"]


def kind(node: Node) -> str:
    return node.node_type + (f"/{node.subtype}" if node.subtype else "")


def status(node: Node) -> str:
    """current, candidate (not confirmed), archived, or replaced."""
    if node.superseded_by == ARCHIVED:
        return "archived"
    if node.superseded_by:
        return "replaced"
    return "candidate" if is_candidate(node) else "current"


def _known(store: AdminStore, node_id: str) -> Node:
    node = store.get_node(node_id.strip())
    if node is None:
        raise ReviewError(f"No memory with id {node_id!r}.")
    return node


def remember(
    store: AdminStore,
    text: str,
    *,
    node_type: str = "fact",
    subtype: str | None = None,
    entities: list[str] | None = None,
    scope: float | None = None,
    source: str = "user",
) -> Node:
    """Store one memory as given (secrets redacted), linked to its entities (created when new)."""
    clean, _ = redact_secrets(text.strip())
    if not clean:
        raise ReviewError("The memory text is empty; give a sentence to remember.")
    if node_type not in NODE_TYPES:
        raise ReviewError(
            f"Unknown memory type {node_type!r}; use one of: {', '.join(NODE_TYPES)}."
        )
    if subtype is not None and SUBTYPES[node_type] and subtype not in SUBTYPES[node_type]:
        raise ReviewError(
            f"Unknown subtype {subtype!r} for {node_type}; use one of: "
            f"{', '.join(SUBTYPES[node_type])}."
        )
    if scope is not None and not 0.0 <= scope <= 1.0:
        raise ReviewError("scope is between 0 (narrow) and 1 (applies everywhere).")
    if scope is None:
        scope = DEFAULT_SCOPE.get(node_type)
    entity_ids = [
        store.ensure_entity(name.strip())[0].id for name in entities or [] if name.strip()
    ]
    return store.add_node(
        node_type, clean, subtype=subtype, entity_ids=entity_ids, scope=scope, source=source
    )


def reconcile_rule(
    store: AdminStore, rule: Node, *, min_cosine: float = 0.35, candidates: int = 5
) -> list[tuple[str, Node]]:
    """Judge a rule stored by hand against similar standing ones, as the pipeline's reconcile step does
    without an LLM: a rule it replaces is marked replaced, a contradiction is flagged for review.

    Returns (verdict, other rule) for each SUPERSEDES or CONTRADICTION found.
    """
    found: list[tuple[str, Node]] = []
    for hit in store.search(rule.content, types=["instruction"], limit=candidates + 1):
        if hit.node.id == rule.id or hit.cosine < min_cosine:
            continue
        verdict = wording.judge(rule.content, hit.node.content, hit.cosine).verdict
        if verdict == "SUPERSEDES":
            store.mark_superseded(hit.node.id, rule.id)
        elif verdict == "CONTRADICTION" and not found:
            store.set_attributes(rule.id, contradicts=hit.node.id, needs_review=True)
        else:
            continue
        found.append((verdict, hit.node))
    return found


def forget(store: AdminStore, node_id: str) -> Node:
    """Archive a memory: out of search and recall, restorable with `restore`."""
    return store.archive_node(_known(store, node_id).id)


def restore(store: AdminStore, node_id: str) -> Node:
    """Bring an archived memory back."""
    return store.restore_node(_known(store, node_id).id)


def edit(store: AdminStore, node_id: str, text: str) -> tuple[Node, Node]:
    """Correct a memory: a new version replaces it; the old one stays, marked replaced. The user's
    correction of a candidate is their approval: the new version is an ordinary memory."""
    clean, _ = redact_secrets(text.strip())
    if not clean:
        raise ReviewError("The new text is empty; give the corrected sentence.")
    old = _known(store, node_id)
    if old.superseded_by == ARCHIVED:
        raise ReviewError(f"Memory {old.id} is archived; restore it before editing.")
    if old.superseded_by:
        raise ReviewError(
            f"Memory {old.id} was already replaced by {old.superseded_by}; edit that one instead."
        )
    if clean == old.content:
        raise ReviewError("The new text is the same as the old one; nothing to change.")
    return old, store.supersede(old.id, clean, attributes=corrected_attributes(old, "approved"))


def standing_rules(store: AdminStore, limit: int = 50) -> list[Node]:
    """Current instructions, broadest first (scope 1.0 applies everywhere)."""
    rules = store.list_nodes(types=["instruction"], limit=None, include_superseded=False)
    rules.sort(key=lambda n: (-(n.scope if n.scope is not None else 0.5), n.created_at))
    return rules[:limit]


@dataclass(frozen=True)
class Contradiction:
    """A memory that reconciliation flagged, and the one it contradicts (None when that one is gone)."""

    node: Node
    other: Node | None


def contradictions(store: AdminStore, limit: int = 200) -> list[Contradiction]:
    """Memories flagged for review, each with what it contradicts."""
    out = []
    for node in store.flagged_for_review(limit):
        other_id = node.attributes.get("contradicts")
        other = store.get_node(str(other_id)) if other_id else None
        out.append(Contradiction(node, other))
    return out


def resolve(store: AdminStore, node_id: str, keep: Resolution) -> Node:
    """Settle a flagged contradiction: keep the new memory, the old one, or both.

    Keeping one archives nothing: the loser is marked replaced by the winner, so the history shows why.
    """
    node = _known(store, node_id)
    if not node.attributes.get("needs_review"):
        raise ReviewError(f"Memory {node.id} is not waiting for review.")
    other_id = str(node.attributes.get("contradicts") or "")
    other = store.get_node(other_id) if other_id else None
    current_other = other is not None and other.superseded_by is None
    if keep == "keep_new" and current_other:
        assert other is not None
        store.mark_superseded(other.id, node.id)
    elif keep == "keep_old" and current_other:
        assert other is not None
        store.set_attributes(node.id, needs_review=False, resolution=keep)
        store.mark_superseded(node.id, other.id)
        return _known(store, node.id)
    elif keep not in ("keep_new", "keep_old", "keep_both"):
        raise ReviewError("keep is one of keep_new, keep_old, keep_both.")
    return store.set_attributes(node.id, needs_review=False, resolution=keep)

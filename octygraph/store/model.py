"""What the store holds and says, whatever the backend: nodes, edges, hits, and its errors."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

import numpy as np

from octygraph.store.schema import DEFAULT_SCOPE, NODE_TYPES, SUBTYPES


class StoreError(Exception):
    """A problem with the memory database; the message is one plain sentence for the user."""


class NotAnOctygraphDatabase(StoreError):
    """The file exists but is not an octygraph memory database."""


class EmbeddingMismatch(StoreError):
    """The database's vectors come from another embedding model than the one configured."""


class Embedder(Protocol):
    """What the store needs from an embedding model (see `octygraph.embeddings`)."""

    model_id: str
    dim: int

    def embed_array(self, texts: list[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class Node:
    """One memory: an entity, fact, event, opinion, instruction or plan."""

    id: str
    node_type: str
    content: str
    subtype: str | None = None
    salience: float = 1.0
    confidence: float = 1.0
    source: str = "user"
    created_at: str = ""
    valid_from: str | None = None
    valid_until: str | None = None
    superseded_by: str | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    can_summarize: bool = True
    scope: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": self.node_type,
            "subtype": self.subtype,
            "content": self.content,
            "salience": self.salience,
            "confidence": self.confidence,
            "source": self.source,
            "created_at": self.created_at,
            "valid_from": self.valid_from,
            "valid_until": self.valid_until,
            "superseded_by": self.superseded_by,
            "attributes": self.attributes,
            "scope": self.scope,
        }


@dataclass(frozen=True)
class Edge:
    id: str
    source_id: str
    target_id: str
    edge_type: str
    attributes: dict[str, Any] = field(default_factory=dict)
    created_at: str = ""


@dataclass(frozen=True)
class Relationship:
    """An edge seen from one entity: the node at the other end and which way the edge points."""

    edge: Edge
    node: Node
    direction: Literal["out", "in"]


@dataclass(frozen=True)
class Hit:
    """A search result: the node, its fused score, its cosine similarity and its normalised BM25."""

    node: Node
    score: float
    cosine: float
    keyword: float = 0.0

    @property
    def match(self) -> int:
        """How close the memory's meaning is to the query, 0-100, for people (its cosine similarity;
        the keyword score is relative to the best hit, so it says nothing alone). `score` orders."""
        return round(100 * min(1.0, max(0.0, self.cosine)))


@dataclass
class NewNode:
    """A node to create (bulk or single)."""

    node_type: str
    content: str
    subtype: str | None = None
    entity_ids: Sequence[str] = ()
    edge_type: str = "about"
    related_ids: Sequence[str] = ()
    salience: float = 1.0
    confidence: float = 1.0
    source: str = "user"
    valid_from: str | None = None
    valid_until: str | None = None
    scope: float | None = None
    attributes: dict[str, Any] | None = None
    id: str | None = None
    created_at: str | None = None


def new_id() -> str:
    return uuid.uuid4().hex[:16]


TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
"""How the store writes times (UTC): their text sorts as they do."""


def utcnow() -> str:
    return datetime.now(UTC).strftime(TIME_FORMAT)


def validate_node(node_type: str, subtype: str | None) -> None:
    if node_type not in NODE_TYPES:
        raise StoreError(f"Unknown memory type {node_type!r}; use one of: {', '.join(NODE_TYPES)}.")
    allowed = SUBTYPES[node_type]
    if subtype is not None and allowed and subtype not in allowed:
        raise StoreError(
            f"Unknown subtype {subtype!r} for {node_type}; use one of: {', '.join(allowed)}."
        )


def node_from(item: NewNode) -> Node:
    """The node `item` is stored as: its text stripped, id, creation time and scope filled in."""
    return Node(
        id=item.id or new_id(),
        node_type=item.node_type,
        content=item.content.strip(),
        subtype=item.subtype,
        salience=item.salience,
        confidence=item.confidence,
        source=item.source,
        created_at=item.created_at or utcnow(),
        valid_from=item.valid_from,
        valid_until=item.valid_until,
        attributes=item.attributes or {},
        # Instructions and plans are kept word for word.
        can_summarize=item.node_type not in ("instruction", "plan"),
        scope=item.scope if item.scope is not None else DEFAULT_SCOPE.get(item.node_type),
    )


def node_row(node: Node) -> tuple[Any, ...]:
    """The values of `_NODE_COLS` for a new node (current: nothing supersedes it yet)."""
    return (
        node.id,
        node.node_type,
        node.subtype,
        node.content,
        node.salience,
        node.confidence,
        node.source,
        node.created_at,
        node.valid_from,
        node.valid_until,
        None,
        json.dumps(node.attributes, sort_keys=True),
        int(node.can_summarize),
        node.scope,
    )


def _row_to_node(row: Sequence[Any]) -> Node:
    try:
        attributes = json.loads(row[11] or "{}")
    except (TypeError, ValueError):
        attributes = {}
    return Node(
        id=row[0],
        node_type=row[1],
        subtype=row[2],
        content=row[3],
        salience=row[4] if row[4] is not None else 1.0,
        confidence=row[5] if row[5] is not None else 1.0,
        source=row[6] or "user",
        created_at=row[7] or "",
        valid_from=row[8],
        valid_until=row[9],
        superseded_by=row[10],
        attributes=attributes if isinstance(attributes, dict) else {},
        can_summarize=bool(row[12]) if row[12] is not None else True,
        scope=row[13],
    )


_NODE_COLS = (
    "id, node_type, subtype, content, salience, confidence, source, created_at, valid_from, "
    "valid_until, superseded_by, attributes, can_summarize, scope"
)
# The node columns of `nodes n`, in `_row_to_node`'s order.
NODE_SELECT = ", ".join(f"n.{c.strip()}" for c in _NODE_COLS.split(","))

EDGE_COLS = "id, source_id, target_id, edge_type, attributes, created_at"


def edge_row(edge: Edge) -> tuple[Any, ...]:
    """The values of `EDGE_COLS` for a new edge."""
    return (
        edge.id,
        edge.source_id,
        edge.target_id,
        edge.edge_type,
        json.dumps(edge.attributes, sort_keys=True),
        edge.created_at,
    )


def row_to_edge(row: Sequence[Any]) -> Edge:
    """An edge from the values of `EDGE_COLS`."""
    return Edge(row[0], row[1], row[2], row[3], json.loads(row[4] or "{}"), row[5] or "")

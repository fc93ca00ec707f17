"""The memory graph: SQLite with FTS5 (BM25) and sqlite-vec, behind one small interface."""

from octygraph.store.schema import ARCHIVED, DEFAULT_SCOPE, NODE_TYPES, SUBTYPES
from octygraph.store.sqlite import (
    Edge,
    Embedder,
    EmbeddingMismatch,
    Hit,
    MemoryStore,
    NewNode,
    Node,
    NotAnOctygraphDatabase,
    Relationship,
    StoreError,
    new_id,
    utcnow,
)

__all__ = [
    "ARCHIVED",
    "DEFAULT_SCOPE",
    "NODE_TYPES",
    "SUBTYPES",
    "Edge",
    "Embedder",
    "EmbeddingMismatch",
    "Hit",
    "MemoryStore",
    "NewNode",
    "Node",
    "NotAnOctygraphDatabase",
    "Relationship",
    "StoreError",
    "new_id",
    "utcnow",
]

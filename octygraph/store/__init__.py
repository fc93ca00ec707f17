"""The memory graph behind one small interface (`GraphStore`, `AdminStore`).

Backends: `MemoryStore`, SQLite with FTS5 (BM25) and sqlite-vec, one file a project (the default); and
`octygraph.store.postgres.PostgresStore`, PostgreSQL with pgvector, one schema a project on a shared server.
`octygraph.store.opening` opens the project's store from its settings, with the embedding model they name.
"""

from octygraph.store.model import (
    Edge,
    Embedder,
    EmbeddingMismatch,
    Hit,
    NewNode,
    Node,
    NotAnOctygraphDatabase,
    Relationship,
    StoreError,
    new_id,
    utcnow,
)
from octygraph.store.protocol import AdminStore, GraphStore, SearchMode
from octygraph.store.schema import ARCHIVED, DEFAULT_SCOPE, NODE_TYPES, SUBTYPES
from octygraph.store.sqlite import MemoryStore

# The SQLite backend under a name that says so; `MemoryStore` stays for existing callers.
SQLiteStore = MemoryStore

__all__ = [
    "ARCHIVED",
    "AdminStore",
    "GraphStore",
    "SearchMode",
    "SQLiteStore",
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

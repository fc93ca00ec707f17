"""Loading a project's memories from an SQLite file (a profile, snapshot or backup) into PostgreSQL.

Saving goes the other way through `PostgresStore.backup_to` (`graph_copy.export_to_sqlite`), so
profiles, snapshots and backups keep a single format.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from octygraph.store.graph_copy import as_new_node, restore_versions
from octygraph.store.model import StoreError
from octygraph.store.postgres import PostgresStore
from octygraph.store.sqlite import MemoryStore


def import_from_sqlite(store: PostgresStore, source: Path, *, replace: bool = True) -> int:
    """Load the memories of the SQLite file `source` into `store` (emptied first when `replace`).

    Returns how many nodes were loaded. The file's vectors are used as they are when they come from the
    store's embedding model; otherwise its texts are embedded again.
    """
    if not source.exists():
        raise StoreError(f"No memory file at {source}.")
    with MemoryStore.open(source, store.embedder, create=False, check_model=False) as src:
        same_model = src.meta().get("embedding_model") == store.embedder.model_id
        nodes = list(src.iter_all())
        edges = src.all_edges()
        vectors = src._vectors_of([n.id for n in nodes]) if same_model and nodes else {}
    with store.transaction() as conn:
        if replace:
            for table in ("edges", "embeddings", "nodes"):
                conn.execute(f"DELETE FROM {table}")
    mat = None
    if nodes and len(vectors) == len(nodes):
        mat = np.stack([vectors[n.id] for n in nodes])
    store.add_nodes([as_new_node(n) for n in nodes], vectors=mat)
    store.add_edges(edges)
    restore_versions(store, nodes)
    return len(nodes)

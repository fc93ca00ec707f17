"""Moving a project's memories between a PostgreSQL schema and an SQLite file, vectors included.

A profile or snapshot is one SQLite file; on PostgreSQL, saving one is an export into such a file and
loading one is an import from it, so profiles, snapshots and backups keep a single format.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from octygraph.store.sqlite import MemoryStore, NewNode, Node, StoreError

if TYPE_CHECKING:
    from octygraph.store.postgres import PostgresStore


def _new_node(node: Node) -> NewNode:
    return NewNode(
        node_type=node.node_type,
        content=node.content,
        subtype=node.subtype,
        salience=node.salience,
        confidence=node.confidence,
        source=node.source,
        valid_from=node.valid_from,
        valid_until=node.valid_until,
        scope=node.scope,
        attributes=node.attributes,
        id=node.id,
        created_at=node.created_at,
    )


def export_to_sqlite(store: PostgresStore, target: Path) -> None:
    """Write every node, edge and vector of `store` into a new SQLite file at `target`."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".partial")
    for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        leftover.unlink(missing_ok=True)
    nodes = list(store.iter_all())
    vectors = dict(store.vectors_by_id())
    with MemoryStore.open(tmp, store.embedder) as out:
        dim = store.embedder.dim
        mat = (
            np.stack([vectors.get(n.id, np.zeros(dim, dtype=np.float32)) for n in nodes])
            if nodes
            else np.zeros((0, dim), dtype=np.float32)
        )
        out.add_nodes([_new_node(n) for n in nodes], vectors=mat)
        out.add_edges(store.all_edges())
        with out.transaction() as conn:
            # Supersession as stored: the edges were already carried over when it happened.
            for node in nodes:
                if node.superseded_by:
                    conn.execute(
                        "UPDATE nodes SET superseded_by=? WHERE id=?", (node.superseded_by, node.id)
                    )
                    conn.execute(
                        "UPDATE vec_nodes SET active=0 WHERE rowid=(SELECT rowid FROM nodes WHERE id=?)",
                        (node.id,),
                    )
        out.backup_to(target)
    for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        leftover.unlink(missing_ok=True)


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
    store.add_nodes([_new_node(n) for n in nodes], vectors=mat)
    store.add_edges(edges)
    with store.transaction() as conn:
        for node in nodes:
            if node.superseded_by:
                conn.execute(
                    "UPDATE nodes SET superseded_by = %s WHERE id = %s",
                    (node.superseded_by, node.id),
                )
                conn.execute("UPDATE embeddings SET active = FALSE WHERE node_id = %s", (node.id,))
    return len(nodes)

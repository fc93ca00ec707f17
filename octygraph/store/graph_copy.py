"""Copying a project's memories into another store, vectors and versions included.

A profile, snapshot or backup is one SQLite file whatever the backend: `export_to_sqlite` writes any
store into such a file; `octygraph.store.transfer_pg` loads one into PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from octygraph.store.model import NewNode, Node
from octygraph.store.protocol import AdminStore
from octygraph.store.sqlite import MemoryStore
from octygraph.store.versions import VersionedStore


def as_new_node(node: Node) -> NewNode:
    """A stored node as one to create elsewhere, keeping its id and creation time."""
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


def restore_versions(store: VersionedStore, nodes: Sequence[Node]) -> None:
    """Point copied nodes at their replacements as stored, out of vector search.

    Their edges were already carried over when the replacement happened, so none are copied here.
    """
    with store.transaction() as conn:
        rows = store._rows_for(conn)
        for node in nodes:
            if node.superseded_by:
                rows.point(node.id, node.superseded_by)
                rows.set_active([node.id], False)


def export_to_sqlite(store: AdminStore, target: Path) -> None:
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
        out.add_nodes([as_new_node(n) for n in nodes], vectors=mat)
        out.add_edges(store.all_edges())
        restore_versions(out, nodes)
        out.backup_to(target)
    for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        leftover.unlink(missing_ok=True)

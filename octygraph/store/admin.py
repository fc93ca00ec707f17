"""Checks over any backend, written against the store protocol (no SQL of their own)."""

from __future__ import annotations

import numpy as np

from octygraph.store.protocol import AdminStore


def integrity(store: AdminStore, batch: int = 2000) -> list[str]:
    """Problems in the stored graph, one plain sentence each; empty when it is sound.

    Looks for edges whose ends are missing, replacements that point at no memory, and memories
    without a vector (invisible to meaning search).
    """
    problems: list[str] = []
    nodes = {n.id: n for n in store.iter_all()}
    for edge in store.all_edges():
        for end in (edge.source_id, edge.target_id):
            if end not in nodes:
                problems.append(f"Link {edge.id} points at a missing memory {end}.")
    for node in nodes.values():
        if node.superseded_by and node.superseded_by not in nodes:
            problems.append(
                f"Memory {node.id} was replaced by a missing memory {node.superseded_by}."
            )
    ids = list(nodes)
    probe = np.zeros(store.embedder.dim, dtype=np.float32)
    for start in range(0, len(ids), batch):
        part = ids[start : start + batch]
        have = store.cosines(probe, part)
        problems += [
            f"Memory {i} has no vector; run `octygraph reindex`." for i in part if i not in have
        ]
    return problems

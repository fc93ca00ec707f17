"""Server-rendered pictures: the entity graph (a small force layout) and bar charts, as plain SVG data.

Drawn on the server so the page needs no script from elsewhere and works the same offline.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from octygraph.store import AdminStore


@dataclass(frozen=True)
class GraphNode:
    id: str
    name: str
    kind: str
    degree: int
    x: float
    y: float
    r: float


@dataclass(frozen=True)
class GraphEdge:
    x1: float
    y1: float
    x2: float
    y2: float
    weight: int


def entity_graph(
    store: AdminStore, *, max_entities: int = 60, width: int = 900, height: int = 600
) -> tuple[list[GraphNode], list[GraphEdge]]:
    """Entities linked when a current memory is about both (or an edge joins them), laid out by force."""
    entities = {
        n.id: n for n in store.list_nodes(types=["entity"], limit=None, include_superseded=False)
    }
    current = {n.id for n in store.list_nodes(limit=None, include_superseded=False)}
    about: dict[str, set[str]] = {}
    pairs: Counter[tuple[str, str]] = Counter()
    for edge in store.all_edges():
        a, b = edge.source_id, edge.target_id
        if a in entities and b in entities:
            pairs[(min(a, b), max(a, b))] += 1
        elif a in entities and b in current:
            about.setdefault(b, set()).add(a)
        elif b in entities and a in current:
            about.setdefault(a, set()).add(b)
    for linked in about.values():
        for a, b in combinations(sorted(linked), 2):
            pairs[(a, b)] += 1
    degree: Counter[str] = Counter()
    for linked in about.values():
        degree.update(linked)
    for a, b in pairs:
        degree[a] += 1
        degree[b] += 1
    keep = [i for i, _ in degree.most_common(max_entities)]
    if not keep:
        return [], []
    index = {i: k for k, i in enumerate(keep)}
    links = [(index[a], index[b], w) for (a, b), w in pairs.items() if a in index and b in index]
    pos = _layout(len(keep), links)
    pad, label_room = 40.0, 140.0  # names are drawn to the right of their circle
    span = np.maximum(pos.max(axis=0) - pos.min(axis=0), 1e-6)
    scaled = (pos - pos.min(axis=0)) / span
    xs = pad + scaled[:, 0] * (width - 2 * pad - label_room)
    ys = pad + scaled[:, 1] * (height - 2 * pad)
    top = max(degree[i] for i in keep)
    nodes = [
        GraphNode(
            id=i,
            name=entities[i].content,
            kind=entities[i].subtype or "entity",
            degree=degree[i],
            x=round(float(xs[k]), 1),
            y=round(float(ys[k]), 1),
            r=round(5 + 10 * (degree[i] / top) ** 0.5, 1),
        )
        for k, i in enumerate(keep)
    ]
    edges = [
        GraphEdge(
            round(float(xs[a]), 1),
            round(float(ys[a]), 1),
            round(float(xs[b]), 1),
            round(float(ys[b]), 1),
            w,
        )
        for a, b, w in links
    ]
    return nodes, edges


def _layout(n: int, links: list[tuple[int, int, int]], steps: int = 300) -> np.ndarray:
    """Fruchterman-Reingold in a unit square, seeded, so the same graph draws the same way."""
    rng = np.random.default_rng(7)
    pos = rng.uniform(-1, 1, size=(n, 2))
    if n == 1:
        return pos
    k = 1.6 / np.sqrt(n)
    temp = 0.2
    for _ in range(steps):
        delta = pos[:, None, :] - pos[None, :, :]
        dist = np.maximum(np.linalg.norm(delta, axis=-1), 1e-3)
        force = (k * k / dist**2)[:, :, None] * delta  # repulsion between every pair
        move = force.sum(axis=1)
        for a, b, w in links:
            d = pos[a] - pos[b]
            length = max(float(np.linalg.norm(d)), 1e-3)
            pull = d * (length / k) * min(w, 3) / 3
            move[a] -= pull
            move[b] += pull
        move -= pos * 0.05  # gravity keeps unlinked entities on the page
        size = np.maximum(np.linalg.norm(move, axis=1, keepdims=True), 1e-9)
        pos += move / size * np.minimum(size, temp)
        temp *= 0.985
    return pos


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    x: float
    y: float
    w: float
    h: float


def bars(
    values: list[tuple[str, float]], *, width: int = 900, height: int = 220, pad: int = 30
) -> list[Bar]:
    """Vertical bars scaled to the largest value (all zero draws flat bars)."""
    if not values:
        return []
    top = max(v for _, v in values) or 1.0
    slot = min((width - 2 * pad) / len(values), 60.0)  # a few days still look like bars, not slabs
    out = []
    for k, (label, value) in enumerate(values):
        h = (height - 2 * pad) * (value / top)
        out.append(
            Bar(
                label,
                value,
                round(pad + 10 + k * slot + slot * 0.1, 1),
                round(height - pad - h, 1),
                round(slot * 0.8, 1),
                round(h, 1),
            )
        )
    return out

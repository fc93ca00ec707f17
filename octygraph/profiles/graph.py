"""A whole memory graph as data (`GraphSpec`), and writing one into a store with batched embeddings.

Profiles (small-baseline, noisy-large) and JSONL imports are both described as a `GraphSpec`: nodes with
their ids and timestamps, edges with theirs, and which node replaced which. Writing one embeds each distinct
text once, in batches, and keeps every id, so the same spec always gives the same database content.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta

import numpy as np

from octygraph.store import AdminStore, Edge, Embedder, NewNode

# (stage label, items done, items in total): drives the CLI's progress bars.
ProgressFn = Callable[[str, int, int], None]

EMBED_BATCH = 256
WRITE_BATCH = 1000


@dataclass
class GraphSpec:
    """Nodes, edges and supersessions to write, every id and timestamp fixed in advance."""

    nodes: list[NewNode] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    # (old id, new id): the old node is marked as replaced by the new one.
    superseded: list[tuple[str, str]] = field(default_factory=list)


class GraphBuilder:
    """Builds a `GraphSpec` node by node, with edges stamped like the store stamps them."""

    def __init__(self) -> None:
        self.spec = GraphSpec()
        self._created: dict[str, str] = {}
        # Insertion-ordered (a dict, not a set): string hashing differs between processes.
        self._edges: dict[tuple[str, str, str], None] = {}
        self._edges_of: dict[str, list[tuple[str, str, str]]] = {}

    def node(self, item: NewNode, *, about: Sequence[str] = (), edge_type: str = "about") -> str:
        """Add a node (its `id` and `created_at` must be set) and edges from it to `about`."""
        if not item.id or not item.created_at:
            raise ValueError("GraphBuilder nodes need an id and a created_at.")
        self.spec.nodes.append(item)
        self._created[item.id] = item.created_at
        for target in about:
            self.link(item.id, edge_type, target)
        return item.id

    def link(self, source_id: str, edge_type: str, target_id: str) -> None:
        """An edge, created when the later of its two ends was (as the store does for new nodes)."""
        key = (source_id, target_id, edge_type)
        if source_id == target_id or key in self._edges:
            return
        self._edges[key] = None
        self._edges_of.setdefault(source_id, []).append(key)
        self._edges_of.setdefault(target_id, []).append(key)
        created = max(self._created[source_id], self._created[target_id])
        self.spec.edges.append(
            Edge(
                edge_id(source_id, target_id, edge_type),
                source_id,
                target_id,
                edge_type,
                {},
                created,
            )
        )

    def supersede(self, old_id: str, new_id: str) -> None:
        """Mark `old_id` as replaced by `new_id`, which gets the old node's edges (as `supersede` does)."""
        for source_id, target_id, edge_type in list(self._edges_of.get(old_id, ())):
            self.link(
                new_id if source_id == old_id else source_id,
                edge_type,
                new_id if target_id == old_id else target_id,
            )
        self.spec.superseded.append((old_id, new_id))


def stable_id(*parts: str) -> str:
    """A 16-hex-digit id derived from `parts` (same parts, same id), shaped like the store's own ids."""
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:16]


def edge_id(source_id: str, target_id: str, edge_type: str) -> str:
    return stable_id("edge", source_id, target_id, edge_type)


def stamp(day: date, minute_of_day: int = 9 * 60) -> str:
    """A timestamp in the store's format (`YYYY-MM-DD HH:MM:SS`, UTC) at a minute of `day`."""
    minute = max(0, min(minute_of_day, 24 * 60 - 1))
    moment = datetime.combine(day, time(minute // 60, minute % 60))
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def days_from(anchor: date, days: int) -> date:
    return anchor + timedelta(days=days)


def embed_unique(
    embedder: Embedder,
    texts: Sequence[str],
    *,
    progress: ProgressFn | None = None,
    label: str = "Embedding",
    batch: int = EMBED_BATCH,
) -> np.ndarray:
    """Embed `texts`, each distinct text once, in batches; rows line up with `texts`."""
    # Shortest first: batches of similar length waste little work on padding.
    unique = sorted(dict.fromkeys(t.strip() for t in texts), key=lambda t: (len(t), t))
    index = {t: i for i, t in enumerate(unique)}
    parts: list[np.ndarray] = []
    if progress:
        progress(label, 0, len(unique))
    for start in range(0, len(unique), batch):
        parts.append(embedder.embed_array(unique[start : start + batch]))
        if progress:
            progress(label, min(start + batch, len(unique)), len(unique))
    if not parts:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    matrix = np.concatenate(parts).astype(np.float32, copy=False)
    return matrix[[index[t.strip()] for t in texts]]


def insert_edges(store: AdminStore, edges: Iterable[Edge]) -> int:
    """Add edges keeping their ids and timestamps; ones already present are skipped."""
    return store.add_edges(edges)


def merge_entities(store: AdminStore, spec: GraphSpec) -> GraphSpec:
    """`spec` with one entity per name (whatever its case): a current entity named like one already
    stored, or like an earlier one in `spec`, is dropped and its links point at that one instead.

    The store keeps one current entity per name (a unique index), so an import of "Acme" into a
    database that knows "ACME" links to it rather than failing.
    """
    replaced = {old for old, _ in spec.superseded}
    names: dict[str, str] = {}
    alias: dict[str, str] = {}
    nodes: list[NewNode] = []
    for node in spec.nodes:
        if node.node_type != "entity" or node.id in replaced or not node.id:
            nodes.append(node)
            continue
        key = node.content.strip().lower()
        if key not in names:
            found = store.find_entity(node.content, semantic=False)
            if found is not None and found.content.strip().lower() == key:
                names[key] = found.id
        if key in names and names[key] != node.id:
            alias[node.id] = names[key]
            continue
        names[key] = node.id
        nodes.append(node)
    if not alias:
        return spec
    edges = [
        Edge(
            e.id,
            alias.get(e.source_id, e.source_id),
            alias.get(e.target_id, e.target_id),
            e.edge_type,
            e.attributes,
            e.created_at,
        )
        for e in spec.edges
    ]
    superseded = [(old, alias.get(new, new)) for old, new in spec.superseded]
    return GraphSpec(nodes, edges, superseded)


def write_graph(
    store: AdminStore,
    spec: GraphSpec,
    *,
    progress: ProgressFn | None = None,
    label: str = "",
) -> int:
    """Write `spec` into `store`: nodes (embedded once per distinct text), then edges, then supersessions.

    Nodes are written with their ids and timestamps; supersessions go through the store's own
    `mark_superseded`, which also carries the old node's edges over to the new one.

    Returns:
        How many of `spec.edges` were added (the others were already there).
    """
    prefix = f"{label}: " if label else ""
    spec = merge_entities(store, spec)
    vectors = embed_unique(
        store.embedder,
        [n.content for n in spec.nodes],
        progress=progress,
        label=f"{prefix}embedding",
    )
    done = 0
    total = len(spec.nodes)

    def wrote(count: int) -> None:
        nonlocal done
        done += count
        if progress:
            progress(f"{prefix}writing", done, total)

    if progress:
        progress(f"{prefix}writing", 0, total)
    store.add_nodes(spec.nodes, vectors=vectors, batch_size=WRITE_BATCH, progress=wrote)
    added = insert_edges(store, spec.edges)
    for old_id, new_id in spec.superseded:
        store.mark_superseded(old_id, new_id)
    return added

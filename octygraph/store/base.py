"""What both backends do alike, written once: writes, reads, search's flow, entity look-up, stats.

`StoreBase` adds to the version rules (`versions.VersionedStore`) the operations whose only difference
between SQLite and PostgreSQL is spelling (`dialect.Dialect`). A backend supplies its connection and
transaction, how rows and vectors go in and out (the hooks below), and its search candidates.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Self

import numpy as np

from octygraph.embeddings.local import cached_local_embed
from octygraph.store.model import (
    EDGE_COLS,
    NODE_SELECT,
    Edge,
    Embedder,
    Hit,
    NewNode,
    Node,
    Relationship,
    StoreError,
    _row_to_node,
    row_to_edge,
    utcnow,
    validate_node,
)
from octygraph.store.protocol import SearchMode
from octygraph.store.ranking import rank_hits
from octygraph.store.schema import ARCHIVED, SCHEMA_VERSION, SUBTYPES
from octygraph.store.versions import VersionedStore, release_replaced

# A name's meaning must be this close to an entity's for a semantic match (`find_entity`).
ENTITY_MATCH_MIN_COSINE = 0.72
# Scoped searches (an entity, a time window) score at most this many memories exactly.
SCOPED_MAX = 20000
# Query vectors a store keeps: one run asks for the same few texts.
QUERY_CACHE_SIZE = 64


class StoreBase(VersionedStore):
    """Operations written once over the backend hooks below (public ones as `protocol` declares them)."""

    # The error a backend's unique index on current entity names raises (SQLite has one; PostgreSQL
    # serialises names with a lock in `_lock_entity_name` instead).
    _name_taken: tuple[type[Exception], ...] = ()

    def __init__(self, embedder: Embedder, conn: Any) -> None:
        self.embedder = embedder
        self._conn = conn
        # One connection a store, shared by the threads of a long-lived process.
        self._lock = threading.RLock()
        self._query_cache: OrderedDict[str, np.ndarray] = OrderedDict()

    # ------------------------------------------------------------ supplied by each backend

    def _insert_many(
        self, conn: Any, items: Sequence[NewNode], vecs: Sequence[np.ndarray] | np.ndarray
    ) -> list[Node]:
        """Insert nodes with their vectors and the edges they ask for (`_link_new`)."""
        raise NotImplementedError

    def _delete_vector(self, conn: Any, node_id: str, position: Any) -> None:
        """Remove a node's vector (`position`: its insertion-order value) before the node goes."""
        raise NotImplementedError

    def _lock_entity_name(self, conn: Any, name: str) -> None:
        """Serialise writers creating an entity of this name, until the transaction ends."""
        raise NotImplementedError

    def _vector_from(self, value: Any) -> np.ndarray:
        """A stored vector as float32 NumPy."""
        raise NotImplementedError

    def _bytes_used(self) -> int:
        """What the memories take on disk (the file, or the schema's tables)."""
        raise NotImplementedError

    def _vectors_of(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def _vector_candidates(
        self, query_vec: np.ndarray, k: int, types: Sequence[str] | None, include_superseded: bool
    ) -> list[tuple[str, float]]:
        raise NotImplementedError

    def _keyword_candidates(
        self, query: str, k: int, where: list[str], args: list[Any]
    ) -> list[tuple[str, float]]:
        raise NotImplementedError

    # ------------------------------------------------------------ connection

    def _rows(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        """All rows of one read query (under the store's lock)."""
        with self._lock:
            return self._conn.execute(sql, args).fetchall()

    def meta(self) -> dict[str, str]:
        return dict(self._rows("SELECT key, value FROM octy_meta"))

    def _new_meta(self) -> list[tuple[str, str]]:
        """The octy_meta rows a new store starts with: its schema version and embedding model."""
        return [
            ("schema_version", str(SCHEMA_VERSION)),
            ("embedding_model", self.embedder.model_id),
            ("embedding_dim", str(self.embedder.dim)),
            ("created_at", utcnow()),
        ]

    def close(self) -> None:
        with self._lock:
            try:
                self._conn.close()
            except Exception:
                pass

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ writing

    def add_nodes(
        self,
        items: Sequence[NewNode],
        *,
        vectors: np.ndarray | None = None,
        batch_size: int = 256,
        progress: Callable[[int], None] | None = None,
    ) -> list[Node]:
        """Create many nodes: embedded in batches, written in one transaction per batch."""
        for item in items:
            validate_node(item.node_type, item.subtype)
            if not item.content or not item.content.strip():
                raise StoreError("A memory needs some text; got an empty one.")
        created: list[Node] = []
        for start in range(0, len(items), batch_size):
            chunk = items[start : start + batch_size]
            chunk_vecs = (
                vectors[start : start + len(chunk)]
                if vectors is not None
                else self.embedder.embed_array([i.content.strip() for i in chunk])
            )
            try:
                with self.transaction() as conn:
                    created.extend(self._insert_many(conn, chunk, chunk_vecs))
            except self._name_taken as exc:
                if "entity_name_unique" not in str(exc) and "nodes.content" not in str(exc):
                    raise
                raise StoreError(
                    "An entity with that name already exists; nothing was written."
                ) from None
            if progress:
                progress(len(chunk))
        return created

    def _insert(self, conn: Any, item: NewNode, vec: np.ndarray) -> Node:
        return self._insert_many(conn, [item], [vec])[0]

    def _link_new(self, conn: Any, item: NewNode, node: Node) -> None:
        """The edges a new node asks for: to its entities (`edge_type`) and to related nodes."""
        for target in dict.fromkeys(item.entity_ids):
            self._insert_edge(conn, node.id, target, item.edge_type, {}, node.created_at)
        for target in dict.fromkeys(item.related_ids):
            self._insert_edge(conn, node.id, target, "see_also", {}, node.created_at)

    def add_edge(
        self,
        source_id: str,
        target_id: str,
        edge_type: str,
        attributes: dict[str, Any] | None = None,
    ) -> Edge | None:
        """Link two nodes; returns None when the same edge already exists."""
        m = self.dialect.mark
        with self.transaction() as conn:
            if not conn.execute(f"SELECT 1 FROM nodes WHERE id = {m}", (source_id,)).fetchone():
                raise StoreError(f"No memory with id {source_id!r}.")
            return self._insert_edge(conn, source_id, target_id, edge_type, attributes or {})

    def add_edges(self, edges: Iterable[Edge]) -> int:
        """Insert edges keeping their ids and timestamps (builds, imports); present ones are skipped.

        Returns how many were added. An edge whose ends are not both stored is an error.
        """
        m = self.dialect.mark
        added = 0
        with self.transaction() as conn:
            for edge in edges:
                if edge.source_id == edge.target_id:
                    continue
                ends = conn.execute(
                    f"SELECT count(*) FROM nodes WHERE id IN ({m}, {m})",
                    (edge.source_id, edge.target_id),
                ).fetchone()[0]
                if ends != 2:
                    raise StoreError(
                        f"Edge {edge.id} links {edge.source_id} to {edge.target_id}, "
                        "but one of them is not in the database."
                    )
                if self._insert_edge(
                    conn,
                    edge.source_id,
                    edge.target_id,
                    edge.edge_type,
                    edge.attributes,
                    edge.created_at,
                    edge.id,
                ):
                    added += 1
        return added

    def ensure_entity(self, name: str, subtype: str | None = None) -> tuple[Node, bool]:
        """The entity called `name`, created when none matches; returns (node, created).

        An upsert: the look-up and the insert share one write transaction, serialised per name, so ten
        writers naming one new entity at once leave one entity.
        """
        name = name.strip()
        if not name:
            raise StoreError("An entity needs a name.")
        found = self.find_entity(name, semantic=False)
        if found is not None:
            return found, False
        if subtype is not None and subtype not in SUBTYPES["entity"]:
            subtype = None
        vec = self.embedder.embed_array([name])[0]  # outside the lock: embedding is the slow part
        try:
            with self.transaction() as conn:
                self._lock_entity_name(conn, name)
                found = self._find_entity_exact(name)
                if found is not None:
                    return found, False  # another writer created it meanwhile
                return self._insert(conn, NewNode("entity", name, subtype=subtype), vec), True
        except self._name_taken:
            found = self._find_entity_exact(name)
            if found is None:
                raise
            return found, False

    def delete_node(self, node_id: str) -> bool:
        """Remove a node with its edges and vector. Returns False if absent."""
        d, m = self.dialect, self.dialect.mark
        with self.transaction() as conn:
            row = conn.execute(
                f"SELECT {d.order} FROM nodes WHERE id = {m}{d.for_update}", (node_id,)
            ).fetchone()
            if row is None:
                return False
            conn.execute(
                f"DELETE FROM edges WHERE source_id = {m} OR target_id = {m}", (node_id, node_id)
            )
            self._delete_vector(conn, node_id, row[0])
            release_replaced(self._rows_for(conn), node_id)
            conn.execute(f"DELETE FROM nodes WHERE id = {m}", (node_id,))
        return True

    def _embed_all(
        self, texts: Sequence[str], progress: Callable[[int, int], None] | None, batch: int
    ) -> np.ndarray:
        """Vectors of `texts` (rows), embedded in batches with progress (done, total) after each."""
        parts: list[np.ndarray] = []
        for start in range(0, len(texts), batch):
            parts.append(self.embedder.embed_array(list(texts[start : start + batch])))
            if progress:
                progress(min(start + batch, len(texts)), len(texts))
        if not parts:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        return np.concatenate(parts)

    # ------------------------------------------------------------ reading

    def _select_nodes(self, tail: str, args: Sequence[Any] = ()) -> list[Node]:
        return [
            _row_to_node(r) for r in self._rows(f"SELECT {NODE_SELECT} FROM nodes n{tail}", args)
        ]

    def get_node(self, node_id: str) -> Node | None:
        rows = self._select_nodes(f" WHERE n.id = {self.dialect.mark}", (node_id,))
        return rows[0] if rows else None

    def iter_all(self) -> Iterator[Node]:
        """Every node, oldest first (for export)."""
        yield from self._select_nodes(f" ORDER BY n.created_at, n.{self.dialect.order}")

    def all_edges(self) -> list[Edge]:
        rows = self._rows(
            f"SELECT {EDGE_COLS} FROM edges ORDER BY created_at, {self.dialect.order}"
        )
        return [row_to_edge(r) for r in rows]

    def edges_of(self, node_id: str) -> list[Edge]:
        d, m = self.dialect, self.dialect.mark
        rows = self._rows(
            f"SELECT {EDGE_COLS} FROM edges WHERE source_id = {m} OR target_id = {m}"
            + d.order_by("created_at"),
            (node_id, node_id),
        )
        return [row_to_edge(r) for r in rows]

    def linked_node_ids(self, entity_id: str) -> set[str]:
        m = self.dialect.mark
        rows = self._rows(
            f"SELECT source_id, target_id FROM edges WHERE source_id = {m} OR target_id = {m}",
            (entity_id, entity_id),
        )
        return {s if t == entity_id else t for s, t in rows}

    def relationships(self, entity_id: str, limit: int = 25) -> list[Relationship]:
        """Edges of an entity with the node at the other end, most salient first, current nodes only."""
        d, m = self.dialect, self.dialect.mark
        sql = f"""
            SELECT e.id, e.source_id, e.target_id, e.edge_type, e.attributes, e.created_at,
                   {NODE_SELECT},
                   CASE WHEN e.source_id = {m} THEN 'out' ELSE 'in' END AS direction
            FROM edges e
            JOIN nodes n ON n.id = CASE WHEN e.source_id = {m} THEN e.target_id ELSE e.source_id END
            WHERE (e.source_id = {m} OR e.target_id = {m}) AND n.superseded_by IS NULL
            {d.order_by("n.salience DESC", "n.created_at DESC", table="e")}
            LIMIT {m}
        """
        rows = self._rows(sql, (entity_id, entity_id, entity_id, entity_id, int(limit)))
        return [Relationship(row_to_edge(r[:6]), _row_to_node(r[6:20]), r[20]) for r in rows]

    def _find_entity_exact(self, name: str) -> Node | None:
        """A current entity named `name`: exactly, then ignoring case, then by an alias."""
        d, m = self.dialect, self.dialect.mark
        current = " WHERE n.node_type = 'entity' AND n.superseded_by IS NULL"
        for tail in (
            f"{current} AND n.content = {m}{d.order_by(table='n')} LIMIT 1",
            f"{current} AND lower(n.content) = lower({m})"
            f"{d.order_by('n.salience DESC', table='n')} LIMIT 1",
            f"{current} AND {d.alias_is}{d.order_by(table='n')} LIMIT 1",
        ):
            rows = self._select_nodes(tail, (name,))
            if rows:
                return rows[0]
        return None

    def archived_nodes(self, limit: int = 200) -> list[Node]:
        """Forgotten (archived) memories, most recently archived first."""
        d = self.dialect
        return self._select_nodes(
            f" WHERE n.superseded_by = {d.mark} "
            f"ORDER BY {d.archived_at} DESC, n.{d.order} DESC LIMIT {d.mark}",
            (ARCHIVED, int(limit)),
        )

    def flagged_for_review(self, limit: int = 200) -> list[Node]:
        """Current memories that reconciliation flagged (e.g. a contradiction), newest first."""
        d = self.dialect
        return self._select_nodes(
            f" WHERE n.superseded_by IS NULL AND {d.needs_review} "
            f"ORDER BY n.created_at DESC, n.{d.order} DESC LIMIT {d.mark}",
            (int(limit),),
        )

    def content_vectors(self, limit: int) -> list[tuple[str, np.ndarray]]:
        """Current memories' text with the vector stored for it, newest first (to seed caches)."""
        d = self.dialect
        rows = self._rows(
            "SELECT n.content, e.vector FROM embeddings e JOIN nodes n ON n.id = e.node_id "
            f"WHERE n.superseded_by IS NULL ORDER BY e.{d.order} DESC LIMIT {d.mark}",
            (int(limit),),
        )
        return [(str(r[0]), self._vector_from(r[1])) for r in rows]

    def vectors_by_id(self, *, current_only: bool = False) -> Iterator[tuple[str, np.ndarray]]:
        """Every stored vector with its node id, in insertion order (exports, brute-force baselines)."""
        sql = "SELECT e.node_id, e.vector FROM embeddings e"
        if current_only:
            sql += " JOIN nodes n ON n.id = e.node_id WHERE n.superseded_by IS NULL"
        for node_id, value in self._rows(f"{sql} ORDER BY e.{self.dialect.order}"):
            yield node_id, self._vector_from(value)

    def stats(self) -> dict[str, Any]:
        """Counts by type and subtype, edges, superseded, embedding model and bytes on disk."""
        with self._lock:
            by_type = dict(
                self._rows(
                    "SELECT node_type, count(*) FROM nodes GROUP BY node_type ORDER BY node_type"
                )
            )
            by_subtype = {
                f"{t}/{s or '-'}": c
                for t, s, c in self._rows(
                    "SELECT node_type, subtype, count(*) FROM nodes GROUP BY node_type, subtype "
                    "ORDER BY node_type, subtype NULLS FIRST"
                )
            }
            edges = self._rows("SELECT count(*) FROM edges")[0][0]
            superseded = self._rows("SELECT count(*) FROM nodes WHERE superseded_by IS NOT NULL")
            archived = self._rows(
                f"SELECT count(*) FROM nodes WHERE superseded_by = {self.dialect.mark}", (ARCHIVED,)
            )
            total = self._rows("SELECT count(*) FROM nodes")[0][0]
        meta = self.meta()
        return {
            "nodes": total,
            "by_type": by_type,
            "by_subtype": by_subtype,
            "edges": edges,
            # Archived memories point at ARCHIVED too; they are counted apart.
            "superseded": superseded[0][0] - archived[0][0],
            "archived": archived[0][0],
            "embedding_model": meta.get("embedding_model"),
            "embedding_dim": int(meta.get("embedding_dim", "0")),
            "schema_version": int(meta.get("schema_version", "0")),
            "file_bytes": self._bytes_used(),
        }

    # ------------------------------------------------------------ search

    def embed_query(self, query: str) -> np.ndarray:
        """The query's vector; the last few are cached because one run asks for the same text often."""
        cache = self._query_cache
        with self._lock:
            vec = cache.get(query)
            if vec is not None:
                cache.move_to_end(query)
                return vec
        from octygraph.embeddings import LocalEmbeddings, local_embeddings

        if isinstance(self.embedder, LocalEmbeddings) and self.embedder is local_embeddings():
            # The relevance and storage judges embed the prompt with the same model: one shared
            # cache computes it once (a text's vector is the same in any batch, bit for bit).
            vec = cached_local_embed([query])[0]
        else:
            vec = self.embedder.embed_array([query])[0]
        with self._lock:
            cache[query] = vec
            while len(cache) > QUERY_CACHE_SIZE:
                cache.popitem(last=False)
        return vec

    def add_node(self, node_type: str, content: str, **kwargs: Any) -> Node:
        """Create one node (embedded at once) with edges to `entity_ids` and `related_ids`."""
        return self.add_nodes([NewNode(node_type=node_type, content=content, **kwargs)])[0]

    def set_attributes(self, node_id: str, **updates: Any) -> Node:
        """Merge keys into a node's attributes (e.g. a contradiction flag for review)."""
        with self.transaction() as conn:
            rows = self._rows_for(conn)
            found = rows.lock(node_id)
            if found is None:
                raise StoreError(f"No memory with id {node_id!r}.")
            rows.point(node_id, found[0], {**found[1], **updates})
        return self._required(node_id)

    def entity_kinds(self, limit: int = 5000) -> dict[str, str | None]:
        """Names and aliases of current entities with their subtype (the classifier's gazetteer)."""
        d = self.dialect
        rows = self._rows(
            "SELECT content, subtype, attributes FROM nodes WHERE node_type = 'entity' "
            f"AND superseded_by IS NULL ORDER BY salience DESC, {d.order} DESC LIMIT {d.mark}",
            (int(limit),),
        )
        kinds: dict[str, str | None] = {}
        for content, subtype, attributes in rows:
            kinds.setdefault(content, subtype)
            try:
                for alias in json.loads(attributes or "{}").get("aliases", []):
                    kinds.setdefault(str(alias), subtype)
            except (TypeError, ValueError, AttributeError):
                pass
        return kinds

    def entity_names(self, limit: int = 5000) -> list[str]:
        """Names and aliases of current entities."""
        return list(self.entity_kinds(limit))

    def find_entity(self, name: str, *, semantic: bool = True) -> Node | None:
        """Find an entity by name: exact, case-insensitive, alias, then (optionally) semantic."""
        name = name.strip()
        if not name:
            return None
        found = self._find_entity_exact(name)
        if found is not None or not semantic:
            return found
        hits = self.search(name, types=["entity"], limit=1, mode="vector")
        if hits and hits[0].cosine >= ENTITY_MATCH_MIN_COSINE:
            return hits[0].node
        return None

    def _scoped_ids(self, where: list[str], args: list[Any]) -> list[str]:
        sql = "SELECT n.id FROM nodes n"
        if where:
            sql += " WHERE " + " AND ".join(where)
        return [r[0] for r in self._rows(f"{sql} LIMIT {SCOPED_MAX}", args)]

    def search(
        self,
        query: str,
        *,
        types: Sequence[str] | None = None,
        entity_id: str | None = None,
        since: str | None = None,
        until: str | None = None,
        days: int | None = None,
        limit: int = 10,
        include_superseded: bool = False,
        mode: SearchMode = "hybrid",
        query_vec: np.ndarray | None = None,
        min_cosine: float | None = None,
    ) -> list[Hit]:
        """Search memories by meaning and words; every hit carries its cosine similarity too.

        `hybrid` adds the z-scores over the candidates of the cosine (less each candidate's hubness, see
        HUB_WEIGHT) and of BM25 (BM25_K1, BM25_B), weighted by VECTOR_WEIGHT; `vector` ranks by
        raw cosine, `keyword` by BM25. Filters: node types, an entity the node is linked to, a
        creation/validity window (`since`/`until` or the last `days`). Superseded nodes are left out unless
        asked for.
        """
        if not query or not query.strip():
            raise StoreError("The search needs some words.")
        if limit <= 0:
            raise StoreError("The search limit must be at least 1.")
        if days is not None:
            since = (datetime.now(UTC) - timedelta(days=days)).strftime("%Y-%m-%d %H:%M:%S")
        where, args = self._filters(types, entity_id, since, until, include_superseded)
        pool = max(limit * 5, 50)
        qvec = (
            query_vec
            if query_vec is not None
            else (self.embed_query(query) if mode != "keyword" else None)
        )
        vector: dict[str, float] = {}
        if qvec is not None and mode != "keyword":
            if entity_id or since or until:
                # Scoped searches are small: score the scope exactly instead of an over-fetched KNN.
                vector = self.cosines(qvec, self._scoped_ids(where, args))
            else:
                vector = dict(self._vector_candidates(qvec, pool, types, include_superseded))
        keyword: dict[str, float] = {}
        if mode != "vector":
            keyword = dict(self._keyword_candidates(query, pool, where, args))
        return rank_hits(
            vector,
            keyword,
            mode=mode,
            pool=pool,
            qvec=qvec,
            limit=limit,
            min_cosine=min_cosine,
            include_superseded=include_superseded,
            vectors_of=self._vectors_of,
            cosines=self.cosines,
            get_nodes=self.get_nodes,
        )

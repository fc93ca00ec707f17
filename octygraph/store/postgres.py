"""The memory graph on PostgreSQL: one schema a project, pgvector (HNSW) and full-text search.

Same tables and the same behaviour as the SQLite store (`octygraph.store.sqlite`), so the graph, tools and
tests run on either. The keyword half scores Okapi BM25 (ranking.BM25_K1, BM25_B) from the `tsvector`
positions of the best full-text matches; the vector half asks the HNSW index for candidates; both are
fused by `octygraph.store.ranking`, as on SQLite.

Concurrency: every write transaction first locks the schema's `octy_state` row, so writers from any
number of processes queue in one order and none sees a half-written supersession; readers never wait.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from octygraph.store.base import StoreBase
from octygraph.store.dialect import POSTGRES
from octygraph.store.graph_copy import export_to_sqlite
from octygraph.store.model import (
    _NODE_COLS,
    NODE_SELECT,
    Edge,
    Embedder,
    EmbeddingMismatch,
    NewNode,
    Node,
    NotAnOctygraphDatabase,
    Relationship,
    StoreError,
    _row_to_node,
    new_id,
    utcnow,
    validate_node,
)
from octygraph.store.pg_schema import (
    HNSW_EF_CONSTRUCTION,
    HNSW_M,
    MIGRATIONS,
    MIGRATIONS_DDL,
    RECOUNT_LEXEMES,
    SCHEMA_VERSION,
    TS_CONFIG,
    drop_vector_index_ddl,
    partition_predicate,
    vector_index_ddl,
)
from octygraph.store.ranking import BM25_B, BM25_K1
from octygraph.store.schema import ARCHIVED, DEFAULT_SCOPE, SUBTYPES
from octygraph.store.versions import release_replaced
from octygraph.store.words import query_words

# HNSW candidates weighed per query and graph (hnsw.ef_search), at least the requested pool. With 8
# partitions, recall@10 against an exact scan of blended model vectors (bench/search_pg.py) is 0.969 at
# 200 for 1,000,000 memories (125,000 a graph) and 0.988 at 40 for 100,000: the graph's size sets it,
# rows per graph / EF_ROWS within [EF_SEARCH_MIN, EF_SEARCH]; small graphs need no more work.
EF_SEARCH = 200
EF_SEARCH_MIN = 40
EF_ROWS = 625
# Full-text matches rescored with BM25 per requested candidate (at least BM25_MIN_RESCORE).
BM25_RESCORE_FACTOR = 3
BM25_MIN_RESCORE = 300
# The average document length (BM25's length norm) is re-read at most this often.
AVGDL_TTL_S = 60.0

_EDGE_COLS = "id, source_id, target_id, edge_type, attributes, created_at"


def ef_search_for(rows: int, partitions: int) -> int:
    """ef_search per graph: EF_SEARCH for one graph, else by rows per graph (see EF_SEARCH)."""
    if partitions <= 1:
        return EF_SEARCH
    return min(EF_SEARCH, max(EF_SEARCH_MIN, rows // partitions // EF_ROWS))


def schema_name(project_id: str) -> str:
    """The PostgreSQL schema of a project: `octy_` and its id folded to [a-z0-9_], at most 63 bytes."""
    folded = re.sub(r"[^a-z0-9_]", "_", project_id.lower()).strip("_") or "default"
    return f"octy_{folded}"[:63]


def _edge(row: Sequence[Any]) -> Edge:
    return Edge(row[0], row[1], row[2], row[3], json.loads(row[4] or "{}"), row[5] or "")


def _np(value: Any) -> np.ndarray:
    """A stored vector as float32 NumPy (the driver hands back pgvector's own Vector type)."""
    to_numpy = getattr(value, "to_numpy", None)
    return np.asarray(to_numpy() if to_numpy else value, dtype=np.float32)


def _require_driver() -> tuple[Any, Any]:
    try:
        import psycopg
        from pgvector.psycopg import register_vector
    except ImportError:
        raise StoreError(
            "OCTY_DATABASE_URL needs the PostgreSQL extra; run `pip install 'octygraph[postgres]'`."
        ) from None
    return psycopg, register_vector


class PostgresStore(StoreBase):
    """The memory graph of one project, in one schema of a PostgreSQL server with pgvector."""

    dialect = POSTGRES

    def __init__(self, url: str, schema: str, embedder: Embedder, conn: Any) -> None:
        self.url = url
        self.schema = schema
        self.embedder = embedder
        self._conn = conn
        self._lock = threading.RLock()
        # Candidates each HNSW graph weighs per query (pgvector's hnsw.ef_search); more is slower,
        # surer. None: by the graphs' size (ef_for_size); benchmarks set a number.
        self.ef_search: int | None = None
        # HNSW graphs the vectors are split into (octy_meta `hnsw_partitions`, read at open).
        self.partitions = 1
        self._query_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        # (documents, average length, read at, revision) for BM25; see _corpus_stats.
        self._corpus: tuple[int, float, float, int] | None = None

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(
        cls,
        url: str,
        embedder: Embedder,
        *,
        project_id: str = "default",
        create: bool = True,
        check_model: bool = True,
    ) -> PostgresStore:
        """Connect, create or migrate the project's schema, and check the embedding model."""
        psycopg, register_vector = _require_driver()
        try:
            conn = psycopg.connect(url, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise StoreError(
                f"Cannot reach the PostgreSQL server in OCTY_DATABASE_URL: {exc}"
            ) from None
        schema = schema_name(project_id)
        store = cls(url, schema, embedder, conn)
        try:
            store._init_schema(create=create, check_model=check_model)
            register_vector(conn)
            conn.execute(f"SET hnsw.ef_search = {EF_SEARCH}")
        except BaseException:
            conn.close()
            raise
        return store

    def _init_schema(self, *, create: bool, check_model: bool) -> None:
        conn = self._conn
        exists = conn.execute(
            "SELECT 1 FROM information_schema.schemata WHERE schema_name = %s", (self.schema,)
        ).fetchone()
        if not exists and not create:
            raise StoreError(f"No memories for this project on the server (schema {self.schema}).")
        if exists:
            tables = {
                r[0]
                for r in conn.execute(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                    (self.schema,),
                )
            }
            if tables and "octy_meta" not in tables:
                raise NotAnOctygraphDatabase(
                    f"Schema {self.schema} on the server is not octygraph's; use another project id."
                )
        with conn.transaction():
            # One opener at a time migrates (two hooks starting at once on a fresh server).
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('octygraph:migrate'))")
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
            conn.execute(f'SET LOCAL search_path TO "{self.schema}", public')
            conn.execute(MIGRATIONS_DDL)
            done = {r[0] for r in conn.execute("SELECT version FROM octy_migrations")}
            newest = max(done, default=0)
            if newest > SCHEMA_VERSION:
                raise StoreError(
                    f"Schema {self.schema} was written by a newer octygraph (schema {newest}); "
                    "upgrade octygraph."
                )
            for migration in MIGRATIONS:
                if migration.version in done:
                    continue
                for stmt in migration.statements(self.embedder.dim):
                    conn.execute(stmt)
                conn.execute(
                    "INSERT INTO octy_migrations(version, name, applied_at) VALUES (%s, %s, %s)",
                    (migration.version, migration.name, utcnow()),
                )
            if not done:
                conn.cursor().executemany(
                    "INSERT INTO octy_meta(key, value) VALUES (%s, %s) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    [
                        ("schema_version", str(SCHEMA_VERSION)),
                        ("embedding_model", self.embedder.model_id),
                        ("embedding_dim", str(self.embedder.dim)),
                        ("created_at", utcnow()),
                    ],
                )
            else:
                conn.execute(
                    "UPDATE octy_meta SET value = %s WHERE key = 'schema_version'",
                    (str(SCHEMA_VERSION),),
                )
        conn.execute(f'SET search_path TO "{self.schema}", public')
        meta = self.meta()
        self.partitions = int(meta.get("hnsw_partitions", "1"))
        if check_model and meta.get("embedding_model") != self.embedder.model_id:
            raise EmbeddingMismatch(
                f"{self.location} holds vectors from {meta.get('embedding_model')} but the configured "
                f"model is {self.embedder.model_id}; run `octygraph reindex` to re-embed them."
            )

    @property
    def location(self) -> str:
        """The server and schema, without credentials."""
        try:
            info = self._conn.info
            where = f"{info.host}:{info.port}/{info.dbname}"
        except Exception:
            where = "server"
        return f"postgresql {where} schema {self.schema}"

    def close(self) -> None:
        with self._lock:
            try:
                self._conn.close()
            except Exception:
                pass

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """One write transaction, queued behind every other writer of this project (see module doc)."""
        with self._lock:
            conn = self._conn
            if conn.info.transaction_status != 0:  # already inside one (idle = 0)
                yield conn
                return
            with conn.transaction():
                conn.execute("UPDATE octy_state SET revision = revision + 1 WHERE one = 1")
                yield conn

    def revision(self) -> tuple[int, int, int]:
        """Changes whenever any process committed a write to this project."""
        with self._lock:
            row = self._conn.execute("SELECT revision FROM octy_state WHERE one = 1").fetchone()
        return id(self), int(row[0]) if row else 0, 0

    def meta(self) -> dict[str, str]:
        with self._lock:
            return {k: v for k, v in self._conn.execute("SELECT key, value FROM octy_meta")}

    def enable_vector_cache(self) -> None:
        """Nothing to do: the HNSW index answers in milliseconds without a copy in RAM."""

    def content_vectors(self, limit: int) -> list[tuple[str, np.ndarray]]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT n.content, e.vector FROM embeddings e JOIN nodes n ON n.id = e.node_id "
                "WHERE n.superseded_by IS NULL ORDER BY e.seq DESC LIMIT %s",
                (int(limit),),
            ).fetchall()
        return [(str(r[0]), _np(r[1])) for r in rows]

    # ------------------------------------------------------------------ writing

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
            with self.transaction() as conn:
                created.extend(self._insert_many(conn, chunk, chunk_vecs))
            if progress:
                progress(len(chunk))
        return created

    def _insert(self, conn: Any, item: NewNode, vec: np.ndarray) -> Node:
        return self._insert_many(conn, [item], [vec])[0]

    def _insert_many(
        self, conn: Any, items: Sequence[NewNode], vecs: Sequence[np.ndarray] | np.ndarray
    ) -> list[Node]:
        """Insert nodes with their vectors and edges; rows go in batches (one round trip each)."""
        nodes: list[Node] = []
        node_rows: list[tuple[Any, ...]] = []
        vector_rows: list[tuple[Any, ...]] = []
        for item, vec in zip(items, vecs, strict=True):
            node_id = item.id or new_id()
            created_at = item.created_at or utcnow()
            scope = item.scope if item.scope is not None else DEFAULT_SCOPE.get(item.node_type)
            can_summarize = 0 if item.node_type in ("instruction", "plan") else 1
            content = item.content.strip()
            vector = np.asarray(vec, dtype=np.float32)
            if vector.shape[0] != self.embedder.dim:
                raise EmbeddingMismatch(
                    "A vector has another dimension than the store's; run `octygraph reindex`."
                )
            node_rows.append(
                (
                    node_id,
                    item.node_type,
                    item.subtype,
                    content,
                    item.salience,
                    item.confidence,
                    item.source,
                    created_at,
                    item.valid_from,
                    item.valid_until,
                    None,
                    json.dumps(item.attributes or {}, sort_keys=True),
                    can_summarize,
                    scope,
                )
            )
            vector_rows.append((node_id, item.node_type, vector, created_at))
            nodes.append(
                Node(
                    id=node_id,
                    node_type=item.node_type,
                    content=content,
                    subtype=item.subtype,
                    salience=item.salience,
                    confidence=item.confidence,
                    source=item.source,
                    created_at=created_at,
                    valid_from=item.valid_from,
                    valid_until=item.valid_until,
                    attributes=item.attributes or {},
                    can_summarize=bool(can_summarize),
                    scope=scope,
                )
            )
        with conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO nodes ({_NODE_COLS}) VALUES "
                "(%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                node_rows,
            )
            cur.executemany(
                "INSERT INTO embeddings(node_id, node_type, active, vector, created_at) "
                "VALUES (%s, %s, TRUE, %s, %s)",
                vector_rows,
            )
        for item, node in zip(items, nodes, strict=True):
            for target in dict.fromkeys(item.entity_ids):
                self._insert_edge(conn, node.id, target, item.edge_type, {}, node.created_at)
            for target in dict.fromkeys(item.related_ids):
                self._insert_edge(conn, node.id, target, "see_also", {}, node.created_at)
        return nodes

    def _insert_edge(
        self,
        conn: Any,
        source_id: str,
        target_id: str,
        edge_type: str,
        attributes: dict[str, Any],
        created_at: str | None = None,
        edge_id: str | None = None,
    ) -> Edge | None:
        if source_id == target_id:
            return None
        if not conn.execute("SELECT 1 FROM nodes WHERE id = %s", (target_id,)).fetchone():
            raise StoreError(f"No memory with id {target_id!r} to link to.")
        edge = Edge(
            edge_id or new_id(), source_id, target_id, edge_type, attributes, created_at or utcnow()
        )
        row = conn.execute(
            f"INSERT INTO edges({_EDGE_COLS}) VALUES (%s,%s,%s,%s,%s,%s) "
            "ON CONFLICT DO NOTHING RETURNING id",
            (
                edge.id,
                source_id,
                target_id,
                edge_type,
                json.dumps(attributes, sort_keys=True),
                edge.created_at,
            ),
        ).fetchone()
        return edge if row else None

    def add_edge(
        self,
        source_id: str,
        target_id: str,
        edge_type: str,
        attributes: dict[str, Any] | None = None,
    ) -> Edge | None:
        """Link two nodes; returns None when the same edge already exists."""
        with self.transaction() as conn:
            if not conn.execute("SELECT 1 FROM nodes WHERE id = %s", (source_id,)).fetchone():
                raise StoreError(f"No memory with id {source_id!r}.")
            return self._insert_edge(conn, source_id, target_id, edge_type, attributes or {})

    def add_edges(self, edges: Iterable[Edge]) -> int:
        """Insert edges keeping their ids and timestamps (builds, imports); present ones are skipped."""
        added = 0
        with self.transaction() as conn:
            for edge in edges:
                if edge.source_id == edge.target_id:
                    continue
                ends = conn.execute(
                    "SELECT count(*) FROM nodes WHERE id IN (%s, %s)",
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

        Two processes ensuring the same name at once get one entity: the check and the insert run in one
        transaction under a lock on the folded name.
        """
        name = name.strip()
        if not name:
            raise StoreError("An entity needs a name.")
        found = self.find_entity(name, semantic=False)
        if found is not None:
            return found, False
        if subtype is not None and subtype not in SUBTYPES["entity"]:
            subtype = None
        vec = self.embedder.embed_array([name])[0]
        with self.transaction() as conn:
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtext(%s))", (f"{self.schema}:{name.lower()}",)
            )
            found = self._find_entity_exact(name)
            if found is not None:
                return found, False
            return self._insert(conn, NewNode("entity", name, subtype=subtype), vec), True

    def delete_node(self, node_id: str) -> bool:
        """Remove a node with its edges and embedding. Returns False if absent."""
        with self.transaction() as conn:
            if not conn.execute(
                "SELECT 1 FROM nodes WHERE id = %s FOR UPDATE", (node_id,)
            ).fetchone():
                return False
            conn.execute(
                "DELETE FROM edges WHERE source_id = %s OR target_id = %s", (node_id, node_id)
            )
            conn.execute("DELETE FROM embeddings WHERE node_id = %s", (node_id,))
            release_replaced(self._rows_for(conn), node_id)
            conn.execute("DELETE FROM nodes WHERE id = %s", (node_id,))
        return True

    def _set_active(self, conn: Any, node_ids: Sequence[str], active: bool) -> None:
        conn.execute(
            "UPDATE embeddings SET active = %s WHERE node_id = ANY(%s)", (active, list(node_ids))
        )

    def archived_nodes(self, limit: int = 200) -> list[Node]:
        """Forgotten (archived) memories, most recently archived first."""
        rows = self._rows(
            f"SELECT {_NODE_COLS} FROM nodes WHERE superseded_by = %s "
            "ORDER BY (attributes::jsonb -> 'archived' ->> 'at') DESC, seq DESC LIMIT %s",
            (ARCHIVED, int(limit)),
        )
        return [_row_to_node(r) for r in rows]

    def flagged_for_review(self, limit: int = 200) -> list[Node]:
        """Current memories that reconciliation flagged (e.g. a contradiction), newest first."""
        rows = self._rows(
            f"SELECT {_NODE_COLS} FROM nodes WHERE superseded_by IS NULL "
            "AND COALESCE((attributes::jsonb ->> 'needs_review')::boolean, FALSE) "
            "ORDER BY created_at DESC, seq DESC LIMIT %s",
            (int(limit),),
        )
        return [_row_to_node(r) for r in rows]

    # ------------------------------------------------------------------ reading

    def _rows(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            return self._conn.execute(sql, args).fetchall()

    def get_node(self, node_id: str) -> Node | None:
        rows = self._rows(f"SELECT {_NODE_COLS} FROM nodes WHERE id = %s", (node_id,))
        return _row_to_node(rows[0]) if rows else None

    def get_nodes(self, ids: Iterable[str]) -> list[Node]:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return []
        rows = self._rows(f"SELECT {_NODE_COLS} FROM nodes WHERE id = ANY(%s)", (ids,))
        out = {r[0]: _row_to_node(r) for r in rows}
        return [out[i] for i in ids if i in out]

    def iter_all(self) -> Iterator[Node]:
        """Every node, oldest first (for export)."""
        for row in self._rows(f"SELECT {_NODE_COLS} FROM nodes ORDER BY created_at, seq"):
            yield _row_to_node(row)

    def all_edges(self) -> list[Edge]:
        return [
            _edge(r) for r in self._rows(f"SELECT {_EDGE_COLS} FROM edges ORDER BY created_at, seq")
        ]

    def edges_of(self, node_id: str) -> list[Edge]:
        rows = self._rows(
            f"SELECT {_EDGE_COLS} FROM edges WHERE source_id = %s OR target_id = %s "
            "ORDER BY created_at, seq",
            (node_id, node_id),
        )
        return [_edge(r) for r in rows]

    def _find_entity_exact(self, name: str) -> Node | None:
        base = (
            f"SELECT {NODE_SELECT} FROM nodes n WHERE n.node_type = 'entity' "
            "AND n.superseded_by IS NULL"
        )
        for sql in (
            f"{base} AND n.content = %s ORDER BY n.seq LIMIT 1",
            f"{base} AND lower(n.content) = lower(%s) ORDER BY n.salience DESC, n.seq LIMIT 1",
            f"{base} AND n.attributes LIKE '%%aliases%%' AND EXISTS (SELECT 1 FROM "
            "jsonb_array_elements_text(CASE WHEN jsonb_typeof(n.attributes::jsonb -> 'aliases') = "
            "'array' THEN n.attributes::jsonb -> 'aliases' ELSE '[]'::jsonb END) a "
            "WHERE lower(a) = lower(%s)) ORDER BY n.seq LIMIT 1",
        ):
            rows = self._rows(sql, (name,))
            if rows:
                return _row_to_node(rows[0])
        return None

    def relationships(self, entity_id: str, limit: int = 25) -> list[Relationship]:
        """Edges of an entity with the node at the other end, most salient first, current nodes only."""
        sql = f"""
            SELECT e.id, e.source_id, e.target_id, e.edge_type, e.attributes, e.created_at,
                   {NODE_SELECT},
                   CASE WHEN e.source_id = %s THEN 'out' ELSE 'in' END AS direction
            FROM edges e
            JOIN nodes n ON n.id = CASE WHEN e.source_id = %s THEN e.target_id ELSE e.source_id END
            WHERE (e.source_id = %s OR e.target_id = %s) AND n.superseded_by IS NULL
            ORDER BY n.salience DESC, n.created_at DESC, e.seq
            LIMIT %s
        """
        rows = self._rows(sql, (entity_id, entity_id, entity_id, entity_id, int(limit)))
        return [Relationship(_edge(r[:6]), _row_to_node(r[6:20]), r[20]) for r in rows]

    def linked_node_ids(self, entity_id: str) -> set[str]:
        rows = self._rows(
            "SELECT source_id, target_id FROM edges WHERE source_id = %s OR target_id = %s",
            (entity_id, entity_id),
        )
        return {s if t == entity_id else t for s, t in rows}

    # ------------------------------------------------------------------ search

    def embed_query(self, query: str) -> np.ndarray:
        """The query's vector; the last few are cached because one run asks for the same text often."""
        with self._lock:
            vec = self._query_cache.get(query)
            if vec is not None:
                self._query_cache.move_to_end(query)
                return vec
        vec = self.embedder.embed_array([query])[0]
        with self._lock:
            self._query_cache[query] = vec
            while len(self._query_cache) > 64:
                self._query_cache.popitem(last=False)
        return vec

    def _vectors_of(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        rows = self._rows(
            "SELECT node_id, vector FROM embeddings WHERE node_id = ANY(%s)", (list(ids),)
        )
        return {r[0]: _np(r[1]) for r in rows}

    def cosines(self, query_vec: np.ndarray, ids: Iterable[str]) -> dict[str, float]:
        """Cosine similarity of the query to each stored node (vectors are unit length)."""
        vecs = self._vectors_of(list(dict.fromkeys(ids)))
        if not vecs:
            return {}
        q = np.asarray(query_vec, dtype=np.float32)
        if next(iter(vecs.values())).shape[0] != q.shape[0]:
            raise EmbeddingMismatch(
                "Stored vectors have another dimension than the query; run `octygraph reindex`."
            )
        return {i: float(v @ q) for i, v in vecs.items()}

    def _vector_candidates(
        self, query_vec: np.ndarray, k: int, types: Sequence[str] | None, include_superseded: bool
    ) -> list[tuple[str, float]]:
        """The `k` nearest nodes by cosine: the HNSW index, exact when its filtered answer falls short."""
        q = np.asarray(query_vec, dtype=np.float32)
        if q.shape[0] != self.embedder.dim:
            raise EmbeddingMismatch(
                "Stored vectors have another dimension than the query; run `octygraph reindex`."
            )
        where: list[str] = []
        args: dict[str, Any] = {"q": q, "k": int(k)}
        if not include_superseded:
            where.append("active")
        if types:
            where.append("node_type = ANY(%(types)s)")
            args["types"] = list(types)
        cond = (" WHERE " + " AND ".join(where)) if where else ""
        approx = self._approx_sql(where)
        ef = self.ef_search if self.ef_search is not None else self.ef_for_size()
        # `+ 0` keeps the planner off the HNSW index: an exact scan (through the type index if any).
        exact = (
            f"SELECT node_id, 1 - (vector <=> %(q)s) FROM embeddings{cond} "
            "ORDER BY (vector <=> %(q)s) + 0 LIMIT %(k)s"
        )
        with self._lock:
            wide = max(int(k), ef)
            if wide != EF_SEARCH:
                self._conn.execute(f"SET hnsw.ef_search = {min(wide, 1000)}")
            try:
                rows = self._conn.execute(approx, args).fetchall()
            finally:
                if wide != EF_SEARCH:
                    self._conn.execute(f"SET hnsw.ef_search = {EF_SEARCH}")
            if len(rows) < k and where:
                # The index filters after its search, so a rare type can come back short.
                rows = self._conn.execute(exact, args).fetchall()
        return [(r[0], float(r[1])) for r in rows]

    def ef_for_size(self) -> int:
        """The ef_search searches use unless one is set: by this project's size (ef_search_for)."""
        return ef_search_for(self._corpus_stats()[0], self.partitions)

    def _approx_sql(self, where: Sequence[str]) -> str:
        """The top k through the HNSW index: each partition's own top k, merged by distance.

        Each branch names its partition's predicate literally, so the planner proves the partial index
        usable (also in a generic plan) and merges the branches' ordered scans without sorting all.
        """
        if self.partitions <= 1:
            cond = (" WHERE " + " AND ".join(where)) if where else ""
            return (
                f"SELECT node_id, 1 - (vector <=> %(q)s) FROM embeddings{cond} "
                "ORDER BY vector <=> %(q)s LIMIT %(k)s"
            )
        branches = [
            "(SELECT node_id, vector <=> %(q)s AS dist FROM embeddings WHERE "
            + " AND ".join([*where, partition_predicate(self.partitions, part)])
            + " ORDER BY vector <=> %(q)s LIMIT %(k)s)"
            for part in range(self.partitions)
        ]
        return (
            "SELECT node_id, 1 - dist FROM ("
            + " UNION ALL ".join(branches)
            + ") AS parts ORDER BY dist LIMIT %(k)s"
        )

    def _corpus_stats(self) -> tuple[int, float]:
        """(documents, average length in tokens) for BM25, re-read after writes.

        Large tables are re-read at most every AVGDL_TTL_S seconds: the figures move slowly there, and
        counting a million rows on every search would cost more than the search.
        """
        now = time.monotonic()
        revision = self.revision()[1]
        cached = self._corpus
        if cached is not None:
            n_docs, avg_len, at, seen = cached
            if seen == revision or (n_docs > 50_000 and now - at < AVGDL_TTL_S):
                return n_docs, avg_len
        n_docs = int(self._rows("SELECT count(*) FROM nodes")[0][0])
        # The length norm from the newest 5,000 documents: a sample is enough for an average.
        row = self._rows(
            "SELECT avg(ntok) FROM (SELECT ntok FROM nodes ORDER BY seq DESC LIMIT 5000) s"
        )
        avg_len = max(float(row[0][0] or 1.0) if row else 1.0, 1e-9)
        self._corpus = (n_docs, avg_len, now, revision)
        return n_docs, avg_len

    def _doc_freqs(self, lexemes: Sequence[str]) -> dict[str, int]:
        """How many documents hold each lexeme (kept by a trigger in octy_lexemes)."""
        rows = self._rows(
            "SELECT lexeme, df FROM octy_lexemes WHERE lexeme = ANY(%s::text[])", (list(lexemes),)
        )
        found = {r[0]: int(r[1]) for r in rows}
        return {lex: found.get(lex, 0) for lex in lexemes}

    def _keyword_candidates(
        self, query: str, k: int, where: list[str], args: list[Any]
    ) -> list[tuple[str, float]]:
        """The `k` best BM25 matches (higher is better) that pass the filters."""
        words = " ".join(query_words(query))
        if not words:
            return []
        with self._lock:
            lexemes = [
                r[0]
                for r in self._conn.execute(
                    "SELECT unnest(tsvector_to_array(to_tsvector('" + TS_CONFIG + "', %s)))",
                    (words,),
                )
            ]
        if not lexemes:
            return []
        tsquery = " | ".join(
            "'" + lex.replace("'", "''").replace("\\", "\\\\") + "'" for lex in lexemes
        )
        preselect = max(k * BM25_RESCORE_FACTOR, BM25_MIN_RESCORE)
        conditions = " AND ".join(["n.tsv @@ %s::tsquery", *where])
        rows = self._rows(
            f"SELECT n.id FROM nodes n WHERE {conditions} "
            "ORDER BY ts_rank(n.tsv, %s::tsquery) DESC, n.seq LIMIT %s",
            [tsquery, *args, tsquery, int(preselect)],
        )
        if not rows:
            return []
        ids = [r[0] for r in rows]
        n_docs, avg_len = self._corpus_stats()
        total = max(n_docs, len(ids), 1)
        idf: dict[str, float] = {}
        for lex, df in self._doc_freqs(lexemes).items():
            if df:
                idf[lex] = float(np.log1p((total - df + 0.5) / (df + 0.5)))
        stats = self._rows(
            "SELECT n.id, n.ntok, u.lexeme, coalesce(array_length(u.positions, 1), 1) "
            "FROM nodes n CROSS JOIN LATERAL unnest(n.tsv) u "
            "WHERE n.id = ANY(%s) AND u.lexeme = ANY(%s)",
            (ids, lexemes),
        )
        scores: dict[str, float] = {}
        for node_id, length, lexeme, tf in stats:
            norm = BM25_K1 * (1 - BM25_B + BM25_B * float(length) / avg_len)
            scores[node_id] = scores.get(node_id, 0.0) + idf.get(lexeme, 0.0) * tf * (
                BM25_K1 + 1
            ) / (tf + norm)
        # sorted() is stable: the full-text rank breaks ties.
        ranked = sorted(ids, key=lambda i: -scores.get(i, 0.0))
        return [(i, scores.get(i, 0.0)) for i in ranked[:k]]

    # ------------------------------------------------------------------ maintenance

    def stats(self) -> dict[str, Any]:
        """Counts by type and subtype, edges, superseded, embedding model and bytes on the server."""
        by_type = {
            t: c
            for t, c in self._rows(
                "SELECT node_type, count(*) FROM nodes GROUP BY node_type ORDER BY node_type"
            )
        }
        by_subtype = {
            f"{t}/{s or '-'}": c
            for t, s, c in self._rows(
                "SELECT node_type, subtype, count(*) FROM nodes GROUP BY node_type, subtype "
                "ORDER BY node_type, subtype NULLS FIRST"
            )
        }
        edges = self._rows("SELECT count(*) FROM edges")[0][0]
        superseded = self._rows("SELECT count(*) FROM nodes WHERE superseded_by IS NOT NULL")[0][0]
        archived = self._rows("SELECT count(*) FROM nodes WHERE superseded_by = %s", (ARCHIVED,))[
            0
        ][0]
        total = self._rows("SELECT count(*) FROM nodes")[0][0]
        size = self._rows(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = %s AND c.relkind = 'r'",
            (self.schema,),
        )[0][0]
        meta = self.meta()
        return {
            "nodes": total,
            "by_type": by_type,
            "by_subtype": by_subtype,
            "edges": edges,
            "superseded": superseded - archived,  # as on SQLite: archived ones are counted apart
            "archived": archived,
            "embedding_model": meta.get("embedding_model"),
            "embedding_dim": int(meta.get("embedding_dim", "0")),
            "schema_version": int(meta.get("schema_version", "0")),
            "file_bytes": int(size),
        }

    def reindex(self, progress: Callable[[int, int], None] | None = None, batch: int = 64) -> int:
        """Re-embed every node with the configured model; rebuilds the vector index. Returns the count."""
        rows = self._rows("SELECT id, content FROM nodes ORDER BY seq")
        total = len(rows)
        # Embed everything first, then swap in one transaction: an interrupted reindex changes nothing.
        parts: list[np.ndarray] = []
        done = 0
        for start in range(0, total, batch):
            part = rows[start : start + batch]
            parts.append(self.embedder.embed_array([r[1] for r in part]))
            done += len(part)
            if progress:
                progress(done, total)
        dim = int(self.embedder.dim)
        with self.transaction() as conn:
            for stmt in drop_vector_index_ddl():
                conn.execute(stmt)
            conn.execute("DELETE FROM embeddings")
            conn.execute(f"ALTER TABLE embeddings ALTER COLUMN vector TYPE vector({dim})")
            if rows:
                mat = np.concatenate(parts).astype(np.float32)
                with conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO embeddings(node_id, node_type, active, vector) "
                        "SELECT id, node_type, superseded_by IS NULL, %s FROM nodes WHERE id = %s",
                        [(vec, node_id) for (node_id, _), vec in zip(rows, mat, strict=True)],
                    )
            for stmt in vector_index_ddl(partitions=self.partitions):
                conn.execute(stmt)
            conn.cursor().executemany(
                "INSERT INTO octy_meta(key, value) VALUES (%s, %s) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [("embedding_model", self.embedder.model_id), ("embedding_dim", str(dim))],
            )
        return total

    def backup_to(self, target: str | Path) -> None:
        """Write this project's memories to an SQLite file at `target` (nodes, edges, vectors)."""
        export_to_sqlite(self, Path(target))

    def bulk_load(
        self,
        items: Sequence[NewNode],
        vectors: np.ndarray,
        *,
        progress: Callable[[int], None] | None = None,
        hnsw: tuple[int, int] | None = None,
        partitions: int | None = None,
    ) -> float:
        """Load many edge-less nodes with their vectors fast: COPY, then one HNSW build.

        `hnsw` overrides the index's (m, ef_construction) for this build (benchmarks of denser graphs);
        `partitions` the number of HNSW graphs, kept for this project's later searches and reindexes.

        For imports and benchmarks of large graphs (a million memories): the HNSW index is dropped and
        built once at the end, which is many times faster than inserting into it row by row. Readers see
        exact (slower) vector search until the build ends. Returns the build's seconds.
        """
        if len(items) != len(vectors):
            raise StoreError("bulk_load needs one vector per memory.")
        for item in items:
            validate_node(item.node_type, item.subtype)
        with self.transaction() as conn:
            for stmt in drop_vector_index_ddl():
                conn.execute(stmt)
            # Counting lexemes row by row would dominate the load: recounted once at the end.
            conn.execute("ALTER TABLE nodes DISABLE TRIGGER nodes_lexemes")
        try:
            step = 20_000
            for start in range(0, len(items), step):
                part = items[start : start + step]
                ids = [item.id or new_id() for item in part]
                with self.transaction() as conn, conn.cursor() as cur:
                    with cur.copy(f"COPY nodes ({_NODE_COLS}) FROM STDIN") as copy:
                        for node_id, item in zip(ids, part, strict=True):
                            copy.write_row(
                                (
                                    node_id,
                                    item.node_type,
                                    item.subtype,
                                    item.content.strip(),
                                    item.salience,
                                    item.confidence,
                                    item.source,
                                    item.created_at or utcnow(),
                                    item.valid_from,
                                    item.valid_until,
                                    None,
                                    json.dumps(item.attributes or {}, sort_keys=True),
                                    0 if item.node_type in ("instruction", "plan") else 1,
                                    item.scope
                                    if item.scope is not None
                                    else DEFAULT_SCOPE.get(item.node_type),
                                )
                            )
                    # Binary COPY: the vectors go as raw floats, not as text to parse.
                    with cur.copy(
                        "COPY embeddings (node_id, node_type, active, vector) FROM STDIN (FORMAT BINARY)"
                    ) as copy:
                        copy.set_types(["text", "text", "bool", "vector"])
                        for node_id, item, vec in zip(
                            ids, part, vectors[start : start + step], strict=True
                        ):
                            copy.write_row(
                                (node_id, item.node_type, True, np.asarray(vec, np.float32))
                            )
                if progress:
                    progress(len(part))
        finally:
            with self.transaction() as conn:
                conn.execute("ALTER TABLE nodes ENABLE TRIGGER nodes_lexemes")
                conn.execute("DELETE FROM octy_lexemes")
                conn.execute(RECOUNT_LEXEMES)
        began = time.perf_counter()
        with self._lock:
            # A bigger build memory keeps the graph in RAM while it is built; a spill is far slower.
            self._conn.execute("SET maintenance_work_mem = '4GB'")
            self._conn.execute("SET max_parallel_maintenance_workers = 1")
            parts = self.partitions if partitions is None else partitions
            m, ef_construction = hnsw or (HNSW_M, HNSW_EF_CONSTRUCTION)
            for stmt in vector_index_ddl(m, ef_construction, partitions=parts):
                self._conn.execute(stmt)
            self._conn.execute(
                "INSERT INTO octy_meta(key, value) VALUES ('hnsw_partitions', %s) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (str(parts),),
            )
            self.partitions = parts
            self._conn.execute("ANALYZE nodes")
            self._conn.execute("ANALYZE embeddings")
        self._corpus = None
        return time.perf_counter() - began

    def vectors_by_id(self, *, current_only: bool = False) -> Iterator[tuple[str, np.ndarray]]:
        """Every stored vector with its node id, in insertion order (exports, brute-force baselines)."""
        sql = "SELECT e.node_id, e.vector FROM embeddings e"
        if current_only:
            sql += " JOIN nodes n ON n.id = e.node_id WHERE n.superseded_by IS NULL"
        for node_id, vec in self._rows(sql + " ORDER BY e.seq"):
            yield node_id, _np(vec)

    def drop_project(self) -> None:
        """Remove this project's schema and everything in it (tests, `memory unload` on a server)."""
        with self._lock:
            self._conn.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')

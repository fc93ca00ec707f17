"""The memory graph on PostgreSQL: one schema a project, pgvector (HNSW) and full-text search.

Same tables and the same behaviour as the SQLite store (`octygraph.store.sqlite`), so the graph, tools and
tests run on either. The keyword half scores Okapi BM25 (ranking.BM25_K1, BM25_B) from the `tsvector`
positions of the best full-text matches; the vector half asks the HNSW index for candidates; both are
fused by `octygraph.store.ranking`, as on SQLite.

Concurrency: every write transaction first locks the schema's `octy_state` row, so writers from any
number of processes queue in one order and none sees a half-written supersession; readers never wait.
"""

from __future__ import annotations

import re
import time
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
    EDGE_COLS,
    Edge,
    Embedder,
    EmbeddingMismatch,
    NewNode,
    Node,
    NotAnOctygraphDatabase,
    StoreError,
    _row_to_node,
    edge_row,
    node_from,
    node_row,
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


def ef_search_for(rows: int, partitions: int) -> int:
    """ef_search per graph: EF_SEARCH for one graph, else by rows per graph (see EF_SEARCH)."""
    if partitions <= 1:
        return EF_SEARCH
    return min(EF_SEARCH, max(EF_SEARCH_MIN, rows // partitions // EF_ROWS))


def schema_name(project_id: str) -> str:
    """The PostgreSQL schema of a project: `octy_` and its id folded to [a-z0-9_], at most 63 bytes."""
    folded = re.sub(r"[^a-z0-9_]", "_", project_id.lower()).strip("_") or "default"
    return f"octy_{folded}"[:63]


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
        super().__init__(embedder, conn)
        self.url = url
        self.schema = schema
        # Candidates each HNSW graph weighs per query (pgvector's hnsw.ef_search); more is slower,
        # surer. None: by the graphs' size (ef_for_size); benchmarks set a number.
        self.ef_search: int | None = None
        # HNSW graphs the vectors are split into (octy_meta `hnsw_partitions`, read at open).
        self.partitions = 1
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
                    self._new_meta(),
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

    def enable_vector_cache(self) -> None:
        """Nothing to do: the HNSW index answers in milliseconds without a copy in RAM."""

    # ------------------------------------------------------------------ writing

    def _insert_many(
        self, conn: Any, items: Sequence[NewNode], vecs: Sequence[np.ndarray] | np.ndarray
    ) -> list[Node]:
        # In batches, one round trip each; the edges after all the batch's nodes.
        nodes = [node_from(item) for item in items]
        vector_rows: list[tuple[Any, ...]] = []
        for node, vec in zip(nodes, vecs, strict=True):
            vector = np.asarray(vec, dtype=np.float32)
            if vector.shape[0] != self.embedder.dim:
                raise EmbeddingMismatch(
                    "A vector has another dimension than the store's; run `octygraph reindex`."
                )
            vector_rows.append((node.id, node.node_type, vector, node.created_at))
        with conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO nodes ({_NODE_COLS}) VALUES "
                "(%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                [node_row(node) for node in nodes],
            )
            cur.executemany(
                "INSERT INTO embeddings(node_id, node_type, active, vector, created_at) "
                "VALUES (%s, %s, TRUE, %s, %s)",
                vector_rows,
            )
        for item, node in zip(items, nodes, strict=True):
            self._link_new(conn, item, node)
        return nodes

    def _write_edge(self, conn: Any, edge: Edge) -> bool:
        # The unique index on an edge's ends and type skips a present one (ON CONFLICT).
        row = conn.execute(
            f"INSERT INTO edges({EDGE_COLS}) VALUES (%s,%s,%s,%s,%s,%s) "
            "ON CONFLICT DO NOTHING RETURNING id",
            edge_row(edge),
        ).fetchone()
        return row is not None

    def _lock_entity_name(self, conn: Any, name: str) -> None:
        """A lock on the folded name: PostgreSQL has no unique index on current entity names."""
        conn.execute(
            "SELECT pg_advisory_xact_lock(hashtext(%s))", (f"{self.schema}:{name.lower()}",)
        )

    def _delete_vector(self, conn: Any, node_id: str, position: Any) -> None:
        # The HNSW and type indexes follow the table.
        conn.execute("DELETE FROM embeddings WHERE node_id = %s", (node_id,))

    def _set_active(self, conn: Any, node_ids: Sequence[str], active: bool) -> None:
        conn.execute(
            "UPDATE embeddings SET active = %s WHERE node_id = ANY(%s)", (active, list(node_ids))
        )

    # ------------------------------------------------------------------ reading

    def get_nodes(self, ids: Iterable[str]) -> list[Node]:
        # Not shared: one array parameter, where SQLite goes in slices and keeps what it read.
        ids = list(dict.fromkeys(ids))
        if not ids:
            return []
        rows = self._rows(f"SELECT {_NODE_COLS} FROM nodes WHERE id = ANY(%s)", (ids,))
        out = {r[0]: _row_to_node(r) for r in rows}
        return [out[i] for i in ids if i in out]

    # ------------------------------------------------------------------ search

    def _vectors_of(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        rows = self._rows(
            "SELECT node_id, vector FROM embeddings WHERE node_id = ANY(%s)", (list(ids),)
        )
        return {r[0]: self._vector_from(r[1]) for r in rows}

    def cosines(self, query_vec: np.ndarray, ids: Iterable[str]) -> dict[str, float]:
        """Cosine similarity of the query to each stored node (vectors are unit length)."""
        # Not shared: SQLite scores each slice of vectors in one product, or from its vector cache.
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

    def _bytes_used(self) -> int:
        size = self._rows(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = %s AND c.relkind = 'r'",
            (self.schema,),
        )[0][0]
        return int(size)

    def _vector_from(self, value: Any) -> np.ndarray:
        """The driver hands back pgvector's own Vector type."""
        to_numpy = getattr(value, "to_numpy", None)
        return np.asarray(to_numpy() if to_numpy else value, dtype=np.float32)

    def reindex(self, progress: Callable[[int, int], None] | None = None, batch: int = 64) -> int:
        """Re-embed every node with the configured model; rebuilds the vector index. Returns the count."""
        rows = self._rows("SELECT id, content FROM nodes ORDER BY seq")
        # Embed everything first, then swap in one transaction: an interrupted reindex changes nothing.
        mat = self._embed_all([r[1] for r in rows], progress, batch).astype(np.float32)
        dim = int(self.embedder.dim)
        with self.transaction() as conn:
            for stmt in drop_vector_index_ddl():
                conn.execute(stmt)
            conn.execute("DELETE FROM embeddings")
            conn.execute(f"ALTER TABLE embeddings ALTER COLUMN vector TYPE vector({dim})")
            if rows:
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
        return len(rows)

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
                nodes = [node_from(item) for item in part]
                with self.transaction() as conn, conn.cursor() as cur:
                    with cur.copy(f"COPY nodes ({_NODE_COLS}) FROM STDIN") as copy:
                        for node in nodes:
                            copy.write_row(node_row(node))
                    # Binary COPY: the vectors go as raw floats, not as text to parse.
                    with cur.copy(
                        "COPY embeddings (node_id, node_type, active, vector) FROM STDIN (FORMAT BINARY)"
                    ) as copy:
                        copy.set_types(["text", "text", "bool", "vector"])
                        for node, vec in zip(nodes, vectors[start : start + step], strict=True):
                            copy.write_row(
                                (node.id, node.node_type, True, np.asarray(vec, np.float32))
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

    def drop_project(self) -> None:
        """Remove this project's schema and everything in it (tests, `memory unload` on a server)."""
        with self._lock:
            self._conn.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')

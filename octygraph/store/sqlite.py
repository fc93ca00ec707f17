"""The memory graph on SQLite: nodes, edges, embeddings, FTS5 and sqlite-vec, behind `MemoryStore`.

All SQL of octygraph lives in this package. Writes run inside `BEGIN IMMEDIATE` transactions with a busy
timeout and WAL, so two processes (two Claude sessions on one project) can write at once without loss.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import sqlean
import sqlite_vec

from octygraph.config.private import private_mkdir
from octygraph.store.base import StoreBase
from octygraph.store.dialect import SQLITE
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
)
from octygraph.store.ranking import BM25_B, BM25_K1
from octygraph.store.schema import (
    CORE_DDL,
    EDGE_PAIR_INDEX,
    SCHEMA_VERSION,
    SUPERSEDED_INDEX,
    vec_ddl,
)
from octygraph.store.vector_cache import VectorCache, cache_for, note_write, write_count
from octygraph.store.words import query_words

# FTS5 preselects this many keyword candidates per requested one (at least BM25_MIN_RESCORE) for rescoring.
BM25_RESCORE_FACTOR = 3
BM25_MIN_RESCORE = 300
KEYWORD_MEMO_SIZE = 256
"""Entries (a query's FTS5 rows, its row scores) kept per unchanged database before starting afresh."""
MAX_READ_NODES = 20_000
"""Nodes a long-lived store keeps from its reads until the database changes (see get_nodes)."""


@dataclass(frozen=True)
class KeywordInputs:
    """What BM25 ranks one query's keyword candidates on: rows in FTS5's order, terms as tokenized."""

    node_ids: list[str]
    terms: list[str]
    idf: np.ndarray  # (terms,)
    tf: np.ndarray  # (rows, terms) term counts
    rel_len: np.ndarray  # (rows,) document length / average length


def fts_query(text: str) -> str | None:
    """Turn free text into an FTS5 OR-query of its content words (quoted, so no syntax errors)."""
    terms = query_words(text)
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', "") + '"' for t in terms)


def _varints(blob: bytes) -> list[int]:
    """Decode SQLite varints (7 bits per byte, high bit = more, 9th byte whole), as FTS5 stores sizes."""
    out: list[int] = []
    i = 0
    while i < len(blob):
        value = 0
        for j in range(9):
            byte = blob[i]
            i += 1
            if j == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        out.append(value)
    return out


class MemoryStore(StoreBase):
    """The memory graph of one project, in one SQLite file."""

    dialect = SQLITE
    _name_taken = (sqlean.IntegrityError,)  # from ENTITY_NAME_UNIQUE

    def __init__(self, path: Path, embedder: Embedder, conn: Any) -> None:
        super().__init__(embedder, conn)
        self.path = path
        # Resolved once: the key of this process's vector cache and count of commits to the file.
        self._file = str(path.resolve())
        self._vector_cache: VectorCache | None = None
        self._read_nodes: dict[str, Node] = {}
        self._read_at: tuple[int, int, int] | None = None
        self._keyword_pieces: dict[Any, Any] = {}
        self._keyword_at: tuple[int, int, int] | None = None
        self.read_only = False

    def enable_vector_cache(self) -> None:
        """Serve vector searches from an in-memory matrix (for long-running processes; see vector_cache)."""
        self._vector_cache = cache_for(self._file)

    def revision(self) -> tuple[int, int, int]:
        """Changes whenever the database may have changed, as seen through this store's connection."""
        with self._lock:
            version = int(self._conn.execute("PRAGMA data_version").fetchone()[0])
        return id(self._conn), version, write_count(self._file)

    @property
    def location(self) -> str:
        """The database file, as the store protocol names where memories live."""
        return str(self.path)

    def _cached(self) -> VectorCache | None:
        cache = self._vector_cache
        if cache is not None:
            cache.refresh(self._conn)
        return cache

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(
        cls,
        path: str | Path,
        embedder: Embedder,
        *,
        create: bool = True,
        check_model: bool = True,
    ) -> MemoryStore:
        """Open (or create) the database at `path`.

        Raises `NotAnOctygraphDatabase` for a file that is not ours, `EmbeddingMismatch` when its vectors come
        from another model (unless `check_model` is false, as `reindex` needs), `StoreError` when missing and
        `create` is false.
        """
        path = Path(path)
        if not path.exists() and not create:
            raise StoreError(f"No memory database at {path}.")
        if path.exists() and path.is_dir():
            raise NotAnOctygraphDatabase(f"{path} is a folder, not an octygraph database.")
        if path.exists() and not path.is_file():
            raise NotAnOctygraphDatabase(
                f"{path} is not a regular file, so it cannot hold an octygraph database; "
                "point DB_PATH at a file."
            )
        if not path.exists():
            cls._create_atomically(path, embedder)
        existed = path.exists() and path.stat().st_size > 0
        if not existed:
            private_mkdir(path.parent)
        # A home we may only read (a read-only mount, another user's folder) still answers reads.
        read_only = existed and not (
            os.access(path, os.W_OK) and os.access(path.parent, os.W_OK | os.X_OK)
        )
        try:
            if read_only:
                conn = cls._connect_read_only(path)
            else:
                conn = sqlean.connect(
                    str(path), timeout=15.0, isolation_level=None, check_same_thread=False
                )
            conn.enable_load_extension(True)
            sqlite_vec.load(conn)
            conn.enable_load_extension(False)
            conn.execute("PRAGMA busy_timeout = 15000")
            tables = {
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
        except sqlean.DatabaseError as exc:
            if read_only or "unable to open" in str(exc):
                raise StoreError(
                    f"The memory database {path} cannot be opened ({exc}); check that you may "
                    "read it and its folder."
                ) from None
            raise NotAnOctygraphDatabase(
                f"{path} is not an octygraph database (SQLite says: {exc})."
            ) from None
        if existed and "octy_meta" not in tables:
            conn.close()
            raise NotAnOctygraphDatabase(
                f"{path} is not an octygraph database; point DB_PATH elsewhere or move the file away."
            )
        store = cls(path, embedder, conn)
        store.read_only = read_only
        try:
            store._init_schema(check_model=check_model)
        except BaseException:
            conn.close()
            raise
        if not existed:
            try:
                path.chmod(0o600)
            except OSError:
                pass
        return store

    @staticmethod
    def _connect_read_only(path: Path) -> sqlean.Connection:
        """A connection that only reads, even where SQLite may create no file beside the database.

        A WAL database opened read-only needs its `-shm` file, which a clean close removes and a folder
        we may only read cannot get back ("unable to open database file"). Then it is opened as
        immutable: nobody here can write it, so SQLite need not watch for writers.
        """
        uri = path.resolve().as_uri()
        kwargs: dict[str, Any] = {
            "uri": True,
            "timeout": 15.0,
            "isolation_level": None,
            "check_same_thread": False,
        }
        conn = sqlean.connect(f"{uri}?mode=ro", **kwargs)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return conn
        except sqlean.OperationalError:
            conn.close()
        return sqlean.connect(f"{uri}?mode=ro&immutable=1", **kwargs)

    @classmethod
    def _create_atomically(cls, path: Path, embedder: Embedder) -> None:
        """Build a new database's schema in a private temporary file, then link it into place.

        Concurrent first hooks on a new project then see either no file or a whole database, never
        one half-created (which they took for "not an octygraph database"). The loser of the race
        keeps the winner's file.
        """
        private_mkdir(path.parent)
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.creating")
        try:
            conn = sqlean.connect(str(tmp), timeout=15.0, isolation_level=None)
            try:
                conn.enable_load_extension(True)
                sqlite_vec.load(conn)
                conn.enable_load_extension(False)
                store = cls(tmp, embedder, conn)
                store._init_schema(check_model=False)
                conn.execute("PRAGMA journal_mode=DELETE")  # no -wal file left beside the temp file
            finally:
                conn.close()
            tmp.chmod(0o600)
            try:
                os.link(tmp, path)
            except FileExistsError:
                pass  # another process created it first: use theirs
        except OSError:
            pass  # e.g. a file system without hard links: the ordinary path below creates it
        finally:
            for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm"), Path(f"{tmp}-journal")):
                leftover.unlink(missing_ok=True)

    def _init_schema(self, *, check_model: bool) -> None:
        conn = self._conn
        if self.read_only:
            self._check_meta(check_model=check_model)  # nothing to create: we may only read
            return
        if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        with self.transaction():
            has_meta = conn.execute("SELECT 1 FROM sqlite_master WHERE name='octy_meta'").fetchone()
            if not has_meta:
                for stmt in _split_sql(CORE_DDL):
                    conn.execute(stmt)
                conn.execute(vec_ddl(self.embedder.dim))
                conn.executemany(
                    "INSERT OR REPLACE INTO octy_meta(key, value) VALUES (?, ?)",
                    self._new_meta(),
                )
        # Indexes added after the first schema; databases made before them get them here.
        with self.transaction():
            conn.execute(EDGE_PAIR_INDEX)
            conn.execute(SUPERSEDED_INDEX)
        try:
            with self.transaction():
                conn.execute(ENTITY_NAME_UNIQUE)
        except sqlean.IntegrityError:
            pass  # an older database already holds duplicates: `ensure_entity` still serialises
        self._check_meta(check_model=check_model)

    def _check_meta(self, *, check_model: bool) -> None:
        meta = self.meta()
        version = int(meta.get("schema_version", "0"))
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} was written by a newer octygraph (schema {version}); upgrade octygraph."
            )
        if check_model and meta.get("embedding_model") != self.embedder.model_id:
            raise EmbeddingMismatch(
                f"{self.path} holds vectors from {meta.get('embedding_model')} but the configured model is "
                f"{self.embedder.model_id}; run `octygraph reindex` to re-embed them."
            )

    def close(self) -> None:
        with self._lock:
            if self._vector_cache is not None:
                self._vector_cache.seen.pop(id(self._conn), None)
            super().close()

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """One write transaction, taken at once (BEGIN IMMEDIATE) so concurrent writers queue, not fail."""
        with self._lock:
            conn = self._conn
            if conn.in_transaction:
                yield conn
                return
            if self.read_only:
                raise StoreError(
                    f"The memory database {self.path} is read-only here; nothing can be written."
                )
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            else:
                conn.execute("COMMIT")
                note_write(self._file)

    # ------------------------------------------------------------------ writing

    def _insert_many(
        self, conn: Any, items: Sequence[NewNode], vecs: Sequence[np.ndarray] | np.ndarray
    ) -> list[Node]:
        # Row by row: the vector index takes each node's rowid, known once the node is in.
        nodes = []
        for item, vec in zip(items, vecs, strict=True):
            node = node_from(item)
            cur = conn.execute(
                f"INSERT INTO nodes ({_NODE_COLS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                node_row(node),
            )
            blob = np.asarray(vec, dtype=np.float32).tobytes()
            conn.execute(
                "INSERT INTO embeddings(node_id, node_type, vector, created_at) VALUES (?,?,?,?)",
                (node.id, node.node_type, blob, node.created_at),
            )
            conn.execute(
                "INSERT INTO vec_nodes(rowid, embedding, node_type, active) VALUES (?,?,?,1)",
                (cur.lastrowid, blob, node.node_type),
            )
            self._link_new(conn, item, node)
            nodes.append(node)
        return nodes

    def _edge_present(
        self, conn: Any, source_id: str, target_id: str, edge_type: str, edge_id: str | None
    ) -> bool:
        # SQLite files have no unique index on an edge's ends and type, so look first.
        if edge_id and conn.execute("SELECT 1 FROM edges WHERE id=?", (edge_id,)).fetchone():
            return True
        exists = conn.execute(
            "SELECT id FROM edges WHERE source_id=? AND target_id=? AND edge_type=?",
            (source_id, target_id, edge_type),
        ).fetchone()
        return exists is not None

    def _write_edge(self, conn: Any, edge: Edge) -> bool:
        conn.execute(f"INSERT INTO edges({EDGE_COLS}) VALUES (?,?,?,?,?,?)", edge_row(edge))
        return True

    def _delete_vector(self, conn: Any, node_id: str, position: Any) -> None:
        conn.execute("DELETE FROM embeddings WHERE node_id=?", (node_id,))
        conn.execute("DELETE FROM vec_nodes WHERE rowid=?", (position,))

    def _lock_entity_name(self, conn: Any, name: str) -> None:
        """Nothing more to do: the write transaction holds the whole file."""

    def _vector_from(self, value: Any) -> np.ndarray:
        return np.frombuffer(value, dtype=np.float32)

    def _set_active(self, conn: Any, node_ids: Sequence[str], active: bool) -> None:
        for node_id in node_ids:
            conn.execute(
                "UPDATE vec_nodes SET active=? WHERE rowid=(SELECT rowid FROM nodes WHERE id=?)",
                (1 if active else 0, node_id),
            )

    # ------------------------------------------------------------------ reading

    def get_nodes(self, ids: Iterable[str]) -> list[Node]:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return []
        out: dict[str, Node] = {}
        with self._lock:
            known = self._nodes_read_since_last_change()
            if known:
                out = {i: known[i] for i in ids if i in known}
            wanted = [i for i in ids if i not in out]
            for start in range(0, len(wanted), 500):
                part = wanted[start : start + 500]
                marks = ",".join("?" * len(part))
                for row in self._conn.execute(
                    f"SELECT {_NODE_COLS} FROM nodes WHERE id IN ({marks})", part
                ):
                    out[row[0]] = _row_to_node(row)
            if known is not None:
                known.update(out)
        return [out[i] for i in ids if i in out]

    def _nodes_read_since_last_change(self) -> dict[str, Node] | None:
        """The nodes this connection read since the database last changed; caller locks.

        Only with the vector cache on (the service, where every prompt loads hundreds of the same
        nodes), and never inside a transaction, whose reads see its own uncommitted writes.
        """
        if self._vector_cache is None or self._conn.in_transaction:
            return None
        key = self.revision()
        if key != self._read_at or len(self._read_nodes) > MAX_READ_NODES:
            self._read_nodes, self._read_at = {}, key
        return self._read_nodes

    # ------------------------------------------------------------------ search

    def cosines(self, query_vec: np.ndarray, ids: Iterable[str]) -> dict[str, float]:
        """Cosine similarity of the query to each stored node (vectors are unit length)."""
        ids = list(dict.fromkeys(ids))
        out: dict[str, float] = {}
        with self._lock:
            cache = self._cached()
            if cache is not None:
                found = cache.vectors(ids)
                if found and next(iter(found.values())).shape[0] != query_vec.shape[0]:
                    raise EmbeddingMismatch(
                        "Stored vectors have another dimension than the query; run `octygraph reindex`."
                    )
                q = query_vec.astype(np.float32)
                return {i: float(v @ q) for i, v in found.items()}
            for start in range(0, len(ids), 500):
                part = ids[start : start + 500]
                marks = ",".join("?" * len(part))
                rows = self._conn.execute(
                    f"SELECT node_id, vector FROM embeddings WHERE node_id IN ({marks})", part
                ).fetchall()
                if not rows:
                    continue
                mat = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(
                    len(rows), -1
                )
                if mat.shape[1] != query_vec.shape[0]:
                    raise EmbeddingMismatch(
                        "Stored vectors have another dimension than the query; run `octygraph reindex`."
                    )
                sims = mat @ query_vec.astype(np.float32)
                out.update({r[0]: float(s) for r, s in zip(rows, sims, strict=True)})
        return out

    def _vector_candidates(
        self,
        query_vec: np.ndarray,
        k: int,
        types: Sequence[str] | None,
        include_superseded: bool,
    ) -> list[tuple[str, float]]:
        with self._lock:
            cache = self._cached()
        if cache is not None:
            return cache.knn(query_vec, k, types, include_superseded)
        sql = "SELECT rowid, distance FROM vec_nodes WHERE embedding MATCH ? AND k = ?"
        args: list[Any] = [query_vec.astype(np.float32).tobytes(), int(k)]
        if not include_superseded:
            sql += " AND active = 1"
        if types:
            sql += f" AND node_type IN ({','.join('?' * len(types))})"
            args.extend(types)
        with self._lock:
            rows = self._conn.execute(sql, args).fetchall()
            if not rows:
                return []
            marks = ",".join("?" * len(rows))
            ids = dict(
                self._conn.execute(
                    f"SELECT rowid, id FROM nodes WHERE rowid IN ({marks})", [r[0] for r in rows]
                ).fetchall()
            )
        return [(ids[r[0]], 1.0 - float(r[1])) for r in rows if r[0] in ids]

    def _fts_preselect(
        self,
        match: str,
        preselect: int,
        where: list[str],
        args: list[Any],
        *,
        exact: bool,
        memo: dict[Any, Any] | None = None,
    ) -> list[Any]:
        """(id, rowid, FTS5 rank) of the best `preselect` matches that pass the filters. Caller locks.

        Not `exact`: FTS5's best rows first, then the filters (joining every match to `nodes` before
        the sort costs more than the search itself on large databases). `exact`: filter first.
        With `memo`, FTS5's best rows are kept per query: one prompt searches the same words several
        times with other filters (facts, instructions, plans, the safety nets).
        """
        conditions = " AND ".join(where) if where else "1"
        if not exact and memo is not None:
            ranked = memo.get(("fts", match, preselect))
            if ranked is None:
                ranked = memo[("fts", match, preselect)] = self._conn.execute(
                    "SELECT rowid, bm25(nodes_fts) AS rank FROM nodes_fts WHERE nodes_fts MATCH ? "
                    "ORDER BY rank LIMIT ?",
                    [match, int(preselect)],
                ).fetchall()
            if not ranked:
                return []
            # The same rows, filters and order as the single query below (SQLite scans its ordered
            # subquery there, so FTS5's order, ties included, is the answer's).
            marks = ",".join("?" * len(ranked))
            passing = dict(
                self._conn.execute(
                    f"SELECT n.rowid, n.id FROM nodes n WHERE n.rowid IN ({marks}) AND {conditions}",
                    [*(r[0] for r in ranked), *args],
                ).fetchall()
            )
            return [(passing[r], r, rank) for r, rank in ranked if r in passing]
        if not exact:
            sql = (
                "SELECT n.id, f.rowid, f.rank FROM (SELECT rowid, bm25(nodes_fts) AS rank "
                "FROM nodes_fts WHERE nodes_fts MATCH ? ORDER BY rank LIMIT ?) f "
                f"JOIN nodes n ON n.rowid = f.rowid WHERE {conditions} ORDER BY f.rank"
            )
            return self._conn.execute(sql, [match, int(preselect), *args]).fetchall()
        if memo is not None:
            # Every match in FTS5's order, kept per query; each filter then picks its first rows.
            ordered = memo.get(("all", match))
            if ordered is None:
                ordered = memo[("all", match)] = self._conn.execute(
                    "SELECT rowid, bm25(nodes_fts) AS rank FROM nodes_fts WHERE nodes_fts MATCH ? "
                    "ORDER BY rank",
                    [match],
                ).fetchall()
            passing = dict(
                self._conn.execute(
                    "SELECT n.rowid, n.id FROM nodes n WHERE n.rowid IN "
                    f"(SELECT rowid FROM nodes_fts WHERE nodes_fts MATCH ?) AND {conditions}",
                    [match, *args],
                ).fetchall()
            )
            picked = [(passing[r], r, rank) for r, rank in ordered if r in passing]
            return picked[: int(preselect)]
        sql = (
            "SELECT n.id, nodes_fts.rowid, bm25(nodes_fts) AS rank FROM nodes_fts "
            f"JOIN nodes n ON n.rowid = nodes_fts.rowid WHERE nodes_fts MATCH ? AND {conditions} "
            "ORDER BY rank LIMIT ?"
        )
        return self._conn.execute(sql, [match, *args, int(preselect)]).fetchall()

    def _keyword_memo(self) -> dict[Any, Any] | None:
        """Keyword-search pieces kept while the database is unchanged (`revision`); None inside a
        write transaction, whose rows only it sees. Caller locks."""
        if self._conn.in_transaction:
            return None
        key = self.revision()
        if key != self._keyword_at or len(self._keyword_pieces) > KEYWORD_MEMO_SIZE:
            self._keyword_pieces, self._keyword_at = {}, key
        return self._keyword_pieces

    def _keyword_candidates(
        self, query: str, k: int, where: list[str], args: list[Any]
    ) -> list[tuple[str, float]]:
        """The `k` best BM25 matches (higher is better) that pass the filters."""
        match = fts_query(query)
        if match is None:
            return []
        preselect = max(k * BM25_RESCORE_FACTOR, BM25_MIN_RESCORE)
        with self._lock:
            memo = self._keyword_memo()
            rows = self._fts_preselect(match, preselect, where, args, exact=False, memo=memo)
            if len(rows) < min(k, preselect):
                rows = self._fts_preselect(match, preselect, where, args, exact=True, memo=memo)
            try:
                scores = self._bm25_memo(match, [r[1] for r in rows], memo)
            except sqlean.DatabaseError:
                scores = None  # no fts5vocab in this SQLite: keep FTS5's own ranking
        if scores is None:
            # FTS5's bm25() is negative (lower is better); flip it so higher is better.
            return [(r[0], -float(r[2])) for r in rows[:k]]
        # sorted() is stable: FTS5's own order breaks ties.
        ranked = sorted(rows, key=lambda r: -scores.get(r[1], 0.0))
        return [(r[0], scores.get(r[1], 0.0)) for r in ranked[:k]]

    def keyword_inputs(self, query: str, preselect: int) -> KeywordInputs | None:
        """What BM25 ranks a query's keyword candidates on (current memories), for offline tuning.

        None when the query has no searchable words or matches nothing.
        """
        match = fts_query(query)
        if match is None:
            return None
        where, args = self._filters(None, None, None, None, False)
        with self._lock:
            rows = self._fts_preselect(match, preselect, where, args, exact=False)
            inputs = self._bm25_inputs(match, [r[1] for r in rows])
        if inputs is None:
            return None
        terms, idf, tf, rel_len = inputs
        return KeywordInputs([r[0] for r in rows], terms, idf, tf, rel_len)

    def _bm25_memo(
        self, match: str, rowids: Sequence[int], memo: dict[Any, Any] | None
    ) -> dict[int, float]:
        """`_bm25`, scoring only rows not scored for this query yet (a row's score depends on the
        query, the row and the index's statistics, not on the other rows). Caller holds the lock."""
        if memo is None:
            return self._bm25(match, rowids)
        known: dict[int, float] = memo.setdefault(("bm25", match), {})
        missing = [r for r in dict.fromkeys(rowids) if r not in known]
        if missing:
            fresh = self._bm25(match, missing)
            known.update({r: fresh.get(r, 0.0) for r in missing})
        return {r: known[r] for r in rowids}

    def _bm25(self, match: str, rowids: Sequence[int]) -> dict[int, float]:
        """Okapi BM25 (BM25_K1, BM25_B, non-negative idf) of FTS5 rows. Caller holds the lock."""
        inputs = self._bm25_inputs(match, rowids)
        if inputs is None:
            return {}
        _, idf, tf, rel_len = inputs
        k1, b = BM25_K1, BM25_B
        norm = (k1 * (1 - b + b * rel_len))[:, None]
        scores = (idf[None, :] * tf * (k1 + 1) / (tf + norm)).sum(axis=1)
        return dict(zip(rowids, scores.tolist(), strict=True))

    def _bm25_inputs(
        self, match: str, rowids: Sequence[int]
    ) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray] | None:
        """The query's terms, their idf, term counts (rows x terms) and relative lengths of FTS5 rows.

        Everything comes from the index's own statistics: the query terms go through the index's
        tokenizer (a temp FTS5 table), term and document counts come from fts5vocab tables, lengths
        from FTS5's docsize and averages records. Caller holds the lock.
        """
        if not rowids:
            return None
        conn = self._conn
        if not getattr(self, "_bm25_ready", False):
            tokenize = "porter unicode61"
            row = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'nodes_fts'").fetchone()
            found = re.search(r"tokenize\s*=\s*'([^']*)'", row[0] if row else "")
            if found:
                tokenize = found.group(1)
            for ddl in (
                f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.octy_qtok USING fts5(q, tokenize='{tokenize}')",
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.octy_qtok_inst "
                "USING fts5vocab(temp, octy_qtok, instance)",
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.octy_fts_inst "
                "USING fts5vocab(main, nodes_fts, instance)",
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.octy_fts_row "
                "USING fts5vocab(main, nodes_fts, row)",
            ):
                conn.execute(ddl)
            self._bm25_ready = True
        conn.execute("DELETE FROM temp.octy_qtok")
        words = " ".join(re.findall(r'"([^"]*)"', match))
        conn.execute("INSERT INTO temp.octy_qtok(rowid, q) VALUES (1, ?)", [words])
        terms = [t for (t,) in conn.execute("SELECT DISTINCT term FROM temp.octy_qtok_inst")]
        averages = conn.execute("SELECT block FROM nodes_fts_data WHERE id = 1").fetchone()
        if not terms or averages is None:
            return None
        n_docs, n_tokens = (_varints(averages[0]) + [0, 0])[:2]
        avg_len = max(n_tokens / max(n_docs, 1), 1e-9)
        term_marks = ",".join("?" * len(terms))
        term_index = {t: j for j, t in enumerate(terms)}
        idf = np.zeros(len(terms))
        for term, df in conn.execute(
            f"SELECT term, doc FROM temp.octy_fts_row WHERE term IN ({term_marks})", terms
        ):
            idf[term_index[term]] = float(np.log1p((n_docs - df + 0.5) / (df + 0.5)))
        row_index = {rowid: i for i, rowid in enumerate(rowids)}
        tf = np.zeros((len(rowids), len(terms)))
        rel_len = np.ones(len(rowids))  # a row without a docsize record counts as average
        for start in range(0, len(rowids), 500):
            part = list(rowids[start : start + 500])
            marks = ",".join("?" * len(part))
            for i, sz in conn.execute(
                f"SELECT id, sz FROM nodes_fts_docsize WHERE id IN ({marks})", part
            ):
                size = (sz[0] if sz[0] < 0x80 else _varints(sz)[0]) if sz else 0
                rel_len[row_index[i]] = size / avg_len
            for doc, term, count in conn.execute(
                f"SELECT doc, term, count(*) FROM temp.octy_fts_inst WHERE term IN ({term_marks}) "
                f"AND doc IN ({marks}) GROUP BY doc, term",
                [*terms, *part],
            ):
                tf[row_index[doc], term_index[term]] = count
        return terms, idf, tf, rel_len

    def _vectors_of(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors of these nodes (unit length), by id."""
        out: dict[str, np.ndarray] = {}
        with self._lock:
            cache = self._cached()
            if cache is not None:
                return cache.vectors(ids)
            for start in range(0, len(ids), 500):
                part = list(ids[start : start + 500])
                marks = ",".join("?" * len(part))
                for node_id, blob in self._conn.execute(
                    f"SELECT node_id, vector FROM embeddings WHERE node_id IN ({marks})", part
                ):
                    out[node_id] = np.frombuffer(blob, dtype=np.float32)
        return out

    def _bytes_used(self) -> int:
        return sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal")) if p.exists())

    def reindex(self, progress: Callable[[int, int], None] | None = None, batch: int = 64) -> int:
        """Re-embed every node with the configured model; rebuilds the vector index. Returns the count."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT rowid, id, node_type, content, superseded_by FROM nodes ORDER BY rowid"
            ).fetchall()
        # Embed everything first, then swap in one transaction: an interrupted reindex changes nothing.
        mat = self._embed_all([r[3] for r in rows], progress, batch)
        with self.transaction() as conn:
            conn.execute("DROP TABLE IF EXISTS vec_nodes")
            conn.execute(vec_ddl(self.embedder.dim))
            conn.execute("DELETE FROM embeddings")
            for (rowid, node_id, node_type, _content, superseded), vec in zip(
                rows, mat, strict=True
            ):
                blob = np.asarray(vec, dtype=np.float32).tobytes()
                conn.execute(
                    "INSERT INTO embeddings(node_id, node_type, vector) VALUES (?,?,?)",
                    (node_id, node_type, blob),
                )
                conn.execute(
                    "INSERT INTO vec_nodes(rowid, embedding, node_type, active) VALUES (?,?,?,?)",
                    (rowid, blob, node_type, 0 if superseded else 1),
                )
            conn.executemany(
                "INSERT OR REPLACE INTO octy_meta(key, value) VALUES (?, ?)",
                [
                    ("embedding_model", self.embedder.model_id),
                    ("embedding_dim", str(self.embedder.dim)),
                ],
            )
        return len(rows)

    def backup_to(self, target: str | Path) -> None:
        """Copy this database to `target` with SQLite's online backup (consistent during writes)."""
        target = Path(target)
        private_mkdir(target.parent)
        tmp = target.with_name(target.name + ".partial")
        if tmp.exists():
            tmp.unlink()
        dest = sqlean.connect(str(tmp))
        try:
            with self._lock:
                self._conn.backup(dest)
            dest.execute("PRAGMA journal_mode=DELETE")
        finally:
            dest.close()
        tmp.replace(target)
        try:
            target.chmod(0o600)
        except OSError:
            pass


ENTITY_NAME_UNIQUE = (
    "CREATE UNIQUE INDEX IF NOT EXISTS idx_entity_name_unique ON nodes(lower(content)) "
    "WHERE node_type = 'entity' AND superseded_by IS NULL"
)
"""One current entity per name, whatever its case."""


def _split_sql(script: str) -> list[str]:
    """Split a DDL script into statements, keeping trigger bodies whole."""
    statements: list[str] = []
    buf: list[str] = []
    in_trigger = False
    for line in script.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("--"):
            continue
        buf.append(line)
        upper = stripped.upper()
        if upper.startswith("CREATE TRIGGER"):
            in_trigger = True
        if in_trigger:
            if upper == "END;":
                statements.append("\n".join(buf))
                buf, in_trigger = [], False
        elif stripped.endswith(";"):
            statements.append("\n".join(buf))
            buf = []
    if buf:
        statements.append("\n".join(buf))
    return statements

"""An in-memory copy of a database's vectors, for long-running processes (the resident service).

sqlite-vec scans the whole vec0 table for every KNN query (about 20 ms at 20,000 nodes on 2 cores); NumPy
does the same scan over a matrix in RAM in about 1 ms. Loading the matrix costs about 90 ms, so only a
process that searches many times (the service) turns it on.

Freshness: each connection remembers the `PRAGMA data_version` (changes when *another* connection
commits) and this process's write counter for the file (changes when any of our own connections commits)
it last saw. When either moved, the cache appends new rows and re-reads which nodes are superseded; a
deletion or a re-embedding (fewer rows, or a row that changed) reloads it whole.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

_WRITES: dict[str, int] = {}
_REGISTRY: dict[str, VectorCache] = {}
_LOCK = threading.Lock()
RECENT_QUERIES = 8


def note_write(path: str) -> None:
    """Called after every commit by this process to `path`."""
    with _LOCK:
        _WRITES[path] = _WRITES.get(path, 0) + 1


def write_count(path: str) -> int:
    """How many commits this process has made to `path`."""
    return _WRITES.get(path, 0)


def cache_for(path: str) -> VectorCache:
    """The shared cache of one database file (one per process)."""
    with _LOCK:
        cache = _REGISTRY.get(path)
        if cache is None:
            cache = _REGISTRY[path] = VectorCache(path)
        return cache


@dataclass
class VectorCache:
    path: str
    rowids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    ids: list[str] = field(default_factory=list)
    types: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=object))
    active: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    matrix: np.ndarray | None = None
    _spare: np.ndarray | None = None  # the buffer `matrix` is the front of (see `_append`)
    max_rowid: int = 0
    index: dict[str, int] = field(default_factory=dict)
    seen: dict[int, tuple[int, int]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # A run searches with one prompt vector several times (facts, instructions, rules, the safety
    # nets): the similarities over the whole matrix are kept for the last few vectors, and the type
    # masks per filter, until the matrix changes.
    recent_sims: dict[bytes, np.ndarray] = field(default_factory=dict)
    type_masks: dict[tuple[str, ...], np.ndarray] = field(default_factory=dict)

    def refresh(self, conn: Any) -> None:
        """Bring the cache up to date for a search through `conn` (cheap when nothing changed)."""
        key = (int(conn.execute("PRAGMA data_version").fetchone()[0]), _WRITES.get(self.path, 0))
        with self.lock:
            if self.matrix is not None and self.seen.get(id(conn)) == key:
                return
            # Two queries: SQLite answers each from the b-tree alone (0.01 ms at 20,000 rows),
            # while one query asking for both scans the table (0.8 ms).
            (count,) = conn.execute("SELECT count(*) FROM embeddings").fetchone()
            (top,) = conn.execute("SELECT coalesce(max(rowid), 0) FROM embeddings").fetchone()
            rows = conn.execute(
                "SELECT e.rowid, e.node_id, e.node_type, e.vector FROM embeddings e "
                "WHERE e.rowid > ? ORDER BY e.rowid",
                (self.max_rowid if self.matrix is not None else -1,),
            ).fetchall()
            if self.matrix is None or len(self.ids) + len(rows) != count:
                # Deleted or re-embedded rows: start again from the table.
                rows = conn.execute(
                    "SELECT e.rowid, e.node_id, e.node_type, e.vector FROM embeddings e ORDER BY e.rowid"
                ).fetchall()
                self._reset()
            if rows or not self.ids:
                # The matrix changes: so do the similarities and type masks computed over it.
                self.recent_sims.clear()
                self.type_masks.clear()
            if rows:
                mat = np.frombuffer(b"".join(r[3] for r in rows), dtype=np.float32).reshape(
                    len(rows), -1
                )
                start = len(self.ids)
                self._append(mat, start)
                self.rowids = np.concatenate(
                    [self.rowids, np.array([r[0] for r in rows], dtype=np.int64)]
                )
                self.types = np.concatenate(
                    [self.types, np.array([r[2] for r in rows], dtype=object)]
                )
                for offset, row in enumerate(rows):
                    self.index[row[1]] = start + offset
                self.ids.extend(r[1] for r in rows)
            self.max_rowid = int(top)
            # Most refreshes follow a run's own small write: mark the few superseded nodes through
            # the index rather than testing all 20,000 ids.
            active = np.ones(len(self.ids), dtype=bool)
            for (node_id,) in conn.execute("SELECT id FROM nodes WHERE superseded_by IS NOT NULL"):
                position = self.index.get(node_id)
                if position is not None:
                    active[position] = False
            self.active = active
            if self.matrix is None:
                self.matrix = np.zeros((0, 0), dtype=np.float32)
            self.seen[id(conn)] = key

    def _reset(self) -> None:
        self.rowids = np.zeros(0, dtype=np.int64)
        self.ids = []
        self.types = np.zeros(0, dtype=object)
        self.active = np.zeros(0, dtype=bool)
        self.matrix = None
        self._spare = None
        self.index = {}

    def _append(self, rows: np.ndarray, start: int) -> None:
        """`matrix` grows by `rows`, written into spare capacity: after a run's write of a memory or
        two, copying the whole matrix (30 MB at 20,000 nodes) would cost the next prompt a few ms.
        Rows already in `matrix` never move, so views handed out by `vectors` stay valid."""
        end = start + len(rows)
        spare = self._spare  # None after `_reset`: then `start` is 0
        if spare is None or spare.shape[0] < end:
            grown = np.empty((end + max(256, end // 8), rows.shape[1]), dtype=np.float32)
            if spare is not None:
                grown[:start] = spare[:start]
            spare = self._spare = grown
        spare[start:end] = rows
        self.matrix = spare[:end]

    def knn(
        self, query: np.ndarray, k: int, types: Sequence[str] | None, include_superseded: bool
    ) -> list[tuple[str, float]]:
        """The k nearest nodes by cosine (vectors are unit length), filtered like the vec0 query."""
        with self.lock:
            if self.matrix is None or not self.ids:
                return []
            sims = self._similarities(query.astype(np.float32))
            mask = np.ones(len(self.ids), dtype=bool) if include_superseded else self.active.copy()
            if types:
                mask &= self._type_mask(tuple(types))
            sims = np.where(mask, sims, -np.inf)
            k = min(k, int(mask.sum()))
            if k <= 0:
                return []
            top = np.argpartition(-sims, k - 1)[:k]
            top = top[np.argsort(-sims[top], kind="stable")]
            return [(self.ids[i], float(sims[i])) for i in top]

    def _similarities(self, query: np.ndarray) -> np.ndarray:
        """`matrix @ query`, reused for a vector searched with a moment ago (under `lock`)."""
        assert self.matrix is not None
        key = query.tobytes()
        sims = self.recent_sims.get(key)
        if sims is None:
            sims = self.matrix @ query
            sims.flags.writeable = False  # shared by later searches
            if len(self.recent_sims) >= RECENT_QUERIES:
                self.recent_sims.pop(next(iter(self.recent_sims)))
            self.recent_sims[key] = sims
        return sims

    def _type_mask(self, types: tuple[str, ...]) -> np.ndarray:
        mask = self.type_masks.get(types)
        if mask is None:
            mask = self.type_masks[types] = np.isin(self.types, list(types))
            mask.flags.writeable = False
        return mask

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        with self.lock:
            if self.matrix is None:
                return {}
            return {i: self.matrix[self.index[i]] for i in ids if i in self.index}

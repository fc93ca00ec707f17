"""The local checkpoint file (`checkpoints.db`, LangGraph's SQLite saver): what retention reads and prunes.

LangGraph owns the tables (`checkpoints`, `writes`, one thread a run); these helpers only count and delete
threads by id, so the SQL stays beside the rest of octygraph's.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection
from pathlib import Path


def _connect(path: Path) -> sqlite3.Connection:
    # `timeout` is SQLite's busy timeout: wait for a run that is writing its checkpoints.
    return sqlite3.connect(str(path), timeout=15.0)


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def checkpoint_threads(path: Path) -> set[str]:
    """The thread (run) ids that have checkpoints in the file; empty when there is none yet."""
    if not path.is_file():
        return set()
    conn = _connect(path)
    try:
        if "checkpoints" not in _tables(conn):
            return set()
        return {r[0] for r in conn.execute("SELECT DISTINCT thread_id FROM checkpoints")}
    finally:
        conn.close()


def prune_checkpoints(path: Path, before: str, keep: Collection[str] = ()) -> int:
    """Delete the checkpoints of runs whose id sorts before `before`, except those in `keep` (runs in
    flight, which a restarted service resumes from them); returns how many runs."""
    if not path.is_file():
        return 0
    conn = _connect(path)
    try:
        conn.execute("PRAGMA secure_delete = ON")  # freed pages are zeroed, not left readable
        tables = _tables(conn)
        if "checkpoints" not in tables:
            return 0
        kept = sorted(keep)
        spared = f" AND thread_id NOT IN ({','.join('?' * len(kept))})" if kept else ""
        where, args = f"thread_id < ?{spared}", (before, *kept)
        with conn:
            count = conn.execute(
                f"SELECT COUNT(DISTINCT thread_id) FROM checkpoints WHERE {where}", args
            ).fetchone()[0]
            for table in ("checkpoints", "writes"):
                if table in tables:
                    conn.execute(f"DELETE FROM {table} WHERE {where}", args)
        if count:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return int(count)
    finally:
        conn.close()

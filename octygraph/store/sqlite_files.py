"""Database files as wholes: checking one before use, copying one, and restoring one into the live database.

Copies use SQLite's online backup, never a file copy, so a database that another process is writing is
copied consistently. Restoring writes into the live file through the same API: other readers (a Claude
session's hook) see either the old or the new content, never a mix, and the WAL stays coherent.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlean

from octygraph.config.private import private_mkdir
from octygraph.store import StoreError
from octygraph.store.schema import SCHEMA_VERSION

SQLITE_MAGIC = b"SQLite format 3\x00"
DatabaseError = sqlean.DatabaseError  # what a damaged file raises, for callers outside the store
SIDECARS = ("-wal", "-shm", "-journal")


class ProfileError(StoreError):
    """A profile or snapshot cannot be used; the message is one sentence that says what to do."""


@dataclass(frozen=True)
class DbInfo:
    """What a database file holds, read without changing it."""

    path: Path
    embedding_model: str
    embedding_dim: int
    schema_version: int
    nodes: int
    edges: int
    superseded: int
    file_bytes: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "embedding_model": self.embedding_model,
            "embedding_dim": self.embedding_dim,
            "schema_version": self.schema_version,
            "nodes": self.nodes,
            "edges": self.edges,
            "superseded": self.superseded,
            "file_bytes": self.file_bytes,
        }


def file_bytes(path: Path) -> int:
    """Size of a database with its WAL (what it really takes on disk)."""
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())


def is_sqlite_file(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


def _connect_ro(path: Path) -> Any:
    """A read-only connection that leaves no `-wal`/`-shm` files behind next to a closed database."""
    uri = f"{path.resolve().as_uri()}?mode=ro"
    with path.open("rb") as handle:
        header = handle.read(20)
    # A WAL-mode file without a WAL has nothing pending: read it as immutable (no locks, no sidecars).
    if header[18:19] == b"\x02" and not Path(f"{path}-wal").exists():
        uri += "&immutable=1"
    return sqlean.connect(uri, uri=True, timeout=15.0)


def _backup_into(src: Any, target: Path, pragma: str, *, timeout: float = 5.0) -> None:
    """Copy the database `src` is connected to over `target` (SQLite's online backup), then run
    `pragma` on the copy. `timeout`: how long to wait for a lock on `target` (SQLite's default 5 s)."""
    dest = sqlean.connect(str(target), timeout=timeout)
    try:
        src.backup(dest)
        dest.execute(pragma)
    finally:
        dest.close()


def inspect_database(path: Path, what: str) -> DbInfo:
    """Read an octygraph database's model and counts, read-only; refuses anything else.

    Args:
        path: The database file.
        what: How to name it in messages, e.g. "Snapshot 'pre-demo'".

    Raises:
        ProfileError: Missing, not SQLite, damaged, not octygraph, or from a newer octygraph.
    """
    if not path.is_file():
        raise ProfileError(f"{what} does not exist ({path}).")
    if not is_sqlite_file(path):
        raise ProfileError(f"{what} is not a SQLite database ({path}); nothing was changed.")
    try:
        conn = _connect_ro(path)
        try:
            check = conn.execute("PRAGMA quick_check(1)").fetchone()
            if not check or check[0] != "ok":
                raise ProfileError(f"{what} is damaged ({path}); nothing was changed.")
            tables = {
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
            if not {"octy_meta", "nodes", "edges", "embeddings"} <= tables:
                raise ProfileError(
                    f"{what} is not an octygraph database ({path}); nothing was changed."
                )
            meta = dict(conn.execute("SELECT key, value FROM octy_meta").fetchall())
            nodes, superseded = conn.execute(
                "SELECT count(*), count(superseded_by) FROM nodes"
            ).fetchone()
            edges = conn.execute("SELECT count(*) FROM edges").fetchone()[0]
        finally:
            conn.close()
    except sqlean.DatabaseError as exc:
        raise ProfileError(f"{what} cannot be read ({path}: {exc}); nothing was changed.") from None
    version = int(meta.get("schema_version", "0") or 0)
    if version > SCHEMA_VERSION:
        raise ProfileError(f"{what} was written by a newer octygraph; upgrade octygraph to use it.")
    return DbInfo(
        path=path,
        embedding_model=meta.get("embedding_model", ""),
        embedding_dim=int(meta.get("embedding_dim", "0") or 0),
        schema_version=version,
        nodes=int(nodes),
        edges=int(edges),
        superseded=int(superseded),
        file_bytes=file_bytes(path),
    )


def check_usable(path: Path, what: str, model_id: str, fix: str) -> DbInfo:
    """`inspect_database`, plus: its vectors must come from the configured model (`fix` says what to do)."""
    info = inspect_database(path, what)
    if info.embedding_model != model_id:
        raise ProfileError(
            f"{what} holds vectors from {info.embedding_model or 'an unknown model'} but the configured "
            f"model is {model_id}; {fix}"
        )
    return info


def backup_file(source: Path, target: Path) -> None:
    """Copy a database with the online backup API into `target` (a temp file first, then a rename).

    The copy is left in rollback-journal mode, so it is one self-contained file.
    """
    private_mkdir(target.parent)
    tmp = target.with_name(f".{target.name}.partial")
    _remove(tmp)
    src = sqlean.connect(str(source), timeout=15.0)
    try:
        _backup_into(src, tmp, "PRAGMA journal_mode=DELETE")
    except BaseException:
        _remove(tmp)
        raise
    finally:
        src.close()
    os.replace(tmp, target)
    _private(target)


def raw_copy(source: Path, target: Path) -> None:
    """Byte copy of a file that SQLite cannot read (with its WAL), so even a damaged database is kept."""
    private_mkdir(target.parent)
    shutil.copy2(source, target)
    _private(target)
    wal = Path(f"{source}-wal")
    if wal.exists():
        shutil.copy2(wal, Path(f"{target}-wal"))
        _private(Path(f"{target}-wal"))


def restore_into(source: Path, live: Path) -> None:
    """Make the live database's content exactly that of `source` (already checked with `check_usable`).

    A healthy live database is overwritten through the backup API in one transaction, so other connections
    stay consistent. A missing or unreadable one is replaced by a finished temp file, with its stale
    `-wal`/`-shm` removed first (they would otherwise be replayed onto the new file).
    """
    private_mkdir(live.parent)
    if _healthy(live):
        src = _connect_ro(source)
        try:
            # Fold the copied pages into the main file; harmless when a reader holds it back.
            _backup_into(src, live, "PRAGMA wal_checkpoint(TRUNCATE)", timeout=15.0)
        except sqlean.DatabaseError as exc:
            raise ProfileError(
                f"Could not copy {source.name} into the active database (SQLite says: {exc}); "
                "the active database is unchanged."
            ) from None
        finally:
            src.close()
        _private(live)
        return
    tmp = live.with_name(f".{live.name}.restoring")
    _remove(tmp)
    src = _connect_ro(source)
    try:
        _backup_into(src, tmp, "PRAGMA journal_mode=WAL")
    finally:
        src.close()
    for suffix in SIDECARS:
        _remove(Path(f"{live}{suffix}"))
    os.replace(tmp, live)
    _private(live)


def _healthy(path: Path) -> bool:
    """A non-empty SQLite file that passes a quick check (so the backup API can write into it)."""
    if not (path.is_file() and path.stat().st_size > 0 and is_sqlite_file(path)):
        return False
    try:
        conn = sqlean.connect(str(path), timeout=15.0)
        try:
            row = conn.execute("PRAGMA quick_check(1)").fetchone()
        finally:
            conn.close()
    except sqlean.DatabaseError:
        return False
    return bool(row) and row[0] == "ok"


def remove_database(path: Path) -> None:
    """Delete a database file and its sidecars."""
    for candidate in (path, *(Path(f"{path}{s}") for s in SIDECARS)):
        _remove(candidate)


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass


def _private(path: Path) -> None:
    try:
        path.chmod(0o600)
    except OSError:
        pass

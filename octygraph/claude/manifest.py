"""The stored-memory manifest: which nodes each session stored, for review and deletion.

File: `<memory>/debug/.stored-manifest.json`, `{"version": 1, "entries": [...]}`. Several Claude Code
sessions may write at once, so every read-modify-write holds an exclusive `fcntl` lock on a sibling
`.lock` file and replaces the manifest atomically. A manifest that does not parse is moved aside to
`.stored-manifest.json.corrupt-<timestamp>` and a fresh one is started, so nothing is silently lost.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from typing_extensions import TypedDict

from octygraph.config.private import private_mkdir

VERSION = 1
ENTRY_FIELDS = ("session_id", "node_id", "type", "subtype", "content", "source", "stored_at")

T = TypeVar("T")


class ManifestEntry(TypedDict):
    """One stored node."""

    session_id: str
    node_id: str
    type: str
    subtype: str | None
    content: str
    source: str
    stored_at: str


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def normalize_entry(raw: Mapping[str, Any]) -> ManifestEntry:
    """Coerce a mapping into a manifest entry (missing fields get defaults, stored_at = now).

    Raises:
        ValueError: when `node_id` is missing or empty.
    """
    node_id = str(raw.get("node_id") or "").strip()
    if not node_id:
        raise ValueError("A manifest entry needs a node_id.")
    subtype = raw.get("subtype")
    return ManifestEntry(
        session_id=str(raw.get("session_id") or ""),
        node_id=node_id,
        type=str(raw.get("type") or ""),
        subtype=None if subtype in (None, "") else str(subtype),
        content=str(raw.get("content") or ""),
        source=str(raw.get("source") or "user"),
        stored_at=str(raw.get("stored_at") or _now()),
    )


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock for `path` (on `<path>.lock`, which is never replaced)."""
    private_mkdir(path.parent)
    lock_path = path.with_name(path.name + ".lock")
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def _move_aside(path: Path) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    os.replace(path, target)
    return target


def _read_unlocked(path: Path) -> list[ManifestEntry]:
    """Read entries; a corrupt file is moved aside and treated as empty (caller holds the lock)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except UnicodeDecodeError:
        _move_aside(path)
        return []
    try:
        data = json.loads(text)
        # A bare list is accepted too: it is how an older manifest may look.
        items = data if isinstance(data, list) else data["entries"]
        if not isinstance(items, list):
            raise TypeError("entries is not a list")
        return [normalize_entry(item) for item in items]
    except (ValueError, KeyError, TypeError, AttributeError):
        _move_aside(path)
        return []


def _write_unlocked(path: Path, entries: list[ManifestEntry]) -> None:
    """Write atomically: a temporary file in the same folder, fsync, then rename over."""
    body = json.dumps({"version": VERSION, "entries": entries}, ensure_ascii=False, indent=1)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(body + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _update(
    path: Path, change: Callable[[list[ManifestEntry]], tuple[list[ManifestEntry], T]]
) -> T:
    with _locked(path):
        entries = _read_unlocked(path)
        new_entries, result = change(entries)
        if new_entries is not entries or not path.exists():
            _write_unlocked(path, new_entries)
        return result


def append(path: Path, entries: Iterable[Mapping[str, Any]]) -> int:
    """Add entries to the manifest.

    Args:
        path: The manifest file (`settings.paths.manifest`).
        entries: Mappings with `session_id, node_id, type, subtype, content, source, stored_at`.

    Returns:
        How many entries were added.

    Raises:
        ValueError: when an entry has no `node_id` (nothing is written then).
    """
    from octygraph.safety.secrets import redact_deep

    new = [normalize_entry(redact_deep(dict(entry))) for entry in entries]
    if not new:
        return 0
    return _update(path, lambda current: ([*current, *new], len(new)))


def load(path: Path, session: str | None = None) -> list[ManifestEntry]:
    """All entries, oldest first, or only those of `session`."""
    if not path.exists():
        return []
    with _locked(path):
        entries = _read_unlocked(path)
    if session is None:
        return entries
    return [entry for entry in entries if entry["session_id"] == session]


def remove_session(path: Path, session: str) -> list[ManifestEntry]:
    """Drop every entry of `session` and return them (the caller deletes the nodes)."""
    if not path.exists():
        return []

    def change(current: list[ManifestEntry]) -> tuple[list[ManifestEntry], list[ManifestEntry]]:
        removed = [entry for entry in current if entry["session_id"] == session]
        if not removed:
            return current, []
        return [entry for entry in current if entry["session_id"] != session], removed

    return _update(path, change)

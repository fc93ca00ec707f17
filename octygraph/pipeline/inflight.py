"""Runs in flight: one small file per run whose store half has not ended, so a restarted service finds it.

`<memory_dir>/inflight/<trace id>.json` is written when a run starts and removed when it ends. The run's
process holds an `flock` on it meanwhile: the kernel lets go when the process dies (killed, crashed, the
machine stopped), so a record whose lock is free belongs to a run nobody is finishing. Startup reads
these few files instead of every checkpoint ever written; retention keeps their checkpoints.

The record holds what rebuilds the run's settings and options, never a secret: those are read again
from the environment and `.env` files of whoever resumes the run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import logging
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from octygraph.config.private import private_mkdir
from octygraph.config.settings import Settings

log = logging.getLogger("octygraph.pipeline.inflight")

FOLDER = "inflight"
RECORD_NAME = re.compile(r"^\d{8}T\d{12}Z-[0-9a-f]{6}\.json$")
"""A trace id (UTC time first, see `traces.new_trace_id`) and `.json`."""
SETTINGS_KEPT = tuple(
    f.name for f in dataclasses.fields(Settings) if "SecretStr" not in str(f.type)
)
"""The settings written to the record: every field but the secrets."""


@dataclass
class RunRecord:
    """What a run in flight leaves on disk."""

    trace_id: str
    settings: dict[str, Any]
    """`Settings` fields without the secrets, as JSON values."""
    options: dict[str, Any] = field(default_factory=dict)
    """session_id, transcript_path, source, store_only, offline."""
    created_at: float = field(default_factory=time.time)
    pid: int = field(default_factory=os.getpid)
    attempts: int = 0
    """How many times a resume was started; a run is not resumed for ever."""

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> RunRecord:
        """Raises ValueError (or TypeError) for a record that is not one."""
        data = json.loads(text)
        if not isinstance(data, dict) or not isinstance(data.get("settings"), dict):
            raise ValueError("not a run record")
        record = cls(**data)
        if not RECORD_NAME.match(f"{record.trace_id}.json"):
            raise ValueError(f"bad trace id {record.trace_id!r}")
        return record

    def restore_settings(self, env: dict[str, str] | None = None) -> Settings:
        """The run's settings: recorded values over what `env` (and the run's `.env` files) resolve."""
        kept = self.settings
        base = Settings.from_env(
            env=env,
            cwd=Path(kept["cwd"]) if kept.get("cwd") else None,
            project_id=kept["project_id"],
        )
        values: dict[str, Any] = {}
        for name in SETTINGS_KEPT:
            if name not in kept:
                continue
            value = kept[name]
            if name in ("home", "cwd") or (name == "db_path_override" and value):
                value = Path(value)
            values[name] = value
        return dataclasses.replace(base, **values)


def folder(settings: Settings) -> Path:
    return settings.paths.memory_dir / FOLDER


def settings_json(settings: Settings) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in SETTINGS_KEPT:
        value = getattr(settings, name)
        out[name] = str(value) if isinstance(value, Path) else value
    return out


class Held:
    """A record this process wrote and holds the lock of; `end()` removes it."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self.fd: int | None = fd

    def end(self) -> None:
        """The run ended (finished, gave up, or failed): nobody needs to resume it. Never raises."""
        if self.fd is None:
            return
        with contextlib.suppress(OSError):
            self.path.unlink()
        with contextlib.suppress(OSError):
            os.close(self.fd)  # releases the lock
        self.fd = None


def _write(fd: int, text: str) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, text.encode("utf-8"), 0)


def begin(settings: Settings, record: RunRecord) -> Held | None:
    """Write the run's record and hold its lock; None when it cannot (the run goes on without one)."""
    try:
        path = private_mkdir(folder(settings)) / f"{record.trace_id}.json"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        log.warning("run %s not recorded as in flight: %s", record.trace_id, exc)
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        _write(fd, record.to_json())
    except OSError as exc:
        os.close(fd)
        log.warning("run %s not recorded as in flight: %s", record.trace_id, exc)
        return None
    return Held(path, fd)


def in_flight_ids(settings: Settings) -> set[str]:
    """Trace ids with a record (running, or waiting to be resumed): retention keeps their checkpoints."""
    try:
        names = os.listdir(folder(settings))
    except OSError:
        return set()
    return {n.removesuffix(".json") for n in names if RECORD_NAME.match(n)}


@dataclass
class Orphan:
    """A record whose run no process is finishing, claimed (locked) by this one until `release()`."""

    path: Path
    fd: int
    record: RunRecord | None
    """None when the file could not be read as a record."""
    error: str = ""

    def count_attempt(self) -> None:
        """Note one more resume attempt in the file, before trying (a crash mid-resume counts too)."""
        assert self.record is not None
        self.record.attempts += 1
        with contextlib.suppress(OSError):
            _write(self.fd, self.record.to_json())

    def release(self, *, drop: bool) -> None:
        """Unlock the record; with `drop`, remove it (resumed, finished, or given up)."""
        if drop:
            with contextlib.suppress(OSError):
                self.path.unlink()
        with contextlib.suppress(OSError):
            os.close(self.fd)


def orphans(home: Path) -> Iterator[Orphan]:
    """Records under every project of `home` whose lock is free (their run's process is gone).

    Each comes back locked by this process; records of live runs are left alone.
    """
    projects = home / "projects"
    try:
        found = sorted(projects.glob(f"*/memory/{FOLDER}/*.json"))
    except OSError:
        return
    for path in found:
        try:
            fd = os.open(path, os.O_RDWR)
        except OSError:
            continue  # removed meanwhile: its run ended
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)  # a live run holds it
            continue
        if not path.exists():  # ended between our listing and our lock
            os.close(fd)
            continue
        try:
            text = os.pread(fd, 1 << 20, 0).decode("utf-8")
            record = RunRecord.from_json(text)
        except (OSError, ValueError, TypeError, KeyError) as exc:
            yield Orphan(path, fd, None, f"{type(exc).__name__}: {exc}")
            continue
        yield Orphan(path, fd, record)

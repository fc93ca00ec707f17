"""Profiles and snapshots of a project's memory: list, load, unload, freeze, bootstrap.

Built-in profiles are generated: the caller hands in their generators as a registry of name ->
`BuiltinProfile` (the command line passes `octygraph_demo.BUILTIN_PROFILES`), so this package never
imports the demo data.

Nothing is lost: before the active database is replaced (load, unload, freeze load) it is saved as an
automatic snapshot, `snapshots/<profile>/auto-<timestamp>.db`. The file to load is checked first (SQLite,
octygraph, same embedding model); a refusal leaves the active database untouched.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from octygraph.config.private import private_mkdir
from octygraph.config.settings import ProjectPaths, Settings
from octygraph.profiles.graph import GraphSpec, ProgressFn, write_graph
from octygraph.profiles.state import ProfileState, empty_state, now_iso, read_state, write_state
from octygraph.store import Embedder, MemoryStore
from octygraph.store.sqlite_files import (
    DatabaseError,
    DbInfo,
    ProfileError,
    backup_file,
    check_usable,
    inspect_database,
    is_sqlite_file,
    raw_copy,
    remove_database,
    restore_into,
)

# Snapshots of a database that was never loaded from a profile go here.
DEFAULT_LABEL = "default"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$")


class GraphGenerator(Protocol):
    """Makes a built-in profile's graph; None means the generator's own default size or seed.

    Raises:
        ValueError: the size or seed cannot be used (reported as a `ProfileError`).
    """

    def __call__(self, *, size: int | None = None, seed: int | None = None) -> GraphSpec: ...


@dataclass(frozen=True)
class BuiltinProfile:
    """A profile that is generated rather than stored: what `list` says of it, and its generator."""

    description: str
    generate: GraphGenerator


@dataclass(frozen=True)
class ProfileEntry:
    """One profile as `list` shows it."""

    name: str
    path: Path
    builtin: bool
    active: bool
    description: str = ""
    info: DbInfo | None = None
    problem: str | None = None  # why it cannot be used, when it exists but is broken

    @property
    def built(self) -> bool:
        return self.path.is_file()

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "builtin": self.builtin,
            "built": self.built,
            "active": self.active,
            "description": self.description,
            "path": str(self.path),
            "nodes": self.info.nodes if self.info else None,
            "edges": self.info.edges if self.info else None,
            "embedding_model": self.info.embedding_model if self.info else None,
            "file_bytes": self.info.file_bytes if self.info else None,
            "problem": self.problem,
        }


@dataclass(frozen=True)
class SnapshotEntry:
    name: str
    path: Path
    modified: str
    info: DbInfo | None = None
    problem: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": str(self.path),
            "modified": self.modified,
            "nodes": self.info.nodes if self.info else None,
            "edges": self.info.edges if self.info else None,
            "embedding_model": self.info.embedding_model if self.info else None,
            "file_bytes": self.info.file_bytes if self.info else os.path.getsize(self.path),
            "problem": self.problem,
        }


@dataclass(frozen=True)
class LoadResult:
    """What a load, unload or snapshot restore did."""

    profile: str | None
    source: Path | None
    stats: dict[str, Any]
    auto_snapshot: Path | None = None
    built: list[BuildResult] = field(default_factory=list)


@dataclass(frozen=True)
class BuildResult:
    name: str
    path: Path
    nodes: int
    edges: int
    superseded: int
    file_bytes: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": str(self.path),
            "nodes": self.nodes,
            "edges": self.edges,
            "superseded": self.superseded,
            "file_bytes": self.file_bytes,
            "seconds": round(self.seconds, 2),
        }


def check_name(name: str, kind: str) -> str:
    """A profile or snapshot name, safe as a file name (a trailing `.db` is accepted and dropped)."""
    cleaned = name.strip()
    if cleaned.endswith(".db"):
        cleaned = cleaned[:-3]
    if not _NAME.match(cleaned):
        raise ProfileError(
            f"{kind} name {name!r} cannot be used; use letters, digits, '.', '-' and '_' (up to 80)."
        )
    return cleaned


def builtin_graph(
    builtins: Mapping[str, BuiltinProfile],
    name: str,
    *,
    size: int | None = None,
    seed: int | None = None,
) -> GraphSpec:
    """The graph of the built-in profile `name` of `builtins`."""
    profile = builtins.get(name)
    if profile is None:
        raise ProfileError(
            f"{name!r} is not a built-in profile; built-in: {', '.join(builtins) or 'none'}."
        )
    try:
        return profile.generate(size=size, seed=seed)
    except ValueError as exc:
        raise ProfileError(str(exc)) from None


def build_database(
    path: Path,
    spec: GraphSpec,
    embedder: Embedder,
    *,
    progress: ProgressFn | None = None,
    label: str = "",
) -> DbInfo:
    """Write `spec` into a new database at `path`, replacing it only once complete."""
    private_mkdir(path.parent)
    tmp = path.with_name(f".build-{path.stem}-{os.getpid()}.db")
    remove_database(tmp)
    try:
        with MemoryStore.open(tmp, embedder) as store:
            write_graph(store, spec, progress=progress, label=label)
        backup_file(tmp, path)
    finally:
        remove_database(tmp)
    return inspect_database(path, f"Profile {label or path.stem!r}")


class MemoryProfiles:
    """Profiles and snapshots of one project's memory (see the module docstring for the guarantees)."""

    def __init__(
        self,
        settings: Settings,
        embedder: Embedder | None = None,
        *,
        builtins: Mapping[str, BuiltinProfile] | None = None,
    ) -> None:
        self.settings = settings
        self.paths: ProjectPaths = settings.paths
        self._embedder = embedder
        # The profiles `list` always shows and `load` builds when missing (none unless given).
        self.builtins: Mapping[str, BuiltinProfile] = builtins or {}

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            from octygraph.embeddings import make_embeddings

            self._embedder = make_embeddings(self.settings)
        return self._embedder

    # ------------------------------------------------------------------ state

    def state(self) -> ProfileState:
        return read_state(self.paths.profile_state)

    def active_label(self) -> str:
        """The profile the active database belongs to (`default` when none was loaded)."""
        return self.state()["current_profile"] or DEFAULT_LABEL

    def profile_path(self, name: str) -> Path:
        return self.paths.profiles_dir / f"{check_name(name, 'Profile')}.db"

    def snapshot_dir(self, profile: str) -> Path:
        return self.paths.snapshots_dir / check_name(profile, "Profile")

    def snapshot_path(self, name: str, profile: str) -> Path:
        return self.snapshot_dir(profile) / f"{check_name(name, 'Snapshot')}.db"

    def active_stats(self) -> dict[str, Any] | None:
        """Statistics of the active database (None when there is none yet)."""
        db = self.paths.db
        if not db.exists():
            return None
        with MemoryStore.open(db, self.embedder, create=False, check_model=False) as store:
            return store.stats()

    # ------------------------------------------------------------------ listing

    def list_profiles(self) -> list[ProfileEntry]:
        """Built-in profiles (built or not), then every other `*.db` in the profiles folder."""
        current = self.state()["current_profile"]
        names = list(self.builtins)
        folder = self.paths.profiles_dir
        if folder.is_dir():
            names += sorted(
                p.stem
                for p in folder.glob("*.db")
                if not p.name.startswith(".") and p.stem not in names
            )
        entries = []
        for name in names:
            path = folder / f"{name}.db"
            info, problem = None, None
            if path.is_file():
                try:
                    info = inspect_database(path, f"Profile {name!r}")
                except ProfileError as exc:
                    problem = str(exc)
            entries.append(
                ProfileEntry(
                    name=name,
                    path=path,
                    builtin=name in self.builtins,
                    active=name == current,
                    description=self.builtins[name].description if name in self.builtins else "",
                    info=info,
                    problem=problem,
                )
            )
        return entries

    def list_snapshots(self, profile: str | None = None) -> tuple[str, list[SnapshotEntry]]:
        """(profile, its snapshots oldest first) for `profile` or the active one."""
        label = check_name(profile, "Profile") if profile else self.active_label()
        folder = self.snapshot_dir(label)
        entries = []
        paths = (
            sorted(folder.glob("*.db"), key=lambda p: (p.stat().st_mtime, p.name))
            if folder.is_dir()
            else []
        )
        for path in paths:
            if path.name.startswith("."):
                continue
            info, problem = None, None
            try:
                info = inspect_database(path, f"Snapshot {path.stem!r}")
            except ProfileError as exc:
                problem = str(exc)
            modified = datetime.fromtimestamp(path.stat().st_mtime, UTC).strftime(
                "%Y-%m-%d %H:%M:%S"
            )
            entries.append(SnapshotEntry(path.stem, path, modified, info, problem))
        return label, entries

    # ------------------------------------------------------------------ building

    def build(
        self,
        name: str,
        *,
        size: int | None = None,
        seed: int | None = None,
        progress: ProgressFn | None = None,
    ) -> BuildResult:
        """(Re)build a built-in profile's database in the profiles folder."""
        started = time.perf_counter()
        if progress:
            progress(f"{name}: generating", 0, 1)
        spec = builtin_graph(self.builtins, name, size=size, seed=seed)
        if progress:
            progress(f"{name}: generating", 1, 1)
        info = build_database(
            self.profile_path(name), spec, self.embedder, progress=progress, label=name
        )
        return BuildResult(
            name=name,
            path=info.path,
            nodes=info.nodes,
            edges=info.edges,
            superseded=info.superseded,
            file_bytes=info.file_bytes,
            seconds=time.perf_counter() - started,
        )

    def bootstrap(
        self,
        *,
        size: int | None = None,
        seed: int | None = None,
        progress: ProgressFn | None = None,
    ) -> list[BuildResult]:
        """Build every built-in profile (each given `size` and `seed`); the active database is untouched."""
        self.paths.ensure()
        return [self.build(name, size=size, seed=seed, progress=progress) for name in self.builtins]

    # ------------------------------------------------------------------ replacing the active database

    def load(self, name: str, *, progress: ProgressFn | None = None) -> LoadResult:
        """Load a profile into the active database (a missing built-in one is built first)."""
        path = self.profile_path(name)
        built: list[BuildResult] = []
        if not path.exists():
            if name not in self.builtins:
                raise ProfileError(
                    f"No profile named {name!r}; see `octygraph memory list` for the ones you can load."
                )
            self.paths.ensure()
            built.append(self.build(name, progress=progress))
        result = self._replace_active(
            path,
            f"Profile {name!r}",
            "rebuild it with `octygraph memory bootstrap`, or set the embedding model it was built with.",
            profile=name,
            snapshot=None,
        )
        return LoadResult(result.profile, result.source, result.stats, result.auto_snapshot, built)

    def freeze_load(self, name: str, profile: str | None = None) -> LoadResult:
        """Restore a snapshot into the active database; the active profile becomes the snapshot's."""
        label = check_name(profile, "Profile") if profile else self.active_label()
        path = self.snapshot_path(name, label)
        if not path.exists():
            raise ProfileError(
                f"No snapshot named {name!r} for profile {label!r}; "
                f"see `octygraph memory freeze list {label}`."
            )
        return self._replace_active(
            path,
            f"Snapshot {name!r} of {label!r}",
            "set the embedding model it was made with to restore it.",
            profile=None if label == DEFAULT_LABEL else label,
            snapshot=path.stem,
        )

    def unload(self) -> LoadResult:
        """Empty the active database (after saving it as an automatic snapshot)."""
        db = self.paths.db
        if not db.exists():
            return LoadResult(None, None, {}, None)
        self.paths.ensure()
        empty = self.paths.profiles_dir / f".empty-{os.getpid()}.db"
        remove_database(empty)
        try:
            MemoryStore.open(empty, self.embedder).close()
            return self._replace_active(empty, "An empty database", "", profile=None, snapshot=None)
        finally:
            remove_database(empty)

    def freeze_create(self, name: str, profile: str | None = None) -> tuple[Path, DbInfo]:
        """Save a named snapshot of the active database (or of a stored profile that is not active)."""
        label = check_name(profile, "Profile") if profile else self.active_label()
        if label == self.active_label():
            source = self.paths.db
            if not source.exists():
                raise ProfileError(
                    "There is no active database to snapshot yet; load a profile or add a memory first."
                )
            what = "The active database"
        else:
            source = self.profile_path(label)
            if not source.exists():
                raise ProfileError(
                    f"Profile {label!r} is neither active nor stored; see `octygraph memory list`."
                )
            what = f"Profile {label!r}"
        inspect_database(source, what)
        target = self.snapshot_path(name, label)
        if target.exists():
            raise ProfileError(
                f"Snapshot {target.stem!r} of {label!r} already exists; choose another name."
            )
        self.paths.ensure()
        backup_file(source, target)
        return target, inspect_database(target, f"Snapshot {target.stem!r}")

    def _replace_active(
        self, source: Path, what: str, fix: str, *, profile: str | None, snapshot: str | None
    ) -> LoadResult:
        # Check the source before touching anything.
        check_usable(source, what, self.embedder.model_id, fix)
        self.paths.ensure()
        saved = self.save_active()
        restore_into(source, self.paths.db)
        loaded_from = None if source.name.startswith(".") else source
        write_state(
            self.paths.profile_state,
            {
                **empty_state(),
                "current_profile": profile,
                "loaded_at": now_iso(),
                "source": str(loaded_from) if loaded_from else None,
                "snapshot": snapshot,
            },
        )
        with MemoryStore.open(self.paths.db, self.embedder, create=False) as store:
            stats = store.stats()
        return LoadResult(profile, loaded_from, stats, saved)

    def save_active(self) -> Path | None:
        """Save the active database as `snapshots/<profile>/auto-<UTC timestamp>.db`; None if there is none."""
        db = self.paths.db
        if not db.exists() or db.stat().st_size == 0:
            return None
        folder = self.snapshot_dir(self.active_label())
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        target = folder / f"auto-{stamp}.db"
        n = 2
        while target.exists():
            target = folder / f"auto-{stamp}-{n}.db"
            n += 1
        if is_sqlite_file(db):
            try:
                backup_file(db, target)
                return target
            except DatabaseError:  # a damaged database: keep its bytes instead
                pass
        raw_copy(db, target)
        return target


def human_bytes(size: int | None) -> str:
    if size is None:
        return "-"
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"

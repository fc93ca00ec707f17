"""Memory profiles and snapshots: named whole databases to load, freeze and restore.

Built-in profiles are generated, deterministically: `small-baseline` (a hand-written team memory) and
`noisy-large` (the baseline among 20,000 look-alike memories). See `manager.MemoryProfiles`.
"""

from octygraph.profiles.baseline import DEFAULT_ANCHOR, small_baseline_graph
from octygraph.profiles.graph import GraphSpec, ProgressFn, write_graph
from octygraph.profiles.manager import (
    BUILTIN_PROFILES,
    DEFAULT_LABEL,
    NOISY_LARGE,
    SMALL_BASELINE,
    BuildResult,
    LoadResult,
    MemoryProfiles,
    ProfileEntry,
    SnapshotEntry,
    build_database,
    builtin_graph,
    human_bytes,
)
from octygraph.profiles.noisy import DEFAULT_SEED, DEFAULT_SIZE, noisy_large_graph
from octygraph.profiles.state import ProfileState, read_state, write_state
from octygraph.store.sqlite_files import DbInfo, ProfileError, inspect_database

__all__ = [
    "BUILTIN_PROFILES",
    "DEFAULT_ANCHOR",
    "DEFAULT_LABEL",
    "DEFAULT_SEED",
    "DEFAULT_SIZE",
    "NOISY_LARGE",
    "SMALL_BASELINE",
    "BuildResult",
    "DbInfo",
    "GraphSpec",
    "LoadResult",
    "MemoryProfiles",
    "ProfileEntry",
    "ProfileError",
    "ProfileState",
    "ProgressFn",
    "SnapshotEntry",
    "build_database",
    "builtin_graph",
    "human_bytes",
    "inspect_database",
    "noisy_large_graph",
    "read_state",
    "small_baseline_graph",
    "write_graph",
    "write_state",
]

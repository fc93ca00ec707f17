"""Memory profiles and snapshots: named whole databases to load, freeze and restore.

Built-in profiles are generated, deterministically, by generators their caller hands in as a registry of
name -> `BuiltinProfile`; the command line passes the demo package's (`octygraph_demo`: `small-baseline`,
a hand-written team memory, and `noisy-large`, the baseline among 20,000 look-alike memories). See
`manager.MemoryProfiles`.
"""

from octygraph.profiles.graph import GraphSpec, ProgressFn, write_graph
from octygraph.profiles.manager import (
    DEFAULT_LABEL,
    BuildResult,
    BuiltinProfile,
    GraphGenerator,
    LoadResult,
    MemoryProfiles,
    ProfileEntry,
    SnapshotEntry,
    build_database,
    builtin_graph,
    human_bytes,
)
from octygraph.profiles.state import ProfileState, read_state, write_state
from octygraph.store.sqlite_files import DbInfo, ProfileError, inspect_database

__all__ = [
    "DEFAULT_LABEL",
    "BuildResult",
    "BuiltinProfile",
    "DbInfo",
    "GraphGenerator",
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
    "read_state",
    "write_graph",
    "write_state",
]

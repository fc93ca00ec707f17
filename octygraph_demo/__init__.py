"""Demo data for octygraph: the generators of the built-in memory profiles.

`small-baseline` (`small_baseline.py`) is a small hand-written team memory; `noisy-large`
(`noisy_large.py`) hides it among 20,000 templated look-alikes. Both are deterministic.

A package of its own, outside and above the runtime package `octygraph`: it builds graphs with
`octygraph.profiles.graph` and `octygraph.store`, and octygraph's command line hands `BUILTIN_PROFILES` to
`octygraph.profiles.MemoryProfiles` when a command needs the built-in profiles (`memory list`, `memory
load`, `memory bootstrap`). Nothing in `octygraph` imports it at module level.
"""

from __future__ import annotations

from octygraph.profiles.graph import GraphSpec
from octygraph.profiles.manager import BuiltinProfile
from octygraph_demo.noisy_large import DEFAULT_SEED, DEFAULT_SIZE, noisy_large_graph
from octygraph_demo.small_baseline import DEFAULT_ANCHOR, small_baseline_graph

SMALL_BASELINE = "small-baseline"
NOISY_LARGE = "noisy-large"


def _small_baseline(*, size: int | None = None, seed: int | None = None) -> GraphSpec:
    """small-baseline is one fixed graph: a size or a seed changes nothing."""
    return small_baseline_graph()


def _noisy_large(*, size: int | None = None, seed: int | None = None) -> GraphSpec:
    return noisy_large_graph(
        size=DEFAULT_SIZE if size is None else size, seed=DEFAULT_SEED if seed is None else seed
    )


# In the order `memory list` shows them and `memory bootstrap` builds them.
BUILTIN_PROFILES: dict[str, BuiltinProfile] = {
    SMALL_BASELINE: BuiltinProfile(
        "Small hand-written graph of a software team (~100 memories)", _small_baseline
    ),
    NOISY_LARGE: BuiltinProfile(
        "The small baseline hidden among 20,000 generated look-alike memories", _noisy_large
    ),
}

__all__ = [
    "BUILTIN_PROFILES",
    "DEFAULT_ANCHOR",
    "DEFAULT_SEED",
    "DEFAULT_SIZE",
    "NOISY_LARGE",
    "SMALL_BASELINE",
    "noisy_large_graph",
    "small_baseline_graph",
]

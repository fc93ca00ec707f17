"""Retention: debug traces and their checkpoints are pruned by count and by age.

Each run leaves a trace (`debug/<trace id>.json`) and the graph's checkpoints (`checkpoints.db`, one
thread per run, named by the trace id). Both are kept for debugging and replay, not for ever: the newest
`OCTY_TRACE_KEEP` traces younger than `OCTY_TRACE_MAX_DAYS` days stay, the rest go, with the checkpoints of
every run older than the oldest trace kept. Trace ids start with their UTC time, so "older" is a string
comparison. Runs prune after answering, and only once the folder is a little over its limits.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from octygraph.config.settings import Settings
from octygraph.pipeline import inflight
from octygraph.store.checkpoints import prune_checkpoints

TRACE_NAME: Final = re.compile(r"^\d{8}T\d{12}Z-[0-9a-f]{6}\.json$")
SLACK: Final = 0.1
"""Automatic pruning waits until the count is this share over the limit, so a run rarely pays for it."""


@dataclass(frozen=True)
class PruneResult:
    traces: int
    checkpoint_threads: int


def _traces(debug_dir: Path) -> list[Path]:
    """Trace files, oldest first (by the time in their id)."""
    if not debug_dir.is_dir():
        return []
    return sorted(p for p in debug_dir.iterdir() if TRACE_NAME.match(p.name))


def _stamp(when: float) -> str:
    """A trace-id prefix for the time `when`: ids below it are older."""
    return datetime.fromtimestamp(when, UTC).strftime("%Y%m%dT%H%M%S%fZ")


def prune(
    settings: Settings,
    *,
    keep: int | None = None,
    max_days: float | None = None,
    now: float | None = None,
) -> PruneResult:
    """Remove traces beyond the newest `keep` or older than `max_days`, and older runs' checkpoints.

    Args:
        settings: Whose project (paths) and limits (`trace_keep`, `trace_max_days`).
        keep: Traces to keep (0 removes all); default the setting.
        max_days: Age limit in days; default the setting.
        now: The current time (tests).
    """
    keep = settings.trace_keep if keep is None else max(0, keep)
    max_days = settings.trace_max_days if max_days is None else max_days
    now = time.time() if now is None else now
    paths = settings.paths
    traces = _traces(paths.debug_dir)
    age_cutoff = _stamp(now - max_days * 86400)
    kept = traces[len(traces) - keep :] if keep else []
    kept = [p for p in kept if p.name >= age_cutoff]
    removed = 0
    for path in traces:
        if path not in kept:
            path.unlink(missing_ok=True)
            removed += 1
    # Checkpoints of every run older than the oldest trace kept (or than the age limit) go too, but
    # not those of runs in flight: a restarted service resumes a run whose process died from them.
    if kept:
        cutoff = kept[0].name.removesuffix(".json")
    else:
        cutoff = age_cutoff if keep else _stamp(now)
    threads = prune_checkpoints(paths.checkpoints, cutoff, keep=inflight.in_flight_ids(settings))
    return PruneResult(removed, threads)


def prune_if_due(settings: Settings) -> PruneResult | None:
    """Prune when the traces are over their count (plus slack) or the oldest is past its age."""
    traces = _traces(settings.paths.debug_dir)
    if not traces:
        return None
    over = len(traces) > settings.trace_keep * (1 + SLACK)
    stale = traces[0].name < _stamp(time.time() - settings.trace_max_days * 86400)
    if not (over or stale):
        return None
    return prune(settings)

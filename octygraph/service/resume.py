"""Finishing runs whose process died: a restarted service resumes them from their checkpoints.

A run records itself as in flight (`octygraph.pipeline.inflight`) until its store half ends. When the process is
killed first (a crash, a restart after a settings change, the machine stopping), what the prompt told
would be lost. On start the service looks for such records and, in the background, resumes each run with
LangGraph's own mechanism: `astream(None, config)` on the run's thread continues from its last checkpoint,
so finished nodes (the retrieve half, a finished store node) are not run again; a node cut off half-way
runs again, and the store's near-duplicate check keeps a memory it already wrote from being stored twice.

Each resume is bounded in time, works offline when the run's model cannot be rebuilt, and is tried at most
`MAX_ATTEMPTS` times; a run that cannot be finished is dropped with a note in its trace.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from langchain_core.runnables import RunnableConfig

from octygraph.config.settings import Settings
from octygraph.pipeline import inflight
from octygraph.pipeline.persistence import checkpointer_for
from octygraph.pipeline.runner import (
    STORE_GRACE_S,
    make_context,
    result_json,
    run_mode,
    with_checkpointer,
    write_run_trace,
)
from octygraph.pipeline.store_lease import StoreLease
from octygraph.store import GraphStore

log = logging.getLogger("octygraph.service.resume")

MAX_ATTEMPTS = 2
"""A run whose resume was started this many times (the service died during it, too) is dropped."""

Status = Literal["resumed", "finished", "dropped"]


@dataclass(frozen=True)
class Outcome:
    """What became of one in-flight record."""

    trace_id: str
    status: Status
    """resumed: its remaining nodes ran; finished: nothing was left to run; dropped: given up."""
    reason: str = ""


async def resume_unfinished(
    home: Path,
    stores: StoreLease,
    env: Mapping[str, str] | None = None,
    stopping: Callable[[], bool] = lambda: False,
) -> list[Outcome]:
    """Resume, one after the other, every run under `home` that a dead process left unfinished.

    Never raises for one run: each ends resumed, finished or dropped (with a note), and its record goes.
    Once `stopping()` says so, the runs not started yet are left for the next service.
    """
    outcomes: list[Outcome] = []
    for orphan in await asyncio.to_thread(lambda: list(inflight.orphans(home))):
        if stopping():
            orphan.release(drop=False)
            continue
        try:
            outcome = await _settle(orphan, stores, env)
        except Exception as exc:  # one bad run never stops the others
            outcome = Outcome(orphan.path.stem, "dropped", f"{type(exc).__name__}: {exc}")
        finally:
            orphan.release(drop=True)
        log.log(
            logging.INFO if outcome.status != "dropped" else logging.WARNING,
            "in-flight run %s %s%s",
            outcome.trace_id,
            outcome.status,
            f": {outcome.reason}" if outcome.reason else "",
        )
        outcomes.append(outcome)
    return outcomes


async def _settle(
    orphan: inflight.Orphan, stores: StoreLease, env: Mapping[str, str] | None
) -> Outcome:
    record = orphan.record
    if record is None:
        return Outcome(orphan.path.stem, "dropped", f"unreadable record ({orphan.error})")
    settings = record.restore_settings(dict(os.environ if env is None else env))
    if record.attempts >= MAX_ATTEMPTS:
        reason = f"given up after {record.attempts} attempts to resume"
        _note_dropped(settings, record, reason)
        return Outcome(record.trace_id, "dropped", reason)
    orphan.count_attempt()
    try:
        async with stores(settings) as store:
            return await resume_run(record, settings, store)
    except Exception as exc:
        reason = settings.redact(
            "resume stopped at its deadline"
            if isinstance(exc, TimeoutError)
            else f"resume failed ({type(exc).__name__}: {exc})"[:300]
        )
        _note_dropped(settings, record, reason)
        return Outcome(record.trace_id, "dropped", reason)


def _context(
    settings: Settings, store: GraphStore, record: inflight.RunRecord, session: bool
) -> Any:
    from octygraph.llm.errors import LLMConfigError

    options = record.options
    fields: dict[str, Any] = {
        # A resumed retrieve half must not tell the session log that its context was injected: the
        # user never saw it. With only the store half left, the session keeps what it stores.
        "session_id": options.get("session_id") if session else None,
        "transcript_path": options.get("transcript_path"),
        "source": options.get("source") or "user",
        "store_only": bool(options.get("store_only")),
        # The run's own id: what it wrote before it stopped is still its own.
        "run_id": record.trace_id,
    }
    offline = bool(options.get("offline"))
    try:
        return make_context(settings, store, offline=offline, **fields)
    except LLMConfigError as exc:
        # E.g. the key was in the hook's shell only: store without the model.
        log.info("resuming %s offline: %s", record.trace_id, exc)
        return make_context(settings, store, offline=True, **fields)


async def resume_run(record: inflight.RunRecord, settings: Settings, store: GraphStore) -> Outcome:
    """Run what is left of one run from its last checkpoint, bounded by one prompt's budget plus grace.

    Raises:
        TimeoutError: the run did not finish in time (its checkpoints keep how far it got).
    """
    config: RunnableConfig = {
        "configurable": {"thread_id": record.trace_id},
        "run_name": "octygraph-resume",
        "tags": ["octygraph", "resumed"],
        "metadata": {"project": settings.project_id, "resumed": True},
    }
    started = time.perf_counter()
    async with checkpointer_for(settings) as saver:
        graph = with_checkpointer(saver)
        state = await graph.aget_state(config, subgraphs=True)
        if not state.next:
            why = "already finished" if state.values else "no checkpoint to resume from"
            return Outcome(record.trace_id, "finished", why)
        pending = [
            f"{task.name}:{','.join(task.state.next)}"
            if task.state is not None and task.state.next
            else task.name
            for task in state.tasks
            if task.result is None
        ]
        ctx = _context(settings, store, record, session=set(state.next) <= {"store"})
        ctx.deadline = time.monotonic() + settings.hook_budget_s
        async with asyncio.timeout(settings.hook_budget_s + STORE_GRACE_S):
            # None as input: continue the thread from its checkpoint instead of starting anew.
            async for _ in graph.astream(
                None, config, context=ctx, durability="async", stream_mode="updates"
            ):
                pass
        values = dict((await graph.aget_state(config)).values)
    timings = dict(values.get("timings_ms") or {})
    timings["resume"] = round((time.perf_counter() - started) * 1000, 2)
    values["timings_ms"] = timings
    values["notes"] = [
        *(values.get("notes") or []),
        f"run: resumed from its checkpoint after its process stopped ({', '.join(pending)})",
    ]
    usage = ctx.usage.to_dict() if ctx.usage else {}
    result = result_json(
        record.trace_id, values, run_mode(ctx, settings, values.get("layers") or {}), usage
    )
    options = record.options
    write_run_trace(
        settings,
        result,
        values,
        session_id=options.get("session_id"),
        source=str(options.get("source") or "user"),
        extra={"resumed": _resumed(record, pending)},
    )
    _bookkeeping(settings, record, result)
    return Outcome(record.trace_id, "resumed", ", ".join(pending))


def _resumed(record: inflight.RunRecord, pending: list[str]) -> dict[str, Any]:
    """The trace's `resumed` field: when, by whom, and what was left to run."""
    return {
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        "started_at": datetime.fromtimestamp(record.created_at, UTC).isoformat(timespec="seconds"),
        "attempt": record.attempts,
        "pending": pending,
        "pid": os.getpid(),
    }


def _bookkeeping(settings: Settings, record: inflight.RunRecord, result: dict[str, Any]) -> None:
    """The manifest and dev log entries the run would have made; best effort."""
    from octygraph.pipeline.run_bookkeeping import after_run

    event = "stop" if record.options.get("store_only") else "prompt"
    after_run(settings, event, str(record.options.get("session_id") or ""), result)


def _note_dropped(settings: Settings, record: inflight.RunRecord, reason: str) -> None:
    """A trace for a run given up, so `trace list` shows why its prompt was not stored; never raises."""
    from octygraph.pipeline.traces import write_trace

    try:
        write_trace(
            settings.paths.debug_dir,
            {
                "trace_id": record.trace_id,
                "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "project": settings.project_id,
                "session_id": record.options.get("session_id"),
                "degraded": True,
                "context": "",
                "stored": [],
                "resumed": {**_resumed(record, []), "dropped": reason},
                "notes": [f"run: not resumed: {reason}"],
            },
        )
    except Exception as exc:
        log.warning("no trace for dropped run %s: %s", record.trace_id, exc)

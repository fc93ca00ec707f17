"""Running the graph: one prompt end to end, traces, and replay from a checkpoint.

Used by the CLI, the Claude Code hooks and notebooks. Compiles `build_graph()` with the SQLite checkpointer
(one thread per run, named by the trace id) and writes the run's JSON trace.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any, cast

from langchain_core.runnables import RunnableConfig

from octygraph.config.settings import Settings
from octygraph.llm.usage import UsageTracker
from octygraph.pipeline import inflight
from octygraph.pipeline.checkpoint_buffer import WriteBehindSaver
from octygraph.pipeline.context import Context
from octygraph.pipeline.graph import build_graph, replay_graph
from octygraph.pipeline.persistence import checkpointer_for, make_serde
from octygraph.pipeline.state import InputState, PipelineState
from octygraph.pipeline.traces import load_trace, new_trace_id, to_jsonable, write_trace
from octygraph.safety.intent import injection_reason
from octygraph.safety.secrets import redact_secrets
from octygraph.store import GraphStore


@functools.cache
def compiled_graph() -> Any:
    """The pipeline, compiled once per process; runs attach their checkpointer with `.copy()`."""
    return build_graph().compile(name="octygraph")


def with_checkpointer(saver: Any) -> Any:
    return compiled_graph().copy({"checkpointer": saver})


CheckpointerLease = Callable[[Settings], AbstractAsyncContextManager[Any]]


@dataclass
class RunOptions:
    offline: bool = False
    session_id: str | None = None
    transcript_path: str | None = None
    """Claude Code's transcript of the session, when the hook names one."""
    source: str = "user"
    today: date | None = None
    write_trace: bool = True
    store_only: bool = False
    """The Stop hook: store what the assistant reported, retrieve nothing."""
    deadline_s: float | None = None
    """Wall-clock budget for the whole run, counted from the call; None waits for the end."""
    deadline: float | None = None
    """`time.monotonic()` by which the run must answer (the hook's budget, counted from its start); the
    sooner of this and `deadline_s` goes into `Context.deadline`."""
    checkpointers: CheckpointerLease | None = None
    """Lends the project's checkpointer (the service keeps one open per file); None opens one per run."""

    def absolute_deadline(self, now: float) -> float | None:
        """The sooner of `deadline` and `now + deadline_s`, or None when neither is set."""
        relative = None if self.deadline_s is None else now + self.deadline_s
        known = [d for d in (self.deadline, relative) if d is not None]
        return min(known) if known else None


def make_context(
    settings: Settings,
    store: GraphStore,
    *,
    offline: bool = False,
    usage: UsageTracker | None = None,
    **overrides: Any,
) -> Context:
    """The runtime context for a run: the store, chat models (None when offline) and limits."""
    usage = usage or UsageTracker()
    l1 = l2 = None
    if not offline:
        from octygraph.llm.factory import make_chat_model

        # An LLM set up wrongly (e.g. an expired Wrangler login) raises LLMConfigError, one sentence.
        l1 = make_chat_model(settings, "l1", usage=usage)
        l2 = make_chat_model(settings, "l2", usage=usage)
    return Context(
        project=settings.project_id,
        store=store,
        settings=settings,
        l1_model=l1,
        l2_model=l2,
        usage=usage,
        max_turns=settings.max_turns,
        loop_timeout_s=settings.loop_timeout_s,
        context_budget_chars=settings.context_budget_chars,
        **overrides,
    )


def run_mode(ctx: Context, settings: Settings, layers: dict[str, dict[str, str]]) -> str:
    """The model that answered, or `offline`: a configured model that never answered (or whose every
    answer was unusable, so each layer took its deterministic path) did not run."""
    if ctx.offline:
        return "offline"
    if layers and not any(r.get("mode") in ("model", "fallback") for r in layers.values()):
        return "offline"
    if ctx.usage is not None:
        answered = [k for k in ctx.usage.to_dict() if k not in ("embeddings", "total")]
        if not answered:  # every LLM call failed: the offline path made this context
            return "offline"
    return settings.layer2_model


def result_json(
    trace_id: str, values: dict[str, Any], mode: str, usage: dict[str, Any]
) -> dict[str, Any]:
    """The `run --json` contract (docs/cli.md)."""
    classification = values.get("classification")
    ops = classification.operations if classification is not None else None
    return {
        "trace_id": trace_id,
        "context": values.get("context", ""),
        "sections": to_jsonable(values.get("sections") or {}),
        "operations": {"retrieve": bool(ops and ops.retrieve), "store": bool(ops and ops.store)},
        "stored": [
            {"id": r["id"], "type": r["type"], "subtype": r.get("subtype"), "content": r["content"]}
            for r in values.get("stored") or []
        ],
        "candidates": [
            {"id": r["id"], "type": r["type"], "subtype": r.get("subtype"), "content": r["content"]}
            for r in values.get("candidates") or []
        ],
        "superseded": list(dict.fromkeys(values.get("superseded") or [])),
        "needed_again": list(values.get("needed_again") or []),
        "mode": mode,
        "timings_ms": dict(values.get("timings_ms") or {}),
        "layers": dict(values.get("layers") or {}),
        "usage": usage,
    }


STORE_GRACE_S = 30.0
"""After the answer, the store half may take this much longer than the prompt's deadline (a backstop: its
LLM calls keep to the deadline and fall back to the deterministic store)."""

OnAnswer = Callable[[dict[str, Any]], Awaitable[None]]


def _merge(into: dict[str, Any], delta: dict[str, Any]) -> None:
    """Fold one node's update into the run's values as the state's reducers would."""
    for key, value in delta.items():
        if isinstance(value, list) and isinstance(into.get(key), list):
            into[key] = [*into[key], *value]
        elif isinstance(value, dict) and isinstance(into.get(key), dict):
            into[key] = {**into[key], **value}
        else:
            into[key] = value


async def run_prompt(
    prompt: str,
    settings: Settings,
    store: GraphStore,
    options: RunOptions | None = None,
    *,
    context: Context | None = None,
    on_answer: OnAnswer | None = None,
) -> dict[str, Any]:
    """Run the whole pipeline on one prompt; returns the `run --json` object (and writes the trace).

    With `on_answer`, the answer (the same object, with the retrieve half's context and no `stored` yet)
    is handed over as soon as the retrieve half is done; the store half then finishes before this returns.
    """
    options = options or RunOptions()
    started = time.perf_counter()
    # Judged whole before redaction (which would hide an encoded payload), then secrets go before
    # anything is written: the graph state (so checkpoints), the LLM, the trace.
    injection = injection_reason(prompt)
    prompt = redact_secrets(prompt)[0]
    deadline = options.absolute_deadline(time.monotonic())
    trace_id = new_trace_id()
    ctx = context or make_context(
        settings,
        store,
        offline=options.offline,
        session_id=options.session_id,
        transcript_path=options.transcript_path,
        source=options.source,
        today=options.today,
        store_only=options.store_only,
    )
    if injection is not None:
        ctx.injection = injection
    answer_out = asyncio.Event()
    ctx.answered = answer_out if on_answer is not None else None
    read_only = bool(getattr(store, "read_only", False))
    if read_only:
        # A memory folder we may only read: the run answers from memory and writes nothing (no
        # memory, checkpoint file, trace or in-flight record), and says so once.
        ctx.read_only = True
    if deadline is not None and (ctx.deadline is None or deadline < ctx.deadline):
        ctx.deadline = deadline
    ctx.run_id = trace_id
    config: RunnableConfig = {
        "configurable": {"thread_id": trace_id},
        "run_name": "octygraph",
        "tags": ["octygraph", "offline" if ctx.offline else "llm"],
        "metadata": {"project": settings.project_id, "session_id": options.session_id or ""},
    }
    embedder = store.embedder
    tokens_before = getattr(embedder, "tokens_embedded", 0)
    inputs: InputState = {"prompt": prompt}
    seen: dict[str, Any] = {}  # the parent's updates so far
    # The latest assembled / curated text, from inside the retrieve half (for a run cut short).
    partial: dict[str, Any] = {}
    timed_out = answered = False
    # Until the store half ends, a record says the run is in flight: if this process dies, a
    # restarted service finishes the run from its checkpoint (octygraph/service/resume.py). Written in a
    # thread alongside classification (file creation costs milliseconds on a busy disk), and
    # waited for before the answer goes out, the moment its store half starts to run unwatched.
    recording = (
        None
        if ctx.read_only
        else asyncio.ensure_future(
            asyncio.to_thread(inflight.begin, settings, _record(trace_id, settings, ctx))
        )
    )
    flushing: asyncio.Task[None] | None = None
    try:
        async with contextlib.AsyncExitStack() as opened:
            # The retrieve half's checkpoints wait in memory until the answer is out; the run's own and
            # the store half's are written as they happen, for a resume (see checkpoint_buffer).
            lend = (
                _in_memory_checkpointer
                if read_only
                else (options.checkpointers or checkpointer_for)
            )
            saver = WriteBehindSaver(
                lambda: opened.enter_async_context(lend(settings)),
                make_serde(),
                defer=_in_retrieve_half,
                new_thread=trace_id,
            )
            graph = with_checkpointer(saver)
            try:
                # The backstop: nodes keep to the deadline themselves and finish with what they have.
                async with asyncio.timeout(ctx.remaining()) as scope:
                    async for namespace, update in graph.astream(
                        inputs,
                        config,
                        context=ctx,
                        durability="async",
                        stream_mode="updates",
                        subgraphs=True,
                    ):
                        for node, delta in update.items():
                            if not isinstance(delta, dict):
                                continue
                            partial.update(
                                {k: delta[k] for k in ("assembled", "context") if k in delta}
                            )
                            if namespace:
                                continue
                            _merge(seen, delta)
                            if node == "retrieve" and on_answer is not None and not answered:
                                answered = True
                                if recording is not None:
                                    await asyncio.shield(recording)
                                # The store half is off the critical path: it gets a grace period.
                                if ctx.deadline is not None:
                                    scope.reschedule(ctx.deadline + STORE_GRACE_S)
                                early = {**seen, "timings_ms": _total(seen, started)}
                                await on_answer(
                                    result_json(
                                        trace_id,
                                        early,
                                        run_mode(ctx, settings, early.get("layers") or {}),
                                        {},
                                    )
                                )
                                flushing = asyncio.create_task(_flush_after_reply(saver))
                                answer_out.set()
            except TimeoutError:
                timed_out = True
            finally:
                if flushing is not None:
                    await asyncio.shield(flushing)  # a cancelled run still keeps its checkpoints
            await saver.flush()
            values = {**seen, **dict((await graph.aget_state(config)).values)}
    finally:
        if recording is not None:
            recording.add_done_callback(_end_record)
    if timed_out:
        # Whatever the finished stages produced still goes out: curated if it got that far, else assembled.
        values["context"] = (
            values.get("context") or partial.get("context") or partial.get("assembled") or ""
        )
        values["notes"] = [
            *(values.get("notes") or []),
            "run: stopped at the deadline; used what was ready",
        ]
    if on_answer is not None and not answered:  # cut before the retrieve half was done
        await on_answer(
            result_json(trace_id, values, run_mode(ctx, settings, values.get("layers") or {}), {})
        )
    values["timings_ms"] = _total(values, started)
    if ctx.usage is not None:
        embedded = getattr(embedder, "tokens_embedded", 0) - tokens_before
        if embedded > 0:
            ctx.usage.record(
                "embeddings",
                provider="local",
                model=embedder.model_id,
                input_tokens=embedded,
                output_tokens=0,
                cost_usd=0.0,
            )
    usage = ctx.usage.to_dict() if ctx.usage else {}
    result = result_json(
        trace_id, values, run_mode(ctx, settings, values.get("layers") or {}), usage
    )
    if read_only:
        result["notice"] = read_only_notice(settings)
        return result
    if options.write_trace:
        values.setdefault("prompt", prompt)
        write_run_trace(
            settings,
            result,
            values,
            session_id=options.session_id,
            source=options.source,
        )
    return result


def read_only_notice(settings: Settings) -> str:
    """The one sentence a run in a memory folder it may only read adds to its answer."""
    return (
        f"The memory folder {settings.paths.memory_dir} is read-only here, so memories were read "
        "but nothing new was stored."
    )


@contextlib.asynccontextmanager
async def _in_memory_checkpointer(_settings: Settings) -> AsyncIterator[Any]:
    """Checkpoints kept in memory for one run, where no checkpoint file can be written."""
    from langgraph.checkpoint.memory import InMemorySaver

    yield InMemorySaver(serde=make_serde())


def write_run_trace(
    settings: Settings,
    result: dict[str, Any],
    values: dict[str, Any],
    *,
    session_id: str | None,
    source: str,
    extra: dict[str, Any] | None = None,
) -> None:
    """The run's JSON trace in the debug folder: the `run --json` object and what led to it."""
    trace = {
        **result,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "project": settings.project_id,
        "session_id": session_id,
        "source": source,
        "prompt": values.get("prompt", ""),
        "classification": values.get("classification"),
        "l1_raw": values.get("l1_raw") or [],
        "plan": values.get("plan"),
        "storage": values.get("storage"),
        "instructions": values.get("instructions") or [],
        "tool_calls": values.get("tool_calls") or [],
        "retrieved_count": len(values.get("retrieved") or []),
        "assembled": values.get("assembled", ""),
        "flags": values.get("flags") or [],
        "notes": values.get("notes") or [],
        **(extra or {}),
    }
    write_trace(
        settings.paths.debug_dir,
        {k: settings.redact(v) if isinstance(v, str) else v for k, v in trace.items()},
    )


def _in_retrieve_half(checkpoint_ns: str) -> bool:
    """The retrieve subgraph's namespace and those nested in it ("retrieve:<task>|...")."""
    return checkpoint_ns.split("|", 1)[0].split(":", 1)[0] == "retrieve"


async def _flush_after_reply(saver: WriteBehindSaver) -> None:
    """Write the buffered checkpoints once the reply has gone out.

    `on_answer` only resolves a future; the caller's task sends the reply on its next turn of the
    event loop, so this waits two turns (asyncio runs ready callbacks in order) before it starts.
    """
    for _ in range(2):
        await asyncio.sleep(0)
    await saver.flush()


def _end_record(recording: asyncio.Future[inflight.Held | None]) -> None:
    """The run ended (finished, gave up or failed): its record goes, in a worker thread (removing a
    file that was written can take milliseconds on a busy disk; the event loop serves other prompts)."""
    if not recording.cancelled() and recording.exception() is None:
        held = recording.result()
        if held is not None:
            try:
                asyncio.get_running_loop().run_in_executor(None, held.end)
            except RuntimeError:  # the loop is closing: remove it here
                held.end()


def _record(trace_id: str, settings: Settings, ctx: Context) -> inflight.RunRecord:
    """What a restarted service needs to finish this run: its settings (no secrets) and options."""
    return inflight.RunRecord(
        trace_id=trace_id,
        settings=inflight.settings_json(settings),
        options={
            "session_id": ctx.session_id,
            "transcript_path": ctx.transcript_path,
            "source": ctx.source,
            "store_only": ctx.store_only,
            "offline": ctx.offline,
        },
    )


def _total(values: dict[str, Any], started: float) -> dict[str, float]:
    timings = dict(values.get("timings_ms") or {})
    timings["total"] = round((time.perf_counter() - started) * 1000, 2)
    return timings


async def replay(
    trace_id: str, settings: Settings, store: GraphStore, *, offline: bool = True
) -> dict[str, Any]:
    """Re-run assembly and curation on the run's checkpointed state (nothing is written to memory).

    The retrieval results (the retrieve loop's and the safety nets') are in the run's last checkpoint;
    assembly and curation run again on them. Returns the replayed context beside the original one.
    """
    trace = load_trace(settings.paths.debug_dir, trace_id)
    thread_id = trace["trace_id"]
    # The run's own id: what it wrote (stamped with it) was left out of its context, and is again.
    ctx = make_context(settings, store, offline=offline, read_only=True, run_id=thread_id)
    async with checkpointer_for(settings) as saver:
        graph = with_checkpointer(saver)
        latest = await graph.aget_state({"configurable": {"thread_id": thread_id}})
    values = dict(latest.values or {})
    if "retrieved" not in values and "classification" not in values:
        from octygraph.pipeline.traces import TraceNotFound

        raise TraceNotFound(f"No stored checkpoint for trace {thread_id}; it cannot be replayed.")
    inputs = {
        k: values[k] for k in ("prompt", "classification", "plan", "retrieved") if k in values
    }
    replayed: dict[str, Any] = await replay_graph().ainvoke(
        cast(PipelineState, inputs), context=ctx
    )
    return {
        "trace_id": thread_id,
        "from_checkpoint": (latest.config or {}).get("configurable", {}).get("checkpoint_id"),
        "original_context": trace.get("context", ""),
        "context": replayed.get("context", ""),
        "same": replayed.get("context", "") == trace.get("context", ""),
    }


async def checkpoint_steps(settings: Settings, trace_id: str) -> list[dict[str, Any]]:
    """The run's checkpoint history, oldest first: step and which nodes were about to run."""
    async with checkpointer_for(settings) as saver:
        graph = with_checkpointer(saver)
        history = [
            s async for s in graph.aget_state_history({"configurable": {"thread_id": trace_id}})
        ]
    return [
        {
            "step": s.metadata.get("step") if s.metadata else None,
            "next": list(s.next),
            "checkpoint_id": s.config["configurable"].get("checkpoint_id"),
        }
        for s in reversed(history)
    ]

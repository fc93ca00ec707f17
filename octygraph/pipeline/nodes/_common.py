"""Small helpers shared by nodes: stage timing and structured LLM calls with a deterministic fallback."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple, TypeVar

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel

from octygraph.pipeline.context import Context
from octygraph.pipeline.state import Layer, LayerMode, ToolCall

S = TypeVar("S", bound=BaseModel)
log = logging.getLogger("octygraph.pipeline")
NodeFn = Callable[..., Awaitable[dict[str, Any]]]


def timed(stage: str) -> Callable[[NodeFn], NodeFn]:
    """Record the node's wall time in `timings_ms[stage]`."""

    def wrap(fn: NodeFn) -> NodeFn:
        @functools.wraps(fn)
        async def inner(*args: Any, **kwargs: Any) -> dict[str, Any]:
            start = time.perf_counter()
            update = await fn(*args, **kwargs)
            elapsed = round((time.perf_counter() - start) * 1000, 2)
            timings = dict(update.get("timings_ms") or {})
            timings[stage] = elapsed
            # Verbose mode / OCTY_DEBUG show these on stderr while the run goes on.
            log.info(
                "%s done in %.1f ms (%s)", stage, elapsed, ", ".join(sorted(update)) or "no change"
            )
            return {**update, "timings_ms": timings}

        return inner

    return wrap


# ----------------------------------------------------------------------------- what ran, per layer

NO_MODEL = "no model configured"


def layer(mode: LayerMode, reason: str = "") -> Layer:
    return {"mode": mode, "reason": reason} if reason else {"mode": mode}


def short_reason(error: str | None) -> str:
    """The fault without its wrapping: `LLMUnavailable: No language model answered (x: HTTP 500).`
    becomes `x: HTTP 500`."""
    text = (error or "").strip()
    marker = "No language model answered ("
    if marker in text:
        text = text.split(marker, 1)[1].rstrip(".").removesuffix(")")
    return text[:300]


def answered(message: Any) -> Layer:
    """`model`, or `fallback` (with why) when the reply came from a provider after another one failed."""
    meta = getattr(message, "response_metadata", None) or {}
    provider = meta.get("octy_provider")
    failed = [a for a in meta.get("octy_attempts") or [] if a.get("provider") != provider]
    if provider and failed:
        return layer("fallback", "; ".join(f"{a['provider']}: {a['error']}" for a in failed))
    return layer("model")


def combine(records: list[Layer]) -> Layer:
    """One record for a stage of several calls: its worst mode, every distinct reason."""
    order: tuple[LayerMode, ...] = ("offline", "fallback", "model", "skipped")
    if not records:
        return layer("skipped")
    mode = min((r["mode"] for r in records), key=order.index)
    reasons = list(dict.fromkeys(r.get("reason", "") for r in records if r.get("reason")))
    return layer(mode, "; ".join(reasons))


# ----------------------------------------------------------------------------- tool-call trace records

RESULT_CHARS = 2000


def tool_call(
    loop: str, tool: str, args: dict[str, Any], result: str, fault: str | None = None
) -> ToolCall:
    """A trace record of one tool call: `error` with its fault when `fault` is given."""
    if fault is None:
        return {"loop": loop, "tool": tool, "args": args, "status": "success", "result": result}
    return {
        "loop": loop,
        "tool": tool,
        "args": args,
        "status": "error",
        "result": result[:RESULT_CHARS],
        "fault": fault,
    }


class Asked(NamedTuple):
    """The outcome of `ask_structured`."""

    parsed: Any
    raw: str
    error: str | None
    layer: Layer


async def ask_structured(
    ctx: Context,
    model: Any,
    schema: type[S],
    system: str,
    user: str,
    layer_name: str,
) -> Asked:
    """One structured call (function calling, two parse attempts): parsed (or None), raw, error, layer."""
    from octygraph.llm.structured import structured_call

    messages = [SystemMessage(system), HumanMessage(user)]
    try:
        result = await structured_call(
            model, schema, messages, attempts=2, config=ctx.llm_config(layer_name)
        )
    except Exception as exc:  # the LLM being down must never break the run
        error = f"{type(exc).__name__}: {exc}"
        return Asked(None, "", error, layer("offline", short_reason(error)))
    parsed = result.parsed if isinstance(result.parsed, schema) else None
    if parsed is None:
        return Asked(None, result.raw, result.error, layer("offline", short_reason(result.error)))
    return Asked(parsed, result.raw, result.error, answered(result.message))


async def ask_or_fall_back(
    ctx: Context, schema: Any, system: str, user: str, fallback: Any, label: str
) -> tuple[Any, list[str], Layer]:
    """The L2 model's structured answer, or `fallback` (the deterministic one) without a model or when
    its answer did not parse: (answer, notes, layer). `label` names the step in the note."""
    if ctx.l2_model is None:
        return fallback, [], layer("offline", NO_MODEL)
    asked = await ask_structured(ctx, ctx.l2_model, schema, system, user, "l2")
    if asked.parsed is None:
        note = f"{label} fell back to the deterministic path ({asked.error})"
        return fallback, [note], asked.layer
    return asked.parsed, [], asked.layer

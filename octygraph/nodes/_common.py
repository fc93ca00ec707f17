"""Small helpers shared by nodes: stage timing and structured LLM calls with a deterministic fallback."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel

from octygraph.context import Context

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


async def ask_structured(
    ctx: Context,
    model: Any,
    schema: type[S],
    system: str,
    user: str,
    layer: str,
) -> tuple[S | None, str, str | None]:
    """One structured call (function calling, two parse attempts). Returns (parsed, raw, error)."""
    from octygraph.llm.structured import structured_call

    messages = [SystemMessage(system), HumanMessage(user)]
    try:
        result = await structured_call(
            model, schema, messages, attempts=2, config=ctx.llm_config(layer)
        )
    except Exception as exc:  # the LLM being down must never break the run
        return None, "", f"{type(exc).__name__}: {exc}"
    parsed = result.parsed if isinstance(result.parsed, schema) else None
    return parsed, result.raw, result.error

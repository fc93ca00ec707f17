"""Structured output through function calling, with one retry and a clean way out."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from langchain_core.callbacks import Callbacks
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import merge_configs
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel

from octygraph.llm.errors import LLMUnavailable

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True)
class StructuredResult(Generic[T]):
    """Outcome of `structured_call`.

    Attributes:
        parsed: The validated object, or None when every attempt failed (the caller falls back).
        raw: The last raw reply (tool-call arguments as JSON, else the text), for traces.
        error: Why the last attempt failed, or None on success.
        attempts: How many model calls were made.
    """

    parsed: T | None
    raw: str
    error: str | None
    attempts: int = 0
    message: Any = None
    """The last reply message (its metadata says which provider answered), when there was one."""


def raw_text(message: Any) -> str:
    """The tool-call arguments of a reply as JSON, or its text."""
    if isinstance(message, AIMessage):
        if message.tool_calls:
            return json.dumps(message.tool_calls[0]["args"], ensure_ascii=False)
        if message.invalid_tool_calls:
            return str(message.invalid_tool_calls[0].get("args") or "")
    if isinstance(message, BaseMessage):
        return message.text
    return "" if message is None else str(message)


async def structured_call(
    model: BaseChatModel,
    schema: type[T],
    messages: Sequence[BaseMessage],
    *,
    attempts: int = 2,
    config: RunnableConfig | None = None,
    callbacks: Callbacks = None,
) -> StructuredResult[T]:
    """Ask `model` for a `schema` object through function calling.

    A reply that does not parse is asked again (with the parse error) up to `attempts` times in
    all; then `parsed` is None. When no provider answers at all (`LLMUnavailable`), it stops at
    once: asking again would only wait for the same outage.

    Args:
        model: A chat model with `with_structured_output` (function calling).
        schema: The pydantic class to fill.
        messages: The prompt.
        attempts: Model calls at most.
        config: Run config (metadata such as `octy_layer`, tags...).
        callbacks: Extra callbacks for this call, e.g. `[UsageCallback(tracker, "l1")]`.
    """
    if callbacks is not None:
        config = merge_configs(config, {"callbacks": callbacks})
    runnable = model.with_structured_output(schema, method="function_calling", include_raw=True)
    name = convert_to_openai_tool(schema)["function"]["name"]
    history = list(messages)
    raw, error, made = "", None, 0
    for _ in range(max(1, attempts)):
        made += 1
        try:
            out = await runnable.ainvoke(history, config)
        except LLMUnavailable as exc:
            return StructuredResult(None, raw, str(exc), made)
        except Exception as exc:  # a parser or provider error: count it as a failed parse
            error = f"{type(exc).__name__}: {exc}"
            continue
        result: dict[str, Any] = out if isinstance(out, dict) else {"parsed": out}
        message = result.get("raw")
        raw = raw_text(message)
        parsed = result.get("parsed")
        if isinstance(parsed, schema):
            return StructuredResult(parsed, raw, None, made, message)
        if isinstance(parsed, dict):  # a model that hands back plain args
            try:
                return StructuredResult(schema.model_validate(parsed), raw, None, made, message)
            except ValueError as exc:
                error = str(exc)
        else:
            failure = result.get("parsing_error")
            broken = message.invalid_tool_calls if isinstance(message, AIMessage) else []
            if failure:
                error = str(failure)
            elif broken:
                error = (
                    f"invalid tool arguments ({broken[0].get('error') or broken[0].get('args')})"
                )
            else:
                error = "The reply did not call the schema tool."
        history = [
            *messages,
            HumanMessage(
                f"Your previous reply could not be used ({error[:300]}). "
                f"Reply again by calling the `{name}` tool with arguments that match its schema."
            ),
        ]
    return StructuredResult(None, raw, error, made)

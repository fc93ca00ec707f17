"""Scripted chat models for tests: no network, no keys, fully deterministic.

`ScriptedChatModel(script)` replays a script, one item per call. Items:

- `AIMessage` (use `tool_calls_message(...)` for tool calls) or `str` (a text reply);
- a pydantic object or a dict: the reply of a structured-output call (a tool call of the schema);
- `ParseFailure("why")`: a structured reply that does not parse (`parsed=None` with
  `include_raw=True`, an `OutputParserException` without it);
- any other exception: raised by the model, like a provider error;
- a callable `(messages) -> item`, called with the messages of that call.

The script can be endless (`itertools.cycle([...])`, e.g. a model that never stops calling
tools). Copies made by `bind_tools` / `with_structured_output` share the script and counters.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from operator import itemgetter
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.messages.tool import ToolCall
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import (
    Runnable,
    RunnableLambda,
    RunnableMap,
    RunnablePassthrough,
)
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, PrivateAttr, ValidationError

_call_ids = itertools.count(1)
_PARSE_FAILURE_KEY = "scripted_parse_failure"


class ParseFailure(Exception):
    """Script item: a structured-output reply that does not parse."""


def tool_calls_message(*calls: tuple[str, dict[str, Any]] | str, content: str = "") -> AIMessage:
    """An AIMessage with tool calls.

    `tool_calls_message(("search_facts", {"query": "x"}), "done")`: a name alone means no args.
    """
    tool_calls: list[ToolCall] = []
    for call in calls:
        name, args = (call, {}) if isinstance(call, str) else call
        tool_calls.append(
            ToolCall(name=name, args=dict(args), id=f"call_{next(_call_ids)}", type="tool_call")
        )
    return AIMessage(content=content, tool_calls=tool_calls)


def tool_name(tool: dict[str, Any] | type | Callable[..., Any] | BaseTool) -> str:
    """The name a tool or schema is bound under."""
    return str(convert_to_openai_tool(tool)["function"]["name"])


class _ScriptState:
    def __init__(self, script: Iterable[Any]) -> None:
        self.items: Iterator[Any] = iter(script)
        self.lock = threading.Lock()
        self.requests: list[list[BaseMessage]] = []
        self.bound_tools: list[list[str]] = []
        self.tool_choices: list[Any] = []


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


class ScriptedChatModel(BaseChatModel):
    """A chat model that replays a script (see the module docstring)."""

    model_name: str = "scripted"
    provider: str = "fake"

    _state: _ScriptState = PrivateAttr()
    _tools: list[str] = PrivateAttr(default_factory=list)
    _schema: Any = PrivateAttr(default=None)

    def __init__(self, script: Iterable[Any] = (), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._state = _ScriptState(script)

    @classmethod
    def cycle(cls, items: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        """A model that repeats `items` forever."""
        return cls(itertools.cycle(items), **kwargs)

    @property
    def _llm_type(self) -> str:
        return "scripted-chat"

    # --- what tests inspect --------------------------------------------------------------

    @property
    def calls(self) -> int:
        """Number of model calls so far, over this model and its bound copies."""
        return len(self._state.requests)

    @property
    def requests(self) -> list[list[BaseMessage]]:
        """The messages of each call."""
        return self._state.requests

    @property
    def bound_tools(self) -> list[list[str]]:
        """Tool names of every `bind_tools` call, in order."""
        return self._state.bound_tools

    @property
    def tool_choices(self) -> list[Any]:
        """`tool_choice` of every `bind_tools` call."""
        return self._state.tool_choices

    @property
    def tools(self) -> list[str]:
        """Tool names bound on this copy."""
        return list(self._tools)

    # --- binding -------------------------------------------------------------------------

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> ScriptedChatModel:
        names = [tool_name(t) for t in tools]
        with self._state.lock:
            self._state.bound_tools.append(names)
            self._state.tool_choices.append(tool_choice)
        bound = self.model_copy()
        bound._tools = names
        bound._schema = self._schema
        return bound

    def with_structured_output(
        self,
        schema: dict[str, Any] | type,
        *,
        include_raw: bool = False,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, dict[str, Any] | BaseModel]:
        bound = self.bind_tools([schema], tool_choice="any")
        bound._schema = schema
        is_model = isinstance(schema, type) and issubclass(schema, BaseModel)

        def parse(message: AIMessage) -> Any:
            failure = message.response_metadata.get(_PARSE_FAILURE_KEY)
            if failure is not None:
                raise OutputParserException(str(failure), llm_output=message.text)
            if not message.tool_calls:
                raise OutputParserException("The reply has no tool call.", llm_output=message.text)
            args = message.tool_calls[0]["args"]
            if is_model:
                try:
                    return schema.model_validate(args)  # type: ignore[union-attr]
                except ValidationError as exc:
                    raise OutputParserException(str(exc), llm_output=json.dumps(args)) from exc
            return args

        parser = RunnableLambda(parse)
        if not include_raw:
            return bound | parser
        assign = RunnablePassthrough.assign(
            parsed=itemgetter("raw") | parser, parsing_error=lambda _: None
        )
        none = RunnablePassthrough.assign(parsed=lambda _: None)
        return RunnableMap(raw=bound) | assign.with_fallbacks([none], exception_key="parsing_error")

    # --- generation ----------------------------------------------------------------------

    def _schema_name(self) -> str:
        return tool_name(self._schema) if self._schema is not None else "structured"

    def _to_message(self, item: Any, messages: list[BaseMessage]) -> AIMessage:
        while callable(item) and not isinstance(item, BaseModel | type | BaseException):
            item = item(messages)
        if isinstance(item, AIMessage):
            return item.model_copy(deep=True)
        if isinstance(item, str):
            return AIMessage(content=item)
        if isinstance(item, ParseFailure):
            return AIMessage(
                content=f"(unparseable reply: {item})",
                response_metadata={_PARSE_FAILURE_KEY: str(item)},
            )
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, BaseModel):
            args = item.model_dump(mode="json")
            name = self._schema_name() if self._schema is not None else type(item).__name__
            return tool_calls_message((name, args))
        if isinstance(item, dict):
            return tool_calls_message((self._schema_name(), item))
        raise TypeError(f"Unsupported script item: {item!r}")

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        with self._state.lock:
            item = next(self._state.items, StopIteration)
            self._state.requests.append(list(messages))
            count = len(self._state.requests)
        if item is StopIteration:
            raise RuntimeError(f"ScriptedChatModel script exhausted at call {count}.")
        message = self._to_message(item, messages)
        if message.usage_metadata is None:
            prompt = _tokens("".join(m.text for m in messages))
            body = message.text + "".join(json.dumps(c["args"]) for c in message.tool_calls)
            completion = _tokens(body)
            message.usage_metadata = UsageMetadata(
                input_tokens=prompt, output_tokens=completion, total_tokens=prompt + completion
            )
        message.response_metadata = {
            "octy_provider": self.provider,
            "octy_model": self.model_name,
            "model_name": self.model_name,
            **message.response_metadata,
        }
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # no executor hop: scripts are instant and callables see the caller's context
        return self._generate(messages, stop, None, **kwargs)

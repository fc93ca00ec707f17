"""A chat model that retries its provider and falls back to Claude.

Why a `BaseChatModel` subclass rather than `with_retry().with_fallbacks()`: the spec retries an
*empty* reply (no content and no tool calls) as well as errors, doubles the delay on HTTP 429 only,
and must keep `bind_tools` / `with_structured_output` working with tools bound on each provider in
its own format. LangChain's wrappers return a `Runnable` without `bind_tools` and retry on
exceptions only, so one small class does the loop instead.

Endpoints that fail hard (refused connection, bad key, retries used up) are skipped by every
model in the process for a minute (`CIRCUIT`), so one prompt's many calls pay for an outage once.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import httpx
from langchain_core.callbacks import (
    AsyncCallbackManager,
    AsyncCallbackManagerForLLMRun,
    CallbackManager,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableBinding, RunnableConfig
from langchain_core.tools import BaseTool
from pydantic import ConfigDict

from octygraph.llm.deadline import MIN_CALL_S, deadline_of, left
from octygraph.llm.errors import LLMUnavailable
from octygraph.llm.usage import MODEL_KEY, PROVIDER_KEY

try:  # the SDKs are what the provider models raise; anthropic is optional
    import openai as _openai
except ImportError:  # pragma: no cover - langchain-openai depends on it
    _openai = None  # type: ignore[assignment]
try:
    import anthropic as _anthropic
except ImportError:  # pragma: no cover - optional dependency
    _anthropic = None  # type: ignore[assignment]

ATTEMPTS_KEY = "octy_attempts"


@dataclass(frozen=True)
class Route:
    """One provider in the chain.

    Attributes:
        provider: Label recorded in usage and response metadata (`openrouter`, `anthropic`, ...).
        model_name: The model asked for.
        model: The provider's chat model.
        retries: Extra attempts after the first one.
        supports_tools: False for the `claude` command, which answers text only.
        bound: Call kwargs from `bind_tools` (tools in the provider's format, tool_choice...).
        endpoint: The server's base URL (or another id), for the circuit breaker.
    """

    provider: str
    model_name: str
    model: BaseChatModel
    retries: int = 3
    supports_tools: bool = True
    bound: Mapping[str, Any] = field(default_factory=dict)
    endpoint: str = ""

    @property
    def endpoint_key(self) -> str:
        """What the circuit breaker tracks: the server, shared by every model on it."""
        return self.endpoint or f"{self.provider}:{self.model_name}"

    def with_tools(self, tools: Sequence[Any], tool_choice: str | None, **kwargs: Any) -> Route:
        binding = self.model.bind_tools(tools, tool_choice=tool_choice, **kwargs)
        # Keep the kwargs, not the binding: invoking the model itself with them keeps this
        # call's callbacks (a RunnableBinding would merge in the caller's context instead).
        if not isinstance(binding, RunnableBinding) or binding.bound is not self.model:
            raise TypeError(f"{type(self.model).__name__}.bind_tools did not return a binding.")
        return replace(self, bound={**self.bound, **binding.kwargs})


@dataclass(frozen=True)
class Failure:
    """Why an attempt failed and what to do about it.

    Attributes:
        reason: Short text for logs and the final error.
        retryable: Worth another attempt on the same provider.
        status: HTTP status, when there was one.
        max_retries: A lower retry cap for this kind of failure (timeouts are slow).
        trips: When the route gives up on this failure, skip the endpoint for a while.
        retry_after_s: The wait the server asked for (Retry-After), when it said one.
    """

    reason: str
    retryable: bool
    status: int | None = None
    max_retries: int | None = None
    trips: bool = False
    retry_after_s: float | None = None


EMPTY_REPLY = Failure("empty reply", retryable=True)
OUT_OF_TIME = Failure("deadline reached", retryable=False)


def has_answer(message: BaseMessage) -> bool:
    """A reply counts when it has text, tool calls, or tool calls that failed to parse."""
    if isinstance(message, AIMessage) and (message.tool_calls or message.invalid_tool_calls):
        return True
    return bool(message.text.strip())


def _sdk_errors(name: str) -> tuple[type[BaseException], ...]:
    found = [getattr(sdk, name) for sdk in (_openai, _anthropic) if sdk is not None]
    return tuple(t for t in found if isinstance(t, type))


_TIMEOUTS = (httpx.TimeoutException, TimeoutError, *_sdk_errors("APITimeoutError"))
_CONNECTION = (httpx.TransportError, ConnectionError, *_sdk_errors("APIConnectionError"))
_UNREACHABLE = (ConnectionRefusedError, socket.gaierror)


def _causes(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and len(chain) < 10:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _unreachable(exc: BaseException) -> bool:
    """Connection refused or unknown host, however deep the SDKs wrapped it (their HTTP
    libraries vary: httpx, httpx2...), so the class is matched by name too."""
    return any(
        isinstance(c, _UNREACHABLE) or type(c).__name__ == "ConnectError" for c in _causes(exc)
    )


# A server that asks for a longer wait than this is treated as down: the prompt cannot wait for it.
MAX_RETRY_AFTER_S = 5.0


def retry_after(exc: BaseException) -> float | None:
    """Seconds from the response's Retry-After header (delta-seconds form), when it has one."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    value = headers.get("retry-after") if headers is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:  # the HTTP-date form: rare from model servers, not worth a wait
        return None


def classify(exc: Exception) -> Failure:
    """Decide whether an error is worth retrying on the same provider."""
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        if status == 429:
            wait = retry_after(exc)
            return Failure("HTTP 429 rate limited", True, 429, trips=True, retry_after_s=wait)
        if status == 503 and retry_after(exc) is not None:
            return Failure("HTTP 503", True, 503, trips=True, retry_after_s=retry_after(exc))
        if status in (408, 409) or status >= 500:
            return Failure(f"HTTP {status}", True, status, trips=True)
        # a bad key or an unknown endpoint will not heal; a 400 may be this request only
        return Failure(f"HTTP {status}", False, status, trips=status in (401, 403, 404))
    if isinstance(exc, _TIMEOUTS):
        return Failure("timed out", True, max_retries=1, trips=True)
    if _unreachable(exc):
        # nothing listens there (or the name does not resolve): retrying only burns the budget
        return Failure("unreachable", False, trips=True)
    if isinstance(exc, _CONNECTION):
        return Failure(f"connection failed ({type(exc).__name__})", True, trips=True)
    if isinstance(exc, LLMUnavailable):  # the claude command failed or timed out
        return Failure(str(exc).rstrip("."), False, trips=True)
    # anything else (a malformed response...) moves on to the next provider
    return Failure(f"{type(exc).__name__}: {str(exc)[:160]}", False)


class _Circuit:
    """Endpoints that just failed hard, skipped by every model in this process for a while.

    One prompt makes many LLM calls (classify, plan, two loops, curation): when the endpoint is
    down, only the first call should pay for finding out.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._down: dict[str, float] = {}

    def is_down(self, key: str) -> bool:
        with self._lock:
            until = self._down.get(key)
            if until is None:
                return False
            if until <= time.monotonic():
                del self._down[key]
                return False
            return True

    def trip(self, key: str, cooldown_s: float) -> None:
        with self._lock:
            self._down[key] = time.monotonic() + cooldown_s

    def reset(self, key: str | None = None) -> None:
        with self._lock:
            if key is None:
                self._down.clear()
            else:
                self._down.pop(key, None)


CIRCUIT = _Circuit()
CIRCUIT_COOLDOWN_S = 60.0


@dataclass
class _Run:
    """Bookkeeping of one call across providers and attempts."""

    base_delay_s: float
    deadline: float | None = None
    """`time.monotonic()` by which the call must be over (the run's deadline); None = no limit."""
    log: list[dict[str, Any]] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)
    retry_in: float | None = None
    """After a failed attempt: the wait before the next one on the same route; None = the next route."""

    def out_of_time(self) -> bool:
        remaining = left(self.deadline)
        return remaining is not None and remaining < MIN_CALL_S

    def skip(self, route: Route) -> bool:
        """True (and logged) when the route's endpoint failed hard a moment ago."""
        if not CIRCUIT.is_down(route.endpoint_key):
            return False
        reason = "skipped: failed a moment ago"
        self.log.append({"provider": route.provider, "model": route.model_name, "error": reason})
        self.reasons[route.provider] = reason
        return True

    def failed(self, route: Route, attempt: int, failure: Failure) -> float | None:
        """Log a failed attempt; the delay before the next one, or None to move on."""
        entry: dict[str, Any] = {
            "provider": route.provider,
            "model": route.model_name,
            "attempt": attempt,
            "error": failure.reason,
        }
        if failure.status is not None:
            entry["status"] = failure.status
        self.log.append(entry)
        self.reasons[route.provider] = failure.reason
        retries = route.retries
        if failure.max_retries is not None:
            retries = min(retries, failure.max_retries)
        too_long = failure.retry_after_s is not None and failure.retry_after_s > MAX_RETRY_AFTER_S
        if too_long:
            entry["retry_after_s"] = failure.retry_after_s
        if not failure.retryable or attempt > retries or too_long:
            if failure.trips:
                CIRCUIT.trip(route.endpoint_key, CIRCUIT_COOLDOWN_S)
            return None
        # growing delay: base, 2x base, 4x base; a rate limit doubles it
        delay = self.base_delay_s * 2 ** (attempt - 1)
        if failure.status == 429:
            delay *= 2
        if failure.retry_after_s is not None:
            # the server said when to come back: sooner is refused, later wastes the budget
            delay = failure.retry_after_s
            entry["retry_after_s"] = failure.retry_after_s
        remaining = left(self.deadline)
        if remaining is not None and delay >= remaining - MIN_CALL_S:
            # the wait alone would outlast the run: give up now and let the caller use what it has
            entry["gave_up"] = "no time left for a retry"
            self.reasons[route.provider] = f"{failure.reason}; no time left for a retry"
            if failure.trips:  # the rest of this run has even less time: skip the endpoint
                CIRCUIT.trip(route.endpoint_key, CIRCUIT_COOLDOWN_S)
            return None
        entry["delay_s"] = delay
        return delay

    def succeeded(self, route: Route) -> None:
        CIRCUIT.reset(route.endpoint_key)

    def unavailable(self) -> LLMUnavailable:
        detail = "; ".join(f"{p}: {r}" for p, r in self.reasons.items()) or "no provider"
        return LLMUnavailable(f"No language model answered ({detail}).")


class ResilientChatModel(BaseChatModel):
    """Try each route in turn: the primary with retries, then the Claude fallback.

    The reply's `response_metadata` carries `octy_provider` / `octy_model` (who answered) and
    `octy_attempts` (the failed attempts before it, with their delays). When every route fails,
    `LLMUnavailable` is raised.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    routes: list[Route]
    model_name: str
    retry_base_s: float = 1.0
    tools_bound: bool = False

    @property
    def _llm_type(self) -> str:
        return "octygraph-resilient"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"routes": [f"{r.provider}:{r.model_name}" for r in self.routes]}

    @property
    def providers(self) -> list[str]:
        """Provider labels in the order they are tried."""
        return [r.provider for r in self.routes]

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind `tools` on every route that can call tools, each in its provider's format."""
        routes = [
            r.with_tools(tools, tool_choice, **kwargs) for r in self.routes if r.supports_tools
        ]
        return self.model_copy(update={"routes": routes, "tools_bound": True})

    def _active(self) -> list[Route]:
        routes = [r for r in self.routes if r.supports_tools or not self.tools_bound]
        if not routes:
            raise LLMUnavailable("No configured language model can call tools.")
        return routes

    def _finish(self, message: BaseMessage, route: Route, run: _Run) -> ChatResult:
        if not isinstance(message, AIMessage):
            message = AIMessage(content=message.content)
        meta = {
            **message.response_metadata,
            PROVIDER_KEY: route.provider,
            MODEL_KEY: route.model_name,
            ATTEMPTS_KEY: run.log,
        }
        answered = message.model_copy(update={"response_metadata": meta})
        return ChatResult(generations=[ChatGeneration(message=answered)])

    @staticmethod
    def _deadline(
        run_manager: CallbackManagerForLLMRun | AsyncCallbackManagerForLLMRun | None,
    ) -> float | None:
        """The run's deadline, carried in the call's metadata by `Context.llm_config`."""
        if run_manager is None:
            return None
        return deadline_of(run_manager.metadata) or deadline_of(run_manager.inheritable_metadata)

    @staticmethod
    def _config(
        run_manager: CallbackManagerForLLMRun | AsyncCallbackManagerForLLMRun | None,
    ) -> RunnableConfig:
        """Config for a provider call: a child of this run, so traces nest under it."""
        if run_manager is None:
            return {}
        manager: CallbackManager | AsyncCallbackManager
        if isinstance(run_manager, AsyncCallbackManagerForLLMRun):
            manager = AsyncCallbackManager(handlers=[], parent_run_id=run_manager.run_id)
        else:
            manager = CallbackManager(handlers=[], parent_run_id=run_manager.run_id)
        manager.set_handlers(run_manager.inheritable_handlers)
        manager.add_tags(run_manager.inheritable_tags)
        manager.add_metadata(run_manager.inheritable_metadata)
        return {"callbacks": manager}

    def _attempts(self, run: _Run) -> Iterator[tuple[Route, int]]:
        """The attempts of one call, in order: (route, attempt number) for each route not skipped, again
        while its last failure left a delay (`_outcome`). Raises `LLMUnavailable` once the run is out of
        time."""
        for route in self._active():
            if run.skip(route):
                continue
            attempt = 0
            while True:
                attempt += 1
                if run.out_of_time():
                    run.failed(route, attempt, OUT_OF_TIME)
                    raise run.unavailable()
                yield route, attempt
                if run.retry_in is None:
                    break

    def _outcome(
        self, run: _Run, route: Route, attempt: int, reply: BaseMessage | Failure
    ) -> ChatResult | None:
        """The result when `reply` answers; else the attempt is logged as failed and `run.retry_in` is
        the wait before the next attempt on this route (None: on to the next route)."""
        if not isinstance(reply, Failure):
            if has_answer(reply):
                run.succeeded(route)
                return self._finish(reply, route, run)
            reply = EMPTY_REPLY
        run.retry_in = run.failed(route, attempt, reply)
        return None

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        run = _Run(self.retry_base_s, deadline=self._deadline(run_manager))
        if stop is not None:
            kwargs["stop"] = stop
        for route, attempt in self._attempts(run):
            reply: BaseMessage | Failure
            try:
                reply = route.model.invoke(
                    messages, self._config(run_manager), **{**route.bound, **kwargs}
                )
            except Exception as exc:  # CancelledError / KeyboardInterrupt propagate
                reply = classify(exc)
            result = self._outcome(run, route, attempt, reply)
            if result is not None:
                return result
            if run.retry_in is not None:
                time.sleep(run.retry_in)
        raise run.unavailable()

    # `_generate` awaited: LangChain calls one or the other, and the async one bounds each request with
    # `asyncio.timeout`, which a thread cannot.
    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        run = _Run(self.retry_base_s, deadline=self._deadline(run_manager))
        if stop is not None:
            kwargs["stop"] = stop
        for route, attempt in self._attempts(run):
            reply: BaseMessage | Failure
            try:
                # The request may take only the time the run has left.
                async with asyncio.timeout(left(run.deadline)) as scope:
                    reply = await route.model.ainvoke(
                        messages, self._config(run_manager), **{**route.bound, **kwargs}
                    )
            except TimeoutError:
                if scope.expired():
                    run.failed(route, attempt, OUT_OF_TIME)
                    raise run.unavailable() from None
                reply = classify(TimeoutError())
            except Exception as exc:
                reply = classify(exc)
            result = self._outcome(run, route, attempt, reply)
            if result is not None:
                return result
            if run.retry_in is not None:
                await asyncio.sleep(run.retry_in)
        raise run.unavailable()

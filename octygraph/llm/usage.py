"""Token and cost accounting per pipeline layer.

`UsageTracker` adds up calls, tokens and cost per layer (`l1`, `l2`, `curation`,
`reconciliation`, `embeddings`). `UsageCallback` is the LangChain callback that feeds it from
chat-model results: it reads `usage_metadata`, the provider that answered and, when the provider
reports it (OpenRouter, the claude command), the cost it billed.

langchain_core's `UsageMetadataCallbackHandler` reads the same `usage_metadata`, but it sums by model
name only: it has no layer, provider or billed cost, and it would count a resilient wrapper's run
and the provider call inside it twice. Hence this callback.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, LLMResult

from octygraph.llm.pricing import cost as list_cost

Layer = Literal["l1", "l2", "curation", "reconciliation", "embeddings"]
LAYERS: tuple[str, ...] = ("l1", "l2", "curation", "reconciliation", "embeddings")

# Metadata keys: a caller sets `octy_layer` in a run's config metadata to bill a call to another
# layer (curation uses the L2 model); the factory tags each provider model with `octy_provider`.
LAYER_KEY = "octy_layer"
PROVIDER_KEY = "octy_provider"
MODEL_KEY = "octy_model"


@dataclass
class _Bucket:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    priced_calls: int = 0

    def add(self, input_tokens: int, output_tokens: int, cost_usd: float | None) -> None:
        self.calls += 1
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        if cost_usd is not None:
            self.cost_usd += cost_usd
            self.priced_calls += 1

    def remove(self, input_tokens: int, output_tokens: int, cost_usd: float | None) -> None:
        self.calls -= 1
        self.input_tokens -= input_tokens
        self.output_tokens -= output_tokens
        if cost_usd is not None:
            self.cost_usd -= cost_usd
            self.priced_calls -= 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": round(self.cost_usd, 8) if self.priced_calls else None,
            "priced": self.calls > 0 and self.priced_calls == self.calls,
        }


class UsageTracker:
    """Thread- and task-safe tally of LLM and embedding usage per layer.

    `cost_usd` of a layer is the sum over its priced calls (None when none was priced);
    `priced` is true only when every call was priced, so a false value marks a lower bound.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # (layer, provider, model) -> bucket, in first-use order
        self._buckets: dict[tuple[str, str, str], _Bucket] = {}
        # run id -> (bucket key, input, output, cost, weak): a run reported twice counts once
        self._runs: dict[UUID, tuple[tuple[str, str, str], int, int, float | None, bool]] = {}

    def record(
        self,
        layer: str,
        *,
        provider: str,
        model: str,
        input_tokens: int,
        output_tokens: int,
        cost_usd: float | None = None,
        run_id: UUID | None = None,
        weak: bool = False,
    ) -> None:
        """Add one call.

        Args:
            layer: One of `LAYERS`.
            provider: Who answered (`openrouter`, `workers-ai`, `openai-compatible`, `anthropic`,
                `claude-cli`, `voyage`, `local`, ...).
            model: The model name used for pricing.
            input_tokens: Prompt tokens.
            output_tokens: Completion tokens.
            cost_usd: The cost the provider reported; when None the price table is used.
            run_id: The LangChain run id; a run recorded twice is counted once.
            weak: A default attribution (the factory's callback): a non-weak record of the same
                run, such as a per-call `UsageCallback(tracker, "curation")`, replaces it.
        """
        if layer not in LAYERS:
            raise ValueError(f"Unknown usage layer {layer!r}; expected one of {', '.join(LAYERS)}.")
        if cost_usd is None:
            cost_usd = list_cost(model, input_tokens, output_tokens)
        key = (layer, provider, model)
        tokens_in, tokens_out = max(0, input_tokens), max(0, output_tokens)
        with self._lock:
            if run_id is not None:
                previous = self._runs.get(run_id)
                if previous is not None:
                    if weak or not previous[4]:
                        return
                    self._buckets[previous[0]].remove(*previous[1:4])  # a weak default, moved
                self._runs[run_id] = (key, tokens_in, tokens_out, cost_usd, weak)
            self._buckets.setdefault(key, _Bucket()).add(tokens_in, tokens_out, cost_usd)

    @property
    def calls(self) -> int:
        """Number of calls recorded over all layers."""
        with self._lock:
            return sum(b.calls for b in self._buckets.values())

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """`{layer: {provider, model, calls, input_tokens, output_tokens, cost_usd, priced,
        models}, "total": {...}}`; layers without calls are left out."""
        with self._lock:
            items = [(key, _copy(b)) for key, b in self._buckets.items() if b.calls]
        out: dict[str, dict[str, Any]] = {}
        grand = _Bucket()
        for layer in LAYERS:
            rows = [(p, m, b) for (lay, p, m), b in items if lay == layer and b.calls]
            if not rows:
                continue
            merged = _Bucket()
            for _, _, b in rows:
                _merge(merged, b)
            _merge(grand, merged)
            out[layer] = {
                "provider": _join(p for p, _, _ in rows),
                "model": _join(m for _, m, _ in rows),
                **merged.as_dict(),
                "models": [{"provider": p, "model": m, **b.as_dict()} for p, m, b in rows],
            }
        out["total"] = {
            "provider": _join(p for (_, p, _), _b in items),
            "model": _join(m for (_, _, m), _b in items),
            **grand.as_dict(),
        }
        return out


def _copy(b: _Bucket) -> _Bucket:
    return _Bucket(b.calls, b.input_tokens, b.output_tokens, b.cost_usd, b.priced_calls)


def _merge(into: _Bucket, b: _Bucket) -> None:
    into.calls += b.calls
    into.input_tokens += b.input_tokens
    into.output_tokens += b.output_tokens
    into.cost_usd += b.cost_usd
    into.priced_calls += b.priced_calls


def _join(values: Any) -> str:
    return ", ".join(dict.fromkeys(values))


class UsageCallback(BaseCallbackHandler):
    """Record every chat-model result into a `UsageTracker`.

    The layer is `layer` unless the run's metadata carries `octy_layer`. Only leaf runs count: when
    a chat model calls other chat models (the resilient wrapper calling a provider, then a
    fallback), each provider call is recorded once, including the wasted ones, and the wrapper's
    own run is skipped. Pass it as a model's `callbacks` or in a run's config; `weak=True`
    (what the factory uses) lets a per-call callback of the same tracker take the run instead.
    """

    run_inline = True  # bookkeeping only: no need for a thread hop

    def __init__(self, tracker: UsageTracker, layer: str, *, weak: bool = False) -> None:
        if layer not in LAYERS:
            raise ValueError(f"Unknown usage layer {layer!r}; expected one of {', '.join(LAYERS)}.")
        self.tracker = tracker
        self.layer = layer
        self.weak = weak
        self._lock = threading.Lock()
        self._runs: dict[UUID, dict[str, Any]] = {}

    def _start(self, run_id: UUID, parent_run_id: UUID | None, metadata: Mapping[str, Any]) -> None:
        with self._lock:
            parent = self._runs.get(parent_run_id) if parent_run_id else None
            if parent is not None:
                parent["has_children"] = True
            self._runs[run_id] = {"metadata": dict(metadata), "has_children": False}

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self._start(run_id, parent_run_id, metadata or {})

    def on_llm_start(
        self,
        serialized: dict[str, Any],
        prompts: list[str],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self._start(run_id, parent_run_id, metadata or {})

    def on_llm_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        with self._lock:
            self._runs.pop(run_id, None)

    def on_llm_end(
        self,
        response: LLMResult,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        with self._lock:
            run = self._runs.pop(run_id, None)
        if run is not None and run["has_children"]:
            return  # its children were recorded one by one
        metadata: Mapping[str, Any] = run["metadata"] if run else {}
        layer = str(metadata.get(LAYER_KEY) or self.layer)
        if layer not in LAYERS:
            layer = self.layer
        for message in _messages(response):
            usage = message.usage_metadata
            if not usage:
                continue
            meta = message.response_metadata or {}
            provider = str(
                meta.get(PROVIDER_KEY)
                or metadata.get(PROVIDER_KEY)
                or metadata.get("ls_provider")
                or meta.get("model_provider")
                or "unknown"
            )
            model = str(
                meta.get(MODEL_KEY)
                or metadata.get(MODEL_KEY)
                or metadata.get("ls_model_name")
                or meta.get("model_name")
                or meta.get("model")
                or "unknown"
            )
            self.tracker.record(
                layer,
                provider=provider,
                model=model,
                input_tokens=int(usage.get("input_tokens", 0)),
                output_tokens=int(usage.get("output_tokens", 0)),
                cost_usd=_reported_cost(provider, meta),
                run_id=run_id,
                weak=self.weak and LAYER_KEY not in metadata,
            )
            break  # one result per run; n > 1 completions are not used here


def _messages(response: LLMResult) -> list[AIMessage]:
    out: list[AIMessage] = []
    for generations in response.generations:
        for gen in generations:
            if isinstance(gen, ChatGeneration) and isinstance(gen.message, AIMessage):
                out.append(gen.message)
    return out


def _reported_cost(provider: str, meta: Mapping[str, Any]) -> float | None:
    """The billed cost a provider put in its reply (OpenRouter's `usage.cost`), if any."""
    reported = meta.get("octy_cost_usd")
    if isinstance(reported, int | float) and not isinstance(reported, bool):
        return float(reported)
    if provider != "openrouter":
        return None
    usage = meta.get("token_usage")
    if isinstance(usage, Mapping):
        value = usage.get("cost")
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None

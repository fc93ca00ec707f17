"""octygraph's LLM layer: chat-model factory, retries and fallback, structured output, usage.

The light parts (errors, pricing, usage) import eagerly; the factory and friends load on first use
so that the offline path never imports the provider SDKs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from octygraph.llm.errors import LLMConfigError, LLMUnavailable
from octygraph.llm.pricing import Price, cost, price
from octygraph.llm.usage import LAYERS, UsageCallback, UsageTracker

if TYPE_CHECKING:
    from octygraph.llm.factory import layer_model, make_chat_model, resolve_endpoint
    from octygraph.llm.resilient import ResilientChatModel
    from octygraph.llm.structured import StructuredResult, structured_call

_LAZY = {
    "make_chat_model": "octygraph.llm.factory",
    "resolve_endpoint": "octygraph.llm.factory",
    "layer_model": "octygraph.llm.factory",
    "ResilientChatModel": "octygraph.llm.resilient",
    "StructuredResult": "octygraph.llm.structured",
    "structured_call": "octygraph.llm.structured",
}

__all__ = [
    "LAYERS",
    "LLMConfigError",
    "LLMUnavailable",
    "Price",
    "ResilientChatModel",
    "StructuredResult",
    "UsageCallback",
    "UsageTracker",
    "cost",
    "layer_model",
    "make_chat_model",
    "price",
    "resolve_endpoint",
    "structured_call",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'octygraph.llm' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)

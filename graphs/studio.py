"""The graph for LangGraph Studio: `langgraph dev --config graphs/langgraph.json` (repo root).

Compiled without a checkpointer: the server supplies its own persistence. The run's context is
`StudioContext`, the pipeline's own `Context` with a form Studio can draw: the store, settings and
chat models are not JSON, so they stay out of the form and are filled in on first use (the store
of $OCTYBOT_PROJECT under $OCTYBOT_HOME; the deterministic path unless `use_llm` is on and an LLM
is configured). An empty context runs offline on the project named by $OCTYBOT_PROJECT, or by the
server's working folder.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.graph import StateGraph
from pydantic import ConfigDict
from pydantic.json_schema import SkipJsonSchema

from octygraph.config.settings import Settings
from octygraph.llm.usage import UsageTracker
from octygraph.pipeline.context import Context
from octygraph.pipeline.graph import build_graph
from octygraph.store import GraphStore


@dataclass(kw_only=True)
class StudioContext(Context):
    """The pipeline's context with JSON-friendly fields only in Studio's form."""

    # pydantic builds Studio's JSON schema from this class: live objects are allowed but not shown.
    __pydantic_config__ = ConfigDict(arbitrary_types_allowed=True, use_attribute_docstrings=True)

    store: SkipJsonSchema[GraphStore | None] = None
    settings: SkipJsonSchema[Settings | None] = None
    l1_model: SkipJsonSchema[BaseChatModel | None] = None
    l2_model: SkipJsonSchema[BaseChatModel | None] = None
    usage: SkipJsonSchema[UsageTracker | None] = None
    answered: SkipJsonSchema[asyncio.Event | None] = field(default=None, repr=False, compare=False)
    _gazetteer: SkipJsonSchema[Any] = field(default=None, init=False, repr=False, compare=False)
    today: date | None = None
    """The day plans and events are dated from (ISO date); empty means today."""
    use_llm: bool = False
    """Think with the configured LLM (OPENROUTER_API_KEY or OCTY_LLM_BASE_URL); off runs offline."""

    def __post_init__(self) -> None:
        # The server builds the context from JSON, so a date arrives as its ISO string.
        if isinstance(self.today, str):
            self.today = date.fromisoformat(self.today) if self.today.strip() else None
        if self.use_llm and self.offline:
            settings = self.get_settings()
            if settings.llm_configured:
                from octygraph.llm.factory import make_chat_model

                self.usage = self.usage or UsageTracker()
                self.l1_model = make_chat_model(settings, "l1", usage=self.usage)
                self.l2_model = make_chat_model(settings, "l2", usage=self.usage)


def studio_builder() -> StateGraph[Any, Any, Any, Any]:
    """The pipeline's builder (same nodes, same wiring) with Studio's context schema."""
    builder = build_graph()
    builder.context_schema = StudioContext
    return builder


graph = studio_builder().compile(name="octygraph")

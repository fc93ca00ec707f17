"""The run's dependencies (LangGraph runtime context): never checkpointed, never seen by the model."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import date
from typing import Any

# Imported for real (not under TYPE_CHECKING): tools build their schema from `ToolRuntime[Context]`.
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig, ensure_config
from langchain_core.runnables.config import merge_configs

from octygraph.config import setting_table as table
from octygraph.config.settings import Settings
from octygraph.llm.usage import UsageTracker
from octygraph.pipeline.sessions import SessionLog
from octygraph.store import GraphStore

_OPEN_LOCK = threading.Lock()
_GAZETTEERS: dict[str, tuple[Any, Any]] = {}


TAIL_RESERVE_S = 1.5
"""Seconds kept back from the LLM stages before retrieval's end: the deterministic nets and assembly
still run after them, so the deadline always finds a context ready."""

CLI_SESSION = "cli"
"""The session id of `octygraph run`: it names what the CLI stored, but one-shot runs are not a
conversation, so nothing earlier is assumed to be in front of the model."""


@dataclass(kw_only=True)
class Context:
    """What every node and tool needs: the memory store, chat models (None = offline) and limits.

    All fields have defaults so LangGraph Studio can run the graph with an empty context: the store is then
    opened lazily from the environment's settings and the run is offline.
    """

    project: str | None = None
    """Project id; defaults to $OCTYBOT_PROJECT, else the git root's or the working folder's name."""
    store: GraphStore | None = None
    settings: Settings | None = None
    l1_model: BaseChatModel | None = None
    """Chat model for L1 classification; None runs the deterministic classifier."""
    l2_model: BaseChatModel | None = None
    """Chat model for L1.5, the two loops, curation and reconciliation; None runs the deterministic paths."""
    usage: UsageTracker | None = None
    max_turns: int = table.default("OCTY_MAX_TURNS")
    loop_timeout_s: float = table.default("OCTY_LOOP_TIMEOUT_S")
    context_budget_chars: int = table.default("OCTY_CONTEXT_BUDGET")
    today: date | None = None
    read_only: bool = False
    """Replays set this: the store half of the graph then writes nothing."""
    store_only: bool = False
    """The Stop hook: store what the assistant reported, retrieve nothing."""
    session_id: str | None = None
    transcript_path: str | None = None
    """Claude Code's transcript of the session (hooks); its existence says the session's own prompts are
    in the conversation the model sees."""
    source: str = "user"
    injection: str | None = None
    """Why the message, judged whole and before redaction, is an injection attempt; then nothing from
    it is stored."""
    deadline: float | None = None
    """`time.monotonic()` by which the run must have its answer (the hook's budget); None = no limit.
    Every LLM call, retry wait and loop is bounded by the time left (see `llm_config`)."""
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    """The run's id (its trace id; a fresh one by default): stamped on what this run writes, so its own
    retrieval can leave it out (`octygraph.pipeline.tools.writes.RUN`)."""
    answered: asyncio.Event | None = field(default=None, repr=False, compare=False)
    """Set by the runner once the answer has gone out, when someone waits for it (the hooks); None
    otherwise. The offline store half starts its work after it (`judge_storage`)."""
    _gazetteer: Any = field(default=None, init=False, repr=False, compare=False)
    """A cache of the store's entity names, not run data: the store decides it, and no node hands it on."""

    def memory(self) -> GraphStore:
        """The memory store, opened on first use when none was given."""
        with _OPEN_LOCK:
            if self.store is None:
                from octygraph.store.opening import open_store

                self.store = open_store(self.get_settings())
            return self.store

    def gazetteer(self) -> Any:
        """Known entity names and kinds from the store, built once per run (classify and plan share it)."""
        if self._gazetteer is None:
            from octygraph.judgement.entities import Gazetteer

            store = self.memory()
            # A resident service runs many prompts on one store: rebuild only when the data changed.
            key = (store.location, store.revision())
            cached = _GAZETTEERS.get(key[0])
            if cached is not None and cached[0] == key:
                self._gazetteer = cached[1]
            else:
                self._gazetteer = Gazetteer(store.entity_kinds())
                _GAZETTEERS[key[0]] = (key, self._gazetteer)
        return self._gazetteer

    def built_gazetteer(self) -> Any:
        """The run's gazetteer when classify built it already (no store access), else None."""
        return self._gazetteer

    def session_log(self) -> SessionLog | None:
        """What this Claude Code session has already seen; None outside a session."""
        if not self.session_id or self.session_id == CLI_SESSION:
            return None
        return SessionLog(self.get_settings().paths.memory_dir, self.session_id)

    def get_settings(self) -> Settings:
        if self.settings is None:
            self.settings = Settings.from_env(project_id=self.project)
        return self.settings

    def day(self) -> date:
        return self.today or date.today()

    @property
    def offline(self) -> bool:
        return self.l1_model is None and self.l2_model is None

    def remaining(self, reserve_s: float = 0.0) -> float | None:
        """Seconds left before the deadline minus `reserve_s` (never negative); None without a deadline."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - reserve_s - time.monotonic())

    def llm_config(self, layer: str, *, reserve_s: float = TAIL_RESERVE_S) -> RunnableConfig:
        """Config for one LLM call inside a node: nested under the node's run, tokens counted for `layer`,
        and bounded by the deadline less `reserve_s` (the deterministic work still to come after it)."""
        extra: RunnableConfig = {"callbacks": self.callbacks(layer)}
        if self.deadline is not None:
            from octygraph.llm.deadline import DEADLINE_KEY

            extra["metadata"] = {DEADLINE_KEY: self.deadline - reserve_s}
        return merge_configs(ensure_config(), extra)

    def callbacks(self, layer: str) -> list[Any]:
        """LangChain callbacks that count tokens and cost for one layer."""
        if self.usage is None:
            return []
        from octygraph.llm.usage import UsageCallback

        return [UsageCallback(self.usage, layer)]

"""One registry of the loops' tools: name -> LangChain tool, the operation behind it, and how a search
plan's string arguments become that operation's arguments.

It drives the tools bound to each ReAct agent (`tools_for`), the fixed plan run without a model
(`run_step`), and the fault named in a failed call's trace record (`tool_error`, `fault_of`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from langchain_core.tools import BaseTool
from langgraph.prebuilt.tool_node import ToolInvocationError

from octygraph.pipeline.tools import ops
from octygraph.pipeline.tools import retrieve as r
from octygraph.pipeline.tools import store as s
from octygraph.store import GraphStore, StoreError

Loop = Literal["retrieve", "store"]
Operation = Callable[..., ops.ToolResult]
Convert = Callable[[GraphStore, str], Any]


def _text(store: GraphStore, value: str) -> str:
    return value


def _days(store: GraphStore, value: str) -> int | None:
    """A plan's `days` is a string; one that is not a whole number is no limit."""
    try:
        return int(value)
    except ValueError:
        return None


def _entity_named(store: GraphStore, name: str) -> str | None:
    """A planner names entities (it has no ids yet): the id of the one stored under that name."""
    entity = store.find_entity(name)
    return entity.id if entity else None


@dataclass(frozen=True)
class PlanArg:
    """One argument of an operation, filled from a plan step's string arguments."""

    name: str
    """The operation's keyword."""
    key: str
    """The plan's key that holds it; several `PlanArg`s may fill one name, the first value wins."""
    convert: Convert = _text
    """From the plan's string to the operation's value (None: no value)."""


@dataclass(frozen=True)
class RegisteredTool:
    """A tool the agents may call and, when it has an `operation`, a step the fixed plan may run."""

    name: str
    tool: BaseTool
    loops: frozenset[Loop]
    operation: Operation | None = None
    """The plain function over the store behind the tool; None for tools only a model calls."""
    plan_args: tuple[PlanArg, ...] = ()
    required: tuple[str, ...] = field(default=())
    """Operation arguments without which a plan step is skipped (nothing to search for)."""

    def arguments(self, store: GraphStore, args: Mapping[str, str]) -> dict[str, Any] | None:
        """The operation's arguments from a plan step's, or None when a required one has no value."""
        kwargs: dict[str, Any] = {}
        for arg in self.plan_args:
            raw = args.get(arg.key)
            if arg.name in kwargs or raw is None or not raw.strip():
                continue
            value = arg.convert(store, raw.strip())
            if value is not None:
                kwargs[arg.name] = value
        if any(name not in kwargs for name in self.required):
            return None
        return kwargs


_QUERY = PlanArg("query", "query")

REGISTRY: Final[dict[str, RegisteredTool]] = {
    t.name: t
    for t in (
        RegisteredTool(
            "search_entity",
            r.search_entity,
            frozenset({"retrieve", "store"}),
            ops.search_entity,
            (PlanArg("name", "name"),),
            required=("name",),
        ),
        RegisteredTool(
            "get_relationships",
            r.get_relationships,
            frozenset({"retrieve"}),
            ops.get_relationships,
            (PlanArg("entity_id", "entity_id"), PlanArg("entity_id", "entity_name", _entity_named)),
            required=("entity_id",),
        ),
        RegisteredTool(
            "search_facts",
            r.search_facts,
            frozenset({"retrieve", "store"}),
            ops.search_facts,
            (_QUERY,),
        ),
        RegisteredTool(
            "search_events",
            r.search_events,
            frozenset({"retrieve"}),
            ops.search_events,
            (_QUERY, PlanArg("days", "days", _days)),
        ),
        RegisteredTool(
            "search_processes",
            r.search_processes,
            frozenset({"retrieve"}),
            ops.search_processes,
            (_QUERY,),
        ),
        RegisteredTool(
            "get_instructions",
            r.get_instructions,
            frozenset({"retrieve"}),
            ops.get_instructions,
            # A planner may call the topic a query.
            (PlanArg("topic", "topic"), PlanArg("topic", "query")),
            required=("topic",),
        ),
        RegisteredTool("store_memory", s.store_memory, frozenset({"store"})),
        RegisteredTool("supersede_memory", s.supersede_memory, frozenset({"store"})),
        RegisteredTool("done", r.done, frozenset({"retrieve", "store"})),
    )
}

PLAN_TOOLS: Final[tuple[str, ...]] = tuple(n for n, t in REGISTRY.items() if t.operation)
"""The tools a search plan may name: those with an operation the fixed plan can run."""


def tools_for(loop: Loop) -> list[BaseTool]:
    """The tools bound to one agent, in the registry's order."""
    return [t.tool for t in REGISTRY.values() if loop in t.loops]


class UnknownTool(StoreError):
    """A plan step names a tool the registry does not hold."""


def run_step(store: GraphStore, tool: str, args: Mapping[str, str]) -> ops.ToolResult | None:
    """Run one plan step through its tool's operation; None when the step has nothing to search for.

    Raises:
        UnknownTool: no tool with an operation has that name.
        StoreError: the operation refused the arguments (e.g. an entity id that does not exist).
    """
    entry = REGISTRY.get(tool)
    if entry is None or entry.operation is None:
        raise UnknownTool(f"No search tool named {tool!r}; use one of {', '.join(PLAN_TOOLS)}.")
    kwargs = entry.arguments(store, args)
    if kwargs is None:
        return None
    return entry.operation(store, **kwargs)


# ----------------------------------------------------------------------------- faults of a tool call

INVALID_ARGUMENTS = "invalid tool arguments"
UNKNOWN_TOOL = "unknown tool"
STORE_ERROR = "store error"
TOOL_FAILED = "tool failed"


def fault_of(error: BaseException) -> str:
    """The kind of fault a failed call had, as the trace names it."""
    if isinstance(error, UnknownTool):
        return UNKNOWN_TOOL
    if isinstance(error, ToolInvocationError):
        return INVALID_ARGUMENTS
    if isinstance(error, StoreError):
        return STORE_ERROR
    return TOOL_FAILED


def tool_error(error: Exception) -> str:
    """What the agent reads when a call fails (ToolNode's `handle_tool_errors`): the fault first, so
    its trace record can name it, then what to do about it."""
    detail = error.message if isinstance(error, ToolInvocationError) else str(error)
    return f"{fault_of(error).capitalize()}: {detail}"


def fault_in(tool: str, content: str) -> str:
    """The fault named at the start of an error message `tool_error` wrote (or ToolNode's own, for a
    tool that is not bound)."""
    if tool not in REGISTRY:
        return UNKNOWN_TOOL
    for fault in (INVALID_ARGUMENTS, UNKNOWN_TOOL, STORE_ERROR):
        if content.startswith(fault.capitalize() + ":"):
            return fault
    return TOOL_FAILED

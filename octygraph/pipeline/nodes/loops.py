"""L2: the retrieve and store ReAct loops (subgraphs), and the fixed plan used without an LLM.

Each loop is `agent -> tools -> agent ...`, ended by the `done` tool, a reply without tool calls, its turn
budget, or the wall-clock timeout (the loop then returns what it gathered so far). The retrieve agent is on
the prompt's critical path: it gets `RETRIEVE_TURNS` turns; the store agent, after the reply, `max_turns`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, cast

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from octygraph.models import Classification, RetrievalPlan, StorageDecision
from octygraph.pipeline import prompts
from octygraph.pipeline.context import TAIL_RESERVE_S, Context
from octygraph.pipeline.nodes._common import (
    NO_MODEL,
    RESULT_CHARS,
    Layer,
    answered,
    layer,
    short_reason,
    timed,
    tool_call,
)
from octygraph.pipeline.nodes.judge_storage import refine_storage
from octygraph.pipeline.state import PipelineState, Record, ToolCall
from octygraph.pipeline.tools import registry
from octygraph.store import StoreError


class LoopState(TypedDict, total=False):
    """State of one ReAct loop (private to the subgraph)."""

    messages: Annotated[list[AnyMessage], add_messages]
    prompt: str
    turns: int
    max_turns: int
    """The loop's turn budget; without one, the context's `max_turns`."""
    system: str


LoopGraph = CompiledStateGraph[LoopState, Context, LoopState, LoopState]


def build_loop(name: str, tools: Sequence[BaseTool], layer: str = "l2") -> LoopGraph:
    """A ReAct loop: LangGraph's `ToolNode` runs the tools; the routing is `tools_condition` plus the
    `done` tool. The budget is counted in agent turns in the loop's state (`turns`, which the trace
    reports), not with `RemainingSteps`: that counts graph steps against the run's recursion limit, two
    per turn here and shared with the rest of the run, where each loop has its own turn budget."""

    async def agent(state: LoopState, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = runtime.context
        assert ctx.l2_model is not None
        model = ctx.l2_model.bind_tools(list(tools))
        messages = [SystemMessage(state.get("system", "")), *state["messages"]]
        reply = await model.ainvoke(messages, config=ctx.llm_config(layer))
        return {"messages": [reply], "turns": state.get("turns", 0) + 1}

    def after_agent(state: LoopState, runtime: Runtime[Context]) -> str:
        last = state["messages"][-1]
        calls = getattr(last, "tool_calls", None) or []
        if not calls or all(call["name"] == "done" for call in calls):
            return END
        return "tools"

    def after_tools(state: LoopState, runtime: Runtime[Context]) -> str:
        ai = next(m for m in reversed(state["messages"]) if isinstance(m, AIMessage))
        if any(call["name"] == "done" for call in ai.tool_calls):
            return END
        if state.get("turns", 0) >= state.get("max_turns", runtime.context.max_turns):
            return END
        return "agent"

    builder = StateGraph(LoopState, context_schema=Context)
    builder.add_node("agent", agent)
    # A failed call is told to the agent (it may fix its arguments) with the fault named first.
    builder.add_node("tools", ToolNode(list(tools), handle_tool_errors=registry.tool_error))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", after_agent, ["tools", END])
    builder.add_conditional_edges("tools", after_tools, ["agent", END])
    return builder.compile(name=name)


retrieve_subgraph = build_loop("retrieve_agent", registry.tools_for("retrieve"))
store_subgraph = build_loop("store_agent", registry.tools_for("store"))


def _harvest(messages: Sequence[AnyMessage], loop: str) -> tuple[list[Record], list[ToolCall]]:
    """Records (tool artifacts) and a trace record per tool call, from a loop's messages.

    A call whose arguments were not even JSON never reached a tool (LangChain keeps it in
    `invalid_tool_calls`); it is recorded as an error all the same, so the trace names the fault.
    """
    records: list[Record] = []
    calls: list[ToolCall] = []
    args_by_id: dict[str, tuple[str, dict[str, Any]]] = {}
    for msg in messages:
        if isinstance(msg, AIMessage):
            for call in msg.tool_calls:
                args_by_id[call.get("id") or ""] = (call["name"], call.get("args", {}))
            for broken in msg.invalid_tool_calls:
                calls.append(
                    tool_call(
                        loop,
                        broken.get("name") or "?",
                        {"raw": broken.get("args") or ""},
                        broken.get("error") or "arguments are not valid JSON",
                        registry.INVALID_ARGUMENTS,
                    )
                )
        elif isinstance(msg, ToolMessage):
            name, args = args_by_id.get(msg.tool_call_id, (msg.name or "?", {}))
            text = str(msg.content)[:RESULT_CHARS]
            if msg.status == "error":
                calls.append(tool_call(loop, name, args, text, registry.fault_in(name, text)))
                continue
            if isinstance(msg.artifact, list):
                # The tools' artifacts are `to_record` records (see tools/ops.py).
                records.extend(cast(Record, r) for r in msg.artifact if isinstance(r, dict))
            calls.append(tool_call(loop, name, args, text))
    return records, calls


@dataclass
class LoopResult:
    """What a loop gathered: records, a trace entry per tool call, notes, turns, and what ran."""

    records: list[Record]
    calls: list[ToolCall]
    notes: list[str]
    turns: int
    layer: Layer


async def run_loop(
    graph: LoopGraph,
    loop: str,
    task: str,
    system: str,
    prompt: str,
    ctx: Context,
    config: RunnableConfig,
    max_turns: int | None = None,
) -> LoopResult:
    """Run a loop under the timeout and within `max_turns` agent turns (default: the context's); on
    timeout keep what the finished steps gathered."""
    budget = max_turns or ctx.max_turns
    last: dict[str, Any] = {"messages": []}
    notes: list[str] = []
    inputs: LoopState = {
        "messages": [HumanMessage(task)],
        "prompt": prompt,
        "turns": 0,
        "max_turns": budget,
        "system": system,
    }
    # The loop's own timeout, or the run's deadline less the deterministic work after it, if sooner.
    remaining = ctx.remaining(TAIL_RESERVE_S)
    limit = ctx.loop_timeout_s if remaining is None else min(ctx.loop_timeout_s, remaining)
    cut = ""
    try:
        async with asyncio.timeout(limit):
            async for chunk in graph.astream(inputs, config, context=ctx, stream_mode="values"):
                last = chunk
    except TimeoutError:
        cut = "loop timeout" if limit == ctx.loop_timeout_s else "deadline reached"
        notes.append(f"{loop}: stopped by the {limit:.3g} s {cut}; kept what it had found")
    messages = last.get("messages", [])
    records, calls = _harvest(messages, loop)
    turns = int(last.get("turns", 0))
    replies = [m for m in messages if isinstance(m, AIMessage)]
    last_calls = replies[-1].tool_calls if replies else []
    wanted_more = bool(last_calls) and not any(c["name"] == "done" for c in last_calls)
    if turns >= budget and wanted_more:
        notes.append(f"{loop}: stopped after its {budget}-turn budget; kept what it had found")
    broken = [c for m in replies for c in m.invalid_tool_calls]
    if not replies:
        ran = layer("offline", cut or "no reply")
    elif broken and not any(m.tool_calls for m in replies):
        # Every tool call it made was unusable: the deterministic results are all there is.
        ran = layer("offline", f"invalid tool arguments ({broken[0].get('error') or '?'})"[:300])
    else:
        ran = answered(replies[0])
        if cut:
            ran = layer(ran["mode"], "; ".join(filter(None, [ran.get("reason", ""), cut])))
    return LoopResult(records, calls, notes, turns, ran)


# ----------------------------------------------------------------------------- fixed plan (no LLM)


def run_fixed_plan(
    ctx: Context, plan: RetrievalPlan, loop: str = "retrieve_loop"
) -> tuple[list[Record], list[ToolCall], list[str]]:
    """Execute the plan's steps through the same tool operations the LLM would use (the registry's)."""
    store = ctx.memory()
    records: list[Record] = []
    calls: list[ToolCall] = []
    notes: list[str] = []
    for step in plan.steps[: ctx.max_turns * 2]:
        args = dict(step.args)
        try:
            result = registry.run_step(store, step.tool, args)
        except StoreError as exc:
            calls.append(tool_call(loop, step.tool, args, str(exc), registry.fault_of(exc)))
            continue
        if result is None:  # nothing to search for, e.g. an entity that is not stored
            continue
        records.extend(result.records)
        calls.append(tool_call(loop, step.tool, args, result.text[:RESULT_CHARS]))
    return records, calls, notes


# ----------------------------------------------------------------------------- graph nodes


@timed("retrieve_loop")
async def retrieve_loop(
    state: PipelineState, runtime: Runtime[Context], config: RunnableConfig
) -> dict[str, Any]:
    """L2 retrieve loop: the LLM picks tools and stops early when it has enough; offline, a fixed plan."""
    ctx = runtime.context
    classification = state.get("classification") or Classification()
    plan = state.get("plan") or RetrievalPlan(complexity="SIMPLE_FACT")
    if not classification.operations.retrieve:
        return {
            "notes": ["retrieve_loop: L1 said nothing to retrieve"],
            "layers": {"retrieve_loop": layer("skipped", "nothing to retrieve")},
        }
    prompt = state.get("prompt", "")
    # The deterministic plan runs first, with or without a model: at the deadline its records are ready,
    # and the agent starts from them (and may stop at once when they suffice).
    records, calls, notes = await asyncio.to_thread(
        run_fixed_plan, ctx, plan, "retrieve_loop" if ctx.l2_model is None else "fixed_plan"
    )
    if ctx.l2_model is None:
        return {
            "retrieved": records,
            "tool_calls": calls,
            "notes": notes,
            "layers": {"retrieve_loop": layer("offline", NO_MODEL)},
        }
    if plan.complexity in ENOUGH_FOR and any(r.get("type") != "entity" for r in records):
        # A simple question whose plan found memories: the agent would only call `done`, one LLM call
        # on the prompt's critical path for nothing. Curation still judges what was found.
        return {
            "retrieved": records,
            "tool_calls": calls,
            "notes": notes,
            "layers": {"retrieve_loop": layer("skipped", "the plan's searches found enough")},
        }
    task = prompts.RETRIEVE_TASK.format(
        prompt=prompt,
        complexity=plan.complexity,
        plan=json.dumps([s.model_dump() for s in plan.steps]),
        entities=", ".join(e.name for e in classification.entities) or "none",
        found=_found_lines(records),
    )
    try:
        agent = await run_loop(
            retrieve_subgraph,
            "retrieve_loop",
            task,
            prompts.RETRIEVE_SYSTEM,
            prompt,
            ctx,
            config,
            max_turns=RETRIEVE_TURNS,
        )
    except Exception as exc:  # LLM down: the fixed plan's records stand
        reason = short_reason(f"{type(exc).__name__}: {exc}")
        return {
            "retrieved": records,
            "tool_calls": calls,
            "notes": [
                *notes,
                f"retrieve_loop: LLM failed ({reason}); kept the fixed plan's records",
            ],
            "layers": {"retrieve_loop": layer("offline", reason)},
        }
    return {
        "retrieved": [*records, *agent.records],
        "tool_calls": [*calls, *agent.calls],
        "notes": [*notes, *agent.notes],
        "layers": {"retrieve_loop": agent.layer},
    }


FOUND_LINES = 12
RETRIEVE_TURNS = 1
"""The retrieve agent's turns: one reply, whose searches (in parallel) go into the context. Each further
turn would be one more model round trip in front of the prompt (see bench/README.md)."""
ENOUGH_FOR = ("SIMPLE_FACT", "ENTITY_LOOKUP")
"""Plans whose found memories are enough: the retrieve agent is not asked (see `retrieve_loop`)."""


def _found_lines(records: list[Record]) -> str:
    """What the fixed plan found, one line per record, for the agent's task."""
    seen: list[str] = []
    for record in records:
        line = f"- [{record.get('type', '?')}] {str(record.get('content', ''))[:160]}"
        if line not in seen:
            seen.append(line)
    if not seen:
        return "(nothing yet)"
    more = len(seen) - FOUND_LINES
    return "\n".join(seen[:FOUND_LINES]) + (f"\n(+{more} more)" if more > 0 else "")


def _stored_from(records: list[Record]) -> tuple[list[Record], list[str]]:
    stored = [r for r in records if r.get("via") in ("store_memory", "supersede_memory")]
    superseded = [str(r["supersedes"]) for r in stored if r.get("supersedes")]
    return stored, superseded


@timed("store_loop")
async def store_loop(
    state: PipelineState, runtime: Runtime[Context], config: RunnableConfig
) -> dict[str, Any]:
    """L2 store loop: the LLM stores the filtered items with edges; offline, force_store does the work."""
    ctx = runtime.context
    storage = state.get("storage") or StorageDecision(store=False)
    instructions = state.get("instructions") or []
    classification = state.get("classification") or Classification()
    if ctx.read_only or ctx.l2_model is None or not classification.operations.store:
        return {}
    # The model refines the deterministic judgement (`judge_storage`) here, off the answer's path.
    storage, instructions, refined_notes, refined = await refine_storage(
        ctx, state.get("prompt", ""), classification, storage, list(instructions)
    )
    told: dict[str, Any] = {
        "storage": storage,
        "instructions": instructions,
        "notes": refined_notes,
        "layers": {"refine_storage": refined},
    }
    if not (storage.items or instructions):
        return told
    task = prompts.STORE_TASK.format(
        prompt=state.get("prompt", ""),
        items="\n".join(f"- {i.model_dump_json()}" for i in storage.items) or "(none)",
        instructions="\n".join(f"- {i.model_dump_json()}" for i in instructions) or "(none)",
    )
    try:
        agent = await run_loop(
            store_subgraph,
            "store_loop",
            task,
            prompts.STORE_SYSTEM,
            state.get("prompt", ""),
            ctx,
            config,
        )
    except Exception as exc:
        reason = short_reason(f"{type(exc).__name__}: {exc}")
        return {
            **told,
            "notes": [*refined_notes, f"store_loop: LLM failed ({reason}); force_store takes over"],
            "layers": {"refine_storage": refined, "store_loop": layer("offline", reason)},
        }
    stored, superseded = _stored_from(agent.records)
    return {
        **told,
        "stored": stored,
        "superseded": superseded,
        "tool_calls": agent.calls,
        "notes": [*refined_notes, *agent.notes],
        "layers": {"refine_storage": refined, "store_loop": agent.layer},
    }

"""The tool registry: what the agents are bound to, what the offline plan can reach, and the typed trace
record of a call that failed."""

from __future__ import annotations

import asyncio
import inspect
from datetime import date
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage

from octygraph.fallback.classify import classify
from octygraph.fallback.plan import plan_retrieval
from octygraph.models import RETRIEVE_TOOLS, RetrievalPlan, SearchStep
from octygraph.pipeline.context import Context
from octygraph.pipeline.nodes.loops import (
    retrieve_subgraph,
    run_fixed_plan,
    run_loop,
    store_subgraph,
)
from octygraph.pipeline.tools.registry import (
    INVALID_ARGUMENTS,
    PLAN_TOOLS,
    REGISTRY,
    STORE_ERROR,
    UNKNOWN_TOOL,
    tools_for,
)
from octygraph.store import MemoryStore
from tests.fakes import ScriptedChatModel, tool_calls_message

# One plan step per tool the offline plan can run, each of which finds something in `memories`.
STEPS: dict[str, dict[str, str]] = {
    "search_entity": {"name": "Anderson"},
    "get_relationships": {"entity_name": "Anderson"},
    "search_facts": {"query": "who handles the Anderson account"},
    "search_events": {"query": "Anderson article finished", "days": "30"},
    "search_processes": {"query": "deploying the billing API"},
    "get_instructions": {"topic": "deploy"},
}


@pytest.fixture
def memories(store: MemoryStore) -> MemoryStore:
    anderson = store.add_node("entity", "Anderson", subtype="account")
    store.add_node("fact", "Peter handles the Anderson account", entity_ids=[anderson.id])
    store.add_node(
        "event",
        "Peter finished the Anderson article",
        valid_from=date.today().isoformat(),
        entity_ids=[anderson.id],
    )
    store.add_node(
        "instruction", "Always run the tests before you deploy the billing API", subtype="rule"
    )
    return store


def test_every_plan_tool_is_reachable_from_the_offline_plan(
    home: Path, memories: MemoryStore
) -> None:
    assert set(STEPS) == set(PLAN_TOOLS)  # a new search tool needs a step here
    plan = RetrievalPlan(
        complexity="MULTI_PART", steps=[SearchStep(tool=t, args=a) for t, a in STEPS.items()]
    )
    records, calls, _ = run_fixed_plan(Context(store=memories, max_turns=8), plan)
    assert [c["tool"] for c in calls] == list(STEPS)
    assert all(c["status"] == "success" and "fault" not in c for c in calls), calls
    found = {r["via"] for r in records}
    assert found == set(STEPS), found  # each operation found a memory


def test_the_heuristic_plan_names_only_registered_tools(home: Path) -> None:
    prompts = [
        "Who handles the Anderson account?",
        "I'm about to deploy the billing API",
        "What happened with Anderson last week?",
        "Dave submitted the report, what tools does Sarah use?",
        "How much revenue?",
    ]
    named = {
        step.tool for prompt in prompts for step in plan_retrieval(prompt, classify(prompt)).steps
    }
    assert named and named <= set(PLAN_TOOLS)


def test_a_tool_and_its_operation_take_the_same_arguments() -> None:
    for name in PLAN_TOOLS:
        entry = REGISTRY[name]
        assert entry.operation is not None
        operation = set(inspect.signature(entry.operation).parameters) - {"store"}
        assert set(entry.tool.args) == operation, name  # the model and the plan call one thing
        assert {a.name for a in entry.plan_args} <= operation, name


@pytest.mark.parametrize(
    ("loop", "graph"), [("retrieve", retrieve_subgraph), ("store", store_subgraph)]
)
def test_every_registered_tool_is_bound_to_its_agent(
    home: Path, store: MemoryStore, loop: str, graph: object
) -> None:
    model = ScriptedChatModel([tool_calls_message(("done", {}))])
    ctx = Context(store=store, l1_model=model, l2_model=model)
    result = asyncio.run(
        run_loop(graph, f"{loop}_loop", "task", "system", "prompt", ctx, {})  # type: ignore[arg-type]
    )
    assert result.turns == 1
    expected = [n for n, t in REGISTRY.items() if loop in t.loops]
    assert model.bound_tools == [expected]
    assert expected == [t.name for t in tools_for(loop)]  # type: ignore[arg-type]
    if loop == "retrieve":
        assert list(RETRIEVE_TOOLS) == expected  # the specification's names


def test_a_plan_step_naming_no_tool_is_an_error_naming_the_fault(
    home: Path, memories: MemoryStore
) -> None:
    plan = RetrievalPlan(
        complexity="SIMPLE_FACT",
        steps=[
            SearchStep(tool="search_everything", args={"query": "Anderson"}),
            SearchStep(tool="get_relationships", args={"entity_id": "no-such-id"}),
            SearchStep(tool="get_relationships", args={"entity_name": "Nobody Stored"}),
            SearchStep(tool="search_facts", args={"query": "Anderson account"}),
        ],
    )
    records, calls, _ = run_fixed_plan(Context(store=memories), plan)
    assert [(c["tool"], c["status"], c.get("fault")) for c in calls] == [
        ("search_everything", "error", UNKNOWN_TOOL),
        ("get_relationships", "error", STORE_ERROR),
        # An entity that is not stored has no relationships to list: the step is skipped.
        ("search_facts", "success", None),
    ]
    assert "search_entity" in calls[1]["result"]  # the error says what to do
    assert any("Peter handles" in r["content"] for r in records)


def test_invalid_tool_arguments_yield_typed_records_naming_the_fault(
    home: Path, memories: MemoryStore
) -> None:
    unparseable = AIMessage(
        content="",
        invalid_tool_calls=[
            {
                "type": "invalid_tool_call",
                "name": "search_facts",
                "args": "{not json",
                "id": "call_bad_json",
                "error": "Expecting property name",
            }
        ],
        tool_calls=[
            {"type": "tool_call", "name": "search_events", "args": {"days": 3}, "id": "no_q"},
            {
                "type": "tool_call",
                "name": "search_facts",
                "args": {"query": "Anderson"},
                "id": "ok",
            },
        ],
    )
    model = ScriptedChatModel([unparseable])
    ctx = Context(store=memories, l1_model=model, l2_model=model)
    result = asyncio.run(
        run_loop(retrieve_subgraph, "retrieve_loop", "task", "system", "p", ctx, {}, max_turns=1)
    )
    by_tool = {c["tool"]: c for c in result.calls if c["status"] == "error"}
    assert by_tool["search_facts"]["fault"] == INVALID_ARGUMENTS
    assert by_tool["search_facts"]["args"] == {"raw": "{not json"}
    assert by_tool["search_events"]["fault"] == INVALID_ARGUMENTS
    assert "query" in by_tool["search_events"]["result"]  # which argument was wrong
    ok = [c for c in result.calls if c["status"] == "success"]
    assert [c["tool"] for c in ok] == ["search_facts"]
    assert any("Peter handles" in r["content"] for r in result.records)

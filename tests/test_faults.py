"""Each LLM fault, served by the loopback server, at pipeline and hook level: the run answers within its
budget with the stored memory in the context, and the trace names the fault per layer."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from pathlib import Path
from typing import Any

import pytest

from octygraph.config.settings import Settings
from octygraph.llm.resilient import CIRCUIT
from octygraph.pipeline.runner import RunOptions, make_context, run_prompt
from octygraph.store import MemoryStore
from tests.conftest import cli_json, run_cli
from tests.llm_server import (
    Reply,
    dropped,
    empty_reply,
    error_reply,
    openai_server,
    slow,
    text_reply,
    tool_reply,
)

BUDGET_S = 4.0
MEMORY = "Peter handles the Anderson account"

# fault -> (what the server answers every time, what the classify layer's reason says)
FAULTS: dict[str, tuple[Reply, str]] = {
    "http 500": (error_reply(500), "HTTP 500"),
    "429 with Retry-After": (error_reply(429, "slow down", **{"Retry-After": "1"}), "HTTP 429"),
    "empty reply": (empty_reply(), "empty reply"),
    "prose reply": (text_reply("Peter, I believe."), "did not call the schema tool"),
    "invalid tool arguments": (
        tool_reply(("Classification", "{not json")),
        "invalid tool arguments",
    ),
    "slow reply": (slow(text_reply("too late"), 30), "deadline reached"),
    "dropped connection": (dropped(), "connection failed"),
}


@pytest.fixture(autouse=True)
def fresh_circuit() -> None:
    CIRCUIT.reset()  # each test's server is a new endpoint, but a port may come round again


def trace_of(settings: Settings, result: dict[str, Any]) -> dict[str, Any]:
    return json.loads((settings.paths.debug_dir / f"{result['trace_id']}.json").read_text())


@pytest.mark.slow
@pytest.mark.parametrize("fault", list(FAULTS))
def test_pipeline_answers_within_the_deadline_whatever_the_fault(
    fault: str, home: Path, store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    reply, reason = FAULTS[fault]
    store.add_node("fact", MEMORY)
    with openai_server(itertools.repeat(reply)) as server:
        monkeypatch.setenv("OCTY_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("OCTY_LLM_API_KEY", "sk-test")
        monkeypatch.setenv("PATH", "")  # no `claude` command: the fallback provider stays out
        settings = Settings.from_env()
        ctx = make_context(settings, store)
        assert ctx.l1_model is not None

        started = time.monotonic()
        result = asyncio.run(
            run_prompt(
                "Who handles Anderson?",
                settings,
                store,
                RunOptions(deadline_s=BUDGET_S),
                context=ctx,
            )
        )
        returned = time.monotonic()
        answered = [r.answered_at for r in server.requests]
    assert server.requests  # the model was really asked
    # The run's deadline is the budget from its start, and no model call began after it.
    assert ctx.deadline is not None
    assert started + BUDGET_S <= ctx.deadline <= returned + BUDGET_S
    assert all(r.received_at < ctx.deadline for r in server.requests), result["layers"]
    if fault == "slow reply":
        assert answered == [0.0] * len(answered)  # given up on, never waited out
    assert MEMORY in result["context"]
    if fault != "prose reply":  # a prose reply is an answer, if not a useful one
        assert result["mode"] == "offline", result["layers"]
    classify = result["layers"]["classify"]
    assert classify["mode"] == "offline" and reason in classify["reason"], classify
    assert trace_of(settings, result)["layers"] == result["layers"]


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["slow reply", "http 500"])
def test_prompt_hook_answers_within_its_budget_whatever_the_fault(fault: str, home: Path) -> None:
    reply, reason = FAULTS[fault]
    cli_json("memory", "add", MEMORY, "--type", "fact", "--json")
    budget = 20.0  # the budget counts interpreter start and imports, slow on a busy machine
    payload = json.dumps(
        {
            "session_id": "sess-faults",
            "cwd": str(Path.cwd()),
            "hook_event_name": "UserPromptSubmit",
            "prompt": "Who handles Anderson?",
        }
    )
    with openai_server(itertools.repeat(reply)) as server:
        done = run_cli(
            "hook",
            "prompt",
            input=payload,
            env={
                "OCTY_HOOK_BUDGET_S": str(budget),
                "OCTY_LLM_BASE_URL": server.base_url,
                "OCTY_LLM_API_KEY": "sk-test",
                "PATH": "",
            },
        )
        answered = [r.answered_at for r in server.requests]
    assert done.returncode == 0
    if fault == "slow reply":
        assert answered and answered == [0.0] * len(answered)  # the hook did not wait for it
    # An answer at all means before the budget: the hook's watchdog ends it silently at the budget.
    assert MEMORY in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    debug = Settings.from_env().paths.debug_dir
    (trace,) = [
        json.loads(p.read_text()) for p in debug.glob("*.json") if "layers" in p.read_text()
    ]
    assert reason in json.dumps(trace["layers"])


def test_invalid_tool_arguments_from_the_retrieve_agent_are_named_in_the_trace(
    home: Path, store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model answers classification and planning well, then calls its tools with arguments that are
    not JSON and with a required one missing: the run answers from the plan's searches in time, and each
    broken call is a trace record naming the fault."""
    from octygraph.models import Classification, EntityMention, Operations
    from octygraph.pipeline import prompts

    store.add_node("fact", MEMORY)
    ask = Classification(
        entities=[EntityMention(name="Anderson", kind="account")],
        intents=["information"],
        operations=Operations(retrieve=True, store=False),
    )
    # Not a simple lookup, so the agent is asked although the plan found the memory.
    plan = {
        "complexity": "MULTI_PART",
        "steps": [{"tool": "search_facts", "args": {"query": "who handles Anderson"}}],
    }

    def route(body: dict[str, Any]) -> Reply:
        system = body["messages"][0]["content"]
        if system.startswith(prompts.CLASSIFY_SYSTEM[:60]):
            return tool_reply(("Classification", ask.model_dump(mode="json")))
        if system.startswith(prompts.PLAN_SYSTEM[:60]):
            return tool_reply(("RetrievalPlan", plan))
        if system.startswith(prompts.RETRIEVE_SYSTEM[:60]):
            return tool_reply(("search_facts", "{not json"), ("search_events", {"days": 3}))
        return text_reply(MEMORY)  # curation keeps the record

    with openai_server(itertools.repeat(route)) as server:
        monkeypatch.setenv("OCTY_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("OCTY_LLM_API_KEY", "sk-test")
        monkeypatch.setenv("PATH", "")
        settings = Settings.from_env()
        ctx = make_context(settings, store)
        result = asyncio.run(
            run_prompt(
                "Who handles Anderson?",
                settings,
                store,
                RunOptions(deadline_s=BUDGET_S),
                context=ctx,
            )
        )
    assert ctx.deadline is not None
    assert all(r.received_at < ctx.deadline for r in server.requests)  # none began after it
    assert MEMORY in result["context"]
    calls = trace_of(settings, result)["tool_calls"]
    broken = [c for c in calls if c["loop"] == "retrieve_loop" and c["status"] == "error"]
    assert sorted(c["tool"] for c in broken) == ["search_events", "search_facts"], calls
    assert all(c["fault"] == "invalid tool arguments" for c in broken), broken

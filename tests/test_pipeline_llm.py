"""The LLM path with scripted chat models, and once through the real ChatOpenAI client on loopback."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from octygraph.config.settings import Settings
from octygraph.llm.usage import UsageTracker
from octygraph.models import (
    Classification,
    EntityMention,
    InstructionList,
    Operations,
    ReconcileJudgement,
    RetrievalPlan,
    SearchStep,
    StorageDecision,
    StorageItem,
)
from octygraph.pipeline import prompts
from octygraph.pipeline.context import Context
from octygraph.pipeline.runner import RunOptions, make_context, run_prompt
from octygraph.store import MemoryStore
from tests.conftest import cli_json
from tests.fakes import ParseFailure, ScriptedChatModel, tool_calls_message
from tests.llm_server import Reply, error_reply, openai_server, text_reply, tool_reply


def _system(messages: list[BaseMessage]) -> str:
    return str(messages[0].content) if messages and isinstance(messages[0], SystemMessage) else ""


def _is(messages: list[BaseMessage], system_prompt: str) -> bool:
    return _system(messages).startswith(system_prompt[:60])


def _last_tool(messages: list[BaseMessage]) -> ToolMessage | None:
    return messages[-1] if isinstance(messages[-1], ToolMessage) else None


class Brain:
    """Answers every LLM call of one run by looking at which prompt it is (calls run in parallel)."""

    def __init__(self, **answers: Any) -> None:
        self.answers = answers
        self.seen: list[str] = []

    def __call__(self, messages: list[BaseMessage]) -> Any:
        for key, system in (
            ("classify", prompts.CLASSIFY_SYSTEM),
            ("plan", prompts.PLAN_SYSTEM),
            ("filter", prompts.FILTER_SYSTEM),
            ("instructions", prompts.INSTRUCTIONS_SYSTEM),
            ("retrieve", prompts.RETRIEVE_SYSTEM),
            ("store", prompts.STORE_SYSTEM),
            ("curate", prompts.CURATE_SYSTEM),
            ("reconcile", prompts.RECONCILE_SYSTEM),
        ):
            if _is(messages, system):
                self.seen.append(key)
                answer = self.answers.get(key)
                if answer is None:
                    raise AssertionError(f"unexpected {key} call")
                return answer(messages) if callable(answer) else answer
        raise AssertionError(f"unknown prompt: {_system(messages)[:80]}")


def scripted(brain: Brain) -> ScriptedChatModel:
    return ScriptedChatModel(itertools.repeat(brain))


def run(
    store: MemoryStore,
    prompt: str,
    model: ScriptedChatModel,
    after: Callable[[], None] | None = None,
    **ctx_overrides: Any,
) -> dict[str, Any]:
    """Run `prompt` through the pipeline; `after` is called the moment the run returns, inside its
    event loop (a tool thread cut by a timeout may still be at work then)."""
    settings = Settings.from_env()
    usage = UsageTracker()
    ctx = Context(
        project=settings.project_id,
        store=store,
        settings=settings,
        l1_model=model,
        l2_model=model,
        usage=usage,
        **ctx_overrides,
    )

    async def go() -> dict[str, Any]:
        result = await run_prompt(prompt, settings, store, RunOptions(), context=ctx)
        if after is not None:
            after()
        return result

    return asyncio.run(go())


def trace_of(result: dict[str, Any]) -> dict[str, Any]:
    debug = Settings.from_env().paths.debug_dir
    return json.loads((debug / f"{result['trace_id']}.json").read_text())


def curate_copy(messages: list[BaseMessage]) -> str:
    """Copy verbatim every record line that mentions Anderson."""
    body = str(messages[-1].content)
    lines = [line[2:] for line in body.splitlines() if line.startswith("- ") and "Anderson" in line]
    return "\n".join(lines) or "NO_RELEVANT_RECORDS"


ASK = Classification(
    entities=[EntityMention(name="Anderson", kind="account")],
    intents=["information"],
    operations=Operations(retrieve=True, store=False),
)


def retrieve_agent(messages: list[BaseMessage]) -> AIMessage:
    """Its one reply: every search it still wants, at once."""
    assert _last_tool(messages) is None, "the retrieve agent has one turn"
    return tool_calls_message(
        ("search_entity", {"name": "Anderson"}), ("search_facts", {"query": "who handles Anderson"})
    )


def test_retrieve_path_with_tools_and_curation(home: Path, store: MemoryStore) -> None:
    anderson = store.add_node("entity", "Anderson", subtype="account")
    store.add_node("fact", "Peter handles the Anderson account", entity_ids=[anderson.id])
    store.add_node("fact", "The office coffee machine is broken")
    brain = Brain(
        classify=ASK,
        # Not a simple lookup: the agent is asked even though the plan's searches found something.
        plan=RetrievalPlan(
            complexity="MULTI_PART",
            steps=[SearchStep(tool="search_entity", args={"name": "Anderson"})],
        ),
        filter=StorageDecision(store=False),
        instructions=InstructionList(),
        retrieve=retrieve_agent,
        curate=curate_copy,
    )
    result = run(store, "Who handles Anderson?", scripted(brain))
    assert "Peter handles the Anderson account" in result["context"]
    assert "coffee" not in result["context"]
    assert result["stored"] == []
    trace = trace_of(result)
    tools = [c["tool"] for c in trace["tool_calls"] if c["loop"] == "retrieve_loop"]
    assert tools == ["search_entity", "search_facts"]
    assert brain.seen.count("retrieve") == 1  # one reply with both searches; no turn to say done
    assert "store" not in brain.seen  # nothing to store: the store loop made no call
    usage = result["usage"]
    for layer in ("l1", "l2", "curation"):
        assert usage[layer]["calls"] >= 1 and usage[layer]["input_tokens"] > 0


def test_curation_in_prose_keeps_the_assembled_records(home: Path, store: MemoryStore) -> None:
    anderson = store.add_node("entity", "Anderson", subtype="account")
    store.add_node("fact", "Peter handles the Anderson account", entity_ids=[anderson.id])
    brain = Brain(
        classify=ASK,
        plan=RetrievalPlan(
            complexity="ENTITY_LOOKUP",
            steps=[SearchStep(tool="search_entity", args={"name": "Anderson"})],
        ),
        filter=StorageDecision(store=False),
        instructions=InstructionList(),
        retrieve=retrieve_agent,
        curate="Sure! The relevant record is about Peter, who looks after that account.",
    )
    result = run(store, "Who handles Anderson?", scripted(brain))
    assert "curate" in brain.seen
    assert "Peter handles the Anderson account" in result["context"]
    assert any("matched no record" in note for note in trace_of(result).get("notes", []))


def store_agent(messages: list[BaseMessage]) -> AIMessage:
    last = _last_tool(messages)
    if last is None:
        return tool_calls_message(("search_entity", {"name": "Lisa"}))
    if last.name == "search_entity":
        return tool_calls_message(
            ("store_memory", {"type": "fact", "content": "Lisa handles the Zephyr account"}),
            ("store_memory", {"type": "fact", "content": "Lisa is the chief executive of Google"}),
        )
    return tool_calls_message(("done", {"stored_count": 1}))


def test_store_loop_stores_grounded_items_only(home: Path, store: MemoryStore) -> None:
    brain = Brain(
        classify=Classification(
            entities=[EntityMention(name="Lisa", kind="person")],
            operations=Operations(retrieve=True, store=True),
        ),
        plan=RetrievalPlan(complexity="SIMPLE_FACT", steps=[]),
        filter=StorageDecision(
            store=True,
            items=[
                StorageItem(
                    type="fact", content="Lisa handles the Zephyr account", entities=["Lisa"]
                )
            ],
        ),
        instructions=InstructionList(),
        retrieve=tool_calls_message(("done", {})),
        store=store_agent,
        curate="NO_RELEVANT_RECORDS",
    )
    result = run(store, "Lisa handles the Zephyr account", scripted(brain))
    assert [s["content"] for s in result["stored"]] == ["Lisa handles the Zephyr account"]
    trace = trace_of(result)
    store_calls = [c for c in trace["tool_calls"] if c["loop"] == "store_loop"]
    refused = [c for c in store_calls if c["status"] == "error"]
    assert refused and "not grounded" in refused[0]["result"]
    assert not any(c["loop"] == "force_store" for c in trace["tool_calls"])
    assert not store.search("chief executive of Google", types=["fact"], min_cosine=0.6)


@pytest.mark.parametrize("verdict", ["SUPERSEDES", "CONTRADICTION"])
def test_reconciliation_verdicts(home: Path, store: MemoryStore, verdict: str) -> None:
    old = store.add_node(
        "instruction", "Peter approves all production deploys", subtype="rule", scope=1.0
    )
    prompt = "From now on Lisa approves all production deploys instead of Peter"
    brain = Brain(
        classify=Classification(operations=Operations(retrieve=False, store=True)),
        plan=RetrievalPlan(complexity="RULE_PROCESS", steps=[]),
        filter=StorageDecision(store=False),
        instructions=InstructionList.model_validate(
            {
                "instructions": [
                    {
                        "content": prompt,
                        "pattern": "role_assignment",
                        "subtype": "rule",
                        "scope": 1.0,
                    }
                ]
            }
        ),
        store=lambda m: (
            tool_calls_message(
                (
                    "store_memory",
                    {"type": "instruction", "content": prompt, "subtype": "rule", "scope": 1.0},
                )
            )
            if _last_tool(m) is None
            else tool_calls_message(("done", {"stored_count": 1}))
        ),
        reconcile=ReconcileJudgement(verdict=verdict, reason="scripted"),
    )
    result = run(store, prompt, scripted(brain))
    assert "reconcile" in brain.seen
    current = store.get_node(old.id)
    assert current is not None  # nothing is ever deleted
    if verdict == "SUPERSEDES":
        assert old.id in result["superseded"] and current.superseded_by
    else:
        assert current.superseded_by is None
        trace = trace_of(result)
        assert trace["flags"][0]["kind"] == "CONTRADICTION"
        new_id = result["stored"][0]["id"]
        assert store.get_node(new_id).attributes.get("needs_review") is True  # type: ignore[union-attr]


def test_a_retrieve_agent_that_keeps_searching_gets_one_turn(
    home: Path, store: MemoryStore
) -> None:
    store.add_node(
        "instruction", "Always run the tests before deploying", subtype="rule", scope=1.0
    )
    brain = Brain(
        classify=ASK,
        plan=RetrievalPlan(complexity="SIMPLE_FACT", steps=[]),
        filter=StorageDecision(store=False),
        instructions=InstructionList(),
        retrieve=lambda m: tool_calls_message(("search_facts", {"query": "deploy"})),
        curate=lambda m: "\n".join(
            line[2:] for line in str(m[-1].content).splitlines() if line.startswith("- ")
        ),
    )
    result = run(store, "I'm about to deploy the API", scripted(brain))
    # On the prompt's critical path: one agent reply, its search run, then assembly.
    assert brain.seen.count("retrieve") == 1
    assert "Always run the tests before deploying" in result["context"]
    trace = trace_of(result)
    assert [c["tool"] for c in trace["tool_calls"] if c["loop"] == "retrieve_loop"] == [
        "search_facts"
    ]
    assert any("1-turn budget" in n for n in trace["notes"])


def test_endless_store_calls_are_cut_at_eight_turns(home: Path, store: MemoryStore) -> None:
    prompt = "Lisa handles the Zephyr account"
    brain = Brain(
        classify=Classification(operations=Operations(retrieve=False, store=True)),
        plan=RetrievalPlan(complexity="SIMPLE_FACT", steps=[]),
        filter=StorageDecision(store=True, items=[StorageItem(type="fact", content=prompt)]),
        instructions=InstructionList(),
        store=lambda m: tool_calls_message(("search_facts", {"query": "Zephyr"})),
    )
    result = run(store, prompt, scripted(brain))
    # After the reply the store agent may take more turns, up to the context's cap.
    assert brain.seen.count("store") == 8
    assert any("8-turn budget" in n for n in trace_of(result)["notes"])
    assert [s["content"] for s in result["stored"]] == [prompt]  # force_store stored it


def test_slow_tool_is_cut_by_the_timeout(
    home: Path, store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from octygraph.pipeline.tools import ops

    store.add_node(
        "instruction", "Always run the tests before deploying", subtype="rule", scope=1.0
    )
    real = ops.search_facts
    gate = threading.Event()  # the search is held until the run has returned (or 30 s)
    searched = threading.Event()

    def slow(*args: Any, **kwargs: Any) -> Any:
        gate.wait(timeout=30)
        try:
            return real(*args, **kwargs)
        finally:
            searched.set()

    monkeypatch.setattr(ops, "search_facts", slow)
    brain = Brain(
        classify=ASK,
        plan=RetrievalPlan(complexity="SIMPLE_FACT", steps=[]),
        filter=StorageDecision(store=False),
        instructions=InstructionList(),
        retrieve=lambda m: tool_calls_message(("search_facts", {"query": "deploy"})),
        curate=lambda m: "\n".join(
            line[2:] for line in str(m[-1].content).splitlines() if line.startswith("- ")
        ),
    )
    at_return: list[bool] = []

    def after() -> None:
        at_return.append(searched.is_set())
        gate.set()

    result = run(
        store, "I'm about to deploy the API", scripted(brain), after=after, loop_timeout_s=0.5
    )
    assert at_return == [False]  # the run answered without waiting for the held search
    assert "Always run the tests before deploying" in result["context"]
    assert any("timeout" in n for n in trace_of(result)["notes"])


def test_malformed_classification_falls_back(home: Path, store: MemoryStore) -> None:
    store.add_node("fact", "Peter handles the Anderson account")
    brain = Brain(
        classify=ParseFailure("not json"),
        plan=ParseFailure("nope"),
        filter=ParseFailure("nope"),
        instructions=ParseFailure("nope"),
        retrieve=tool_calls_message(("done", {})),
        curate=lambda m: "\n".join(
            line[2:] for line in str(m[-1].content).splitlines() if line.startswith("- ")
        ),
    )
    result = run(store, "Who handles Anderson?", scripted(brain))
    assert brain.seen.count("classify") == 2  # two failed parses, then the deterministic classifier
    assert "Peter handles the Anderson account" in result["context"]
    assert any("deterministic classifier" in n for n in trace_of(result)["notes"])


def _openai_router(body: dict[str, Any]) -> Any:
    system = body["messages"][0]["content"] if body["messages"][0]["role"] == "system" else ""
    tools = [t["function"]["name"] for t in body.get("tools", [])]
    if system.startswith(prompts.CLASSIFY_SYSTEM[:60]):
        return tool_reply(("Classification", ASK.model_dump(mode="json")))
    if system.startswith(prompts.PLAN_SYSTEM[:60]):
        return tool_reply(("RetrievalPlan", {"complexity": "SIMPLE_FACT", "steps": []}))
    if system.startswith(prompts.FILTER_SYSTEM[:60]):
        return tool_reply(("StorageDecision", {"store": False, "items": []}))
    if system.startswith(prompts.INSTRUCTIONS_SYSTEM[:60]):
        return tool_reply(("InstructionList", {"instructions": []}))
    if system.startswith(prompts.RETRIEVE_SYSTEM[:60]):
        if body["messages"][-1]["role"] == "tool":
            return tool_reply(("done", {}))
        assert "search_facts" in tools
        return tool_reply(("search_facts", {"query": "Anderson account"}))
    if system.startswith(prompts.CURATE_SYSTEM[:60]):
        user = body["messages"][-1]["content"]
        keep = [
            line[2:] for line in user.splitlines() if line.startswith("- ") and "Anderson" in line
        ]
        return text_reply("\n".join(keep) or "NO_RELEVANT_RECORDS")
    return text_reply("")


def test_real_chatopenai_client_against_loopback_server(
    home: Path, store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.add_node("fact", "Peter handles the Anderson account")
    with openai_server(itertools.repeat(_openai_router)) as server:
        monkeypatch.setenv("OCTY_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("OCTY_LLM_API_KEY", "sk-test-loopback-key-123")
        monkeypatch.setenv("LAYER1", "test/model-a")
        monkeypatch.setenv("LAYER2", "test/model-b")
        settings = Settings.from_env()
        ctx = make_context(settings, store)
        assert ctx.l1_model is not None
        result = asyncio.run(
            run_prompt("Who handles Anderson?", settings, store, RunOptions(), context=ctx)
        )
    assert result["mode"] == "test/model-b"
    # Per layer: which provider and model answered, tokens, and cost (unknown models are unpriced).
    assert result["usage"]["l1"]["model"] == "test/model-a"
    assert result["usage"]["l2"]["model"] == "test/model-b"
    assert result["usage"]["l1"]["provider"] and result["usage"]["l1"]["input_tokens"] > 0
    assert result["usage"]["l1"]["priced"] is False and result["usage"]["l1"]["cost_usd"] is None
    assert "Peter handles the Anderson account" in result["context"]
    # Classify and plan at once, one retrieve turn (the plan had no steps, so nothing was found before
    # the agent) and curation; the classification asked not to store, so the storage model is never called.
    systems = [r.body["messages"][0]["content"][:60] for r in server.requests]
    assert sorted(systems[:2]) == sorted([prompts.CLASSIFY_SYSTEM[:60], prompts.PLAN_SYSTEM[:60]])
    assert systems[2:] == [p[:60] for p in (prompts.RETRIEVE_SYSTEM, prompts.CURATE_SYSTEM)]
    assert all(
        r.headers.get("authorization") == "Bearer sk-test-loopback-key-123" for r in server.requests
    )
    trace_text = (settings.paths.debug_dir / f"{result['trace_id']}.json").read_text()
    assert "sk-test-loopback-key-123" not in trace_text


@pytest.mark.slow
def test_server_errors_on_every_call_keep_the_memory_and_report_offline(
    home: Path, store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.add_node("fact", "Peter handles the Anderson account")
    with openai_server(itertools.repeat(error_reply(500))) as server:
        monkeypatch.setenv("OCTY_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("OCTY_LLM_API_KEY", "sk-test-loopback-key-123")
        settings = Settings.from_env()
        ctx = make_context(settings, store)
        assert ctx.l1_model is not None
        result = asyncio.run(
            run_prompt("Who handles Anderson?", settings, store, RunOptions(), context=ctx)
        )
    # The model was really asked: the calls in flight when the endpoint first failed (classify and
    # the plan, side by side) tried four times each; every later call skipped the endpoint.
    asked = Counter(r.body["messages"][0]["content"][:60] for r in server.requests)
    assert asked and len(asked) <= 2 and max(asked.values()) <= 4, asked
    assert result["mode"] == "offline", result["usage"]  # ... and never answered
    assert "Peter handles the Anderson account" in result["context"]
    assert any("HTTP 500" in note for note in trace_of(result)["notes"])


def test_the_answer_does_not_wait_for_the_store_half(
    home: Path, store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from octygraph.pipeline.tools import writes

    store.add_node("fact", "Peter handles the Anderson account")
    real = writes.store_memory

    gate = threading.Event()  # the write is held until the answer is out (or 30 s)
    events: list[str] = []

    def slow_write(*args: Any, **kwargs: Any) -> Any:
        events.append("write released" if gate.wait(timeout=30) else "write timed out")
        return real(*args, **kwargs)

    monkeypatch.setattr(writes, "store_memory", slow_write)
    told = "Lisa handles the Zephyr account. Who handles Anderson?"
    brain = Brain(
        classify=Classification(
            entities=[EntityMention(name="Anderson", kind="account")],
            operations=Operations(retrieve=True, store=True),
        ),
        plan=RetrievalPlan(complexity="SIMPLE_FACT", steps=[]),
        filter=StorageDecision(
            store=True,
            items=[StorageItem(type="fact", content="Lisa handles the Zephyr account")],
        ),
        instructions=InstructionList(),
        retrieve=tool_calls_message(("done", {})),
        store=lambda m: (
            tool_calls_message(
                ("store_memory", {"type": "fact", "content": "Lisa handles the Zephyr account"})
            )
            if _last_tool(m) is None
            else tool_calls_message(("done", {"stored_count": 1}))
        ),
        curate=curate_copy,
    )
    settings = Settings.from_env()
    ctx = Context(
        project=settings.project_id,
        store=store,
        settings=settings,
        l1_model=scripted(brain),
        l2_model=scripted(brain),
        usage=UsageTracker(),
    )
    answers: list[dict[str, Any]] = []

    async def on_answer(early: dict[str, Any]) -> None:
        answers.append(early)
        events.append("answered")
        gate.set()

    result = asyncio.run(
        run_prompt(told, settings, store, RunOptions(), context=ctx, on_answer=on_answer)
    )
    [early] = answers
    assert "Peter handles the Anderson account" in early["context"]
    assert early["stored"] == []  # the store half was still at work
    assert events == ["answered", "write released"]  # the answer did not wait for the write
    assert [s["content"] for s in result["stored"]] == ["Lisa handles the Zephyr account"]
    assert result["context"] == early["context"]


STORE_CALL_S = 1.5


def tell_and_ask(body: dict[str, Any], told: str, store_agent: Callable[[bool], Reply]) -> Reply:
    """The loopback model for a prompt that tells `told` and asks who handles Anderson: a quick
    retrieval, curation that keeps every assembled record, and the store agent's replies from
    `store_agent` (called with whether the write's tool result is back)."""
    system = body["messages"][0]["content"] if body["messages"][0]["role"] == "system" else ""
    if system.startswith(prompts.CLASSIFY_SYSTEM[:60]):
        ops = {"operations": {"retrieve": True, "store": True}}
        return tool_reply(("Classification", ASK.model_dump(mode="json") | ops))
    if system.startswith(prompts.PLAN_SYSTEM[:60]):
        steps = [{"tool": "search_facts", "args": {"query": "who handles Anderson"}}]
        return tool_reply(("RetrievalPlan", {"complexity": "SIMPLE_FACT", "steps": steps}))
    if system.startswith(prompts.FILTER_SYSTEM[:60]):
        item = {"type": "fact", "content": told}
        return tool_reply(("StorageDecision", {"store": True, "items": [item]}))
    if system.startswith(prompts.INSTRUCTIONS_SYSTEM[:60]):
        return tool_reply(("InstructionList", {"instructions": []}))
    if system.startswith(prompts.STORE_SYSTEM[:60]):
        return store_agent(body["messages"][-1]["role"] == "tool")
    if system.startswith(prompts.CURATE_SYSTEM[:60]):
        user = body["messages"][-1]["content"]
        return text_reply("\n".join(x[2:] for x in user.splitlines() if x.startswith("- ")))
    return text_reply("")


def _cli_router(body: dict[str, Any]) -> Reply:
    """Answers the CLI run of `test_cli_run_prints_the_context_before_the_store_half_ends`: a quick
    retrieval, a store agent that takes `STORE_CALL_S` per call."""
    told = "Lisa handles the Zephyr account"

    def slow_store_agent(wrote: bool) -> Reply:
        if wrote:
            reply = tool_reply(("done", {"stored_count": 1}))
        else:
            reply = tool_reply(("store_memory", {"type": "fact", "content": told}))
        reply.delay_s = STORE_CALL_S
        return reply

    return tell_and_ask(body, told, slow_store_agent)


@pytest.mark.slow
def test_cli_run_prints_the_context_before_the_store_half_ends(home: Path) -> None:
    """`octygraph run`: the context is out as soon as retrieval has it; the command exits once what the
    prompt told is stored (two store-agent calls of 1.5 s later)."""
    cli_json("memory", "add", "Peter handles the Anderson account", "--type", "fact", "--json")
    with openai_server(itertools.repeat(_cli_router)) as server:
        env = {
            **os.environ,
            "OCTY_LLM_BASE_URL": server.base_url,
            "OCTY_LLM_API_KEY": "sk-test",
            "PATH": "",  # no `claude` command: the fallback provider stays out
        }
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "octygraph",
                "run",
                "Lisa handles the Zephyr account. Who handles Anderson?",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert proc.stdout is not None
        shown = ""
        while line := proc.stdout.readline():
            shown += line
            if "Peter handles the Anderson account" in line:
                break
        printed_at = time.monotonic()
        rest, errors = proc.communicate(timeout=120)
        exited_at = time.monotonic()
    assert proc.returncode == 0, errors
    assert "Peter handles the Anderson account" in shown
    assert "Lisa" not in shown + rest  # the run's own message is not echoed back
    # The context was out before the store agent's slow calls were answered; the command waited for them.
    store_calls = [
        r
        for r in server.requests
        if r.body["messages"][0]["content"].startswith(prompts.STORE_SYSTEM[:60])
    ]
    assert len(store_calls) == 2
    assert printed_at < store_calls[-1].answered_at < exited_at, (printed_at, exited_at)
    assert "stored fact" in errors and "Lisa handles the Zephyr account" in errors
    found = cli_json("search", "Zephyr account", "--json")
    assert any("Lisa handles the Zephyr account" in json.dumps(r) for r in found)


def test_simple_lookup_found_by_the_plan_skips_the_agent(home: Path, store: MemoryStore) -> None:
    anderson = store.add_node("entity", "Anderson", subtype="account")
    store.add_node("fact", "Peter handles the Anderson account", entity_ids=[anderson.id])
    brain = Brain(
        classify=ASK,
        plan=RetrievalPlan(
            complexity="ENTITY_LOOKUP",
            steps=[SearchStep(tool="search_entity", args={"name": "Anderson"})],
        ),
        filter=StorageDecision(store=False),
        instructions=InstructionList(),
        curate=curate_copy,  # no `retrieve` answer: asking the agent would fail the test
    )
    result = run(store, "Who handles Anderson?", scripted(brain))
    assert "Peter handles the Anderson account" in result["context"]
    assert "retrieve" not in brain.seen
    assert result["layers"]["retrieve_loop"]["mode"] == "skipped"
    assert result["layers"]["classify"] == {"mode": "model"}

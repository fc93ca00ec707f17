"""LangGraph Studio (`langgraph dev` on loopback, driven by langgraph-sdk) and LangSmith naming."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import date
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_core.callbacks import CallbackManager
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.tracers.context import register_configure_hook
from langchain_core.tracers.langchain import LangChainTracer
from langchain_core.tracers.run_collector import RunCollectorCallbackHandler
from langchain_core.tracers.schemas import Run
from langsmith import utils as ls_utils

from octygraph.config.settings import Settings
from octygraph.llm.usage import UsageTracker
from octygraph.models import (
    Classification,
    EntityMention,
    InstructionList,
    Operations,
    RetrievalPlan,
    SearchStep,
    StorageDecision,
)
from octygraph.pipeline import prompts
from octygraph.pipeline.context import Context
from octygraph.pipeline.runner import RunOptions, run_prompt
from octygraph.store import MemoryStore
from tests.fakes import ScriptedChatModel, tool_calls_message

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "graphs" / "langgraph.json"
HAS_CLI = all(
    importlib.util.find_spec(m) is not None
    for m in ("langgraph_cli", "langgraph_api", "langgraph_runtime_inmem", "langgraph_sdk")
)
# Everything the dev server (and the CLI around it) would otherwise reach over the network: CLI
# usage analytics, the PyPI version check, LangSmith tracing, the licence/metadata beacon (only
# sent with a key, and the keys are removed).
OFFLINE_ENV = {
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    # Anything that still tries to leave the machine fails at once on a closed loopback port.
    "HTTP_PROXY": "http://127.0.0.1:9",
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "NO_PROXY": "127.0.0.1,localhost",
}
SECRET_PREFIXES = ("LANGSMITH_", "LANGCHAIN_", "LANGGRAPH_CLOUD_", "OPENROUTER_", "OCTY_LLM_")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _langgraph_command() -> list[str]:
    script = Path(sys.executable).with_name("langgraph")
    found = str(script) if script.exists() else shutil.which("langgraph")
    assert found, "langgraph-cli is installed but its `langgraph` command is not on PATH"
    return [found]


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop the server and everything it started (its own process group)."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)


@pytest.fixture
def dev_server(tmp_path: Path) -> Iterator[str]:
    """`langgraph dev` on a free loopback port with the repo's config, a temp home, offline."""
    config = json.loads(CONFIG.read_text())
    spec = config["graphs"]["octygraph"]
    # The repo's config with paths made absolute (the server resolves them against its working
    # folder) and a fixed environment instead of the developer's `.env`.
    path, _, variable = spec.partition(":")
    config["graphs"] = {"octygraph": f"{(REPO / path).resolve()}:{variable}"}
    config["dependencies"] = [str(REPO)]
    config["env"] = {"OCTYBOT_PROJECT": "studio-test", "OCTY_EMBEDDINGS": "local"}
    config["disable_persistence"] = True  # no .langgraph_api folder anywhere
    work = tmp_path / "work"
    work.mkdir()
    (work / "langgraph.json").write_text(json.dumps(config))
    env = {k: v for k, v in os.environ.items() if not k.startswith(SECRET_PREFIXES)}
    env.update(OFFLINE_ENV, OCTYBOT_HOME=str(tmp_path / "home"), PYTHONPATH=str(REPO))
    port = _free_port()
    log = (tmp_path / "server.log").open("wb")
    proc = subprocess.Popen(
        [
            *_langgraph_command(),
            "dev",
            "--config",
            "langgraph.json",
            "--no-browser",
            "--no-reload",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        cwd=work,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, (tmp_path / "server.log").read_text()[-3000:]
            try:
                if httpx.get(f"{url}/ok", timeout=2, trust_env=False).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "langgraph dev did not start within 120 s"
            time.sleep(0.5)
        yield url
    finally:
        _stop(proc)
        log.close()


@pytest.mark.slow
@pytest.mark.skipif(
    not HAS_CLI, reason="langgraph-cli[inmem] is not installed (pip install -e '.[dev]')"
)
def test_langgraph_dev_runs_the_graph_offline(dev_server: str) -> None:
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=dev_server)
    [assistant] = client.assistants.search(graph_id="octygraph")
    schemas = client.assistants.get_schemas(assistant["assistant_id"])
    # Studio draws a form from the context schema: JSON fields only, the live store kept out.
    assert schemas["context_schema"] is not None and schemas["input_schema"] is not None
    fields = schemas["context_schema"]["properties"]
    assert {"project", "today", "use_llm"} <= set(fields)
    assert not {"store", "settings", "l1_model", "l2_model", "usage"} & set(fields)
    assert schemas["input_schema"]["properties"] == {
        "prompt": {"title": "Prompt", "type": "string"}
    }
    graph = client.assistants.get_graph(assistant["assistant_id"], xray=1)
    # The halves are subgraphs, drawn expanded: their nodes are `retrieve:assemble` and so on.
    drawn = {str(n["id"]).rsplit(":", 1)[-1] for n in graph["nodes"]}
    assert {
        "classify",
        "plan",
        "retrieve_loop",
        "judge_storage",
        "store_loop",
        "assemble",
        "curate",
    } <= drawn

    thread = client.threads.create()
    told = client.runs.wait(
        thread["thread_id"],
        "octygraph",
        input={"prompt": "Maria owns the billing service"},
        context={"today": "2026-11-16"},
    )
    assert isinstance(told, dict)
    assert [s["content"] for s in told["stored"]] == ["Maria owns the billing service"]
    asked = client.runs.wait(None, "octygraph", input={"prompt": "Who owns the billing service?"})
    assert isinstance(asked, dict)
    assert asked["stored"] == []
    assert "Maria owns the billing service" in asked["context"]


def test_studio_graph_schema_and_a_run_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graphs.studio import StudioContext, graph

    schema = graph.get_context_jsonschema()
    assert schema is not None
    assert {"project", "today", "use_llm", "context_budget_chars"} <= set(schema["properties"])
    assert not {"store", "settings", "l1_model", "l2_model", "usage", "_gazetteer"} & set(
        schema["properties"]
    )
    assert graph.name == "octygraph" and graph.checkpointer is None
    monkeypatch.setenv("OCTYBOT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OCTY_EMBEDDINGS", "local")

    async def both() -> tuple[dict[str, Any], dict[str, Any]]:
        # The server hands the context over as JSON: a dict, the date as a string.
        context = {"project": "studio-in-process", "today": "2026-11-16"}
        told = await graph.ainvoke({"prompt": "The demo is due next Friday."}, context=context)
        asked = await graph.ainvoke({"prompt": "When is the demo due?"}, context=context)
        return told, asked

    told, asked = asyncio.run(both())
    assert [(s["type"], s["valid_from"]) for s in told["stored"]] == [("plan", "2026-11-27")]
    assert "The demo is due next Friday." in asked["context"]
    assert StudioContext(today="").today is None  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- LangSmith


def _reread_environment() -> None:
    """langsmith caches the environment variables it read; forget them."""
    ls_utils.get_env_var.cache_clear()  # type: ignore[attr-defined]


def _tracer_active() -> bool:
    _reread_environment()
    return any(isinstance(h, LangChainTracer) for h in CallbackManager.configure().handlers)


def test_tracing_follows_the_standard_environment_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING"):
        monkeypatch.delenv(name, raising=False)
    try:
        assert not _tracer_active()
        assert ls_utils.tracing_is_enabled() is False
        monkeypatch.setenv("LANGSMITH_TRACING", "true")
        _reread_environment()
        # The switch is the standard variable (no tracer is built here: that would call the API).
        assert ls_utils.tracing_is_enabled() is True
    finally:
        monkeypatch.delenv("LANGSMITH_TRACING", raising=False)
        _reread_environment()
    assert not _tracer_active()


# Like langchain_core's `collect_runs`, but inherited by child runs: that one only sees the graph's
# root run, not its nodes (checked with langchain-core 1.7 and langgraph 1.2).
_COLLECTOR: ContextVar[RunCollectorCallbackHandler | None] = ContextVar(
    "octygraph_test_run_collector", default=None
)
register_configure_hook(_COLLECTOR, inheritable=True)


@contextmanager
def collect_runs() -> Iterator[RunCollectorCallbackHandler]:
    """Collect every run (with its child runs) started inside the block, locally, in memory."""
    collector = RunCollectorCallbackHandler()
    token = _COLLECTOR.set(collector)
    try:
        yield collector
    finally:
        _COLLECTOR.reset(token)


def _all_runs(run: Run) -> list[Run]:
    return [run, *(r for child in run.child_runs for r in _all_runs(child))]


def _brain(messages: list[BaseMessage]) -> Any:
    """A well-behaved LLM for one run: asks, looks up a fact with a tool, curates by copying."""
    system = str(messages[0].content) if isinstance(messages[0], SystemMessage) else ""

    def is_(text: str) -> bool:
        return system.startswith(text[:60])

    if is_(prompts.CLASSIFY_SYSTEM):
        return Classification(
            entities=[EntityMention(name="billing service", kind="project")],
            intents=["information"],
            operations=Operations(retrieve=True, store=False),
        )
    if is_(prompts.PLAN_SYSTEM):
        # Not a simple lookup, so the retrieve agent (a named subgraph) runs too.
        return RetrievalPlan(
            complexity="MULTI_PART",
            steps=[SearchStep(tool="search_facts", args={"query": "billing owner"})],
        )
    if is_(prompts.FILTER_SYSTEM):
        return StorageDecision(store=False)
    if is_(prompts.INSTRUCTIONS_SYSTEM):
        return InstructionList()
    if is_(prompts.RETRIEVE_SYSTEM):
        if isinstance(messages[-1], ToolMessage):
            return tool_calls_message("done")
        return tool_calls_message(("search_facts", {"query": "who owns the billing service"}))
    if is_(prompts.CURATE_SYSTEM):
        body = str(messages[-1].content)
        return "\n".join(line[2:] for line in body.splitlines() if line.startswith("- "))
    return AIMessage("")


def test_runs_carry_node_subgraph_and_tool_names(
    tmp_path: Path, store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OCTYBOT_HOME", str(tmp_path / "home"))
    settings = Settings.from_env(project_id="naming")
    store.add_node("fact", "Maria owns the billing service")
    model = ScriptedChatModel(_repeat(_brain))
    ctx = Context(
        project="naming",
        store=store,
        settings=settings,
        l1_model=model,
        l2_model=model,
        usage=UsageTracker(),
        today=date(2026, 11, 16),
    )
    with collect_runs() as collected:
        result = asyncio.run(
            run_prompt(
                "Who owns the billing service?",
                settings,
                store,
                RunOptions(session_id="s-1"),
                context=ctx,
            )
        )
    assert "Maria owns the billing service" in result["context"]
    [root] = [r for r in collected.traced_runs if r.name == "octygraph"]
    assert {"octygraph", "llm"} <= set(root.tags or [])
    assert root.extra["metadata"]["project"] == "naming"
    assert root.extra["metadata"]["session_id"] == "s-1"
    runs = _all_runs(root)
    names = {r.name for r in runs}
    assert {"classify", "plan", "retrieve_loop", "safety_nets", "assemble", "curate"} <= names
    # A question has nothing to store: the store half ends once judged (graph.after_judging).
    assert "judge_storage" in names
    assert not {"store_loop", "force_store", "reconcile"} & names
    assert "retrieve_agent" in names  # the ReAct subgraph, named at compile time
    [tool] = [r for r in runs if r.run_type == "tool"]
    assert tool.name == "search_facts"
    assert tool.extra["metadata"]["langgraph_node"] == "tools"


def test_offline_runs_are_named_too_and_trace_nothing(
    tmp_path: Path, store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OCTYBOT_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("LANGSMITH_TRACING", raising=False)
    _reread_environment()
    settings = Settings.from_env(project_id="offline-naming")
    with collect_runs() as collected:
        asyncio.run(run_prompt("Who owns billing?", settings, store, RunOptions(offline=True)))
    [root] = collected.traced_runs
    assert root.name == "octygraph" and "offline" in (root.tags or [])
    assert {"classify", "retrieve_loop", "assemble"} <= {r.name for r in _all_runs(root)}
    assert not _tracer_active()


def _repeat(item: Any) -> Iterator[Any]:
    while True:
        yield item


def test_llm_calls_nest_under_their_nodes(
    tmp_path: Path, store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OCTYBOT_HOME", str(tmp_path / "home"))
    settings = Settings.from_env(project_id="nesting")
    store.add_node("fact", "Maria owns the billing service")
    model = ScriptedChatModel(_repeat(_brain))
    ctx = Context(project="nesting", store=store, settings=settings, l1_model=model, l2_model=model)
    with collect_runs() as collected:
        asyncio.run(
            run_prompt("Who owns the billing service?", settings, store, RunOptions(), context=ctx)
        )
    # One trace per prompt: every LLM call inside the "octygraph" run, under the node that made it.
    assert [r.name for r in collected.traced_runs] == ["octygraph"]

"""The LLM layer against loopback servers: routing, retries, fallback, structured output, usage."""

from __future__ import annotations

import asyncio
import itertools
import json
import stat
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import pytest
from fakes import ParseFailure, ScriptedChatModel, tool_calls_message
from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from llm_server import (
    anthropic_server,
    anthropic_text,
    closed_port,
    empty_reply,
    error_reply,
    openai_server,
    slow,
    text_reply,
    tool_reply,
    with_cost,
)
from pydantic import BaseModel

from octygraph.config.settings import Settings
from octygraph.llm import (
    LLMConfigError,
    LLMUnavailable,
    UsageCallback,
    UsageTracker,
    cost,
    make_chat_model,
    price,
    structured_call,
)
from octygraph.llm.deadline import DEADLINE_KEY
from octygraph.llm.factory import DEFAULT_FALLBACK_MODEL
from octygraph.llm.resilient import CIRCUIT
from octygraph.llm.wrangler import read_wrangler_token, wrangler_config_paths

BASE = 0.01  # first retry delay in these tests


class Waits:
    """What the resilient model waited for: each retry delay and each request's time limit.

    Stands for `asyncio` as `octygraph.llm.resilient` sees it: `sleep` and `timeout` are recorded (the
    waits still happen), anything else is asyncio's own. A test checks the delays the code chose, not how
    long the machine took.
    """

    def __getattr__(self, name: str) -> Any:
        return getattr(asyncio, name)

    def __init__(self) -> None:
        self.sleeps: list[float] = []
        self.limits: list[float | None] = []

    async def sleep(self, delay: float) -> None:
        self.sleeps.append(delay)
        await asyncio.sleep(delay)

    def timeout(self, delay: float | None) -> Any:
        self.limits.append(delay)
        return asyncio.timeout(delay)


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> Waits:
    from octygraph.llm import resilient

    seen = Waits()
    monkeypatch.setattr(resilient, "asyncio", seen)
    return seen


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def fresh_circuit() -> None:
    CIRCUIT.reset()  # endpoints tripped by an earlier test must not be skipped here


class Classification(BaseModel):
    """What the user's message is about."""

    entities: list[str]
    retrieve: bool


def make_settings(tmp_path: Path, **env: str) -> Settings:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return Settings.from_env(env=env, cwd=work)


def model_for(
    settings: Settings, env: dict[str, str], layer: Literal["l1", "l2"] = "l1", **kwargs: Any
) -> BaseChatModel:
    # PATH="" keeps a real `claude` command out of the chain unless a test adds one
    model = make_chat_model(settings, layer, env={"PATH": "", **env}, retry_base_s=BASE, **kwargs)
    assert model is not None
    return model


# --- routing ---------------------------------------------------------------------------------


def test_no_endpoint_means_no_model(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    assert not settings.llm_configured
    assert make_chat_model(settings, "l1", env={}) is None
    assert make_chat_model(settings, "l2", env={}) is None


@pytest.mark.anyio
async def test_workers_ai_route_uses_account_and_token(tmp_path: Path) -> None:
    settings = make_settings(
        tmp_path,
        LAYER1="@cf/openai/gpt-oss-120b",
        CF_ACCOUNT_ID="acc123",
        CLOUDFLARE_API_TOKEN="cf-token",
    )
    with openai_server([text_reply("from workers ai")]) as server:
        model = model_for(settings, {"OCTY_CF_BASE_URL": server.root})
        reply = await model.ainvoke("hello")
        # the L2 model is the OpenRouter default and no key is set: offline for that layer
        assert make_chat_model(settings, "l2", env={"PATH": ""}) is None
    assert reply.content == "from workers ai"
    assert reply.response_metadata["octy_provider"] == "workers-ai"
    request = server.requests[0]
    assert request.path == "/accounts/acc123/ai/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer cf-token"
    assert request.body["model"] == "@cf/openai/gpt-oss-120b"
    assert "provider" not in request.body  # OpenRouter's routing field stays with OpenRouter


def write_wrangler(folder: Path, token: str, expires: datetime) -> Path:
    path = folder / ".wrangler" / "config" / "default.toml"
    path.parent.mkdir(parents=True)
    stamp = expires.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    path.write_text(
        f'oauth_token = "{token}"\nexpiration_time = "{stamp}"\nrefresh_token = "r"\n'
        'scopes = ["account:read", "ai:write"]\n'
    )
    return path


@pytest.mark.anyio
async def test_wrangler_token_is_read_from_the_xdg_config(tmp_path: Path) -> None:
    home, xdg = tmp_path / "home", tmp_path / "xdg"
    home.mkdir()
    write_wrangler(xdg, "oauth-abc", datetime.now(UTC) + timedelta(hours=1))
    settings = make_settings(
        tmp_path, LAYER1="@cf/meta/llama-3.3-70b-instruct-fp8-fast", CF_ACCOUNT_ID="acc9"
    )
    with openai_server([text_reply("ok")]) as server:
        env = {"HOME": str(home), "XDG_CONFIG_HOME": str(xdg), "OCTY_CF_BASE_URL": server.root}
        model = model_for(settings, env)
        await model.ainvoke("hello")
    assert server.requests[0].headers["authorization"] == "Bearer oauth-abc"
    assert server.requests[0].path.startswith("/accounts/acc9/ai/v1/")


def test_wrangler_macos_location_and_expiry(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    mac = wrangler_config_paths(env, platform="darwin")[-1]
    assert mac == tmp_path / "Library/Preferences/.wrangler/config/default.toml"
    write_wrangler(
        tmp_path / "Library" / "Preferences", "mac-token", datetime.now(UTC) + timedelta(hours=1)
    )
    assert read_wrangler_token(env, platform="darwin") == "mac-token"
    # an hour later the token has expired
    later = datetime.now(UTC) + timedelta(hours=2)
    with pytest.raises(LLMConfigError, match="npx wrangler whoami"):
        read_wrangler_token(env, platform="darwin", now=later)


def test_expired_wrangler_login_is_one_plain_sentence(tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    write_wrangler(xdg, "old", datetime.now(UTC) - timedelta(minutes=5))
    settings = make_settings(tmp_path, LAYER1="@cf/openai/gpt-oss-120b", CF_ACCOUNT_ID="a")
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(xdg)}
    with pytest.raises(LLMConfigError) as info:
        make_chat_model(settings, "l1", env=env)
    message = str(info.value)
    assert "npx wrangler whoami" in message
    assert "\n" not in message and message.endswith(".")
    assert isinstance(info.value, LLMUnavailable)  # callers that degrade on outages catch it too


def test_workers_ai_without_account_id_says_what_to_set(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, LAYER1="@cf/openai/gpt-oss-20b", CLOUDFLARE_API_TOKEN="t")
    with pytest.raises(LLMConfigError, match="CF_ACCOUNT_ID"):
        make_chat_model(settings, "l1", env={})


@pytest.mark.anyio
async def test_openrouter_request_carries_provider_sort(tmp_path: Path) -> None:
    settings = make_settings(
        tmp_path, OPENROUTER_API_KEY="sk-or-test", LAYER2="openai/gpt-oss-120b"
    )
    with openai_server([text_reply("hi there")]) as server:
        model = model_for(settings, {"OCTY_OPENROUTER_BASE_URL": server.base_url}, layer="l2")
        reply = await model.ainvoke([SystemMessage("be brief"), HumanMessage("hello")])
    body = server.requests[0].body
    assert body["provider"] == {"sort": "throughput"}
    assert body["model"] == "openai/gpt-oss-120b"
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert server.requests[0].headers["authorization"] == "Bearer sk-or-test"
    assert reply.response_metadata["octy_provider"] == "openrouter"
    assert reply.response_metadata["octy_attempts"] == []


@pytest.mark.anyio
async def test_local_base_url_wins_over_openrouter(tmp_path: Path) -> None:
    with openai_server([text_reply("local")]) as server:
        settings = make_settings(
            tmp_path, OCTY_LLM_BASE_URL=server.base_url, OPENROUTER_API_KEY="sk", LAYER1="llama3.2"
        )
        reply = await model_for(settings, {}).ainvoke("hi")
    assert reply.response_metadata["octy_provider"] == "openai-compatible"
    assert server.requests[0].body["model"] == "llama3.2"
    assert "provider" not in server.requests[0].body


# --- retries and fallback ----------------------------------------------------------------------


@pytest.mark.anyio
async def test_rate_limit_is_retried_with_a_doubled_delay(tmp_path: Path, waits: Waits) -> None:
    settings = make_settings(tmp_path, OPENROUTER_API_KEY="sk")
    script = [
        error_reply(429, "slow down"),
        text_reply("after 429"),
        error_reply(500),
        text_reply("after 500"),
    ]
    with openai_server(script) as server:
        model = model_for(settings, {"OCTY_OPENROUTER_BASE_URL": server.base_url})
        limited = await model.ainvoke("one")
        failed = await model.ainvoke("two")
    assert limited.content == "after 429" and failed.content == "after 500"
    assert len(server.requests) == 4
    (rate_limited,) = limited.response_metadata["octy_attempts"]
    (server_error,) = failed.response_metadata["octy_attempts"]
    assert rate_limited["status"] == 429 and server_error["status"] == 500
    assert server_error["delay_s"] == pytest.approx(BASE)
    assert rate_limited["delay_s"] == pytest.approx(2 * BASE)
    assert waits.sleeps == pytest.approx([2 * BASE, BASE])  # the delays were really waited


@pytest.mark.anyio
async def test_retry_after_is_honoured(tmp_path: Path, waits: Waits) -> None:
    settings = make_settings(tmp_path, OPENROUTER_API_KEY="sk")
    script = [error_reply(429, "slow down", **{"Retry-After": "0.3"}), text_reply("after the wait")]
    with openai_server(script) as server:
        model = model_for(settings, {"OCTY_OPENROUTER_BASE_URL": server.base_url})
        reply = await model.ainvoke("one")
    assert reply.content == "after the wait"
    (attempt,) = reply.response_metadata["octy_attempts"]
    assert attempt["retry_after_s"] == pytest.approx(0.3) and attempt["delay_s"] == pytest.approx(
        0.3
    )
    assert waits.sleeps == pytest.approx([0.3])  # the server's wait, not the 2 * BASE backoff


@pytest.mark.anyio
async def test_retry_after_longer_than_a_prompt_can_wait_gives_up_at_once(
    tmp_path: Path, waits: Waits
) -> None:
    settings = make_settings(tmp_path, OPENROUTER_API_KEY="sk")
    script = [error_reply(429, "come back later", **{"Retry-After": "120"}), text_reply("late")]
    with openai_server(script) as server:
        model = model_for(settings, {"OCTY_OPENROUTER_BASE_URL": server.base_url})
        with pytest.raises(LLMUnavailable, match="429"):
            await model.ainvoke("one")
    assert len(server.requests) == 1 and waits.sleeps == []  # no wait for the 120 s


def _with_deadline(seconds: float) -> dict[str, Any]:
    return {"metadata": {DEADLINE_KEY: time.monotonic() + seconds}}


@pytest.mark.anyio
async def test_deadline_bounds_a_slow_reply(tmp_path: Path, waits: Waits) -> None:
    settings = make_settings(tmp_path, OPENROUTER_API_KEY="sk")
    with openai_server([slow(text_reply("too late"), 20)]) as server:
        model = model_for(settings, {"OCTY_OPENROUTER_BASE_URL": server.base_url})
        with pytest.raises(LLMUnavailable, match="deadline"):
            await model.ainvoke("one", _with_deadline(0.5))
        answered = server.requests[0].answered_at
    # The request was given the time left before the deadline, and was given up unanswered.
    (limit,) = waits.limits
    assert limit is not None and 0 < limit <= 0.5
    assert len(server.requests) == 1 and answered == 0 and waits.sleeps == []


@pytest.mark.anyio
async def test_deadline_bounds_the_retry_waits(tmp_path: Path, waits: Waits) -> None:
    settings = make_settings(tmp_path, OPENROUTER_API_KEY="sk")
    script = [error_reply(429, "wait", **{"Retry-After": "2"}), text_reply("after the wait")]
    with openai_server(script) as server:
        model = model_for(settings, {"OCTY_OPENROUTER_BASE_URL": server.base_url})
        with pytest.raises(LLMUnavailable, match="no time left for a retry"):
            await model.ainvoke("one", _with_deadline(1.0))
    assert len(server.requests) == 1 and waits.sleeps == []  # the 2 s wait was not started


def test_sync_invoke_retries_too(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, OPENROUTER_API_KEY="sk")
    with openai_server([error_reply(503), empty_reply(), text_reply("third time")]) as server:
        reply = model_for(settings, {"OCTY_OPENROUTER_BASE_URL": server.base_url}).invoke("hi")
    assert reply.content == "third time"
    delays = [a["delay_s"] for a in reply.response_metadata["octy_attempts"]]
    assert delays == pytest.approx([BASE, 2 * BASE])  # growing delay


@pytest.mark.anyio
async def test_client_error_is_not_retried(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, OPENROUTER_API_KEY="bad")
    with openai_server([error_reply(401, "bad key"), text_reply("never")]) as server:
        model = model_for(settings, {"OCTY_OPENROUTER_BASE_URL": server.base_url})
        with pytest.raises(LLMUnavailable, match="HTTP 401"):
            await model.ainvoke("hi")
    assert len(server.requests) == 1


@pytest.mark.anyio
async def test_empty_reply_falls_back_to_anthropic(tmp_path: Path) -> None:
    pytest.importorskip("langchain_anthropic")  # the optional `anthropic` extra
    settings = make_settings(tmp_path, OPENROUTER_API_KEY="sk", ANTHROPIC_API_KEY="ak-test")
    tracker = UsageTracker()
    with (
        openai_server(itertools.cycle([empty_reply()])) as primary,
        anthropic_server([anthropic_text("Claude answers")]) as claude,
    ):
        env = {"OCTY_OPENROUTER_BASE_URL": primary.base_url, "ANTHROPIC_BASE_URL": claude.base_url}
        model = model_for(settings, env, usage=tracker)
        reply = await model.ainvoke([SystemMessage("rules"), HumanMessage("question")])
    assert reply.content == "Claude answers"
    assert reply.response_metadata["octy_provider"] == "anthropic"
    assert reply.response_metadata["octy_model"] == DEFAULT_FALLBACK_MODEL
    assert len(primary.requests) == 4  # the first try and three retries
    assert [a["error"] for a in reply.response_metadata["octy_attempts"]] == ["empty reply"] * 4
    request = claude.requests[0]
    assert request.path == "/v1/messages"
    key_headers = (request.headers.get("x-api-key"), request.headers.get("authorization"))
    assert "ak-test" in key_headers or "Bearer ak-test" in key_headers
    assert request.body["model"] == DEFAULT_FALLBACK_MODEL
    assert request.body["messages"][-1]["content"] in (
        "question",
        [{"type": "text", "text": "question"}],
    )
    usage = tracker.to_dict()["l1"]
    assert usage["calls"] == 5  # wasted empty replies are counted as well
    assert {m["provider"] for m in usage["models"]} == {"openrouter", "anthropic"}


@pytest.mark.anyio
async def test_dead_fallback_raises_llm_unavailable_quickly(tmp_path: Path, waits: Waits) -> None:
    pytest.importorskip("langchain_anthropic")  # the optional `anthropic` extra
    settings = make_settings(tmp_path, OPENROUTER_API_KEY="sk", ANTHROPIC_API_KEY="ak")
    with openai_server(itertools.cycle([empty_reply()])) as primary:
        env = {"OCTY_OPENROUTER_BASE_URL": primary.base_url, "ANTHROPIC_BASE_URL": closed_port()}
        model = model_for(settings, env, timeout_s=2)
        with pytest.raises(LLMUnavailable) as info:
            await model.ainvoke("hi")
    # Only the primary's three retries waited; the refused fallback was not retried.
    assert waits.sleeps == pytest.approx([BASE, 2 * BASE, 4 * BASE])
    assert len(primary.requests) == 4
    assert "openrouter: empty reply" in str(info.value)
    assert "anthropic: unreachable" in str(info.value)


@pytest.mark.anyio
async def test_a_dead_endpoint_is_paid_for_once(tmp_path: Path) -> None:
    dead = closed_port()
    settings = make_settings(tmp_path, OCTY_LLM_BASE_URL=dead + "/v1", LAYER1="m", LAYER2="m")
    l1 = model_for(settings, {}, layer="l1")
    l2 = model_for(settings, {}, layer="l2")
    with pytest.raises(LLMUnavailable, match="openai-compatible: unreachable"):
        await l1.ainvoke("classify")  # refused at once: no retries, no delays
    with openai_server(itertools.cycle([error_reply(500)])) as flaky:
        settings = make_settings(tmp_path, OPENROUTER_API_KEY="sk")
        model = model_for(settings, {"OCTY_OPENROUTER_BASE_URL": flaky.base_url})
        with pytest.raises(LLMUnavailable, match="HTTP 500"):
            await model.ainvoke("first")
        assert len(flaky.requests) == 4
        # later calls, from any model on the same endpoint, skip it until the cooldown ends
        with pytest.raises(LLMUnavailable, match="skipped"):
            await model.bind_tools([search_facts]).ainvoke("second")
        assert len(flaky.requests) == 4
    with pytest.raises(LLMUnavailable, match="skipped"):
        await l2.ainvoke("plan")


def fake_claude(folder: Path, result: str) -> Path:
    """A stand-in `claude` command that records how it was run and prints a JSON result."""
    folder.mkdir()
    script = folder / "claude"
    record = folder / "record.json"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        "prompt = sys.stdin.read()\n"
        "env = os.environ\n"
        f"json.dump({{'argv': sys.argv[1:], 'prompt': prompt, 'cwd': os.getcwd(),"
        f" 'claudecode': env.get('CLAUDECODE'), 'no_hooks': env.get('OCTY_NO_HOOKS')}},"
        f" open({str(record)!r}, 'w'))\n"
        f"print(json.dumps({{'type': 'result', 'subtype': 'success', 'is_error': False,"
        f" 'result': {result!r}, 'total_cost_usd': 0.0123,"
        " 'usage': {'input_tokens': 40, 'output_tokens': 7},"
        " 'modelUsage': {'claude-sonnet-4-5-20250929': {}}}))\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return record


@pytest.mark.anyio
async def test_claude_command_is_the_last_resort_for_text(tmp_path: Path) -> None:
    record = fake_claude(tmp_path / "bin", "CLI answer")
    settings = make_settings(tmp_path, OPENROUTER_API_KEY="sk")
    tracker = UsageTracker()
    with openai_server(itertools.cycle([empty_reply()])) as primary:
        env = {
            "OCTY_OPENROUTER_BASE_URL": primary.base_url,
            "PATH": str(tmp_path / "bin"),
            "CLAUDECODE": "1",  # as inside a Claude Code hook
        }
        model = make_chat_model(settings, "l2", env=env, retry_base_s=BASE, usage=tracker)
        assert model is not None
        reply = await model.ainvoke([SystemMessage("Copy verbatim."), HumanMessage("the records")])
        # tool calls cannot go through the command: with tools bound it is left out
        with pytest.raises(LLMUnavailable):
            await model.bind_tools([Classification]).ainvoke("classify")
    assert reply.content == "CLI answer"
    assert reply.response_metadata["octy_provider"] == "claude-cli"
    run = json.loads(record.read_text())
    assert run["claudecode"] is None and run["no_hooks"] == "1"
    assert run["argv"][:3] == ["-p", "--output-format", "json"]
    assert "Copy verbatim." in run["prompt"] and "the records" in run["prompt"]
    assert Path(run["cwd"]).resolve() != (tmp_path / "work").resolve()
    cli_usage = [m for m in tracker.to_dict()["l2"]["models"] if m["provider"] == "claude-cli"]
    assert cli_usage[0]["cost_usd"] == pytest.approx(0.0123)  # the cost the command reported


# --- tools and structured output -----------------------------------------------------------------


@tool
def search_facts(query: str) -> str:
    """Search stored facts."""
    return query


@pytest.mark.anyio
async def test_bound_tools_reach_the_server_and_tool_calls_come_back(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, OPENROUTER_API_KEY="sk")
    with openai_server([tool_reply(("search_facts", {"query": "revenue"}))]) as server:
        model = model_for(settings, {"OCTY_OPENROUTER_BASE_URL": server.base_url})
        reply = await model.bind_tools([search_facts]).ainvoke("How much revenue?")
    assert reply.tool_calls[0]["name"] == "search_facts"
    assert reply.tool_calls[0]["args"] == {"query": "revenue"}
    assert server.requests[0].body["tools"][0]["function"]["name"] == "search_facts"


@pytest.mark.anyio
async def test_structured_call_parses_through_function_calling(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, OPENROUTER_API_KEY="sk")
    args = {"entities": ["Peter", "Anderson"], "retrieve": True}
    with openai_server([tool_reply(("Classification", args))]) as server:
        model = model_for(settings, {"OCTY_OPENROUTER_BASE_URL": server.base_url})
        result = await structured_call(model, Classification, [HumanMessage("Who is Peter?")])
    assert result.parsed == Classification.model_validate(args)
    assert result.error is None and result.attempts == 1
    assert json.loads(result.raw) == args
    body = server.requests[0].body
    assert body["tools"][0]["function"]["name"] == "Classification"
    assert body["tool_choice"] in (
        "required",
        {"type": "function", "function": {"name": "Classification"}},
    )


@pytest.mark.anyio
async def test_structured_call_gives_up_after_two_malformed_replies(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, OPENROUTER_API_KEY="sk")
    script = [
        tool_reply(("Classification", {"entities": "Peter", "retrieve": "maybe"})),
        tool_reply(("Classification", '{"entities": ["Peter"')),  # truncated JSON
        tool_reply(("Classification", {"entities": [], "retrieve": False})),
    ]
    with openai_server(script) as server:
        model = model_for(settings, {"OCTY_OPENROUTER_BASE_URL": server.base_url})
        result = await structured_call(model, Classification, [HumanMessage("Peter?")])
    assert result.parsed is None
    assert result.error and result.attempts == 2
    assert (
        len(server.requests) == 2
    )  # malformed is not "empty": no transport retries, no third call
    retry_prompt = server.requests[1].body["messages"][-1]["content"]
    assert "Classification" in retry_prompt


@pytest.mark.anyio
async def test_structured_call_stops_when_no_provider_answers(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, OPENROUTER_API_KEY="sk")
    with openai_server(itertools.cycle([error_reply(500)])) as server:
        model = model_for(settings, {"OCTY_OPENROUTER_BASE_URL": server.base_url})
        result = await structured_call(model, Classification, [HumanMessage("x")], attempts=2)
    assert result.parsed is None and result.attempts == 1
    assert "No language model answered" in (result.error or "")
    assert len(server.requests) == 4


# --- fakes --------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_scripted_model_replays_tools_and_structured_replies() -> None:
    model = ScriptedChatModel(
        [
            tool_calls_message(("search_facts", {"query": "x"}), "done"),
            Classification(entities=["Ann"], retrieve=True),
            ParseFailure("garbled"),
            {"entities": ["Bo"], "retrieve": False},
            lambda messages: f"echo {messages[-1].text}",
        ]
    )
    bound = model.bind_tools([search_facts])
    reply = await bound.ainvoke("find x")
    assert [c["name"] for c in reply.tool_calls] == ["search_facts", "done"]
    assert model.bound_tools == [["search_facts"]]
    first = await structured_call(model, Classification, [HumanMessage("a")], attempts=1)
    assert first.parsed == Classification(entities=["Ann"], retrieve=True)
    second = await structured_call(model, Classification, [HumanMessage("b")], attempts=2)
    assert second.parsed == Classification(entities=["Bo"], retrieve=False)
    assert second.attempts == 2
    echoed = await model.ainvoke("ping")
    assert echoed.content == "echo ping"
    assert model.calls == 5
    assert echoed.usage_metadata and echoed.usage_metadata["input_tokens"] >= 1
    strict = ScriptedChatModel([ParseFailure("nope")]).with_structured_output(Classification)
    with pytest.raises(OutputParserException, match="nope"):
        await strict.ainvoke("x")
    with pytest.raises(RuntimeError, match="exhausted"):
        await model.ainvoke("one too many")


def test_scripted_model_can_call_tools_forever() -> None:
    model = ScriptedChatModel.cycle([tool_calls_message(("search_facts", {"query": "again"}))])
    replies = [model.bind_tools([search_facts]).invoke("go") for _ in range(20)]
    assert all(r.tool_calls[0]["name"] == "search_facts" for r in replies)
    assert model.calls == 20


# --- usage and pricing --------------------------------------------------------------------


def test_pricing_known_and_unknown_models() -> None:
    assert cost("openai/gpt-oss-120b", 1_000_000, 1_000_000) == pytest.approx(0.039 + 0.19)
    assert cost("@cf/openai/gpt-oss-120b", 2_000_000, 0) == pytest.approx(0.70)
    assert price("claude-sonnet-4-5-20250929") == price("claude-sonnet-4-5")
    assert cost("voyage-4", 1_000_000, 0) == pytest.approx(0.06)
    assert cost("meta-llama/llama-3.3-70b-instruct:free", 5000, 5000) == 0.0
    assert price("someone/brand-new-model") is None
    assert cost("someone/brand-new-model", 100, 100) is None


def test_usage_tracker_totals_per_layer() -> None:
    tracker = UsageTracker()
    tracker.record(
        "l1",
        provider="openrouter",
        model="openai/gpt-oss-120b",
        input_tokens=1000,
        output_tokens=200,
    )
    tracker.record(
        "l1",
        provider="openrouter",
        model="openai/gpt-oss-120b",
        input_tokens=500,
        output_tokens=100,
    )
    tracker.record(
        "curation", provider="local", model="mystery-model", input_tokens=300, output_tokens=30
    )
    tracker.record(
        "embeddings", provider="voyage", model="voyage-4", input_tokens=2000, output_tokens=0
    )
    data = tracker.to_dict()
    l1 = data["l1"]
    assert (l1["calls"], l1["input_tokens"], l1["output_tokens"]) == (2, 1500, 300)
    assert l1["cost_usd"] == pytest.approx((1500 * 0.039 + 300 * 0.19) / 1e6)
    assert l1["priced"] is True and l1["provider"] == "openrouter"
    assert data["curation"]["cost_usd"] is None and data["curation"]["priced"] is False
    assert "l2" not in data
    total = data["total"]
    assert total["calls"] == 4 and total["input_tokens"] == 3800
    assert total["priced"] is False  # one unpriced call makes the total a lower bound
    assert total["cost_usd"] == pytest.approx(l1["cost_usd"] + 2000 * 0.06 / 1e6)
    with pytest.raises(ValueError, match="layer"):
        tracker.record("l9", provider="x", model="y", input_tokens=1, output_tokens=1)


def test_usage_tracker_is_thread_safe() -> None:
    tracker = UsageTracker()

    def work() -> None:
        for _ in range(500):
            tracker.record(
                "l2", provider="p", model="openai/gpt-oss-120b", input_tokens=2, output_tokens=1
            )

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert tracker.to_dict()["l2"]["calls"] == 4000
    assert tracker.to_dict()["l2"]["input_tokens"] == 8000


@pytest.mark.anyio
async def test_usage_callback_layer_override_and_openrouter_cost(tmp_path: Path) -> None:
    tracker = UsageTracker()
    fake = ScriptedChatModel(["curated"], model_name="openai/gpt-oss-120b", provider="openrouter")
    await fake.ainvoke(
        "records",
        config={
            "callbacks": [UsageCallback(tracker, "l2")],
            "metadata": {"octy_layer": "curation"},
        },
    )
    assert tracker.to_dict()["curation"]["calls"] == 1
    assert "l2" not in tracker.to_dict()

    # a factory model records by itself (weakly, as l2);
    # a per-call callback of the same tracker moves the run to its own layer
    settings = make_settings(tmp_path, OPENROUTER_API_KEY="sk")
    with openai_server([with_cost(text_reply("ok"), 0.0042), text_reply("again")]) as server:
        model = model_for(
            settings, {"OCTY_OPENROUTER_BASE_URL": server.base_url}, layer="l2", usage=tracker
        )
        await model.ainvoke("x", config={"callbacks": [UsageCallback(tracker, "reconciliation")]})
        await model.ainvoke("y")
    data = tracker.to_dict()
    assert data["reconciliation"]["calls"] == 1
    assert data["reconciliation"]["cost_usd"] == pytest.approx(0.0042)  # OpenRouter's billed cost
    assert data["l2"]["calls"] == 1
    assert data["total"]["calls"] == 3


def test_llm_import_stays_light() -> None:
    # the offline path imports octygraph.llm for the tracker; the provider SDKs must not come along
    code = "import sys, octygraph.llm; print('langchain_openai' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
        check=True,
    )
    assert done.stdout.strip() == "False"


def test_concurrent_calls_share_one_model(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, OPENROUTER_API_KEY="sk")
    tracker = UsageTracker()
    with openai_server(itertools.cycle([text_reply("same")])) as server:
        model = model_for(settings, {"OCTY_OPENROUTER_BASE_URL": server.base_url}, usage=tracker)

        async def many() -> list[str]:
            replies = await asyncio.gather(*(model.ainvoke(f"q{i}") for i in range(6)))
            return [str(r.content) for r in replies]

        assert asyncio.run(many()) == ["same"] * 6
    assert tracker.to_dict()["l1"]["calls"] == 6
    assert len(server.requests) == 6

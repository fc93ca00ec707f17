"""Every hook keeps `KEPT_S` (2 s) of its budget whatever the LLM does: the deadline, not luck.

A loopback model that never answers in time serves the prompt and the Stop hook; every LLM call of the
run is bounded by a deadline at least 2 s before the hook's budget ends. The assertions are on the
deadline arithmetic each call was given, not on how long anything took; but for the hook that runs in
its own process on a busy machine, where the whole process is timed.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from octygraph.llm import resilient
from octygraph.llm.resilient import CIRCUIT
from octygraph.session import hooks
from tests.conftest import cli_json
from tests.llm_server import openai_server, slow, text_reply

MEMORY = "Peter handles the Anderson account"
BUDGET_S = {"prompt": 8.0, "stop": 2.0}
"""A Stop run gets four prompt budgets: 2 s makes it 8 s, so the test waits no longer than the prompt's."""


def test_the_run_deadline_keeps_two_seconds_of_any_budget() -> None:
    for budget in (4.0, 8.0, 12.0, 20.0, 48.0):
        deadline = hooks.run_deadline(100.0, budget)
        assert 100.0 + budget - deadline >= hooks.KEPT_S >= 2.0
        # The answer's own margin comes on top of the kept seconds.
        assert 100.0 + budget - deadline == pytest.approx(hooks.KEPT_S + hooks.ANSWER_MARGIN_S)


@pytest.mark.slow
@pytest.mark.parametrize("event", ["prompt", "stop"])
def test_every_llm_call_of_a_hook_ends_two_seconds_before_its_budget(
    event: str, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    CIRCUIT.reset()
    cli_json("memory", "add", MEMORY, "--type", "fact", "--json")
    seen: list[float] = []
    real = resilient.deadline_of

    def recording(metadata: object) -> float | None:
        value = real(metadata)  # type: ignore[arg-type]
        if value is not None:
            seen.append(value)
        return value

    monkeypatch.setattr(resilient, "deadline_of", recording)
    budget = BUDGET_S[event]
    payload: dict[str, object]
    if event == "prompt":
        payload = {
            "session_id": "margin",
            "cwd": str(Path.cwd()),
            "hook_event_name": "UserPromptSubmit",
            "prompt": "Who handles Anderson? From now on always run the contract tests first.",
        }
        allowed = budget
    else:
        payload = {
            "session_id": "margin",
            "cwd": str(Path.cwd()),
            "hook_event_name": "Stop",
            "stop_hook_active": False,
            "last_assistant_message": "I migrated the billing service to PostgreSQL 16.",
        }
        allowed = budget * 4  # a Stop run has four prompt budgets (see `watchdog_budget_s`)
    with openai_server(itertools.repeat(slow(text_reply("too late"), 60))) as server:
        env = {
            "OCTYBOT_HOME": str(home),
            "OCTY_HOOK_BUDGET_S": str(budget),
            "OCTY_LLM_BASE_URL": server.base_url,
            "OCTY_LLM_API_KEY": "sk-test",
            "PATH": "",
        }
        started = time.monotonic()

        async def hook() -> str:
            reply = await hooks.handle(
                event, json.dumps(payload).encode(), env=env, cwd=str(Path.cwd()), started=started
            )
            await reply.settle()
            return reply.stdout

        stdout = asyncio.run(hook())
    assert server.requests, "the model was never asked"
    assert seen, "no LLM call carried a deadline"
    assert max(seen) <= started + allowed - hooks.KEPT_S
    if event == "prompt":
        assert MEMORY in json.loads(stdout)["hookSpecificOutput"]["additionalContext"]


@pytest.mark.slow
def test_an_in_process_prompt_hook_on_a_busy_machine_ends_two_seconds_before_its_budget(
    home: Path,
) -> None:
    """`OCTY_NO_SERVICE=1`, a model that never answers, and two CPU burners: the hook process (its
    imports, the embedding model, the store and the LLM calls included) exits 0 with `KEPT_S` left."""
    cli_json("memory", "add", MEMORY, "--type", "fact", "--json")
    budget = 6.0
    payload = {
        "session_id": "margin-busy",
        "cwd": str(Path.cwd()),
        "hook_event_name": "UserPromptSubmit",
        "prompt": "Who handles Anderson? From now on always run the contract tests first.",
    }
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        with openai_server(itertools.repeat(slow(text_reply("too late"), 60))) as server:
            env = {
                **os.environ,
                "OCTY_NO_SERVICE": "1",
                "OCTY_HOOK_BUDGET_S": str(budget),
                "OCTY_LLM_BASE_URL": server.base_url,
                "OCTY_LLM_API_KEY": "sk-test",
            }
            started = time.monotonic()
            result = subprocess.run(
                [sys.executable, "-m", "octygraph.entry", "hook", "prompt"],
                input=json.dumps(payload),
                capture_output=True,
                text=True,
                env=env,
                timeout=60,
            )
            took = time.monotonic() - started
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    assert result.returncode == 0, result.stderr
    assert budget - took >= hooks.KEPT_S, f"took {took:.2f} s of {budget:g} s"
    if result.stdout.strip():  # context, when the run got that far; never anything else
        assert "hookSpecificOutput" in json.loads(result.stdout)


def test_an_in_process_stop_that_does_not_fit_is_spooled_not_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Stop run still going when the process must end is left to the service: its payload is in the
    spool, and the hook returns at its end, not when the run does."""
    from octygraph.service import client, protocol

    release = threading.Event()
    monkeypatch.setattr(hooks, "answer", lambda *a, **k: release.wait(30) and "")
    monkeypatch.setattr(client, "in_process_end", lambda *a: time.monotonic() + 0.2)
    env = {"OCTYBOT_HOME": str(tmp_path), "OCTY_NO_SERVICE": "1"}
    payload = json.dumps({"session_id": "s", "hook_event_name": "Stop", "stop_hook_active": False})
    started = time.monotonic()
    try:
        result = client.run_hook("stop", payload.encode(), env=env, started=started)
        took = time.monotonic() - started
    finally:
        release.set()
    assert (result.via, result.stdout) == ("in-process", "")
    assert took < 5
    spooled = list(protocol.ServicePaths(tmp_path).spool_dir.glob("*.json"))
    assert len(spooled) == 1
    assert json.loads(spooled[0].read_text())["event"] == "stop"

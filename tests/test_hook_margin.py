"""Every hook keeps `KEPT_S` (2 s) of its budget whatever the LLM does: the deadline, not luck.

A loopback model that never answers in time serves the prompt and the Stop hook; every LLM call of the
run is bounded by a deadline at least 2 s before the hook's budget ends. The assertions are on the
deadline arithmetic each call was given, not on how long anything took.
"""

from __future__ import annotations

import asyncio
import itertools
import json
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

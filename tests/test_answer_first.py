"""The answer goes out first; what a prompt stores is there for the call that comes right after it.

Offline, the store half's judgement waits for the answer to go out (its embeddings would otherwise
share the machine with the answer's search), and the service makes a hook call wait for the store
halves still running, so a prompt sent at once after another still reads what that one stored.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from octygraph.config.settings import Settings
from octygraph.pipeline.nodes import judge_storage
from octygraph.pipeline.runner import OnAnswer, RunOptions, run_prompt
from octygraph.service import client, server
from octygraph.service.checkpointers import CheckpointerPool
from octygraph.service.pool import StorePool
from octygraph.service.server import Service
from octygraph.session import hooks
from octygraph.store.opening import open_store

FACT = "Maria owns the billing service."
QUESTION = "Who owns the billing service?"
SLOW_JUDGEMENT_S = 1.0


def _noting_order(monkeypatch: pytest.MonkeyPatch, order: list[str]) -> OnAnswer:
    """Note "judged" when the store half judges and "answered" when the answer goes out."""
    judged = judge_storage._filter

    def noting(*args: Any, **kwargs: Any) -> Any:
        order.append("judged")
        return judged(*args, **kwargs)

    async def on_answer(early: dict[str, Any]) -> None:
        order.append("answered")

    monkeypatch.setattr(judge_storage, "_filter", noting)
    return on_answer


def _told(on_answer: OnAnswer) -> list[str]:
    """Run FACT offline with `on_answer`; what it stored."""
    settings = Settings.from_env()
    with open_store(settings) as store:
        result = asyncio.run(
            run_prompt(FACT, settings, store, RunOptions(offline=True), on_answer=on_answer)
        )
    return [s["content"] for s in result["stored"]]


def test_the_offline_store_half_judges_after_the_answer_is_out(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    order: list[str] = []
    assert _told(_noting_order(monkeypatch, order)) == [FACT]
    assert order == ["answered", "judged"]
    # Without anyone waiting for an answer (`octygraph run`), nothing waits.
    order.clear()
    settings = Settings.from_env()
    with open_store(settings) as store:
        asyncio.run(run_prompt("Peter owns the search service.", settings, store))
    assert order == ["judged"]


def test_a_slow_answer_does_not_hold_the_store_half_back(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from octygraph.pipeline.nodes import loops

    searched = loops.run_fixed_plan

    def slow_search(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.5)
        return searched(*args, **kwargs)

    order: list[str] = []
    on_answer = _noting_order(monkeypatch, order)
    monkeypatch.setattr(loops, "run_fixed_plan", slow_search)
    monkeypatch.setattr(judge_storage, "ANSWER_WAIT_S", 0.05)
    assert _told(on_answer) == [FACT]
    assert order == ["judged", "answered"]


def _request(text: str, session: str, work: Path) -> dict[str, Any]:
    raw = json.dumps(
        {
            "session_id": session,
            "cwd": str(work),
            "hook_event_name": "UserPromptSubmit",
            "prompt": text,
        }
    ).encode()
    return client.hook_request("prompt", raw, os.environ, 0.0)


@pytest.mark.parametrize("wait_s", [10.0, 0.0])
def test_a_prompt_right_after_another_reads_what_it_stored(
    home: Path, monkeypatch: pytest.MonkeyPatch, wait_s: float
) -> None:
    # A slow judgement (a loaded machine): the second prompt comes while the first is still storing.
    judged = judge_storage._filter

    def slowly(*args: Any, **kwargs: Any) -> Any:
        time.sleep(SLOW_JUDGEMENT_S)
        return judged(*args, **kwargs)

    monkeypatch.setattr(judge_storage, "_filter", slowly)
    monkeypatch.setattr(server, "STORING_WAIT_S", wait_s)
    work = home.parent / "proj"  # the `home` fixture's working folder

    async def two_prompts() -> str:
        service = Service(home, idle_s=600)
        service._handle = hooks.handle
        service._pool = StorePool(max_open=2)
        service._checkpointers = CheckpointerPool(max_kept=2)
        service._ready = asyncio.get_running_loop().create_future()
        service._ready.set_result(None)
        told, after_told = await service._hook(_request(FACT, "first", work))
        assert told["status"] == "ok"
        # The next call comes before the first one's after-work has even begun.
        asked, after_asked = await service._hook(_request(QUESTION, "second", work))
        for after in (after_told, after_asked):
            assert after is not None and await after() is None
        await service._checkpointers.close_all()
        service._pool.close_all()
        return str(asked["stdout"])

    context = asyncio.run(two_prompts())
    if wait_s:
        assert "Maria owns the billing service" in context
    else:  # what the wait is for: the first prompt's store half had not written yet
        assert "Maria owns the billing service" not in context

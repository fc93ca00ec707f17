"""A store half cut off by a killed service is finished by the next one, from its checkpoint, once.

Real parts: the service process, the hook client, SQLite checkpoints, the local embedding model, and a
loopback OpenAI-compatible server whose store agent hangs until the service is killed (SIGKILL).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from octygraph.config.settings import Settings
from octygraph.pipeline import inflight
from tests.llm_server import Reply, openai_server, tool_reply
from tests.test_pipeline_llm import tell_and_ask
from tests.test_service import Env, _nodes, env  # noqa: F401  (env: the fixture)

TOLD = "Lisa handles the Zephyr account"
PROMPT = f"{TOLD}. Who handles Anderson?"


class Router:
    """The loopback model: quick retrieval; the store agent stores at once, then hangs on its second turn
    (the one after the write) until `release` is set, the first time only."""

    def __init__(self) -> None:
        self.hanging = threading.Event()
        self.release = threading.Event()
        self.store_calls = 0
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        return tell_and_ask(body, TOLD, self._store_agent)

    def _store_agent(self, wrote: bool) -> Reply:
        with self._lock:
            self.store_calls += 1
        if not wrote:
            return tool_reply(("store_memory", {"type": "fact", "content": TOLD}))
        if not self.hanging.is_set():
            self.hanging.set()
            self.release.wait(120)  # the service is killed meanwhile
        return tool_reply(("done", {"stored_count": 1}))


def _settings(e: Env, project: str = "alpha") -> Settings:
    return Settings.from_env(env=e.env(project), cwd=e.folder(project))


def _records(e: Env) -> list[Path]:
    return sorted(inflight.folder(_settings(e)).glob("*.json"))


def _told(e: Env) -> list[str]:
    return [n for n in _nodes(e, "alpha") if n.startswith("Lisa handles")]


def _until(check: Any, timeout: float = 90) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return False


def _kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    assert _until(lambda: not Path(f"/proc/{pid}").exists() or _zombie(pid), 30)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.slow
def test_killed_service_store_half_is_finished_by_the_next_service_once(env: Env) -> None:  # noqa: F811
    router = Router()
    with openai_server(itertools.repeat(router)) as server:
        env.base.update({"OCTY_LLM_BASE_URL": server.base_url, "OCTY_LLM_API_KEY": "sk-test"})
        first = env.start()
        pid = env.health()["pid"]
        answered = env.served_hook(PROMPT)
        assert answered.returncode == 0, answered.stderr
        # The hook has its answer; the store half wrote the memory and waits on the agent's last turn.
        assert router.hanging.wait(60), "the store agent was never asked twice"
        [record] = _records(env)
        trace_id = record.stem
        _kill(pid)
        if pid == first.pid:
            first.wait(10)
        assert _records(env) == [record]  # the dead service left its run in flight
        trace_file = _settings(env).paths.debug_dir / f"{trace_id}.json"
        assert not trace_file.exists()  # ... unfinished: no trace yet
        assert len(_told(env)) == 1  # written by the agent's first turn, before the kill
        calls_before = router.store_calls
        router.release.set()

        env.start()  # a new service: ready first, then it resumes the run in the background
        assert _until(lambda: not _records(env) and trace_file.exists()), "the run was not resumed"
        assert env.wait(lambda h: h.get("resumed") == 1)
        assert "finished 1 runs" in env.cli("serve", "status").stdout
    trace = json.loads(trace_file.read_text())
    assert trace["resumed"]["pending"] and trace["resumed"]["pending"][0].startswith("store")
    assert trace["resumed"]["attempt"] == 1
    assert any("resumed from its checkpoint" in n for n in trace["notes"])
    assert router.store_calls > calls_before  # the store agent ran again, with the model
    assert len(_told(env)) == 1, _told(env)  # stored exactly once, although store_loop ran twice
    listed = env.cli("trace", "list", "--json")
    assert any(r["trace_id"] == trace_id and r["resumed"] for r in json.loads(listed.stdout))


@pytest.mark.slow
def test_finished_runs_and_corrupt_records_are_not_resumed(env: Env) -> None:  # noqa: F811
    ran = env.cli("run", f"{TOLD}.", "--json")
    assert ran.returncode == 0, ran.stderr
    trace_id = json.loads(ran.stdout)["trace_id"]
    assert len(_told(env)) == 1 and not _records(env)
    settings = _settings(env)
    folder = inflight.folder(settings)
    # As if the run's process died between its last step and removing its record; and a torn file.
    finished = inflight.RunRecord(trace_id=trace_id, settings=inflight.settings_json(settings))
    (folder / f"{trace_id}.json").write_text(finished.to_json())
    (folder / "20200101T000000000000Z-abcdef.json").write_text('{"trace_id": ')
    trace_file = settings.paths.debug_dir / f"{trace_id}.json"
    before = trace_file.read_text()

    env.start()
    assert _until(lambda: not _records(env)), "records were left behind"
    answered = env.served_hook("Who handles the Zephyr account?")
    assert answered.returncode == 0 and TOLD in answered.stdout
    assert env.health()["resumed"] == 0
    assert trace_file.read_text() == before  # not run again
    assert len(_told(env)) == 1


def test_a_run_resumed_too_often_is_dropped_with_a_note(home: Path) -> None:
    from octygraph.pipeline.store_lease import open_store_for_run
    from octygraph.service.resume import MAX_ATTEMPTS, resume_unfinished

    settings = Settings.from_env()
    record = inflight.RunRecord(
        trace_id="20260101T000000000000Z-0a0b0c",
        settings=inflight.settings_json(settings),
        attempts=MAX_ATTEMPTS,
    )
    held = inflight.begin(settings, record)
    assert held is not None
    # A live run's record (its lock is held) is left alone.
    assert asyncio.run(resume_unfinished(settings.home, open_store_for_run)) == []
    os.close(held.fd or -1)  # its process "dies": the lock goes, the file stays
    # A service shutting down leaves it for the next one.
    stopping = asyncio.run(
        resume_unfinished(settings.home, open_store_for_run, stopping=lambda: True)
    )
    assert stopping == [] and inflight.in_flight_ids(settings) == {record.trace_id}
    [outcome] = asyncio.run(resume_unfinished(settings.home, open_store_for_run))
    assert outcome.status == "dropped" and "given up" in outcome.reason
    assert not inflight.in_flight_ids(settings)
    trace = json.loads((settings.paths.debug_dir / f"{record.trace_id}.json").read_text())
    assert any("not resumed" in n for n in trace["notes"])


def test_running_the_store_half_again_stores_nothing_twice(home: Path) -> None:
    """What a resume re-runs (a node cut off after its write, before its checkpoint) is harmless: here the
    whole store half of a finished run runs again, forked from the checkpoint before it."""
    from octygraph.pipeline.persistence import checkpointer_for
    from octygraph.pipeline.runner import RunOptions, make_context, run_prompt, with_checkpointer
    from octygraph.store.opening import open_store

    settings = Settings.from_env()
    with open_store(settings) as store:
        result = asyncio.run(run_prompt(f"{TOLD}.", settings, store, RunOptions(offline=True)))
        assert [r["content"] for r in result["stored"]] == [f"{TOLD}."]
        before = sorted(n.content for n in store.iter_all())

        async def again() -> list[str]:
            config: Any = {"configurable": {"thread_id": result["trace_id"]}}
            async with checkpointer_for(settings) as saver:
                graph = with_checkpointer(saver)
                history = [s async for s in graph.aget_state_history(config)]
                [fork] = [s for s in history if "store" in s.next]
                ctx = make_context(settings, store, offline=True, run_id=result["trace_id"])
                await graph.ainvoke(None, fork.config, context=ctx)
                calls = (await graph.aget_state(config)).values.get("tool_calls") or []
            return [str(c.get("result")) for c in calls if c["tool"] == "store_memory"]

        results = asyncio.run(again())
        assert results and all("Already stored" in r for r in results), results
        assert sorted(n.content for n in store.iter_all()) == before

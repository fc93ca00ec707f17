"""What the memory service does while no request is under way: it learns the storage verdict from the
user's approvals and forgets (`OCTY_AUTO_LEARN`), and settles the sessions whose SessionEnd never came.

Real services (`python -m octygraph serve`) and hooks as new processes, on real SQLite files under a
private OCTYBOT_HOME, offline. The shared labelled sets are left out (`OCTY_SHARED` names an empty
folder) except where the test is that a refit worse on them is refused.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from octygraph.claude import hook_io
from octygraph.config import setting_table as table
from octygraph.config.settings import Settings
from octygraph.judgement.storage import filter_storage
from octygraph.judgement.verdict import user_verdict_path
from octygraph.memory import candidates, feedback, learning, review
from octygraph.memory.feedback import Example
from octygraph.pipeline.sessions import SessionLog, every_log
from octygraph.service import protocol
from octygraph.service.pool import StorePool
from octygraph.service.upkeep import Upkeep
from octygraph.session.hooks import HookSession
from octygraph.store import MemoryStore, Node
from octygraph.store.opening import open_store
from tests.llm_server import openai_server, tool_reply
from tests.refits import SHARED
from tests.test_consolidation_judge import PROMPTS, write_transcript
from tests.test_learning import DROP, KEEP, WHEN, examples, write_examples
from tests.test_service import Env, _nodes, _run_hook, _stored_soon, env

__all__ = ["env"]  # the fixture, used by name

PROBE = "Use npm for installing dependencies."
"""The shipped verdict is unsure of it: a prompt saying it is kept as a candidate."""
TOOL_CHOICES = (
    "Use pnpm for installing packages.",
    "Use yarn for the frontend build.",
    "Use ruff for linting.",
    "Use pytest for the unit tests.",
    "Use black for formatting.",
    "Use poetry for dependencies.",
    "Use docker compose for local services.",
    "Use make for the build steps.",
    "Use nvm for the node version.",
    "Use pip-tools for pinning.",
    "Use mypy for type checks.",
    "Use eslint for the frontend code.",
)


def no_tool_choices() -> list[Example]:
    """A user who forgets every "use this tool" statement and approves lasting facts: learned from,
    the verdict no longer keeps `PROBE` even as a candidate."""
    return [Example(t, 0, "forget", WHEN, True) for t in TOOL_CHOICES] + [
        Example(t, 1, "approve", WHEN, True) for t in KEEP
    ]


def without_shared(e: Env, **extra: str) -> None:
    e.base.update({"OCTY_SHARED": str(e.home.parent / "no-shared"), **extra})


def stopped_when_idle(e: Env) -> None:
    """Wait for the service `Env.start` started to stop by itself (nothing asks it anything meanwhile:
    every request counts as activity)."""
    assert e.served[-1].wait(timeout=300) == 0


def project_store(e: Env, project: str = "alpha") -> MemoryStore:
    store = open_store(Settings.from_env(env=e.env(project), cwd=e.folder(project)))
    assert isinstance(store, MemoryStore)
    return store


def node(e: Env, node_id: str) -> Node:
    with project_store(e) as store:
        found = store.get_node(node_id)
    assert found is not None
    return found


# --------------------------------------------------------------------------------------------- in process


def test_a_session_is_settled_once_and_again_only_for_what_it_stored_after(tmp_path: Path) -> None:
    memory = tmp_path / "projects" / "alpha" / "memory"
    log = SessionLog(memory, "s/1")
    log.add(injected=["m0"], stored=["a", "b"])
    assert log.unsettled() == ["a", "b"]

    log.mark_settled(["a", "b"])
    assert log.unsettled() == []
    assert log.seen() == {"m0", "a", "b"}  # what it saw is kept beside

    log.add(stored=["c"])
    assert log.unsettled() == ["a", "b", "c"]  # the pass looks at the session as a whole
    assert [found.path for found in every_log(tmp_path)] == [log.path]
    assert every_log(tmp_path)[0].unsettled() == ["a", "b", "c"]


def test_auto_learn_is_a_setting_of_the_service_on_by_default(tmp_path: Path) -> None:
    assert table.default("OCTY_AUTO_LEARN") is True
    assert table.value("OCTY_AUTO_LEARN", {"OCTY_AUTO_LEARN": "0"}) is False
    # Read from the service's own environment: turning it off replaces a running service.
    assert protocol.process_env({"OCTY_AUTO_LEARN": "0"}) == {"OCTY_AUTO_LEARN": "0"}
    docs = (Path(__file__).resolve().parent.parent / "docs" / "settings.md").read_text()
    assert "`OCTY_AUTO_LEARN`" in docs


def test_learning_is_due_at_enough_examples_then_after_enough_new_ones(tmp_path: Path) -> None:
    home = tmp_path / "home"
    items = examples()  # 24
    write_examples(home, items[: learning.MIN_EXAMPLES - 1])
    assert not learning.learn_due(home)
    write_examples(home, items[: learning.MIN_EXAMPLES])
    assert learning.learn_due(home)

    # A learn by hand that could not fit (too few forgotten) still counts as the last learn.
    write_examples(home, [e for e in items if e.label == 1] * 2)  # 24 kept, none forgotten
    outcome = learning.learn(home, feedback.load(home))
    assert not outcome.shipped and outcome.reason.startswith("Too few examples")
    last = learning.last_learn(home)
    assert last is not None and last["examples"] == 24 and not last["shipped"]
    assert last["by"] == "octygraph memory learn" and last["reason"] == outcome.reason
    assert not learning.learn_due(home)
    write_examples(home, [e for e in items if e.label == 1] * 2 + items[:9])
    assert not learning.learn_due(home)  # 9 new
    write_examples(home, [e for e in items if e.label == 1] * 2 + items[:10])
    assert learning.learn_due(home)  # 10 new


def test_one_learn_at_a_time(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_examples(home, examples())
    lock = feedback.learning_dir(home) / learning.LOCK_FILE
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as another process's learn holds it

        outcome = learning.learn(home, feedback.load(home))
        assert not outcome.shipped and outcome.reason == learning.BUSY
        assert learning.auto_learn(home) is None
    finally:
        os.close(fd)
    assert not user_verdict_path(home).exists() and learning.last_learn(home) is None
    assert learning.learn_due(home)  # the busy attempts were not counted as learns


def test_the_idle_pass_judges_a_session_with_the_transcript_its_requests_named(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code was killed: no SessionEnd. The service saw the session's prompt (which names its
    transcript) and, with an LLM configured, the idle pass judges the session's candidate as SessionEnd
    would. A session only an earlier service saw is settled without the judge."""
    settings = Settings.from_env()
    with open_store(settings) as store:
        served = store.add_node(
            "instruction", PROBE, attributes=candidates.candidate_attributes(0.4)
        )
        unseen = store.add_node(
            "fact", "Deploys go through staging.", attributes=candidates.candidate_attributes(0.4)
        )
    memory = settings.paths.memory_dir
    killed, earlier = SessionLog(memory, "killed"), SessionLog(memory, "earlier")
    killed.add(stored=[served.id])
    earlier.add(stored=[unseen.id])
    transcript = write_transcript(home.parent / "killed.jsonl", PROMPTS)
    prompt = {"hook_event_name": "UserPromptSubmit", "prompt": PROMPTS[0]}
    resumed = {"hook_event_name": "SessionStart", "source": "resume"}  # names no transcript
    asked: list[list[str]] = []

    def answer(body: dict[str, Any]) -> Any:
        listed = body["messages"][-1]["content"].split("Candidate memories")[1].splitlines()[1:]
        asked.append([line.split(",")[0] for line in listed if line.strip()])
        verdicts = [{"id": i, "verdict": "keep", "why": "a standing preference"} for i in asked[-1]]
        return tool_reply(("CandidateVerdicts", {"verdicts": verdicts}))

    with openai_server([answer]) as server:
        monkeypatch.setenv("OCTY_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("OCTY_LLM_API_KEY", "sk-test")
        monkeypatch.setenv("PATH", "")  # no claude command to fall back on
        session = {"session_id": "killed", "cwd": str(Path.cwd())}
        upkeep = asyncio.run(
            idle_after(
                home,
                ("prompt", {**prompt, **session, "transcript_path": str(transcript)}),
                ("session-start", {**resumed, **session}),
            )
        )
    assert asked == [[served.id]]  # once, for the session it served
    assert upkeep.settled_sessions == 2 and killed.unsettled() == earlier.unsettled() == []
    with open_store(settings) as store:
        judged, left = store.get_node(served.id), store.get_node(unseen.id)
    assert judged is not None and not candidates.is_candidate(judged)
    assert judged.attributes["confirmed"] == "judged"
    assert judged.attributes["judged"]["why"] == "a standing preference"
    assert left is not None and candidates.is_candidate(left) and "judged" not in left.attributes


def hook_session(event: str, payload: dict[str, Any]) -> HookSession:
    """The session a hook call with this payload names, as `hooks.handle` gives it to the service."""
    request = hook_io.parse_payload(event, json.dumps(payload).encode())
    assert request is not None
    return HookSession(
        Settings.from_env(),
        request.session_id,
        getattr(request, "transcript_path", ""),
        ended=event == "session-end",
    )


async def idle_after(home: Path, *requests: tuple[str, dict[str, Any]]) -> Upkeep:
    """The upkeep of a service that answered `requests` and has been idle since: its settling pass."""
    started: list[asyncio.Task[None]] = []
    last_request = time.monotonic() - 120
    upkeep = Upkeep(
        home,
        idle_s=60,
        start=lambda work: started.append(asyncio.create_task(work)),
        quiet_since=lambda: last_request,
    )
    for event, payload in requests:
        upkeep.note_request(hook_session(event, payload))
    pool = StorePool()
    try:
        assert upkeep.settle_when_idle(pool.lease)
        assert not upkeep.settle_when_idle(pool.lease)  # once per idle stretch
        await asyncio.gather(*started)
    finally:
        pool.close_all()
    return upkeep


# --------------------------------------------------------------------------------------------- the service


@pytest.mark.slow
def test_the_service_learns_from_enough_examples_and_the_next_prompt_uses_it(env: Env) -> None:
    shipped = filter_storage(PROBE)
    assert [c.content for c in shipped.candidates] == [PROBE] and not shipped.store
    without_shared(env)
    env.start()
    env.served_hook(PROBE, "alpha")
    assert _stored_soon(env, PROBE, "alpha")
    (kept,) = [n for n in _all_nodes(env, "alpha") if n.content == PROBE]
    assert candidates.is_candidate(kept)

    write_examples(env.home, no_tool_choices())
    assert env.wait(lambda h: (h["auto_learn"]["last"] or {}).get("shipped"), timeout=300)
    report = env.health()["auto_learn"]
    assert report["enabled"] and not report["running"]
    assert report["last"]["by"] == "the memory service" and report["last"]["examples"] == 24
    assert "no-shared" in report["last"]["checked"]  # the guard the command uses: none here
    assert user_verdict_path(env.home).exists()
    status = env.cli("serve", "status")
    assert "last learn (the memory service" in status.stdout and "Learned from 24" in status.stdout

    env.served_hook(PROBE, "beta")  # the same prompt, in a project with nothing of it yet
    assert _run_done(env, "beta")
    assert PROBE not in _nodes(env, "beta")  # the learned verdict keeps it not even as a candidate


@pytest.mark.slow
def test_with_auto_learn_off_the_service_does_not_learn(env: Env) -> None:
    without_shared(env, OCTY_AUTO_LEARN="0")
    write_examples(env.home, no_tool_choices())
    env.start(idle="3")
    stopped_when_idle(env)  # it idled several rounds with enough examples to learn from

    assert not user_verdict_path(env.home).exists()
    assert learning.last_learn(env.home) is None

    # The same with the setting on: it learns before it stops.
    env.base.pop("OCTY_AUTO_LEARN")
    env.start(idle="3")
    stopped_when_idle(env)
    assert user_verdict_path(env.home).exists()
    last = learning.last_learn(env.home)
    assert last is not None and last["shipped"] and last["by"] == "the memory service"


@pytest.mark.slow
@pytest.mark.skipif(
    not (SHARED / "data" / "realtraffic-train").is_dir(), reason="no shared sets beside"
)
def test_a_refit_worse_on_the_shared_sets_is_not_shipped_and_is_reported(env: Env) -> None:
    write_examples(env.home, examples(DROP, KEEP))  # junk approved, lasting facts forgotten
    env.start()
    assert env.wait(lambda h: h["auto_learn"]["last"] is not None, timeout=900)

    last = env.health()["auto_learn"]["last"]
    assert not last["shipped"] and last["by"] == "the memory service"
    assert last["reason"].startswith("The refit would do worse on the ")
    assert "shared real prompts" in last["checked"]
    assert not user_verdict_path(env.home).exists()
    assert not env.health()["auto_learn"]["running"]  # and it does not try again meanwhile


@pytest.mark.slow
def test_idle_settles_a_session_whose_session_end_never_came_exactly_once(env: Env) -> None:
    without_shared(env)
    said_twice, said_once, ended = (
        PROBE,
        "Deploys go through the staging cluster first.",
        ("Use yarn for the frontend build."),
    )
    with project_store(env) as store:
        older = store.add_node("fact", said_twice, attributes=candidates.candidate_attributes(0.4))
        newer = store.add_node(
            "instruction", said_twice, attributes=candidates.candidate_attributes(0.5)
        )
        alone = store.add_node("fact", said_once, attributes=candidates.candidate_attributes(0.45))
        last = store.add_node("fact", ended, attributes=candidates.candidate_attributes(0.45))
    memory = Settings.from_env(env=env.env("alpha"), cwd=env.folder("alpha")).paths.memory_dir
    killed, finished = SessionLog(memory, "killed"), SessionLog(memory, "finished")
    killed.add(stored=[older.id, newer.id, alone.id])  # Claude Code was killed: no SessionEnd
    finished.add(stored=[last.id])

    env.start(idle="4")
    end = {"session_id": "finished", "cwd": str(env.folder("alpha")), "reason": "exit"}
    code, _ = _run_hook(env, "session-end", json.dumps({**end, "hook_event_name": "SessionEnd"}))
    assert code == 0
    stopped_when_idle(env)

    # The killed session got the SessionEnd pass: the restatement merged, the older one confirmed.
    assert not candidates.is_candidate(node(env, older.id))
    assert review.status(node(env, newer.id)) == "archived"
    assert candidates.is_candidate(node(env, alone.id))
    assert killed.unsettled() == [] and finished.unsettled() == []

    # Were either session settled again, these would now merge its candidates away.
    with project_store(env) as store:
        store.add_node("fact", said_once)
        store.add_node("fact", ended)
    env.start(idle="4")
    stopped_when_idle(env)
    assert candidates.is_candidate(node(env, alone.id))
    assert candidates.is_candidate(node(env, last.id))
    assert review.status(node(env, alone.id)) != "archived"


# --------------------------------------------------------------------------------------------- helpers


def _all_nodes(e: Env, project: str) -> list[Node]:
    with project_store(e, project) as store:
        return list(store.iter_all())


def _run_done(e: Env, project: str, timeout: float = 120) -> bool:
    """Whether the project's prompt run has written its trace (it does when its store half is done)."""
    debug = e.home / "projects" / project / "memory" / "debug"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(not p.name.startswith(".") for p in debug.glob("*.json")):
            return True
        time.sleep(0.1)
    return False

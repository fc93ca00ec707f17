"""The resident memory service and the hook's thin client, as Claude Code runs them.

Real processes and real Unix sockets: `python -m octygraph serve` in the background, hooks as new
processes with JSON on stdin. OCTYBOT_HOME is a short folder in /tmp because a socket path must fit in
about 100 bytes. Every service a test starts (itself or through a hook) is stopped by its finalizer.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import octygraph
from octygraph.service import client, protocol
from octygraph.store import MemoryStore, StoreError

BUDGET_S = "30"  # generous: these machines are often busy
HEAVY = ("typer", "rich", "langchain_core", "langgraph", "numpy", "onnxruntime", "pydantic")
OCTYGRAPH = Path(sys.executable).parent / "octygraph"
"""The installed command, the one Claude Code runs."""


def _payload(prompt: str, cwd: Path, session: str = "s-1") -> str:
    return json.dumps(
        {
            "session_id": session,
            "transcript_path": str(cwd / "t.jsonl"),
            "cwd": str(cwd),
            "hook_event_name": "UserPromptSubmit",
            "prompt": prompt,
        }
    )


def _context(stdout: str) -> str:
    return str(json.loads(stdout)["hookSpecificOutput"]["additionalContext"]) if stdout else ""


@dataclass
class Env:
    """A private OCTYBOT_HOME with two project folders, and helpers to run octygraph in it."""

    home: Path
    base: dict[str, str]
    served: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def env(self, project: str = "alpha", **extra: str) -> dict[str, str]:
        return {**self.base, "OCTYBOT_PROJECT": project, **extra}

    def folder(self, project: str) -> Path:
        path = self.home.parent / f"{self.home.name}-{project}"
        path.mkdir(exist_ok=True)
        return path

    def cli(self, *args: str, project: str = "alpha") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "octygraph", *args],
            capture_output=True,
            text=True,
            env=self.env(project),
            cwd=self.folder(project),
            timeout=120,
        )

    def hook(
        self, prompt: str, project: str = "alpha", *, flags: tuple[str, ...] = (), **extra: str
    ) -> subprocess.CompletedProcess[str]:
        """The prompt hook through the installed `octygraph` command, as a new process.

        Each call is its own session: within one session a memory is injected only once.
        """
        cwd = self.folder(project)
        return subprocess.run(
            [sys.executable, *flags, str(OCTYGRAPH), "hook", "prompt"],
            input=_payload(prompt, cwd, session=f"s-{uuid.uuid4().hex[:8]}"),
            capture_output=True,
            text=True,
            env=self.env(project, **extra),
            cwd=cwd,
            timeout=120,
        )

    def served_hook(
        self, prompt: str, project: str = "alpha", *, flags: tuple[str, ...] = (), **extra: str
    ) -> subprocess.CompletedProcess[str]:
        """A hook call that the warm service answered.

        Others edit this checkout while tests run, and a changed package makes the service restart (as it
        should); then the call went in-process, so wait for the fresh service and call again.
        """
        for _ in range(3):
            assert self.wait(lambda h: h["running"] and h.get("warm")), "no warm service"
            before = self.health()
            result = self.hook(prompt, project, flags=flags, **extra)
            after = self.health()
            if after.get("pid") == before["pid"] and after["requests"] == before["requests"] + 1:
                return result
        raise AssertionError("the service never answered the hook")

    def start(self, idle: str = "120") -> subprocess.Popen[bytes]:
        """`octygraph serve` in the background; returns once it answers and is warm."""
        proc = subprocess.Popen(
            [sys.executable, "-m", "octygraph", "serve", "--idle", idle],
            env=self.base,
            cwd=self.home,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.served.append(proc)
        assert self.wait(lambda h: h["running"] and h.get("warm")), "the service never became ready"
        return proc

    def health(self) -> dict[str, Any]:
        return client.health_at(self.home)

    def wait(self, check: Callable[[dict[str, Any]], object], timeout: float = 60) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if check(self.health()):
                return True
            time.sleep(0.05)
        return False

    def stop_everything(self) -> None:
        """Stop whatever service runs for this home, including ones a hook started detached."""
        deadline = time.monotonic() + 30
        quiet_since: float | None = None
        while time.monotonic() < deadline:
            client.stop_service(self.home, timeout_s=10)
            if client.read_pid(self.home) is None:
                quiet_since = quiet_since or time.monotonic()
                # A service that lost the start-up race may still take over: wait until it is quiet.
                if time.monotonic() - quiet_since > 0.5:
                    break
            else:
                quiet_since = None
            time.sleep(0.05)
        pid = client.read_pid(self.home)
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
        for proc in self.served:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=10)


@pytest.fixture
def env() -> Iterator[Env]:
    home = Path(tempfile.mkdtemp(prefix="oy", dir="/tmp")) / "h"
    base = {k: v for k, v in os.environ.items() if k not in ("OCTY_NO_SERVICE", "OCTY_NO_HOOKS")}
    base.update(
        {"OCTYBOT_HOME": str(home), "OCTY_HOOK_BUDGET_S": BUDGET_S, "OCTY_SERVE_IDLE_S": "120"}
    )
    base.pop("OCTYBOT_PROJECT", None)
    home.mkdir()
    e = Env(home, base)
    try:
        yield e
    finally:
        e.stop_everything()
        log = protocol.ServicePaths(home).log_file
        if log.exists():  # shown by pytest when the test failed
            print(log.read_text(errors="replace")[-4000:])
        shutil.rmtree(home.parent, ignore_errors=True)


def _remember(e: Env, text: str, project: str = "alpha", *entities: str) -> None:
    args = ["memory", "add", text]
    for name in entities:
        args += ["--entity", name]
    result = e.cli(*args, project=project)
    assert result.returncode == 0, result.stderr


def _nodes(e: Env, project: str) -> list[str]:
    from octygraph.embeddings import local_embeddings

    db = e.home / "projects" / project / "memory" / "memory.db"
    with MemoryStore.open(db, local_embeddings(), create=False) as store:
        return [n.content for n in store.iter_all()]


@pytest.mark.slow
def test_warm_service_serves_hooks_and_status_and_stop(env: Env) -> None:
    _remember(env, "Peter handles the Anderson account", "alpha", "Peter", "Anderson")
    proc = env.start()
    sock = protocol.ServicePaths(env.home).socket
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600
    assert stat.S_IMODE(env.home.stat().st_mode) == 0o700

    result = env.served_hook("Who handles Anderson?")
    assert result.returncode == 0
    assert "Peter handles the Anderson account" in _context(result.stdout)

    status = env.cli("serve", "status", "--json")
    assert status.returncode == 0, status.stderr
    health = json.loads(status.stdout)
    assert health["running"] is True and health["pid"] == client.read_pid(env.home)
    assert health["requests"] == 1 and health["databases"] == 1
    assert health["version"] == protocol.package_version()
    active = env.cli("memory", "active", "--json")
    assert active.returncode == 0, active.stderr
    assert json.loads(active.stdout)["service"]["running"] is True

    stopped = env.cli("serve", "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert f"stopped (pid {health['pid']})" in stopped.stdout
    assert proc.wait(timeout=20) == 0
    assert not sock.exists() and not protocol.ServicePaths(env.home).pid_file.exists()
    assert "not running" in env.cli("serve", "status").stdout
    assert env.cli("serve", "stop").stdout.strip() == "Memory service: not running."
    assert "Service     not running" in env.cli("memory", "active").stdout


@pytest.mark.slow
def test_thin_client_imports_nothing_heavy(env: Env) -> None:
    _remember(env, "Maria owns the billing service", "alpha", "Maria")
    env.start()
    # Without `site` (-S), every import listed is the command's own, whatever the environment's
    # start-up files load (an editable install's import finder loads `re`, for one).
    package_root = str(Path(octygraph.__file__).resolve().parent.parent)
    result = env.served_hook(
        "Who owns the billing service?", flags=("-S", "-X", "importtime"), PYTHONPATH=package_root
    )
    assert result.returncode == 0
    assert "Maria owns the billing service" in _context(result.stdout)
    imported = {
        line.rsplit("|", 1)[-1].strip().split(".")[0]
        for line in result.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "octygraph" in imported and "_socket" in imported
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))
    # Nor the pure-Python wrappers of what it needs (their enums and regexes cost milliseconds), nor
    # `re`, which the wrapper an installer writes for an entry point would import (scripts/octygraph).
    wrappers = {"socket", "base64", "typing", "json", "re"}
    assert not imported & wrappers, sorted(imported & wrappers)


@pytest.mark.slow
def test_killed_service_is_replaced_within_the_budget(env: Env) -> None:
    _remember(env, "Peter handles the Anderson account", "alpha", "Peter", "Anderson")
    first = env.start()
    os.kill(first.pid, signal.SIGKILL)
    first.wait(timeout=10)
    assert protocol.ServicePaths(env.home).socket.exists()  # left behind by the killed process

    # The hook starts a fresh service and waits for it, within its budget (no in-process run; an
    # answer at all is within the budget, past which the watchdog ends the hook with nothing printed).
    result = env.hook("Who handles Anderson?")
    assert result.returncode == 0
    assert "Peter handles the Anderson account" in _context(result.stdout)
    health = env.health()
    assert health["running"] and health["pid"] != first.pid and health["requests"] >= 1
    again = env.served_hook("Who handles Anderson?")
    assert "Peter handles the Anderson account" in _context(again.stdout)


@pytest.mark.slow
def test_stale_socket_file_is_handled(env: Env) -> None:
    _remember(env, "Peter handles the Anderson account", "alpha", "Peter", "Anderson")
    sock_path = protocol.ServicePaths(env.home).socket
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(sock_path))
    stale.close()  # the file stays, nobody listens
    assert env.health()["state"] == "stale socket"

    result = env.hook("Who handles Anderson?")
    assert result.returncode == 0
    assert "Peter handles the Anderson account" in _context(result.stdout)
    assert env.wait(lambda h: h["running"] and h.get("warm"))
    assert "Peter handles the Anderson account" in _context(
        env.served_hook("Who handles Anderson?").stdout
    )


@pytest.mark.slow
def test_twenty_concurrent_hooks_from_two_projects(env: Env) -> None:
    _remember(env, "Peter handles the Anderson account", "alpha", "Peter", "Anderson")
    _remember(env, "Peter handles the Zeta migration", "beta", "Peter", "Zeta")
    pid = env.start().pid
    facts = {
        "alpha": [f"{name} owns the {thing} service" for name, thing in _PAIRS[:5]],
        "beta": [f"{name} owns the {thing} service" for name, thing in _PAIRS[5:]],
    }
    # Ten prompts that tell a fact and ten that ask, all at once; whether a told sentence is worth
    # storing is the gate's business (tests/test_judgement.py), so each fact is told on its own.
    tells = [(project, f"{fact}.") for project in facts for fact in facts[project]]
    asks = [(project, "What does Peter handle?") for project in facts for _ in range(5)]
    jobs = tells + asks
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        results = list(pool.map(lambda job: env.hook(job[1], job[0]), jobs))

    assert all(result.returncode == 0 for result in results)
    for (project, _), result in zip(asks, results[len(tells) :], strict=True):
        context = _context(result.stdout)
        own, other = ("Anderson", "Zeta") if project == "alpha" else ("Zeta", "Anderson")
        assert f"Peter handles the {own}" in context
        assert other not in context
    health = env.health()
    if health.get("pid") == pid:  # unless a change to the package restarted it meanwhile
        assert health["requests"] == len(jobs)
    # Each answer went out before its store half finished: let the service settle first
    # (the health call that asks counts as one active request).
    assert env.wait(lambda h: h.get("active", 0) <= 1, timeout=60)
    for project, told in facts.items():
        stored = "\n".join(_nodes(env, project))
        assert all(fact in stored for fact in told), (project, stored)
        elsewhere = facts["beta" if project == "alpha" else "alpha"]
        assert not any(fact in stored for fact in elsewhere)


_PAIRS = [
    ("Jonas", "billing"),
    ("Aiko", "search"),
    ("Rahul", "payments"),
    ("Lena", "reporting"),
    ("Tomas", "mailer"),
    ("Greta", "inventory"),
    ("Omar", "checkout"),
    ("Ines", "ledger"),
    ("Karl", "shipping"),
    ("Yuki", "catalog"),
]


@pytest.mark.slow
def test_stop_hook_through_the_service_stores_and_lists_it(env: Env) -> None:
    env.start()
    cwd = env.folder("alpha")
    payload = json.dumps(
        {
            "session_id": "s-stop",
            "cwd": str(cwd),
            "hook_event_name": "Stop",
            "stop_hook_active": False,
            "last_assistant_message": "I migrated the billing service to Postgres 16.",
        }
    )
    before = env.health()
    result = subprocess.run(
        [sys.executable, "-m", "octygraph.entry", "hook", "stop"],
        input=payload,
        capture_output=True,
        text=True,
        env=env.env("alpha"),
        cwd=cwd,
        timeout=120,
    )
    assert result.returncode == 0 and result.stdout == ""
    # Handed off: the service acknowledged it and stores it right after.
    assert _stored_soon(env, "Postgres 16")
    # Counted once the run has finished (its trace written), just after the memory is stored.
    assert env.wait(
        lambda h: h.get("pid") != before["pid"] or h["requests"] == before["requests"] + 1
    )
    # The manifest is written just after the answer; give the service a moment.
    deadline = time.monotonic() + 10
    listed: list[dict[str, Any]] = []
    while time.monotonic() < deadline and not listed:
        shown = env.cli("memory", "manifest", "--session", "s-stop", "--json")
        listed = json.loads(shown.stdout) if shown.returncode == 0 else []
        time.sleep(0.1)
    assert listed and all(e["source"] == "claude" for e in listed)


@pytest.mark.slow
def test_idle_service_stops_by_itself(env: Env) -> None:
    proc = env.start(idle="0.5")
    assert proc.wait(timeout=20) == 0
    paths = protocol.ServicePaths(env.home)
    assert not paths.socket.exists() and not paths.pid_file.exists()
    assert env.health()["running"] is False


@pytest.mark.slow
def test_other_version_restarts_the_service(env: Env) -> None:
    _remember(env, "Maria owns the billing service", "alpha", "Maria")
    old = env.start()
    message = client.hook_request("prompt", b"{}", env.env(), 0.0)
    answer = client.exchange(
        protocol.ServicePaths(env.home).socket, {**message, "version": "0.0.1+0"}, 10
    )
    assert answer["status"] == "restart"
    assert old.wait(timeout=20) == 0

    result = env.hook("Who owns the billing service?")
    assert "Maria owns the billing service" in _context(result.stdout)
    assert env.wait(lambda h: h["running"] and h["pid"] != old.pid)


@pytest.mark.slow
def test_second_service_refuses_to_start(env: Env) -> None:
    first = env.start()
    second = subprocess.run(
        [sys.executable, "-m", "octygraph", "serve"],
        capture_output=True,
        text=True,
        env=env.base,
        timeout=60,
    )
    assert second.returncode == 1
    assert "already running" in second.stderr
    assert env.health()["pid"] == first.pid


@pytest.mark.slow
def test_no_service_and_no_hooks_switches(env: Env) -> None:
    _remember(env, "Peter handles the Anderson account", "alpha", "Peter", "Anderson")
    result = env.hook("Who handles Anderson?", OCTY_NO_SERVICE="1")
    assert "Peter handles the Anderson account" in _context(result.stdout)
    # No service was asked or started (checked in-process by
    # `test_no_service_switch_never_asks_or_starts_a_service`), and none is there now.
    assert client.read_pid(env.home) is None
    assert not protocol.ServicePaths(env.home).socket.exists()

    off = env.hook("Who handles Anderson?", OCTY_NO_HOOKS="1")
    assert off.returncode == 0 and off.stdout == ""
    skipped = env.hook("/octybot memory list")
    assert skipped.returncode == 0 and skipped.stdout == ""
    assert client.read_pid(env.home) is None  # nothing worth running: no service started


def test_frames_are_the_json_that_json_writes_and_reads() -> None:
    tricky = {
        "text": 'naïve ✓ "quoted" \\ back\nline\ttab\x00\x1f\x7f \u2028 😀',
        "lone_surrogate": "\udcff",
        "numbers": [0, -3, 10**20, 0.1, -2.5e-07, 1e300],
        "flags": [True, False, None],
        "env": {"OCTYBOT_HOME": "/tmp/é", "": ""},
    }
    body = protocol.encode(tricky)[protocol.HEADER.size :]
    assert body == json.dumps(tricky, ensure_ascii=False, separators=(",", ":")).encode(
        "utf-8", "surrogatepass"
    )
    assert protocol.decode(body) == tricky
    # A spooled request is written by `json.dump`, with spaces: read the same.
    spaced = json.dumps(tricky, indent=1).encode()
    assert protocol.decode(b" " + spaced + b"\n") == tricky
    for bad in (b"", b"{", b'{"a": 1} {}', b"\xff", b"nul"):
        with pytest.raises(protocol.ProtocolError):
            protocol.decode(bad)
    with pytest.raises(TypeError):
        protocol.encode({"a": object()})
    with pytest.raises(TypeError):  # a failed frame leaves nothing behind for the next one
        protocol.encode({"a": [object()]})
    assert protocol.decode(protocol.encode({"a": [1]})[protocol.HEADER.size :]) == {"a": [1]}


def test_protocol_frames_and_socket_paths(tmp_path: Path) -> None:
    message = {"op": "hook", "text": "naïve ✓", "n": 3}
    frame = protocol.encode(message)
    size = protocol.frame_size(frame[: protocol.HEADER.size])
    assert protocol.decode(frame[protocol.HEADER.size :][:size]) == message
    with pytest.raises(protocol.ProtocolError):
        protocol.frame_size(protocol.HEADER.pack(protocol.MAX_FRAME + 1))
    with pytest.raises(protocol.ProtocolError):
        protocol.decode(b"[1, 2]")
    short = protocol.ServicePaths(Path("/tmp/oy1")).socket
    assert short == Path("/tmp/oy1/octygraph.sock")
    deep = protocol.ServicePaths(tmp_path / ("x" * 120)).socket
    assert len(str(deep)) <= protocol.MAX_SOCKET_PATH
    assert stat.S_IMODE(deep.parent.stat().st_mode) == 0o700
    # Settings variables travel with each request; the others decide whether a service can be reused.
    env = {"OCTYBOT_PROJECT": "a", "OCTY_OPENROUTER_BASE_URL": "http://x", "HOME": "/root"}
    assert protocol.request_env(env) == {"OCTYBOT_PROJECT": "a"}
    assert protocol.process_env({**env, "OCTY_NO_SERVICE": "1"}) == {
        "OCTY_OPENROUTER_BASE_URL": "http://x"
    }
    merged = protocol.service_env({"PATH": "/bin", "DB_PATH": "/old.db"}, {"OCTYBOT_PROJECT": "a"})
    assert merged == {"PATH": "/bin", "OCTYBOT_PROJECT": "a"}


def test_health_of_a_home_without_service(tmp_path: Path) -> None:
    from octygraph.config.settings import Settings
    from octygraph.service import service_health

    settings = Settings.from_env(env={"OCTYBOT_HOME": str(tmp_path / "h")}, cwd=tmp_path)
    health = service_health(settings)
    assert health["running"] is False and health["state"] == "stopped"
    assert health["pid"] is None
    assert health["socket"].endswith("octygraph.sock")


def _stop_payload(cwd: Path, message: str, session: str = "s-stop") -> str:
    return json.dumps(
        {
            "session_id": session,
            "cwd": str(cwd),
            "hook_event_name": "Stop",
            "stop_hook_active": False,
            "last_assistant_message": message,
        }
    )


def _run_hook(e: Env, event: str, payload: str, **extra: str) -> tuple[int, str]:
    """`octygraph hook EVENT` through the console-script entry; exit code and stdout.

    How long a hook may live is `watchdog_budget_s` from its process start (checked in
    `test_every_hook_process_lives_at_most_its_budget`); its watchdog ends it there with exit 0 and
    nothing printed, so an answer at all came within the budget."""
    result = subprocess.run(
        [sys.executable, "-m", "octygraph.entry", "hook", event],
        input=payload,
        capture_output=True,
        text=True,
        env=e.env("alpha", **extra),
        cwd=e.folder("alpha"),
        timeout=120,
    )
    return result.returncode, result.stdout


def test_no_service_switch_never_asks_or_starts_a_service(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(client, "start_service", lambda *a, **k: calls.append("start"))
    monkeypatch.setattr(client, "exchange", lambda *a, **k: calls.append("ask"))
    monkeypatch.setattr(client, "_in_process", lambda *a, **k: ("in-process answer", ""))
    env = {"OCTYBOT_HOME": str(tmp_path), "OCTY_NO_SERVICE": "1"}
    for event in ("prompt", "stop"):
        result = client.run_hook(event, b"{}", env=env, started=0.0)
        assert (result.via, result.stdout) == ("in-process", "in-process answer")
    assert calls == []


def test_every_hook_process_lives_at_most_its_budget() -> None:
    """The watchdog's deadline, from the hook's process start: a hand-off returns at once (twice its
    0.25 s), a prompt `KEPT_S` before its budget; in-process, a run (a Stop within four prompt
    budgets) and the write of its answer end `KEPT_S` before the budget."""
    env = {"OCTY_HOOK_BUDGET_S": "4"}
    assert client.watchdog_budget_s("stop", env, True) == 2 * client.HANDOFF_BUDGET_S == 0.5
    assert client.watchdog_budget_s("session-end", env, True) == 0.5
    assert client.watchdog_budget_s("prompt", env, True) == pytest.approx(
        4 - client.KEPT_S - client.EXIT_MARGIN_S
    )
    kept = client.KEPT_S + client.WRITE_GUARD_S + client.EXIT_MARGIN_S
    assert client.watchdog_budget_s("stop", env, False) == pytest.approx(16 - kept)
    assert client.watchdog_budget_s("stop", {**env, "OCTY_NO_SERVICE": "1"}, True) == pytest.approx(
        16 - kept
    )
    assert client.watchdog_budget_s(
        "prompt", {**env, "OCTY_NO_SERVICE": "1"}, True
    ) == pytest.approx(4 - kept)
    assert client.KEPT_S >= 2.0
    assert client.watchdog_budget_s(
        "session-start", {"OCTY_HOOK_BUDGET_S": "30"}, True
    ) == pytest.approx(client.START_BUDGET_S - client.KEPT_S - client.EXIT_MARGIN_S)


def _stored_soon(e: Env, text: str, project: str = "alpha", timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        db = e.home / "projects" / project / "memory" / "memory.db"
        try:
            if db.exists() and any(text in n for n in _nodes(e, project)):
                return True
        except StoreError:  # the service may be creating the file right now
            pass
        time.sleep(0.2)
    return False


def _ppid(pid: int) -> int:
    stat_line = Path(f"/proc/{pid}/stat").read_bytes()
    return int(stat_line[stat_line.rindex(b")") + 2 :].split()[1])


@pytest.mark.slow
def test_frozen_service_costs_one_budget_then_is_replaced(env: Env) -> None:
    _remember(env, "Peter handles the Anderson account", "alpha", "Peter", "Anderson")
    frozen = env.start()
    os.kill(frozen.pid, signal.SIGSTOP)
    cwd = env.folder("alpha")
    # A stop while it is frozen is not lost: no receipt comes, so it goes to the spool at once.
    code, out = _run_hook(
        env, "stop", _stop_payload(cwd, "I migrated the billing service to Postgres 16.")
    )
    assert code == 0 and out == ""
    assert list(protocol.ServicePaths(env.home).spool_dir.glob("*.json"))

    began = time.monotonic()
    code, out = _run_hook(
        env, "prompt", _payload("Who handles Anderson?", cwd), OCTY_HOOK_BUDGET_S="6"
    )
    assert code == 0 and out == ""  # no context this time, and no re-run in the hook
    # It stopped waiting `KEPT_S` (2 s) before its budget, not at the budget's end.
    assert 6 - (time.monotonic() - began) > 1.5
    # It missed its deadline: killed (even while stopped) and replaced, not counted alive.
    assert frozen.wait(timeout=10) == -signal.SIGKILL
    assert env.wait(lambda h: h["running"] and h.get("warm") and h["pid"] != frozen.pid)
    again = env.served_hook("Who handles Anderson?")
    assert "Peter handles the Anderson account" in _context(again.stdout)
    # The replacement worked through the spool.
    assert _stored_soon(env, "Postgres 16")
    # The spool file goes once its run is done (its bookkeeping too), a moment after the memory.
    spool = protocol.ServicePaths(env.home).spool_dir
    assert env.wait(lambda h: not list(spool.glob("*.json")), timeout=20)


@pytest.mark.slow
def test_service_started_by_a_hook_survives_the_hook_being_killed(env: Env) -> None:
    _remember(env, "Peter handles the Anderson account", "alpha", "Peter", "Anderson")
    cwd = env.folder("alpha")
    hook = subprocess.Popen(
        [sys.executable, "-m", "octygraph.entry", "hook", "prompt"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env.env("alpha"),
        cwd=cwd,
        start_new_session=True,  # its own process group, as Claude Code runs hooks
    )
    assert hook.stdin is not None
    hook.stdin.write(_payload("Who handles Anderson?", cwd).encode())
    hook.stdin.close()
    deadline = time.monotonic() + 60
    while client.read_pid(env.home) is None and time.monotonic() < deadline:
        time.sleep(0.02)
    pid = client.read_pid(env.home)
    assert pid is not None, "the hook started no service"
    assert hook.poll() is None, "the hook should still be waiting for the new service"
    # Not the hook's child, nor in its process group or session.
    assert _ppid(pid) != hook.pid
    assert os.getpgid(pid) != hook.pid and os.getsid(pid) != hook.pid
    os.killpg(hook.pid, signal.SIGKILL)  # what Claude Code does to a hook it times out
    hook.wait(timeout=10)
    assert env.wait(lambda h: h["running"] and h.get("warm") and h["pid"] == pid)
    served = env.served_hook("Who handles Anderson?")
    assert "Peter handles the Anderson account" in _context(served.stdout)


@pytest.mark.slow
def test_stop_hook_hands_off_to_the_service_and_returns_at_once(env: Env) -> None:
    env.start()
    cwd = env.folder("alpha")
    code, out = _run_hook(
        env, "stop", _stop_payload(cwd, "I migrated the billing service to Postgres 16.")
    )
    assert code == 0 and out == ""
    assert _stored_soon(env, "Postgres 16")
    # The spool file goes once its run is done (its bookkeeping too), a moment after the memory.
    spool = protocol.ServicePaths(env.home).spool_dir
    assert env.wait(lambda h: not list(spool.glob("*.json")), timeout=20)


@pytest.mark.slow
def test_stop_without_a_service_is_spooled_and_stored_by_the_one_it_starts(env: Env) -> None:
    cwd = env.folder("alpha")
    code, out = _run_hook(
        env, "stop", _stop_payload(cwd, "I migrated the billing service to Postgres 16.")
    )
    assert code == 0 and out == ""
    assert env.wait(lambda h: h["running"] and h.get("warm")), "the stop hook started no service"
    assert _stored_soon(env, "Postgres 16")
    # The spool file goes once its run is done (its bookkeeping too), a moment after the memory.
    spool = protocol.ServicePaths(env.home).spool_dir
    assert env.wait(lambda h: not list(spool.glob("*.json")), timeout=20)


@pytest.mark.slow
def test_session_start_warms_the_service_and_forgets_after_compaction(env: Env) -> None:
    cwd = env.folder("alpha")
    start = {"session_id": "s-c", "cwd": str(cwd), "hook_event_name": "SessionStart"}
    code, out = _run_hook(env, "session-start", json.dumps({**start, "source": "startup"}))
    assert code == 0 and out == ""  # no memory yet: nothing to say
    assert env.wait(lambda h: h["running"] and h.get("warm")), "SessionStart did not warm a service"
    log = env.home / "projects" / "alpha" / "memory" / "sessions" / "s-c.json"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(json.dumps({"injected": ["x"], "stored": []}))
    code, out = _run_hook(env, "session-start", json.dumps({**start, "source": "compact"}))
    assert code == 0 and out == ""
    assert not log.exists()


@pytest.mark.slow
def test_the_warm_service_gives_the_session_start_block(env: Env) -> None:
    result = env.cli("memory", "add", "Never push to main on Fridays", "--type", "instruction")
    assert result.returncode == 0, result.stderr
    env.start()
    cwd = env.folder("alpha")
    for attempt in range(3):  # a checkout edited meanwhile restarts the service (see served_hook)
        assert env.wait(lambda h: h["running"] and h.get("warm")), "no warm service"
        start = {"session_id": f"s-{attempt}", "cwd": str(cwd), "hook_event_name": "SessionStart"}
        before = env.health()
        code, out = _run_hook(env, "session-start", json.dumps({**start, "source": "startup"}))
        after = env.health()
        assert code == 0
        if after["pid"] == before["pid"] and after["requests"] == before["requests"] + 1:
            break
    else:
        raise AssertionError("the service never answered the session start")
    data = json.loads(out)["hookSpecificOutput"]
    assert data["hookEventName"] == "SessionStart"
    assert "\n- Never push to main on Fridays" in data["additionalContext"]


@pytest.mark.slow
def test_only_settings_the_service_reads_restart_it(env: Env) -> None:
    _remember(env, "Maria owns the billing service", "alpha", "Maria")
    service = env.start()
    before = env.health()
    # Claude Code sets ANTHROPIC_MODEL and friends; the service never reads them.
    result = env.hook("Who owns the billing service?", ANTHROPIC_MODEL="claude-other-model")
    assert "Maria owns the billing service" in _context(result.stdout)
    after = env.health()
    assert after["pid"] == service.pid and after["requests"] == before["requests"] + 1
    # A variable it does read from its own environment makes it step aside.
    message = client.hook_request(
        "prompt", b"{}", env.env(OCTY_OPENROUTER_BASE_URL="http://127.0.0.1:9/v1"), 0.0
    )
    answer = client.exchange(protocol.ServicePaths(env.home).socket, message, 10)
    assert answer["status"] == "restart" and "OCTY_OPENROUTER_BASE_URL" in answer["reason"]
    assert service.wait(timeout=20) == 0


@contextlib.contextmanager
def _unwritable(folder: Path) -> Iterator[None]:
    """Make `folder` refuse new files, even for root (immutable attribute), or skip."""
    if os.geteuid() != 0:
        folder.chmod(0o500)
        try:
            yield
        finally:
            folder.chmod(0o700)
        return
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", str(folder)]).returncode != 0:
        pytest.skip("cannot make a folder read-only for root here")
    try:
        yield
    finally:
        subprocess.run([chattr, "-i", str(folder)], check=True)


@pytest.mark.slow
def test_read_only_home_returns_at_once_and_tells_the_user_once(env: Env) -> None:
    cwd = env.folder("alpha")
    with _unwritable(env.home):
        code, out = _run_hook(env, "prompt", _payload("Who handles Anderson?", cwd))
        assert (
            code == 0
        )  # and answers: it did not wait out its budget for a service that cannot start
        message = json.loads(out)["systemMessage"]
        assert "not writable" in message and "octygraph doctor" in message
        code, out = _run_hook(env, "prompt", _payload("Who is Peter?", cwd))
        assert code == 0 and out == ""  # once per session
        code, out = _run_hook(env, "stop", _stop_payload(cwd, "I fixed the flaky test."))
        assert code == 0 and out == ""
        doctor = env.cli("doctor")
        assert doctor.returncode == 1 and "not writable" in doctor.stdout
    assert client.read_pid(env.home) is None


def test_settings_table_drives_settings_and_protocol(tmp_path: Path) -> None:
    from octygraph.config import setting_table as table
    from octygraph.config.settings import Settings, SettingsError

    defaults = Settings.from_env(env={}, cwd=tmp_path)
    assert defaults.max_turns == table.default("OCTY_MAX_TURNS") == 8
    assert defaults.hook_budget_s == table.default("OCTY_HOOK_BUDGET_S")
    assert protocol.hook_budget_s({}) == defaults.hook_budget_s
    assert defaults.layer1_model == table.default("LAYER1")
    for setting in table.TABLE:
        if setting.parser in (table.positive_float, table.positive_int):
            with (
                pytest.raises(SettingsError, match=setting.name)
                if setting.scope == "request"
                else contextlib.nullcontext()
            ):
                Settings.from_env(env={setting.name: "-1"}, cwd=tmp_path)
            assert table.problems({setting.name: "x"}) == [
                f"{setting.name} must be a number, got 'x'."
            ]
    env = {"ANTHROPIC_MODEL": "m", "ANTHROPIC_BASE_URL": "http://b", "OCTY_HOOK_BUDGET_S": "3"}
    assert protocol.process_env(env) == {"ANTHROPIC_BASE_URL": "http://b"}
    assert protocol.request_env(env) == {"OCTY_HOOK_BUDGET_S": "3"}
    assert protocol.hook_budget_s({"OCTY_HOOK_BUDGET_S": "soon"}) == defaults.hook_budget_s
    assert table.SECRET_NAMES and set(table.SECRET_NAMES) <= set(table.BY_NAME)


@pytest.mark.slow
def test_a_hand_off_both_received_and_spooled_runs_once(env: Env) -> None:
    env.start()
    cwd = env.folder("alpha")
    raw = _stop_payload(cwd, "I migrated the billing service to Postgres 16.").encode()
    message = client.hook_request("stop", raw, env.env("alpha"), 0.0)
    sock = protocol.ServicePaths(env.home).socket
    # The receipt came too late for the hook, which then also spooled the same request.
    assert client.exchange(sock, message, 10)["status"] == "accepted"
    assert client.spool(env.home, message) is not None
    assert _stored_soon(env, "Postgres 16")
    spool = protocol.ServicePaths(env.home).spool_dir
    assert env.wait(lambda h: not list(spool.glob("*.json")), timeout=20)
    # The spool is drained and no work is in progress (the status request asking is the one active
    # call): a second run would have been started (and counted in `spooled`) by now, and would have
    # stored a second copy.
    assert env.wait(lambda h: h["active"] == 1, timeout=20)
    assert env.health()["spooled"] == 0
    assert sum("Postgres 16" in n for n in _nodes(env, "alpha")) == 1

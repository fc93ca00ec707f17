"""octygraph inside the real Claude Code CLI, against a loopback fake of the Anthropic Messages API.

The pinned CLI (`package.json`, `npm ci`) runs `claude -p` and one interactive turn in a temporary
project with octygraph installed, with HOME, OCTYBOT_HOME and the Claude config in temporary folders.
The fake records every request body, so the assertions are about what reached the model. Any
request that is not to 127.0.0.1 goes to a proxy address where nothing listens.

Without `node_modules/.bin/claude` these tests skip, unless OCTY_REQUIRE_CLAUDE=1 (CI sets it).
"""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.fake_anthropic import FakeAnthropic, Recorded, last_user_text

REPO = Path(__file__).resolve().parents[1]
CLAUDE = REPO / "node_modules" / ".bin" / "claude"
OCTYGRAPH = Path(sys.executable).parent / "octygraph"
API_KEY = "sk-ant-fake-key-for-tests-0123456789"
# What a prompt may cost at most, octygraph's hooks included (the prompt hook's own timeout is 20 s;
# a first run starts the service and loads the embedding model on a slow machine).
TURN_LIMIT_S = 60.0

pytestmark = pytest.mark.slow


def require_claude() -> None:
    if CLAUDE.exists():
        return
    reason = f"the pinned Claude Code CLI is not installed ({CLAUDE}); run `npm ci` in {REPO}"
    if os.environ.get("OCTY_REQUIRE_CLAUDE") == "1":
        pytest.fail(reason + " (OCTY_REQUIRE_CLAUDE=1)")
    pytest.skip(reason)


def closed_loopback_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Turn:
    """One `claude -p` run."""

    returncode: int
    result: dict[str, Any]
    stderr: str
    seconds: float
    requests: list[Recorded] = field(default_factory=list)

    @property
    def text(self) -> str:
        return str(self.result.get("result") or "")


@dataclass
class Claude:
    """A temporary user (HOME), project and octygraph home, talking to one fake API."""

    root: Path
    api: FakeAnthropic
    home: Path
    project: Path
    octy_home: Path
    env: dict[str, str]

    def octygraph(self, *args: str, cwd: Path | None = None, input: str | None = None) -> str:
        out = subprocess.run(
            [str(OCTYGRAPH), *args],
            cwd=cwd or self.project,
            env=self.env,
            input=input,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stdout + out.stderr
        return out.stdout

    def run(
        self, prompt: str, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
    ) -> Turn:
        """`claude -p PROMPT` in the project; the turn's requests to the fake come with it."""
        before = len(self.api.messages())
        started = time.monotonic()
        out = subprocess.run(
            [str(CLAUDE), "-p", "--output-format", "json", *args, prompt],
            cwd=cwd or self.project,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=TURN_LIMIT_S + 60,
            stdin=subprocess.DEVNULL,
        )
        seconds = time.monotonic() - started
        try:
            result = json.loads(out.stdout.strip().splitlines()[-1]) if out.stdout.strip() else {}
        except json.JSONDecodeError:
            result = {"unparsed": out.stdout}
        return Turn(out.returncode, result, out.stderr, seconds, self.api.messages()[before:])

    def search(self, *words: str) -> list[str]:
        hits = json.loads(self.octygraph("search", *words, "--json", "--all"))
        return [str(hit["content"]) for hit in hits]


def make_claude(tmp_path: Path, api: FakeAnthropic) -> Claude:
    home = tmp_path / "home"
    project = tmp_path / "work" / "proj"
    octy_home = tmp_path / "octy"
    home.mkdir()
    project.mkdir(parents=True)
    # A user who has been through onboarding, approved the key and trusts the project (the
    # interactive UI asks about each otherwise; -p skips the questions anyway).
    claude_json = {
        "hasCompletedOnboarding": True,
        "theme": "dark",
        "customApiKeyResponses": {"approved": [API_KEY[-20:]], "rejected": []},
        "projects": {
            str(project): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}
        },
    }
    (home / ".claude.json").write_text(json.dumps(claude_json))
    proxy = f"http://127.0.0.1:{closed_loopback_port()}"
    env = {
        # The venv's bin first: the plugin's hooks run `octygraph` from PATH.
        "PATH": os.pathsep.join([str(OCTYGRAPH.parent), os.environ.get("PATH", "/usr/bin:/bin")]),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "ANTHROPIC_BASE_URL": api.base_url,
        "ANTHROPIC_API_KEY": API_KEY,
        # No telemetry, error reports, update checks or other calls home.
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_BUG_COMMAND": "1",
        "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
        # Anything that still tries to leave the machine meets a closed loopback port.
        "HTTP_PROXY": proxy,
        "HTTPS_PROXY": proxy,
        "http_proxy": proxy,
        "https_proxy": proxy,
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
        "OCTYBOT_HOME": str(octy_home),
        "OCTY_SERVE_IDLE_S": "300",
        "OCTY_EMBEDDINGS": "local",
    }
    return Claude(tmp_path, api, home, project, octy_home, env)


def stop_service(claude: Claude) -> None:
    subprocess.run(
        [str(OCTYGRAPH), "serve", "stop"],
        env=claude.env,
        capture_output=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def api() -> Iterator[FakeAnthropic]:
    require_claude()
    with FakeAnthropic(lambda body: "Noted.") as fake:
        yield fake


@pytest.fixture
def claude(tmp_path: Path, api: FakeAnthropic) -> Iterator[Claude]:
    """A temporary user with octygraph installed into its project (`octygraph install DIR`)."""
    world = make_claude(tmp_path, api)
    world.octygraph("install", str(world.project))
    try:
        yield world
    finally:
        stop_service(world)


def request_with(turn: Turn, prompt: str) -> Recorded:
    """The main request of a turn: the one whose last user message holds the prompt."""
    for request in turn.requests:
        if prompt in last_user_text(request.body) and request.body.get("tools"):
            return request
    for request in turn.requests:
        if prompt in request.text:
            return request
    raise AssertionError(f"no request carried {prompt!r}: {[r.text[:200] for r in turn.requests]}")


def assert_answered(turn: Turn, reply: str) -> None:
    assert turn.returncode == 0, (turn.result, turn.stderr[-2000:])
    assert turn.text == reply, turn.result
    assert turn.seconds < TURN_LIMIT_S, turn.seconds


# --- memory reaches the model ---------------------------------------------------------------------


def test_a_stored_memory_reaches_the_model(claude: Claude) -> None:
    claude.octygraph("memory", "add", "Maria Zorbex owns the billing service.")
    prompt = "Who owns the billing service?"

    turn = claude.run(prompt)

    assert_answered(turn, "Noted.")
    request = request_with(turn, prompt)
    assert request.stream
    # Injected as context with the prompt: the name is in the request, not in the prompt.
    assert "Maria Zorbex owns the billing service" in request.text


def test_memory_reaches_the_model_on_the_non_streaming_fallback(claude: Claude) -> None:
    claude.octygraph("memory", "add", "Maria Zorbex owns the billing service.")
    claude.api.broken_stream = True
    prompt = "Who owns the billing service?"

    turn = claude.run(prompt)

    assert_answered(turn, "Noted.")
    plain = [r for r in turn.requests if not r.stream and prompt in r.text]
    assert plain, [(r.stream, r.text[:100]) for r in turn.requests]
    assert "Maria Zorbex owns the billing service" in plain[-1].text


def test_a_telling_prompt_is_stored_and_comes_back_next_session(claude: Claude) -> None:
    told = "FYI: Peter is responsible for the Anderson account from now on."
    first = claude.run(told)
    assert_answered(first, "Noted.")
    assert any(
        "Peter is responsible for the Anderson account" in c for c in claude.search("Anderson")
    )

    question = "Who is responsible for the Anderson account?"
    second = claude.run(question)  # a new -p run is a new session

    assert_answered(second, "Noted.")
    assert first.result.get("session_id") != second.result.get("session_id")
    request = request_with(second, question)
    assert "Peter" in request.text.replace(told, "")


def test_the_stop_hook_stores_what_the_assistant_reported_in_print_mode(claude: Claude) -> None:
    report = "I moved the invoice export to the nightly Quarkbridge job and the billing tests pass."
    claude.api.reply = lambda body: report

    turn = claude.run("Please move the invoice export somewhere it cannot slow down the day.")

    assert_answered(turn, report)
    deadline = time.monotonic() + 30
    found: list[str] = []
    while time.monotonic() < deadline and not found:
        found = [
            c for c in claude.search("Quarkbridge nightly invoice export") if "Quarkbridge" in c
        ]
        time.sleep(1)
    assert found, "the Stop hook stored nothing from the assistant's report"


# --- /octybot -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "typed",
    ["search Peter's account", 'search "Anderson account"', "search who runs the Anderson account"],
)
def test_octybot_search_with_quotes_and_several_words(claude: Claude, typed: str) -> None:
    claude.octygraph("memory", "add", "Peter is responsible for the Anderson account.")

    turn = claude.run(f"/octybot {typed}")

    assert_answered(turn, "Noted.")
    # The command's output is part of what is sent to the model, to show to the user.
    shown = [r for r in turn.requests if "Show the output above" in r.text]
    assert shown, [r.text[:300] for r in turn.requests]
    assert "Anderson" in shown[-1].text.split("Show the output above")[0]
    assert "unexpected EOF" not in shown[-1].text


# --- a broken octygraph never blocks a prompt -----------------------------------------------------


def test_an_unusable_octybot_home_does_not_block_the_prompt(claude: Claude) -> None:
    blocker = claude.root / "not-a-folder"
    blocker.write_text("a file where the home folder should be\n")
    env = {"OCTYBOT_HOME": str(blocker / "octy")}

    turn = claude.run("Who owns the billing service?", env=env)

    assert_answered(turn, "Noted.")
    assert turn.seconds < 20, turn.seconds


def test_a_failing_octygraph_executable_does_not_block_the_prompt(
    tmp_path: Path, api: FakeAnthropic
) -> None:
    world = make_claude(tmp_path, api)
    broken = tmp_path / "broken" / "octygraph"
    broken.parent.mkdir()
    broken.write_text("#!/bin/sh\necho 'Traceback: something is broken' >&2\nexit 1\n")
    broken.chmod(0o755)
    from octygraph.claude.install import install
    from octygraph.settings import Settings

    settings = Settings.from_env(
        env={"OCTYBOT_HOME": str(world.octy_home)}, cwd=world.project, project_id="proj"
    )
    install(world.project, settings, str(broken))

    turn = world.run("Who owns the billing service?")

    assert_answered(turn, "Noted.")
    assert turn.seconds < 20, turn.seconds


# --- one interactive turn -------------------------------------------------------------------------


def _read_until(fd: int, buffer: bytearray, done: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if done():
            return True
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return bool(done())
            if not chunk:
                return bool(done())
            buffer += chunk
    return bool(done())


def test_an_interactive_turn_gets_the_memory(claude: Claude) -> None:
    claude.octygraph("memory", "add", "Maria Zorbex owns the billing service.")
    claude.api.reply = lambda body: "Maria-according-to-memory."
    prompt = "Who owns the billing service?"
    env = {**claude.env, "TERM": "xterm-256color", "COLUMNS": "100", "LINES": "30"}

    pid, fd = pty.fork()
    if pid == 0:  # the child: Claude Code's interactive UI on the pseudo-terminal
        try:
            os.chdir(claude.project)
            os.execve(str(CLAUDE), [str(CLAUDE)], env)
        finally:
            os._exit(127)
    screen = bytearray()
    try:
        assert _read_until(fd, screen, lambda: b"shortcuts" in screen, 60), bytes(screen[-2000:])
        os.write(fd, prompt.encode())
        time.sleep(0.5)
        os.write(fd, b"\r")

        def answered() -> bool:
            return any(prompt in last_user_text(r.body) for r in claude.api.messages()) and (
                b"Maria-according-to-memory." in screen
            )

        assert _read_until(fd, screen, answered, TURN_LIMIT_S), (
            [last_user_text(r.body)[:100] for r in claude.api.messages()],
            bytes(screen[-3000:]),
        )
    finally:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and os.waitpid(pid, os.WNOHANG) == (0, 0):
            time.sleep(0.1)
        else:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        os.close(fd)
    main = [
        r for r in claude.api.messages() if prompt in last_user_text(r.body) and r.body.get("tools")
    ]
    assert main, [last_user_text(r.body)[:200] for r in claude.api.messages()]
    assert "Maria Zorbex owns the billing service" in main[-1].text


# --- installed for the user: every project, from any subfolder ------------------------------------


def test_user_scope_hooks_work_from_a_subfolder_of_the_repository(
    tmp_path: Path, api: FakeAnthropic
) -> None:
    world = make_claude(tmp_path, api)
    try:
        subprocess.run(["git", "init", "-q", str(world.project)], check=True, timeout=30)
        world.octygraph("install", "--scope", "user", cwd=tmp_path)
        assert (world.home / ".claude" / "settings.json").is_file()
        assert not (world.project / ".claude").exists()
        world.octygraph("memory", "add", "Maria Zorbex owns the billing service.")
        deep = world.project / "services" / "billing"
        deep.mkdir(parents=True)
        prompt = "Who owns the billing service?"

        turn = world.run(prompt, cwd=deep)

        assert_answered(turn, "Noted.")
        assert "Maria Zorbex owns the billing service" in request_with(turn, prompt).text
    finally:
        stop_service(world)

"""octygraph inside the real Claude Code CLI, against a loopback fake of the Anthropic Messages API.

Each test runs once for every Claude Code release pinned in `package.json` (installed by `npm ci`):
the long-standing pin `@anthropic-ai/claude-code` and the current release under the npm alias
`claude-code-current`. The CLI runs `claude -p` and one interactive turn in a temporary project with
octygraph installed, with HOME, OCTYBOT_HOME and the Claude config in temporary folders. The fake
records every request body, so the assertions are about what reached the model. Any request that is
not to 127.0.0.1 goes to a proxy address where nothing listens.

Without a pinned CLI installed (at the pinned version, its native binary in place) these tests skip,
unless OCTY_REQUIRE_CLAUDE=1 (CI sets it), which makes them fail.
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
OCTYGRAPH = Path(sys.executable).parent / "octygraph"
API_KEY = "sk-ant-fake-key-for-tests-0123456789"
# How long a turn is waited for, octygraph's hooks included (the prompt hook's own timeout is 20 s;
# a first run starts the service and loads the embedding model on a slow machine).
TURN_LIMIT_S = 60.0

pytestmark = pytest.mark.slow


CLIENT_PACKAGE = "@anthropic-ai/claude-code"
# Smaller than this, `bin/claude.exe` is still the package's placeholder script: its postinstall, which
# puts the platform's native binary (an optional dependency from the same registry) in its place, did
# not run.
NATIVE_MIN_BYTES = 1_000_000


@dataclass(frozen=True)
class Client:
    """One Claude Code release pinned in package.json: its dependency name and version."""

    dependency: str  # the key in devDependencies, an npm alias for all but the original pin
    version: str

    @property
    def folder(self) -> Path:
        return REPO / "node_modules" / self.dependency

    @property
    def binary(self) -> Path:
        """The native `claude` the package's postinstall places (its `bin` entry)."""
        return self.folder / "bin" / "claude.exe"

    def __str__(self) -> str:
        return self.version


def pinned_clients() -> list[Client]:
    """Every Claude Code release in package.json's devDependencies, aliases included."""
    pins = json.loads((REPO / "package.json").read_text(encoding="utf-8"))["devDependencies"]
    clients = []
    for dependency, spec in pins.items():
        if dependency == CLIENT_PACKAGE:
            clients.append(Client(dependency, spec))
        elif spec.startswith(f"npm:{CLIENT_PACKAGE}@"):
            clients.append(Client(dependency, spec.rsplit("@", 1)[1]))
    return clients


CLIENTS = pinned_clients()


def require_claude(client: Client) -> None:
    """Skip (or fail, with OCTY_REQUIRE_CLAUDE=1) unless `client` is installed as pinned."""
    installed = None
    manifest = client.folder / "package.json"
    if manifest.is_file():
        installed = json.loads(manifest.read_text(encoding="utf-8")).get("version")
    if installed != client.version:
        reason = (
            f"Claude Code {client.version} is not installed in {client.folder} "
            f"(found {installed or 'nothing'}); run `npm ci` in {REPO}"
        )
    elif not client.binary.is_file() or client.binary.stat().st_size < NATIVE_MIN_BYTES:
        reason = (
            f"Claude Code {client.version}'s native binary is not in place ({client.binary}); "
            f"its postinstall did not run: run `npm ci` in {REPO} with install scripts allowed"
        )
    else:
        return
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
    client: Client

    @property
    def binary(self) -> Path:
        return self.client.binary

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
        out = subprocess.run(
            [str(self.binary), "-p", "--output-format", "json", *args, prompt],
            cwd=cwd or self.project,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=TURN_LIMIT_S,
            stdin=subprocess.DEVNULL,
        )
        try:
            result = json.loads(out.stdout.strip().splitlines()[-1]) if out.stdout.strip() else {}
        except json.JSONDecodeError:
            result = {"unparsed": out.stdout}
        return Turn(out.returncode, result, out.stderr, self.api.messages()[before:])

    def search(self, *words: str) -> list[str]:
        hits = json.loads(self.octygraph("search", *words, "--json", "--all"))
        return [str(hit["content"]) for hit in hits]


def make_claude(tmp_path: Path, api: FakeAnthropic, client: Client) -> Claude:
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
    return Claude(tmp_path, api, home, project, octy_home, env, client)


def stop_service(claude: Claude) -> None:
    subprocess.run(
        [str(OCTYGRAPH), "serve", "stop"],
        env=claude.env,
        capture_output=True,
        timeout=60,
        check=False,
    )


@pytest.fixture(params=CLIENTS, ids=str)
def client(request: pytest.FixtureRequest) -> Client:
    """Each pinned Claude Code release in turn (the test id names its version)."""
    pinned: Client = request.param
    require_claude(pinned)
    return pinned


@pytest.fixture
def api(client: Client) -> Iterator[FakeAnthropic]:
    with FakeAnthropic(lambda body: "Noted.") as fake:
        yield fake


@pytest.fixture
def claude(tmp_path: Path, api: FakeAnthropic, client: Client) -> Iterator[Claude]:
    """A temporary user with octygraph installed into its project (`octygraph install DIR`)."""
    world = make_claude(tmp_path, api, client)
    world.octygraph("install", str(world.project))
    try:
        yield world
    finally:
        stop_service(world)


def test_package_json_pins_the_original_and_the_current_release() -> None:
    assert [c.dependency for c in CLIENTS][:1] == [CLIENT_PACKAGE]
    assert len(CLIENTS) >= 2 and len({c.version for c in CLIENTS}) == len(CLIENTS), CLIENTS
    lock = json.loads((REPO / "package-lock.json").read_text(encoding="utf-8"))["packages"]
    for pinned in CLIENTS:
        entry = lock[f"node_modules/{pinned.dependency}"]
        assert entry["version"] == pinned.version and entry.get("name", CLIENT_PACKAGE) == (
            CLIENT_PACKAGE
        ), (pinned, entry)


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


def test_the_session_start_block_reaches_the_model(claude: Claude) -> None:
    from octygraph.session.start import HEADER

    rule = "Never push to main on Fridays."
    claude.octygraph("memory", "add", "--type", "instruction", "--scope", "1.0", rule)
    prompt = "hello"  # nothing in it for the prompt hook to look up

    turn = claude.run(prompt)

    assert_answered(turn, "Noted.")
    request = request_with(turn, prompt)
    # The SessionStart hook's additionalContext, with its header, is in the conversation the model
    # gets with the first prompt, once: the prompt hook does not give the rule again.
    conversation = json.dumps(request.body.get("messages"), ensure_ascii=False)
    assert conversation.count(HEADER) == 1, conversation[:3000]
    assert f"- {rule}" in conversation.split(HEADER, 1)[1]
    assert request.text.count(rule) == 1


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


def recording_octygraph(folder: Path) -> tuple[Path, Path]:
    """An `octygraph` that runs the real one, then notes its arguments, exit status and stdout.

    A call Claude Code gave up on (its hook timeout) is killed before it notes anything, so a noted
    call is one that returned by itself. Returns the command and the file of notes (JSON lines).
    """
    folder.mkdir(parents=True, exist_ok=True)
    notes = folder / "calls.jsonl"
    command = folder / "octygraph"
    command.write_text(
        f"#!{sys.executable}\n"
        "import json, subprocess, sys\n"
        f"done = subprocess.run([{str(OCTYGRAPH)!r}, *sys.argv[1:]], capture_output=True, text=True)\n"
        f"with open({str(notes)!r}, 'a') as notes:\n"
        "    call = {'args': sys.argv[1:], 'status': done.returncode, 'stdout': done.stdout}\n"
        "    notes.write(json.dumps(call) + '\\n')\n"
        "sys.stdout.write(done.stdout)\n"
        "sys.stderr.write(done.stderr)\n"
        "sys.exit(done.returncode)\n"
    )
    command.chmod(0o755)
    return command, notes


def test_an_unusable_octybot_home_does_not_block_the_prompt(
    tmp_path: Path, api: FakeAnthropic, client: Client
) -> None:
    world = make_claude(tmp_path, api, client)
    command, notes = recording_octygraph(tmp_path / "recording")
    from octygraph.claude.install import install
    from octygraph.config.settings import Settings

    settings = Settings.from_env(
        env={"OCTYBOT_HOME": str(world.octy_home)}, cwd=world.project, project_id="proj"
    )
    install(world.project, settings, str(command))
    blocker = world.root / "not-a-folder"
    blocker.write_text("a file where the home folder should be\n")
    prompt = "Who owns the billing service?"

    turn = world.run(prompt, env={"OCTYBOT_HOME": str(blocker / "octy")})

    assert_answered(turn, "Noted.")
    # Each hook returned by itself (none was killed at its timeout) with status 0, the session's
    # first telling the user that memory is off; the prompt then went to the model.
    noted = [json.loads(line) for line in notes.read_text(encoding="utf-8").splitlines()]
    calls = {call["args"][-1]: call for call in noted}
    assert {"session-start", "prompt"} <= set(calls), calls
    assert all(call["status"] == 0 for call in calls.values()), calls
    told = json.loads(calls["session-start"]["stdout"])["systemMessage"]
    assert "memory is off" in told, calls
    request_with(turn, prompt)


def test_a_failing_octygraph_executable_does_not_block_the_prompt(
    tmp_path: Path, api: FakeAnthropic, client: Client
) -> None:
    world = make_claude(tmp_path, api, client)
    broken = tmp_path / "broken" / "octygraph"
    broken.parent.mkdir()
    broken.write_text("#!/bin/sh\necho 'Traceback: something is broken' >&2\nexit 1\n")
    broken.chmod(0o755)
    from octygraph.claude.install import install
    from octygraph.config.settings import Settings

    settings = Settings.from_env(
        env={"OCTYBOT_HOME": str(world.octy_home)}, cwd=world.project, project_id="proj"
    )
    install(world.project, settings, str(broken))
    prompt = "Who owns the billing service?"

    turn = world.run(prompt)

    assert_answered(turn, "Noted.")
    # A hook that fails with status 1 is an error shown to the user: the prompt still goes to the
    # model, without the hook's output (status 2 would have blocked it and shown the model stderr).
    assert "something is broken" not in request_with(turn, prompt).text


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


READY = (b"shortcuts", b"shift+tab")


def test_an_interactive_turn_gets_the_memory(claude: Claude) -> None:
    claude.octygraph("memory", "add", "Maria Zorbex owns the billing service.")
    claude.api.reply = lambda body: "Maria-according-to-memory."
    prompt = "Who owns the billing service?"
    env = {**claude.env, "TERM": "xterm-256color", "COLUMNS": "100", "LINES": "30"}

    pid, fd = pty.fork()
    if pid == 0:  # the child: Claude Code's interactive UI on the pseudo-terminal
        try:
            os.chdir(claude.project)
            os.execve(str(claude.binary), [str(claude.binary)], env)
        finally:
            os._exit(127)
    screen = bytearray()
    try:
        # The prompt box is ready once the status line under it shows its hint: "? for shortcuts"
        # (2.1.197), or the permission mode's "(shift+tab to cycle)" (2.1.332, where auto mode is
        # the default and its hint takes that place).
        assert _read_until(fd, screen, lambda: any(m in screen for m in READY), 60), bytes(
            screen[-2000:]
        )
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
    tmp_path: Path, api: FakeAnthropic, client: Client
) -> None:
    world = make_claude(tmp_path, api, client)
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

"""The Claude Code hooks as Claude Code runs them: a new process, JSON on stdin, exit 0 always."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import cli_json, run_cli

HOOK_BUDGET = (
    "20"  # the budget counts interpreter start and imports: in-process runs load everything
)


def prompt_payload(prompt: str, cwd: Path, session: str = "sess-1") -> str:
    return json.dumps(
        {
            "session_id": session,
            "transcript_path": str(cwd / "t.jsonl"),
            "cwd": str(cwd),
            "permission_mode": "default",
            "hook_event_name": "UserPromptSubmit",
            "prompt": prompt,
        }
    )


def hook(event: str, stdin: str | bytes, **env: str) -> tuple[int, str]:
    """Exit code and stdout of `octygraph hook EVENT`. It ends by its budget whatever happens: the
    watchdog (see `test_watchdog_ends_a_stuck_hook_silently`) ends it with exit 0 and no output."""
    result = run_cli("hook", event, input=stdin, env={"OCTY_HOOK_BUDGET_S": HOOK_BUDGET, **env})
    return result.returncode, result.stdout


def test_watchdog_ends_a_stuck_hook_silently() -> None:
    """A hook stuck past its deadline is ended with exit 0 and nothing printed, so the prompt goes on."""
    code = (
        "import threading, time\n"
        "from octygraph.service.client import start_watchdog\n"
        "start_watchdog(time.monotonic() + 0.2, threading.Lock())\n"
        "time.sleep(600)\n"
        "print('never')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout == "", done.stderr


@pytest.mark.slow
def test_prompt_hook_injects_stored_memory(home: Path) -> None:
    cwd = Path.cwd()
    cli_json(
        "memory",
        "add",
        "Peter handles the Anderson account",
        "--entity",
        "Peter",
        "--entity",
        "Anderson",
        "--json",
    )
    code, out = hook("prompt", prompt_payload("Who handles Anderson?", cwd))
    assert code == 0
    data = json.loads(out)
    assert data["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert "Peter handles the Anderson account" in data["hookSpecificOutput"]["additionalContext"]
    assert len(data["hookSpecificOutput"]["additionalContext"]) < 10_000


@pytest.mark.slow
def test_prompt_hook_stores_and_manifest_lists_it(home: Path) -> None:
    cwd = Path.cwd()
    code, _ = hook("prompt", prompt_payload("Maria owns the billing service", cwd, session="s-42"))
    assert code == 0
    listed = cli_json("memory", "manifest", "--session", "s-42", "--json")
    assert any(e["content"] == "Maria owns the billing service" for e in listed)
    # Forgetting the session removes exactly its memories.
    result = run_cli("memory", "manifest", "--session", "s-42", "--delete")
    assert result.returncode == 0, result.stderr
    archived = cli_json("memory", "ls", "--archived", "--json")
    assert [n["content"] for n in archived] == ["Maria owns the billing service"]
    assert cli_json("search", "billing service owner", "--json") == [] or all(
        h["content"] != "Maria owns the billing service"
        for h in cli_json("search", "billing", "--json")
    )


def test_slash_commands_and_non_human_prompts_are_skipped(home: Path) -> None:
    cwd = Path.cwd()
    for prompt in ("/octybot memory list", "<task-notification>done</task-notification>"):
        code, out = hook("prompt", prompt_payload(prompt, cwd))
        assert code == 0 and out == ""
    assert not (home / "projects" / "proj" / "memory" / "memory.db").exists()


@pytest.mark.slow
def test_bad_stdin_always_exits_zero_within_budget(home: Path) -> None:
    cwd = Path.cwd()
    cases: list[str | bytes] = [
        "",
        "garbage {{{",
        b"\xff\xfe\x00\x01binary\x00" * 100,
        "x" * 1_000_000,
        json.dumps([1, 2, 3]),
        prompt_payload("A" * 1_000_000, cwd),
    ]
    for stdin in cases:
        code, out = hook("prompt", stdin)
        assert code == 0
        if out:
            json.loads(out)


@pytest.mark.slow
def test_missing_or_corrupt_database_exits_zero(home: Path, tmp_path: Path) -> None:
    cwd = Path.cwd()
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"not a database" * 1000)
    code, out = hook("prompt", prompt_payload("Who handles Anderson?", cwd), DB_PATH=str(corrupt))
    # The user is told once per session, in one line, and the prompt goes through without context.
    assert code == 0
    told = json.loads(out)
    assert "hookSpecificOutput" not in told
    assert told["systemMessage"].startswith("octygraph: memory is off: ")
    assert "not an octygraph database" in told["systemMessage"]
    assert "octygraph doctor" in told["systemMessage"] and "\n" not in told["systemMessage"]
    code, out = hook("prompt", prompt_payload("Who handles Anderson?", cwd), DB_PATH=str(corrupt))
    assert code == 0 and out == ""
    code, out = hook(
        "prompt", prompt_payload("Who is Peter?", cwd, session="s-2"), DB_PATH=str(corrupt)
    )
    assert code == 0 and "not an octygraph database" in json.loads(out)["systemMessage"]
    doctor = run_cli("doctor", env={"DB_PATH": str(corrupt)})
    assert doctor.returncode == 1
    assert "cannot be read" in doctor.stdout and "fix:" in doctor.stdout
    assert "Traceback" not in doctor.stdout + doctor.stderr
    assert corrupt.read_bytes().startswith(b"not a database")
    traces = list((home / "projects" / "proj" / "memory" / "debug").glob("*.json"))
    assert any("not an octygraph database" in t.read_text() for t in traces)
    code, out = hook(
        "prompt",
        prompt_payload("Who handles Anderson?", cwd),
        DB_PATH=str(tmp_path / "nowhere" / "missing.db"),
    )
    assert code == 0


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_unreachable_llm_degrades_to_offline_context(home: Path) -> None:
    cwd = Path.cwd()
    cli_json(
        "memory",
        "add",
        "Always run the tests before deploying",
        "--type",
        "instruction",
        "--subtype",
        "rule",
        "--scope",
        "1.0",
        "--json",
    )
    code, out = hook(
        "prompt",
        prompt_payload("I'm about to deploy the API", cwd),
        OCTY_LLM_BASE_URL=f"http://127.0.0.1:{_closed_port()}/v1",
        OCTY_LLM_API_KEY="k",
    )
    assert code == 0
    assert (
        "Always run the tests before deploying"
        in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    )


@pytest.mark.slow
def test_stop_hook_stores_assistant_report(home: Path) -> None:
    cwd = Path.cwd()
    payload = json.dumps(
        {
            "session_id": "s-stop",
            "cwd": str(cwd),
            "hook_event_name": "Stop",
            "stop_hook_active": False,
            "last_assistant_message": "I migrated the billing service to Postgres 16 and updated the deploy script.",
        }
    )
    code, out = hook("stop", payload)
    assert code == 0 and out == ""
    listed = cli_json("memory", "manifest", "--session", "s-stop", "--json")
    assert listed and all(e["source"] == "claude" for e in listed)
    assert any("Postgres 16" in e["content"] for e in listed)
    active = json.dumps(
        {
            "session_id": "s2",
            "cwd": str(cwd),
            "stop_hook_active": True,
            "last_assistant_message": "I deleted the staging database.",
        }
    )
    code, out = hook("stop", active)
    assert code == 0 and out == ""
    assert cli_json("memory", "manifest", "--session", "s2", "--json") == []


class _Collector(BaseHTTPRequestHandler):
    received: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        _Collector.received.append(
            {"path": self.path, "auth": self.headers.get("authorization"), "body": json.loads(body)}
        )
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.mark.slow
def test_usage_is_posted_after_a_hook_run(home: Path) -> None:
    cwd = Path.cwd()
    home.mkdir(parents=True, exist_ok=True)
    (home / "device.json").write_text(json.dumps({"token": "dev-token-1"}))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        code, _ = hook(
            "prompt", prompt_payload("Maria owns the billing service", cwd), WORKER_URL=url
        )
        assert code == 0
        deadline = time.monotonic() + 15
        while not _Collector.received and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _Collector.received, "the detached usage report never arrived"
        got = _Collector.received[0]
        assert got["path"] == "/usage" and got["auth"] == "Bearer dev-token-1"
        assert got["body"]["project"] == "proj"
    finally:
        server.shutdown()
    # A dead server changes nothing for the user.
    code, out = hook(
        "prompt",
        prompt_payload(
            "Who owns billing?", cwd, session="s2"
        ),  # a later session: not its own words
        WORKER_URL=f"http://127.0.0.1:{_closed_port()}",
    )
    assert code == 0 and "billing" in out
    assert os.environ.get("WORKER_URL") is None


@pytest.mark.slow
def test_install_and_uninstall_through_the_cli(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "client-app"
    (project / ".claude").mkdir(parents=True)
    original = {
        "permissions": {"allow": ["Bash(ls)"]},
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo done"}]}]},
    }
    settings_file = project / ".claude" / "settings.json"
    settings_file.write_text(json.dumps(original, indent=2) + "\n")
    first = run_cli("install", str(project))
    assert first.returncode == 0, first.stderr
    data = json.loads(settings_file.read_text())
    prompt_cmd = data["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert "OCTYBOT_PROJECT=client-app" in prompt_cmd and prompt_cmd.endswith("hook prompt")
    exe = prompt_cmd.split('"')[1]
    assert Path(exe).is_absolute() and Path(exe).exists()
    assert {"type": "command", "command": "echo done"} in data["hooks"]["Stop"][0]["hooks"]
    assert (project / ".claude" / "commands" / "octybot.md").exists()
    assert (home / "projects" / "client-app" / "memory").is_dir()
    before = settings_file.read_bytes()
    assert run_cli("install", str(project)).returncode == 0
    assert settings_file.read_bytes() == before
    assert run_cli("uninstall", str(project)).returncode == 0
    assert json.loads(settings_file.read_text()) == original
    assert not (project / ".claude" / "commands" / "octybot.md").exists()
    missing = run_cli("install", str(tmp_path / "nope"))
    assert missing.returncode == 1 and "is not a folder" in missing.stderr


@pytest.mark.slow
def test_dev_mode_logs_hook_runs_with_timestamps(home: Path) -> None:
    cwd = Path.cwd()
    turned_on = run_cli("dev-mode", "--on")
    assert turned_on.returncode == 0 and "Dev mode is on" in turned_on.stdout
    code, _ = hook("prompt", prompt_payload("Maria owns the billing service", cwd))
    assert code == 0
    log = (home / "projects" / "proj" / "memory" / "debug" / "dev.log").read_text()
    stamp, event, details = log.splitlines()[0].split(" ", 2)
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d", stamp) and event == "prompt"
    assert json.loads(details)["stored"] == 1
    assert run_cli("dev-mode").stdout.startswith("Dev mode is off")
    assert run_cli("verbose-mode", "--on").returncode == 0
    assert (home / "projects" / "proj" / "memory" / "debug" / ".verbose-mode").exists()


@pytest.mark.slow
def test_misconfigured_llm_falls_back_to_offline_context(home: Path) -> None:
    cwd = Path.cwd()
    cli_json("memory", "add", "Peter handles the Anderson account", "--json")
    # An @cf/ model without CF_ACCOUNT_ID cannot be reached: the hook thinks without the LLM.
    code, out = hook(
        "prompt",
        prompt_payload("Who handles the Anderson account?", cwd),
        LAYER1="@cf/meta/llama-3.1-8b-instruct",
        LAYER2="@cf/meta/llama-3.1-8b-instruct",
    )
    assert code == 0
    assert (
        "Peter handles the Anderson account"
        in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    )


@pytest.mark.slow
def test_bad_setting_is_told_once_per_session_and_explained_by_doctor(home: Path) -> None:
    cwd = Path.cwd()
    cli_json("memory", "add", "Peter handles the Anderson account", "--json")
    healthy = run_cli("doctor")
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    assert "PROBLEM" not in healthy.stdout

    code, out = hook("prompt", prompt_payload("Who handles Anderson?", cwd), OCTY_MAX_TURNS="lots")
    assert code == 0
    message = json.loads(out)["systemMessage"]
    assert "OCTY_MAX_TURNS" in message and "'lots'" in message and "doctor" in message
    code, out = hook("prompt", prompt_payload("Who handles Anderson?", cwd), OCTY_MAX_TURNS="lots")
    assert code == 0 and "systemMessage" not in out
    # Once fixed, memory is back and nothing more is said.
    code, out = hook("prompt", prompt_payload("Who handles Anderson?", cwd))
    data = json.loads(out)
    assert "systemMessage" not in data
    assert "Peter handles the Anderson account" in data["hookSpecificOutput"]["additionalContext"]

    broken = run_cli("doctor", env={"OCTY_MAX_TURNS": "lots"})
    assert broken.returncode == 1
    assert "OCTY_MAX_TURNS must be a number, got 'lots'" in broken.stdout
    assert "Unset OCTY_MAX_TURNS (default 8)" in broken.stdout
    as_json = run_cli("doctor", "--json", env={"OCTY_MAX_TURNS": "lots"})
    problems = [f for f in json.loads(as_json.stdout) if f["level"] == "problem"]
    assert [f["check"] for f in problems] == ["settings"]

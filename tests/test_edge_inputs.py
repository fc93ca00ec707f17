"""Edge inputs get a useful answer: lone surrogates, a huge working folder, a huge hook payload,
and a bad import header.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from octygraph.integrations.cli import app
from octygraph.session import hooks
from octygraph.text.utf8 import valid_text
from tests.conftest import cli_json, run_cli


def _invoke(*args: str) -> str:
    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


# --- lone surrogates ---------------------------------------------------------------------------


def test_lone_surrogates_become_replacement_characters() -> None:
    assert valid_text("Lisa \ud800 and \udcff") == "Lisa \ufffd and \ufffd"
    assert valid_text("café 😀") == "café 😀"


def test_search_run_and_add_work_on_a_lone_surrogate(home: Path) -> None:
    """In process, as an MCP call or a test would pass it: the text reaches the embedder as is."""
    _invoke("memory", "add", "Lisa runs the Friday release")
    hits = json.loads(_invoke("search", "Lisa \ud800 release", "--json"))
    assert hits and hits[0]["content"] == "Lisa runs the Friday release"
    assert json.loads(_invoke("search", "\ud800", "--json")) is not None
    out = json.loads(_invoke("run", "Who runs the \ud800 Friday release?", "--offline", "--json"))
    assert "Lisa runs the Friday release" in out["context"]
    stored = json.loads(_invoke("memory", "add", "Omar \ud800 owns billing", "--json"))
    assert stored["content"] == "Omar \ufffd owns billing"


@pytest.mark.slow
def test_arguments_that_are_not_utf8_are_read_with_replacements(home: Path) -> None:
    """From a real process: bytes that are not UTF-8 reach Python as lone surrogates."""
    cli_json("memory", "add", "Lisa runs the Friday release", "--json")
    for args in (
        [b"search", b"Lisa \xed\xa0\x80 release \xff", b"--json"],
        [b"run", b"Who runs the caf\xe9 Friday release?", b"--offline", b"--json"],
    ):
        result = subprocess.run(
            [sys.executable.encode(), b"-m", b"octygraph", *args],
            capture_output=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        assert b"Lisa runs the Friday release" in result.stdout


@pytest.mark.slow
def test_a_lone_surrogate_in_a_hook_prompt_is_answered(home: Path) -> None:
    cli_json("memory", "add", "Lisa runs the Friday release", "--json")
    payload = json.dumps(
        {
            "session_id": "s1",
            "cwd": str(Path.cwd()),
            "hook_event_name": "UserPromptSubmit",
            "prompt": "Who runs the \ud800 Friday release?",
        }
    ).encode()
    out = json.loads(hooks.answer("prompt", payload))
    assert "Lisa runs the Friday release" in out["hookSpecificOutput"]["additionalContext"]
    assert run_cli("trace", "list").returncode == 0


# --- a working folder too long to look at ------------------------------------------------------


def _deep_folder(root: Path) -> Path:
    """A real folder whose absolute path is over 5,000 characters (made step by step)."""
    import os

    here = os.getcwd()
    os.chdir(root)
    try:
        for _ in range(25):
            os.mkdir("b" * 200)
            os.chdir("b" * 200)
    finally:
        os.chdir(here)
    return root.joinpath(*["b" * 200] * 25)


def test_ordinary_project_ids_are_unchanged_and_long_ones_short_and_stable() -> None:
    from octygraph.config.settings import sanitize_project_id

    assert sanitize_project_id("my-project") == "my-project"
    assert sanitize_project_id("Acme Billing (v2)") == "Acme-Billing--v2"
    assert sanitize_project_id("x" * 100) == "x" * 100
    long_id = sanitize_project_id("a" * 5000)
    assert len(long_id.encode()) <= 100 and long_id == sanitize_project_id("a" * 5000)
    assert long_id != sanitize_project_id("a" * 4999)
    assert len(sanitize_project_id("項" * 90).encode()) <= 100  # 270 bytes would not be a file name


def test_session_start_in_a_5000_character_working_folder_gives_its_block(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from octygraph.config.settings import sanitize_project_id

    deep = _deep_folder(tmp_path)
    monkeypatch.setenv("OCTYBOT_PROJECT", sanitize_project_id("b" * 200))  # the deep folder's id
    rule = "Always run the contract tests before deploying"
    _invoke("memory", "add", rule, "--type", "instruction", "--scope", "0.9")
    monkeypatch.delenv("OCTYBOT_PROJECT")
    payload = {
        "session_id": "long-start",
        "cwd": str(deep),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    notices: list[str] = []
    out = hooks.answer("session-start", json.dumps(payload).encode(), notices=notices)
    assert notices == []
    assert rule in json.loads(out)["hookSpecificOutput"]["additionalContext"]


@pytest.mark.slow
def test_a_5000_character_working_folder_keeps_memory_on(home: Path, tmp_path: Path) -> None:
    deep = _deep_folder(tmp_path)
    assert len(str(deep)) > 5000
    # The hook names the folder in its payload.
    # The question comes from a later session: a session is not given back what it said itself.
    for session, prompt in (
        ("s1", "Lisa runs the Friday release for Acme."),
        ("s2", "Who runs the Friday release?"),
    ):
        payload = {
            "session_id": session,
            "cwd": str(deep),
            "hook_event_name": "UserPromptSubmit",
            "prompt": prompt,
        }
        out = hooks.answer("prompt", json.dumps(payload).encode())
    assert (
        "Lisa runs the Friday release" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    )
    [project] = (home / "projects").iterdir()
    assert project.name.startswith("b" * 20) and len(project.name) < 100
    assert not [p for p in project.rglob("*.json") if b"File name too long" in p.read_bytes()]
    # The command line runs in it (got to one folder at a time, as no absolute path reaches it).
    go = "import os, sys; [os.chdir('b' * 200) for _ in range(25)]; os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
    for args in (["memory", "add", "Omar owns billing"], ["search", "billing", "--json"]):
        command = [sys.executable, "-c", go, "-m", "octygraph", *args]
        result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
    assert "Omar owns billing" in result.stdout


# --- a hook payload over the stdin limit ----------------------------------------------------------


def _prompt_payload(prompt: str, cwd: Path) -> bytes:
    fields = {
        "session_id": "big1",
        "transcript_path": "/tmp/none.jsonl",
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    }
    return json.dumps(fields).encode()


def test_a_cut_payload_keeps_its_fields_and_the_prompts_first_part() -> None:
    from octygraph.claude import hook_io

    for filler in ("x ", 'é\\"q ', "😀 tail "):  # escapes and characters the cut may split
        prompt = "Lisa runs the Friday release. " + filler * 600_000
        raw = hook_io.read_stdin_bounded(io.BytesIO(_prompt_payload(prompt, Path("/w/p"))))
        request = hook_io.parse_prompt_payload(raw)
        assert request is not None and request.truncated, filler
        assert (request.session_id, request.cwd) == ("big1", "/w/p")
        assert prompt.startswith(request.prompt) and len(request.prompt) > 7000
    stop = json.dumps(
        {"hook_event_name": "Stop", "stop_hook_active": True, "last_assistant_message": "x" * 2**21}
    ).encode()
    assert hook_io.parse_stop_payload(hook_io.read_stdin_bounded(io.BytesIO(stop))) is None
    # A cut payload that is not a JSON object is still nothing to do.
    assert hook_io.parse_prompt_payload(b"x" * hook_io.STDIN_LIMIT) is None
    assert hook_io.parse_prompt_payload(b"[" * hook_io.STDIN_LIMIT) is None


@pytest.mark.slow
def test_a_prompt_over_one_megabyte_is_run_on_its_first_part(home: Path) -> None:
    from octygraph.claude import hook_io

    cli_json("memory", "add", "Lisa runs the Friday release", "--json")
    prompt = "Who runs the Friday release? " + "Here is the log: " + "line ok\n" * 200_000
    payload = _prompt_payload(prompt, Path.cwd())
    assert len(payload) > 1_000_000
    raw = hook_io.read_stdin_bounded(io.BytesIO(payload))  # as the hook reads its stdin
    answer = json.loads(hooks.answer("prompt", raw))["hookSpecificOutput"]["additionalContext"]
    assert "Lisa runs the Friday release" in answer


# --- memory import of a bad file ------------------------------------------------------------------

BAD_IMPORTS = {
    '{"kind": "octygraph-export", "version": {"major": 1}}': 'gives version {"major": 1}',
    '{"kind": "octygraph-export", "version": "abc"}': 'gives version "abc"',
    '{"kind": "octygraph-export", "version": null}': "gives version null",
    '{"kind": "octygraph-export", "version": NaN}': "gives version NaN",
    '{"kind": "octygraph-export", "version": 1e400}': "gives version Infinity",
    '{"kind": "octygraph-export", "version": 1.5}': "gives version 1.5",
    '{"kind": "octygraph-export", "version": true}': "gives version true",
    '{"kind": "octygraph-export", "version": 99}': "written by a newer octygraph",
    '{"version": 1}': "has no kind",
    '{"kind": ["node"]}': 'its kind ["node"] is not node, edge or octygraph-export',
    '{"kind": "node", "id": "a", "type": "blah", "content": "x"}': "unknown memory type 'blah'",
    '{"kind": "node", "id": "a", "type": "fact", "content": "x", "created_at": "yesterday"}': (
        '"yesterday" is not a date'
    ),
    '{"kind": "node", "id": "a", "type": "plan", "content": "x", "valid_from": "soon"}': (
        '"soon" is not a date'
    ),
    '{"kind": "node", "id": "a", "type": "fact", "content": "x", "source": "alien"}': (
        '"alien" is not user or claude'
    ),
}


@pytest.mark.slow
def test_every_bad_import_is_one_plain_sentence(home: Path, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    for line, said in BAD_IMPORTS.items():
        path.write_text(line + "\n", encoding="utf-8")
        result = run_cli("memory", "import", str(path))
        err = result.stderr.strip()
        assert result.returncode == 1 and len(err.splitlines()) == 1, (line, err)
        assert err.startswith("Line 1 of bad.jsonl ") and said in err, (line, err)
        assert "int()" not in err and "Value error" not in err and "Traceback" not in err
    assert not (home / "projects").exists() or not list((home / "projects").rglob("memory.db"))
    good = '{"kind": "octygraph-export", "version": 1}\n' + json.dumps(
        {"kind": "node", "id": "n1", "type": "fact", "content": "Omar owns billing.",
         "created_at": "2025-05-01 12:00:00", "source": "claude"}
    )  # fmt: skip
    path.write_text(good + "\n", encoding="utf-8")
    assert run_cli("memory", "import", str(path)).returncode == 0


def test_import_refuses_an_overlong_line_a_device_and_a_fifo(home: Path, tmp_path: Path) -> None:
    """Nothing is read whole: a line over the bound is refused; so is what is not a regular file."""
    import os

    from octygraph.memory.transfer import MAX_LINE_CHARS, TransferError, parse_jsonl

    # First, so that without the bound this fails on its message rather than reading on.
    long = tmp_path / "long.jsonl"
    header = '{"kind": "octygraph-export", "version": 1}\n'
    long.write_text(header + "x" * (MAX_LINE_CHARS + 1), encoding="utf-8")
    with pytest.raises(TransferError, match=r"^Line 2 of long\.jsonl is longer than"):
        parse_jsonl(long)
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)  # no writer: opening it to read would wait for one
    for path in (fifo, Path("/dev/zero")):
        with pytest.raises(TransferError, match="is not a regular file"):
            parse_jsonl(path)

    _invoke("memory", "add", "Omar owns billing")
    result = run_cli("memory", "import", "/dev/zero", timeout=60)
    err = result.stderr.strip()
    assert result.returncode == 1 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert "Omar owns billing" in _invoke("search", "billing")


@pytest.mark.slow
def test_the_prompt_hook_command_answers_a_payload_over_one_megabyte(home: Path) -> None:
    """The real `octygraph hook prompt`: stdin is read to its limit and the cut payload still runs."""
    cli_json("memory", "add", "Lisa runs the Friday release", "--json")
    prompt = "Who runs the Friday release? " + "Here is the log: " + "line ok\n" * 200_000
    payload = _prompt_payload(prompt, Path.cwd())
    result = run_cli("hook", "prompt", input=payload, env={"OCTY_HOOK_BUDGET_S": "20"})
    assert result.returncode == 0, result.stderr
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Lisa runs the Friday release" in context


def test_a_refused_file_is_told_as_one_plain_sentence() -> None:
    denied = PermissionError(13, "Permission denied", "/home/u/.octybot/octygraph.lock")
    told = hooks.degraded_notice(denied, None)
    assert (
        told == "memory is off: /home/u/.octybot/octygraph.lock cannot be used (permission denied)"
    )
    long = OSError(36, "File name too long", "/work/" + "d" * 5000)
    told = hooks.degraded_notice(long, None)
    assert "Errno" not in told and len(told) < 200 and told.endswith("(file name too long)")

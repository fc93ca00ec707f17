"""A home the user may only read: reads (search, the prompt hook) still answer, writes say so in one
sentence, and nothing in the home changes.

Not root: the home is made read-only with chmod. Root ignores file modes, so there the commands run in
a private mount namespace where the home is bind-mounted read-only (skipped where that is not allowed).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import cli_json
from tests.test_security import prompt_payload, stop_payload

MEMORY = "Peter handles the Anderson account"
RULE = "Always run the contract tests before deploying"
_MOUNT = 'mount --bind "$OCTYBOT_HOME" "$OCTYBOT_HOME" && mount -o remount,ro,bind "$OCTYBOT_HOME"'
_NO_OVERRIDE = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner"]


def _snapshot(home: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(home)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in home.rglob("*")
        if p.is_file()
    }


@pytest.fixture
def read_only(home: Path) -> Iterator[list[str]]:
    """The command prefix that runs a command with `home` read-only (and makes it so)."""
    cli_json("memory", "add", MEMORY, "--type", "fact", "--json")
    if os.geteuid() != 0:
        modes = {p: p.stat().st_mode for p in [home, *home.rglob("*")]}
        for path in modes:
            path.chmod(modes[path] & ~0o222)
        try:
            yield []
        finally:
            for path, mode in modes.items():
                path.chmod(mode)
        return
    if shutil.which("unshare") is None:
        pytest.skip("root, and no unshare to mount the home read-only")
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", f'{_MOUNT} && ! touch "$OCTYBOT_HOME/probe"'],
        env={**os.environ, "OCTYBOT_HOME": str(home)},
        capture_output=True,
    )
    if probe.returncode != 0:
        pytest.skip("root, and no private read-only mount is allowed here")
    yield ["unshare", "-m", "sh", "-c", f'{_MOUNT} && exec "$@"', "sh"]


def _modes(home: Path) -> dict[str, tuple[int, int, int]]:
    """Every path under `home` (and `home`) with its mode, size and modification time."""
    return {
        str(p.relative_to(home)): (p.stat().st_mode, p.stat().st_size, p.stat().st_mtime_ns)
        for p in [home, *home.rglob("*")]
    }


@pytest.fixture
def modes_read_only(home: Path) -> Iterator[list[str]]:
    """The command prefix that runs a command with `home` made read-only by `chmod -R a-w` alone.

    Root ignores modes, so there the command runs without the capabilities that let it (setpriv);
    a chmod back to writable still works, as it does for the folder's owner.
    """
    cli_json("memory", "add", MEMORY, "--type", "fact", "--json")
    cli_json("memory", "add", RULE, "--type", "instruction", "--scope", "0.9", "--json")
    prefix: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("root, and no setpriv to run without overriding file modes")
        prefix = _NO_OVERRIDE
    modes = {p: p.stat().st_mode for p in [home, *home.rglob("*")]}
    for path in modes:
        path.chmod(modes[path] & ~0o222)
    try:
        if prefix and subprocess.run([*prefix, "touch", str(home / "probe")]).returncode == 0:
            pytest.skip("root, and setpriv does not make file modes apply here")
        yield prefix
    finally:
        for path, mode in modes.items():
            path.chmod(mode)


def _run(
    prefix: list[str], *args: str, stdin: str = "", **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, sys.executable, "-m", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, "OCTY_NO_SERVICE": "1", **env},
        timeout=180,
    )


def _prompt(session: str) -> str:
    question = "Who handles Anderson? From now on always run the contract tests first."
    return prompt_payload(question, Path.cwd(), session).decode()


@pytest.mark.slow
def test_a_read_only_home_answers_reads_and_says_writes_are_off(
    home: Path, read_only: list[str]
) -> None:
    before = _snapshot(home)

    search = _run(read_only, "octygraph", "search", "Anderson")
    assert search.returncode == 0, search.stderr
    assert MEMORY in search.stdout

    hook = _run(read_only, "octygraph", "hook", "prompt", stdin=_prompt("ro-1"))
    answer = json.loads(hook.stdout)
    assert MEMORY in answer["hookSpecificOutput"]["additionalContext"]
    assert "read-only" in answer["systemMessage"]

    # The installed hook command: no service can live in this home, so it answers in its process.
    entry = _run(
        read_only, "octygraph.entry", "hook", "prompt", stdin=_prompt("ro-2"), OCTY_NO_SERVICE="0"
    )
    assert MEMORY in json.loads(entry.stdout)["hookSpecificOutput"]["additionalContext"]

    run = _run(read_only, "octygraph", "run", "--offline", "Who handles Anderson?")
    assert run.returncode == 0, run.stderr
    assert MEMORY in run.stdout
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("The memory folder") and "read-only" in last
    assert "Traceback" not in run.stderr

    add = _run(read_only, "octygraph", "memory", "add", "Jane owns the billing service")
    assert add.returncode != 0
    said = (add.stdout + add.stderr).strip()
    assert "read-only" in said and len(said.splitlines()) == 1 and "Traceback" not in said

    reply = "I migrated the billing service to PostgreSQL 16."
    stop = stop_payload(reply, Path.cwd(), "ro-3").decode()
    done = _run(read_only, "octygraph", "hook", "stop", stdin=stop)
    assert done.returncode == 0 and done.stdout == ""

    assert _snapshot(home) == before  # nothing in the home was written


def _start(session: str) -> str:
    return json.dumps(
        {
            "session_id": session,
            "cwd": str(Path.cwd()),
            "hook_event_name": "SessionStart",
            "source": "startup",
        }
    )


@pytest.mark.slow
def test_a_home_made_read_only_by_modes_stays_so_and_still_answers(
    home: Path, modes_read_only: list[str]
) -> None:
    before = _modes(home)
    ro = modes_read_only

    run = _run(ro, "octygraph", "run", "--offline", "Who handles Anderson?")
    assert run.returncode == 0 and MEMORY in run.stdout, run.stderr
    add = _run(ro, "octygraph", "memory", "add", "Jane owns the billing service")
    assert add.returncode != 0 and "read-only" in add.stdout + add.stderr

    # Claude Code's order: the session starts, then its prompts come, each a new hook process.
    for module, service in (("octygraph", "1"), ("octygraph.entry", "0")):
        session = f"ro-seq-{module}"
        start = _run(
            ro, module, "hook", "session-start", stdin=_start(session), OCTY_NO_SERVICE=service
        )
        answer = json.loads(start.stdout)
        assert RULE in answer["hookSpecificOutput"]["additionalContext"]
        told = answer.get("systemMessage", "")
        assert "read-only" in told and "Errno" not in told, (module, start.stdout)
        prompt = _run(ro, module, "hook", "prompt", stdin=_prompt(session), OCTY_NO_SERVICE=service)
        assert MEMORY in json.loads(prompt.stdout)["hookSpecificOutput"]["additionalContext"]

    doctor = _run(ro, "octygraph", "doctor")
    assert "is writable" not in doctor.stdout and "read-only" in doctor.stdout, doctor.stdout

    assert _modes(home) == before  # no mode changed, nothing written

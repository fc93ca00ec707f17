"""Property-based fuzzing of what reaches octygraph from outside: CLI arguments, hook stdin, import files.

Whatever comes in, the command line ends with exit 0, or exit 1 and one sentence on stderr (never a
traceback), and a hook answers with text and never raises.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from octygraph.integrations.cli import app
from octygraph.integrations.cli.guard import run
from octygraph.session import hooks

FUZZ = settings(
    max_examples=int(os.environ.get("OCTY_FUZZ_EXAMPLES", "25")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Any text, lone surrogates included (how Python keeps argument bytes that are not UTF-8).
ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)
ODD_TEXT = st.one_of(
    ANY_TEXT,
    st.sampled_from(
        ["", "-", "--", "--json", "-n", "0", "-1", "1e309", "nan", "\x00", "../..", "/dev/null"]
    ),
)
SAFE_COMMANDS = [
    ["search"],
    ["run", "--offline"],
    ["memory", "add"],
    ["memory", "list"],
    ["memory", "show"],
    ["memory", "import"],
    ["trace", "show"],
    ["trace", "list"],
    ["trace", "prune", "--keep"],
    ["doctor"],
    ["memory", "export", "--format"],
]


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exit_info:
        run(app, args)
    code = exit_info.value.code
    return (code if isinstance(code, int) else 0), capsys.readouterr().err


def _one_sentence_or_success(code: int, err: str) -> None:
    assert "Traceback" not in err, err
    assert code in (0, 1, 2), (code, err)  # 2: a command group alone prints its help, as before
    if code == 1:
        assert err.strip() and len(err.strip().splitlines()) == 1, err


@FUZZ
@given(command=st.sampled_from(SAFE_COMMANDS), extra=st.lists(ODD_TEXT, max_size=4))
def test_cli_arguments_never_end_in_a_traceback(
    command: list[str], extra: list[str], home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _cli([*command, *extra], capsys)
    _one_sentence_or_success(code, err)


@pytest.mark.parametrize("name", ["\x1e", "a\nb", "x\u2028y"])
def test_a_file_name_with_line_breaks_still_gets_one_line(
    name: str, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _cli(["memory", "import", name], capsys)
    assert code == 1
    _one_sentence_or_success(code, err)


JSON_LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    ANY_TEXT.map(lambda t: t.encode("utf-8", "surrogatepass").decode("utf-8", "replace")),
)
JSON_VALUE = st.recursive(
    JSON_LEAF,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
FIELDS = [
    "session_id",
    "cwd",
    "prompt",
    "transcript_path",
    "hook_event_name",
    "last_assistant_message",
    "stop_hook_active",
]


def _payload(fields: dict[str, Any]) -> bytes:
    return json.dumps(fields, allow_nan=True).encode()


HOOK_STDIN = st.one_of(
    st.binary(max_size=200),
    st.dictionaries(st.sampled_from(FIELDS), JSON_VALUE, max_size=6).map(_payload),
    JSON_VALUE.map(lambda v: json.dumps(v).encode()),
    st.integers(1, 5000).map(lambda n: b'{"prompt":' + b"[" * n + b"]" * n + b"}"),
)


@FUZZ
@given(event=st.sampled_from(["prompt", "stop", "session-start"]), raw=HOOK_STDIN)
def test_hooks_answer_any_stdin(
    event: str, raw: bytes, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OCTY_HOOK_BUDGET_S", "60")
    out = hooks.answer(event, raw)
    assert isinstance(out, str)
    if out:
        assert json.loads(out)["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"


IMPORT_LINE = st.one_of(
    st.binary(max_size=80),
    JSON_VALUE.map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries(
        {"kind": st.sampled_from(["node", "edge", "octygraph-export", "other"])},
        optional={
            "id": JSON_VALUE,
            "type": st.one_of(st.sampled_from(["fact", "entity", "instruction"]), JSON_VALUE),
            "content": JSON_VALUE,
            "version": JSON_VALUE,
            "attributes": JSON_VALUE,
            "source_id": JSON_VALUE,
            "target_id": JSON_VALUE,
            "edge_type": JSON_VALUE,
            "superseded_by": JSON_VALUE,
        },
    ).map(lambda d: json.dumps(d).encode()),
    st.integers(1, 5000).map(lambda n: b'{"kind":' + b"[" * n + b"]" * n + b"}"),
)


@FUZZ
@given(lines=st.lists(IMPORT_LINE, min_size=1, max_size=5))
def test_memory_import_of_any_file_is_one_sentence(
    lines: list[bytes], home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    code, err = _cli(["memory", "import", str(path)], capsys)
    _one_sentence_or_success(code, err)


def _octygraph(*args: bytes | str, env: dict[str, str] | None = None) -> tuple[int, str]:
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "octygraph", *args],
        capture_output=True,
        env={**os.environ, **(env or {})},
        timeout=120,
    )
    return result.returncode, result.stderr.decode("utf-8", "replace")


@pytest.mark.slow
def test_the_reported_bad_inputs_are_one_sentence_each(home: Path, tmp_path: Path) -> None:
    """The cases of the issue, as a user meets them: a real process each."""
    latin1 = tmp_path / "latin1.jsonl"
    latin1.write_bytes('{"kind": "node", "content": "caf\xe9"}\n'.encode("latin-1"))
    nested = tmp_path / "nested.jsonl"
    nested.write_text('{"kind": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    header = tmp_path / "header.jsonl"
    header.write_text('{"kind": "octygraph-export", "version": {"major": 1}}\n')
    cases = [
        (("memory", "import", str(latin1)), None),
        (("memory", "import", str(nested)), None),
        (("memory", "import", str(header)), None),
        (("search", "anything"), {"DB_PATH": "/dev/null"}),
    ]
    for args, env in cases:
        code, err = _octygraph(*args, env=env)
        assert code == 1, (args, err)
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, (args, err)


@pytest.mark.slow
def test_folders_made_for_exports_are_private(home: Path, tmp_path: Path) -> None:
    code, err = _octygraph("memory", "add", "Acme renews in March")
    assert code == 0, err
    target = tmp_path / "out" / "deep" / "all.jsonl"
    code, err = _octygraph("memory", "export", "--format", "jsonl", "--output", str(target))
    assert code == 0, err
    for folder in (tmp_path / "out", tmp_path / "out" / "deep"):
        assert folder.stat().st_mode & 0o777 == 0o700
    for folder in [home, *(p for p in home.rglob("*") if p.is_dir())]:
        assert folder.stat().st_mode & 0o777 == 0o700, folder

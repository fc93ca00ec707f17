"""Hook stdin/stdout: bounded reads, payload parsing and the injected-context JSON."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from octygraph.claude.hook_io import (
    MAX_PROMPT_CHARS,
    PromptRequest,
    StopRequest,
    format_prompt_output,
    parse_payload,
    parse_prompt_payload,
    parse_stop_payload,
    read_stdin_bounded,
)

# Shapes from Claude Code's hook reference.
PROMPT_PAYLOAD = {
    "session_id": "abc123",
    "transcript_path": "/Users/me/.claude/projects/p/00893aaf-19fa-41d2-8238-13269b9b3ca0.jsonl",
    "cwd": "/Users/me/proj",
    "permission_mode": "default",
    "hook_event_name": "UserPromptSubmit",
    "prompt": "Peter handles the Anderson account now. Who reviews his drafts?",
}
STOP_PAYLOAD = {
    "session_id": "abc123",
    "transcript_path": "~/.claude/projects/p/00893aaf.jsonl",
    "cwd": "/Users/me/proj",
    "permission_mode": "default",
    "hook_event_name": "Stop",
    "stop_hook_active": False,
    "last_assistant_message": "I've completed the refactoring. Here's a summary...",
    "background_tasks": [{"id": "task-001", "type": "shell", "status": "running"}],
}


def encode(data: object) -> bytes:
    return json.dumps(data).encode()


def test_parses_real_prompt_payload() -> None:
    request = parse_prompt_payload(encode(PROMPT_PAYLOAD))
    assert request == PromptRequest(
        prompt=PROMPT_PAYLOAD["prompt"],
        session_id="abc123",
        cwd="/Users/me/proj",
        transcript_path=PROMPT_PAYLOAD["transcript_path"],
    )


def test_parses_payload_with_bom_unicode_and_extra_fields() -> None:
    payload = {**PROMPT_PAYLOAD, "prompt": "  Zoë prefers 東京 \x00offices  ", "prompt_id": "p-1"}
    request = parse_prompt_payload(b"\xef\xbb\xbf" + json.dumps(payload).encode())
    assert request is not None
    assert request.prompt == "Zoë prefers 東京 offices"
    assert request.prompt_id == "p-1"


GARBAGE = [
    b"",
    b"   \n",
    b"not json at all",
    b'{"prompt": "unterminated',
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00",
    b"\xff\xfe\xfa invalid utf-8 {}",
    b'{"prompt": "nul \x00 byte"}',
    b"[1, 2, 3]",
    b'"just a string"',
    b"null",
    b"[" * 100_000,
]


@pytest.mark.parametrize("raw", GARBAGE)
def test_garbage_empty_and_binary_give_none(raw: bytes) -> None:
    assert parse_prompt_payload(raw) is None
    assert parse_stop_payload(raw) is None


@pytest.mark.parametrize(
    "payload",
    [{}, {"prompt": ""}, {"prompt": "   \n\t "}, {"prompt": 42}, {"prompt": ["a", "b"]}],
)
def test_missing_or_blank_prompt_gives_none(payload: dict[str, object]) -> None:
    assert parse_prompt_payload(encode(payload)) is None


@pytest.mark.parametrize(
    "prompt",
    [
        "/octybot memory list",
        "   /help",
        "<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>",
        "<command-name>/model</command-name>",
        "<local-command-stdout>Set model to opus</local-command-stdout>",
        "<system-reminder>Background task finished</system-reminder>",
    ],
)
def test_slash_commands_and_non_human_prompts_are_skipped(prompt: str) -> None:
    assert parse_prompt_payload(encode({**PROMPT_PAYLOAD, "prompt": prompt})) is None


def test_subagent_and_other_events_are_skipped() -> None:
    assert parse_prompt_payload(encode({**PROMPT_PAYLOAD, "agent_id": "agent-7"})) is None
    assert parse_prompt_payload(encode({**PROMPT_PAYLOAD, "hook_event_name": "Stop"})) is None
    # A prompt that merely mentions a tag later on is human.
    mention = "Why does my hook print <system-reminder> tags?"
    request = parse_prompt_payload(encode({**PROMPT_PAYLOAD, "prompt": mention}))
    assert request is not None and request.prompt == mention


def test_lone_surrogates_become_encodable() -> None:
    raw = b'{"prompt": "broken \\ud800 emoji", "session_id": "s"}'
    request = parse_prompt_payload(raw)
    assert request is not None
    request.prompt.encode("utf-8")  # would raise on a lone surrogate
    assert request.prompt.startswith("broken") and request.prompt.endswith("emoji")


def test_long_prompt_is_truncated_at_a_word_boundary() -> None:
    words = "memory " * 128_000  # ~900 KB: under the stdin limit, far over the prompt limit
    payload = encode({**PROMPT_PAYLOAD, "prompt": words})
    assert len(payload) < 1_000_000
    request = parse_prompt_payload(payload)
    assert request is not None and request.truncated
    assert 0 < len(request.prompt) <= MAX_PROMPT_CHARS
    assert request.prompt.endswith("memory")


class _CountingStream(io.BytesIO):
    """A binary stream that counts the bytes asked of it."""

    asked = 0

    def read(self, size: int | None = -1, /) -> bytes:
        chunk = super().read(size)
        self.asked += len(chunk)
        return chunk


def test_one_megabyte_input_is_bounded() -> None:
    payload = encode({**PROMPT_PAYLOAD, "prompt": "x" * (1 << 20)})
    assert len(payload) > 1_000_000
    stream = _CountingStream(payload)
    raw = read_stdin_bounded(stream)
    request = parse_prompt_payload(raw)
    assert len(raw) == 1_000_000
    assert stream.asked == 1_000_000  # the rest of the input is never read
    # Cut input no longer parses as a whole: its fields are read from the part kept.
    assert request is not None and request.truncated and request.prompt == "x" * MAX_PROMPT_CHARS
    assert request.session_id == PROMPT_PAYLOAD["session_id"]


def test_reads_text_stream_buffer_and_pipe() -> None:
    wrapper = io.TextIOWrapper(io.BytesIO(encode(PROMPT_PAYLOAD)), encoding="utf-8")
    assert parse_prompt_payload(read_stdin_bounded(wrapper)) is not None

    read_fd, write_fd = os.pipe()
    os.write(write_fd, encode(PROMPT_PAYLOAD))
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        assert read_stdin_bounded(pipe, limit=64) == encode(PROMPT_PAYLOAD)[:64]


def test_tty_is_never_read() -> None:
    main_fd, tty_fd = os.openpty()
    try:
        os.write(main_fd, b"typed\n")  # a line is waiting: reading the terminal would take it
        with os.fdopen(tty_fd, "rb", buffering=0, closefd=False) as tty:
            assert read_stdin_bounded(tty) == b""
        os.set_blocking(tty_fd, False)
        assert os.read(tty_fd, 64) == b"typed\n"  # still there: the terminal was never read
    finally:
        os.close(tty_fd)
        os.close(main_fd)


def test_closed_stream_gives_empty() -> None:
    stream = io.BytesIO(b"{}")
    stream.close()
    assert read_stdin_bounded(stream) == b""


def test_output_is_documented_json_shape() -> None:
    context = "Relevant memories (octybot):\n- Peter handles the Anderson account.\n- Zoë: 東京"
    out = format_prompt_output(context)
    assert out.isascii()
    data = json.loads(out)
    assert data == {
        "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": context}
    }


def test_empty_context_prints_nothing() -> None:
    assert format_prompt_output("") == ""
    assert format_prompt_output("  \n\n ") == ""


def test_output_is_capped_at_a_line_boundary() -> None:
    lines = [f"- fact number {i} about the Anderson account" for i in range(1000)]
    context = "\n".join(lines)
    injected = json.loads(format_prompt_output(context))["hookSpecificOutput"]["additionalContext"]
    assert 8000 < len(injected) <= 9000
    assert set(injected.split("\n")) <= set(lines)  # only whole lines
    assert context.startswith(injected)

    big = json.loads(format_prompt_output(context, max_chars=50_000))
    assert len(big["hookSpecificOutput"]["additionalContext"]) <= 10_000

    one_line = "y" * 20_000
    clipped = json.loads(format_prompt_output(one_line, max_chars=500))
    assert clipped["hookSpecificOutput"]["additionalContext"] == "y" * 500


def test_stop_payload() -> None:
    request = parse_stop_payload(encode(STOP_PAYLOAD))
    assert request is not None
    assert request.last_assistant_message == STOP_PAYLOAD["last_assistant_message"]
    assert (request.session_id, request.cwd) == ("abc123", "/Users/me/proj")

    assert parse_stop_payload(encode({**STOP_PAYLOAD, "stop_hook_active": True})) is None
    assert parse_stop_payload(encode({**STOP_PAYLOAD, "agent_id": "a1"})) is None
    assert parse_stop_payload(encode({**STOP_PAYLOAD, "hook_event_name": "SubagentStop"})) is None
    missing = {k: v for k, v in STOP_PAYLOAD.items() if k != "last_assistant_message"}
    empty = parse_stop_payload(encode(missing))
    assert empty is not None and empty.last_assistant_message == ""


def test_parse_payload_picks_the_event_and_drops_a_stop_with_nothing_to_store() -> None:
    assert parse_payload("prompt", encode(PROMPT_PAYLOAD)) == parse_prompt_payload(
        encode(PROMPT_PAYLOAD)
    )
    assert isinstance(parse_payload("stop", encode(STOP_PAYLOAD)), StopRequest)
    blank = {**STOP_PAYLOAD, "last_assistant_message": "  "}
    assert parse_payload("stop", encode(blank)) is None
    assert parse_payload("prompt", encode(STOP_PAYLOAD)) is None  # another event's payload
    assert parse_payload("notification", encode(PROMPT_PAYLOAD)) is None


def test_hook_io_reads_real_stdin_of_a_child(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from octygraph.claude.hook_io import read_stdin_bounded, parse_prompt_payload,"
        " format_prompt_output\n"
        "req = parse_prompt_payload(read_stdin_bounded(sys.stdin))\n"
        "print(format_prompt_output('Known: ' + req.prompt) if req else '', end='')\n"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", code],
        input=encode(PROMPT_PAYLOAD),
        capture_output=True,
        timeout=20,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    data = json.loads(out.stdout)
    assert data["hookSpecificOutput"]["additionalContext"] == "Known: " + PROMPT_PAYLOAD["prompt"]

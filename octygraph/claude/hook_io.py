"""Claude Code hook input and output: bounded stdin, payload parsing, the injected-context JSON.

Claude Code sends one JSON object on stdin per hook call and reads JSON from stdout. Everything here
fails closed to "nothing to do" (`None` or `""`) so that a hook never blocks or loses a prompt.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import IO, Any

STDIN_LIMIT = 1_000_000
MAX_PROMPT_CHARS = 8000
MAX_ASSISTANT_CHARS = 20_000
# Claude Code moves anything longer than 10,000 characters into a file and shows Claude a preview.
CONTEXT_HARD_CAP = 10_000
DEFAULT_CONTEXT_CHARS = 9000

# Prompts that start with these were not typed by a person: background-task results, command wrappers,
# hook or system reminders, shell-mode echoes.
NON_HUMAN_PREFIXES = (
    "<task-notification>",
    "<command-",
    "<local-command-",
    "<system-reminder>",
    "<user-prompt-submit-hook>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<teammate-message",
    "<cross-session-message",
)

# C0 controls except tab, newline and carriage return; they only confuse tokenizers and terminals.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@dataclass(frozen=True)
class PromptRequest:
    """A human prompt from a UserPromptSubmit hook call."""

    prompt: str
    session_id: str = ""
    cwd: str = ""
    transcript_path: str = ""
    prompt_id: str = ""
    truncated: bool = False


@dataclass(frozen=True)
class StopRequest:
    """The end of one assistant turn, from a Stop hook call."""

    last_assistant_message: str
    session_id: str = ""
    cwd: str = ""
    transcript_path: str = ""
    stop_hook_active: bool = False


@dataclass(frozen=True)
class SessionStartRequest:
    """A session starting or resuming, from a SessionStart hook call."""

    source: str
    """startup, resume, clear or compact."""
    session_id: str = ""
    cwd: str = ""


@dataclass(frozen=True)
class SessionEndRequest:
    """A session ending, from a SessionEnd hook call."""

    session_id: str
    cwd: str = ""
    reason: str = "other"
    """clear, resume, logout, prompt_input_exit or other."""
    transcript_path: str = ""


def read_stdin_bounded(stream: IO[Any], limit: int = STDIN_LIMIT) -> bytes:
    """Read at most `limit` bytes of hook input; never wait on a terminal.

    Args:
        stream: `sys.stdin` (text, its `.buffer` is used) or any binary stream.
        limit: Byte cap. Longer input is cut; the parsers read the fields of the part kept.

    Returns:
        The bytes read, `b""` for a TTY, a closed stream or any read error.
    """
    try:
        if stream.isatty():
            return b""
    except (AttributeError, ValueError, OSError):
        return b""
    source = getattr(stream, "buffer", stream)
    chunks: list[bytes] = []
    size = 0
    try:
        while size < limit:
            chunk = source.read(min(65536, limit - size))
            if not chunk:
                break
            if isinstance(chunk, str):
                chunk = chunk.encode("utf-8", "replace")
            chunks.append(chunk)
            size += len(chunk)
    except (OSError, ValueError):
        return b""
    return b"".join(chunks)[:limit]


def _load_object(raw: bytes) -> dict[str, Any] | None:
    """Decode one JSON object from UTF-8 bytes, or None for anything else.

    A payload cut at `STDIN_LIMIT` no longer parses; its string fields are read from the part kept,
    so a huge prompt still gets its first part run rather than being dropped.
    """
    if not raw or b"\x00" in raw:
        return None
    try:
        text = raw.decode("utf-8-sig")
        data = json.loads(text)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return _cut_object(raw) if len(raw) >= STDIN_LIMIT else None
    return data if isinstance(data, dict) else None


_FIELD = re.compile(r'"([a-z_]{1,40})"\s*:\s*(?="|true\b|false\b)')


def _cut_object(raw: bytes) -> dict[str, Any] | None:
    """The string and boolean fields of a JSON object cut short, the last one up to the cut."""
    text = raw.decode("utf-8-sig", "ignore")  # the cut may split a character
    if not text.lstrip().startswith("{"):
        return None
    data: dict[str, Any] = {}
    decoder = json.JSONDecoder()
    for match in _FIELD.finditer(text):
        key, start = match.group(1), match.end()
        if key in data:
            continue
        try:
            data[key] = decoder.raw_decode(text, start)[0]
        except ValueError:  # the string the cut fell in: keep what came before it
            if text[start] == '"':
                data[key] = _string_start(text[start + 1 :])
    return data or None


def _string_start(body: str) -> str:
    """The value of a JSON string cut before its closing quote (an escape cut in two is dropped)."""
    for drop in range(7):
        try:
            value = json.loads('"' + body[: len(body) - drop] + '"')
        except ValueError:
            continue
        return value if isinstance(value, str) else ""
    return ""


def _text(value: Any) -> str:
    """A string field, cleaned of control characters and lone surrogates; "" for non-strings."""
    if not isinstance(value, str):
        return ""
    # Lone surrogates (legal in JSON escapes) cannot be written to SQLite or a UTF-8 stream.
    value = value.encode("utf-8", "replace").decode("utf-8")
    return _CONTROL.sub("", value)


def _is_subagent(data: dict[str, Any]) -> bool:
    return bool(data.get("agent_id"))


def _truncate(text: str, max_chars: int) -> tuple[str, bool]:
    """Cut at a whitespace boundary near `max_chars` when the text is longer."""
    if len(text) <= max_chars:
        return text, False
    cut = text[:max_chars]
    space = cut.rfind(" ", max_chars // 2)
    newline = cut.rfind("\n", max_chars // 2)
    boundary = max(space, newline)
    return (cut[:boundary] if boundary > 0 else cut).rstrip(), True


def parse_prompt_payload(raw: bytes, max_chars: int = MAX_PROMPT_CHARS) -> PromptRequest | None:
    """Parse UserPromptSubmit input into a request worth running the memory pipeline on.

    Args:
        raw: The stdin bytes.
        max_chars: Longer prompts are cut to about this many characters.

    Returns:
        A `PromptRequest`, or None for empty, undecodable or non-object input, a missing or blank
        prompt, slash commands, non-human payloads (task notifications, command wrappers, reminders),
        subagent calls, and other hook events.
    """
    data = _load_object(raw)
    if data is None:
        return None
    event = data.get("hook_event_name")
    if event is not None and event != "UserPromptSubmit":
        return None
    if _is_subagent(data):
        return None
    prompt = _text(data.get("prompt")).strip()
    if not prompt or prompt.startswith("/"):
        return None
    if prompt.startswith(NON_HUMAN_PREFIXES):
        return None
    prompt, truncated = _truncate(prompt, max_chars)
    return PromptRequest(
        prompt=prompt,
        session_id=_text(data.get("session_id")),
        cwd=_text(data.get("cwd")),
        transcript_path=_text(data.get("transcript_path")),
        prompt_id=_text(data.get("prompt_id")),
        truncated=truncated,
    )


def parse_stop_payload(raw: bytes, max_chars: int = MAX_ASSISTANT_CHARS) -> StopRequest | None:
    """Parse Stop input.

    Args:
        raw: The stdin bytes.
        max_chars: Longer assistant messages are cut to about this many characters.

    Returns:
        A `StopRequest` (its message may be empty), or None for garbage, other events, subagent stops
        and when `stop_hook_active` is true (Claude is already continuing because of a Stop hook).
    """
    data = _load_object(raw)
    if data is None:
        return None
    event = data.get("hook_event_name")
    if event is not None and event != "Stop":
        return None
    if _is_subagent(data) or data.get("stop_hook_active") is True:
        return None
    message, _ = _truncate(_text(data.get("last_assistant_message")).strip(), max_chars)
    return StopRequest(
        last_assistant_message=message,
        session_id=_text(data.get("session_id")),
        cwd=_text(data.get("cwd")),
        transcript_path=_text(data.get("transcript_path")),
        stop_hook_active=False,
    )


def parse_session_start_payload(raw: bytes) -> SessionStartRequest | None:
    """Parse SessionStart input; None for garbage and other events."""
    data = _load_object(raw)
    if data is None:
        return None
    event = data.get("hook_event_name")
    if event is not None and event != "SessionStart":
        return None
    return SessionStartRequest(
        source=_text(data.get("source")) or "startup",
        session_id=_text(data.get("session_id")),
        cwd=_text(data.get("cwd")),
    )


def parse_session_end_payload(raw: bytes) -> SessionEndRequest | None:
    """Parse SessionEnd input; None for garbage, other events and a payload without a session."""
    data = _load_object(raw)
    if data is None or data.get("hook_event_name") not in (None, "SessionEnd"):
        return None
    session_id = _text(data.get("session_id"))
    if not session_id:
        return None
    return SessionEndRequest(
        session_id=session_id,
        cwd=_text(data.get("cwd")),
        reason=_text(data.get("reason")) or "other",
        transcript_path=_text(data.get("transcript_path")),
    )


HookRequest = PromptRequest | StopRequest | SessionStartRequest | SessionEndRequest


def parse_payload(event: str, raw: bytes) -> HookRequest | None:
    """The request of one hook call (`prompt`, `stop`, `session-start` or `session-end`).

    Returns:
        The parsed request, or None when there is nothing to do: an unknown event, a payload its
        parser refuses, or a stop without an assistant message.
    """
    if event == "prompt":
        return parse_prompt_payload(raw)
    if event == "stop":
        stop = parse_stop_payload(raw)
        return stop if stop is not None and stop.last_assistant_message.strip() else None
    if event == "session-start":
        return parse_session_start_payload(raw)
    if event == "session-end":
        return parse_session_end_payload(raw)
    return None


def clip_context(context: str, max_chars: int = DEFAULT_CONTEXT_CHARS) -> str:
    """Cut `context` to at most `max_chars` (never above 10,000), at a line boundary when possible."""
    limit = max(1, min(max_chars, CONTEXT_HARD_CAP))
    text = context.strip()
    if len(text) <= limit:
        return text
    cut = text[:limit]
    newline = cut.rfind("\n")
    if newline > 0:
        cut = cut[:newline]
    return cut.rstrip()


def format_prompt_output(context: str, max_chars: int = DEFAULT_CONTEXT_CHARS) -> str:
    """The UserPromptSubmit stdout for `context`.

    Args:
        context: The memory block to inject.
        max_chars: Cap on the injected text (clamped to Claude Code's 10,000-character limit).

    Returns:
        `""` when there is nothing to inject, else the documented
        `{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": ...}}`.
    """
    return _context_output("UserPromptSubmit", context, max_chars)


def format_session_start_output(context: str, max_chars: int = DEFAULT_CONTEXT_CHARS) -> str:
    """The SessionStart stdout for `context`: the same JSON with `"hookEventName": "SessionStart"`."""
    return _context_output("SessionStart", context, max_chars)


def _context_output(event_name: str, context: str, max_chars: int) -> str:
    text = clip_context(context or "", max_chars)
    if not text:
        return ""
    payload = {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": text}}
    # ASCII escapes keep the output valid whatever encoding the hook's stdout has.
    return json.dumps(payload, ensure_ascii=True)

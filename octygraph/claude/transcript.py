"""What the user typed in one Claude Code session, read from the session's transcript.

Claude Code writes a session as JSON Lines: one entry a line, `{"type": "user", "message": {"role":
"user", "content": ...}, ...}` for what reached the model as the user's turn. Only some of those are a
person typing: tool results, command wrappers, reminders and compaction summaries come as user entries
too and are skipped here. Transcripts grow to many megabytes (tool output), so only their end is read.
A missing or unreadable transcript means no prompts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from octygraph.claude.hook_io import NON_HUMAN_PREFIXES

TAIL_BYTES = 4_000_000
"""Only this much of the transcript's end is read: the last prompts are what is wanted."""
CUT_MARK = "…"


def last_prompts(path: str | Path, max_chars: int) -> list[str]:
    """The session's last human prompts, oldest first, at most `max_chars` in all.

    The oldest prompt kept is cut to its end when the whole of it does not fit.
    """
    prompts = _human_prompts(_tail_lines(Path(path)))
    kept: list[str] = []
    room = max_chars
    for prompt in reversed(prompts):
        if room <= len(CUT_MARK):
            break
        if len(prompt) > room:
            prompt = CUT_MARK + prompt[len(prompt) - room + len(CUT_MARK) :]
        kept.append(prompt)
        room -= len(prompt)
    return kept[::-1]


def _tail_lines(path: Path) -> list[bytes]:
    try:
        with path.open("rb") as f:
            size = f.seek(0, 2)
            start = max(0, size - TAIL_BYTES)
            f.seek(start)
            data = f.read(TAIL_BYTES)
    except OSError:
        return []
    lines = data.splitlines()
    return lines[1:] if start > 0 else lines  # the first line read from the middle is cut


def _human_prompts(lines: list[bytes]) -> list[str]:
    prompts = []
    for line in lines:
        if b'"user"' not in line:  # most lines are the assistant's and tool output: skip unparsed
            continue
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):
            continue
        text = _typed_text(entry) if isinstance(entry, dict) else None
        if text:
            prompts.append(text)
    return prompts


def _typed_text(entry: dict[str, Any]) -> str | None:
    """The text a person typed, when `entry` is such a turn."""
    if entry.get("type") != "user" or entry.get("toolUseResult") is not None:
        return None
    if entry.get("isMeta") or entry.get("isSidechain") or entry.get("isCompactSummary"):
        return None
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):
        if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            return None
        content = "\n".join(
            str(b.get("text") or "")
            for b in content
            if isinstance(b, dict) and b.get("type") == "text"
        )
    if not isinstance(content, str):
        return None
    text = content.strip()
    if not text or text.startswith("/") or text.startswith(NON_HUMAN_PREFIXES):
        return None
    return text

"""Cut a message into the units the storage gate judges: sentences, and clauses of mixed sentences.

Real prompts mix a task with a fact ("Add retries to the uploader; we use tenacity for all retries
here"), paste logs and code between sentences, and run sentences together with commas. Each unit is
judged on its own so that only the durable part is stored. Pasted machine output (stack frames, log
lines, code) is recognised by its shape and kept as a unit of its own, marked `machine`, so it can never
merge into a neighbouring sentence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from octygraph.text.words import rx, split_sentences

MAX_SEGMENTS: Final = 48
MAX_SEGMENT_CHARS: Final = 600

_FENCE: Final = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_STACK_FRAME: Final = re.compile(
    r"""^\s*(?:at\s+[\w$.<>\[\]/]+\s*\(|at\s+\S+:\d+|File\s+"[^"]+",\s+line\s+\d+|
    Traceback\s+\(most\s+recent|\d+:\s+0x[0-9a-f]+|#\d+\s+0x[0-9a-f]+|\^+\s*$|~+\^|
    [\w.]+(?:Error|Exception|Warning):\s|npm\s+(?:ERR!|WARN)|error(?:\[\w+\])?:|warning:|
    \[?\d{4}-\d\d-\d\d[T\s]\d\d:\d\d|\d\d:\d\d:\d\d[.,]\d+|\s*-->\s|\s*\|\s*\^|
    (?:INFO|WARN|WARNING|ERROR|DEBUG|TRACE|FATAL)\b[\s:\]]|FAILED\s|PASSED\s|
    [$>#❯➜»]\s*\S|>>>\s|\+\s|-\s\s|\#{1,6}\s)""",
    re.VERBOSE,
)
"""A clause that only leads in to the next ("note that as a rule, ..."): joined to it, not judged alone
(a whole clause, unlike `text.FILLER_LEAD`, which skips words before a pattern)."""
_SYMBOLS: Final = re.compile(r"[{}()\[\];=<>|\\/$`\"'@#%^&*~]")
# A comma or dash followed by a new independent clause about "us": "..., we use tenacity here".
_CLAUSE_BREAK: Final = rx(
    r"""(?:;\s+|\s+[-–—]+\s+|,\s+(?:and\s+|but\s+|since\s+|because\s+|as\s+)?(?=(?:we|our|i|i'm|
    we're|we've|my|fyi|btw|this\s+(?:repo|project|app|codebase))\b)|
    \s+(?:since|because)\s+(?=(?:we|our)\s))"""
)


@dataclass(frozen=True)
class Segment:
    """One unit of a message: its text and whether it looks like pasted machine output."""

    text: str
    machine: bool = False
    sentence: str = ""
    """The whole sentence when this segment is one of its clauses, else empty."""


def is_machine_line(line: str) -> bool:
    """Whether a line is pasted output or code (stack frames, log lines, symbol-dense text)."""
    stripped = line.strip()
    if not stripped:
        return False
    if _STACK_FRAME.match(line):
        return True
    symbols = len(_SYMBOLS.findall(stripped))
    letters = sum(ch.isalpha() for ch in stripped)
    if len(stripped) > 12 and symbols >= 4 and symbols > 0.12 * len(stripped):
        return True
    return bool(stripped.endswith(("{", ";", "};", ");")) and symbols >= 2) or (
        len(stripped) > 20 and letters < 0.45 * len(stripped)
    )


_ONLY_REFERENCES: Final = re.compile(r"^(?:\s*(?:@\S+|https?://\S+|[,;.]|and))+\s*$")


_LEAD_IN: Final = re.compile(
    r"""(?i)^(?:(?:note|remember|keep\s+in\s+mind)(?:\s+that)?\s*|also\s+|btw\s+|fyi\s+|and\s+)*
    (?:as\s+a\s+rule|in\s+general|generally|by\s+default|for\s+the\s+record|for\s+context|
    importantly|going\s+forward|from\s+now\s+on|in\s+this\s+(?:repo|project|codebase))?$""",
    re.VERBOSE,
)


_INLINE_CODE: Final = re.compile(r"`[^`\n]+`")


def _split_outside_code(sentence: str) -> list[str]:
    """The sentence cut at each clause break that is not inside `inline code` (`cargo clippy -- -D`)."""
    code = [m.span() for m in _INLINE_CODE.finditer(sentence)]
    pieces, start = [], 0
    for brk in _CLAUSE_BREAK.finditer(sentence):
        if any(a <= brk.start() < b for a, b in code):
            continue
        pieces.append(sentence[start : brk.start()])
        start = brk.end()
    return [*pieces, sentence[start:]]


def _clauses(sentence: str) -> list[str]:
    parts: list[str] = []
    for part in (p.strip(" ,;-–—") for p in _split_outside_code(sentence)):
        if not part:
            continue
        if parts and _LEAD_IN.match(parts[-1]):
            parts[-1] = f"{parts[-1]}, {part}"  # "note that as a rule, we ..." is one statement
        else:
            parts.append(part)
    # A clause too short to stand alone stays with the sentence it came from.
    if len(parts) > 1 and all(len(p.split()) >= 3 for p in parts):
        return parts
    return [sentence.strip()]


def segments(message: str) -> list[Segment]:
    """The message as judged units, in order, at most `MAX_SEGMENTS`.

    Fenced code is one machine segment; a line of pasted output is a machine segment; runs of prose lines
    are split into sentences, and sentences into independent clauses.
    """
    text = message.replace("\r\n", "\n")
    out: list[Segment] = []
    prose: list[str] = []

    def flush() -> None:
        if prose:
            pending = ""
            for sentence in split_sentences("\n".join(prose)):
                # A short lead-in ("As a rule:", "Note:") belongs to the sentence it introduces.
                if sentence.rstrip().endswith(":") and len(sentence.split()) <= 4:
                    pending = f"{pending} {sentence}".strip()
                    continue
                sentence = f"{pending} {sentence}".strip()
                pending = ""
                if _ONLY_REFERENCES.match(sentence):
                    out.append(Segment(sentence[:MAX_SEGMENT_CHARS], machine=True))
                    continue
                clauses = _clauses(sentence)
                whole = sentence[:MAX_SEGMENT_CHARS] if len(clauses) > 1 else ""
                out.extend(Segment(c[:MAX_SEGMENT_CHARS], sentence=whole) for c in clauses)
            if pending:
                out.append(Segment(pending[:MAX_SEGMENT_CHARS]))
            prose.clear()

    for block in re.split(r"(```.*?(?:```|\Z))", text, flags=re.DOTALL):
        if block.startswith("```"):
            flush()
            out.append(Segment(block[:MAX_SEGMENT_CHARS], machine=True))
            continue
        for line in block.split("\n"):
            if is_machine_line(line):
                flush()
                out.append(Segment(line.strip()[:MAX_SEGMENT_CHARS], machine=True))
            else:
                prose.append(line)
        flush()
    return out[:MAX_SEGMENTS]

"""Plain text from an assistant's reply: its markdown decoration removed, its words kept.

End-of-turn replies are decorated: bullets with **bold labels**, check/cross/emoji marks, and, when a
transcript is flattened, a tool-call marker ("[tool use] Bash: ...", "⏺ Update(...)") at the start of a
line. The decoration says nothing about whether a line is worth remembering, and a stored memory should
not carry it, so the gate judges (and the Stop hook stores) each line without it. User prompts are
never passed through here: their wording is judged as typed.
"""

from __future__ import annotations

import re
from typing import Final

# A tool call flattened into a transcript: "[tool use] Bash: npm test", "[Tool call: Edit]",
# "⏺ Read(package.json)", "● I'll check the config".
_TOOL_MARKER: Final = re.compile(
    r"^\s*(?:\[\s*tool[\s_-]*(?:use|call|result|output)?s?\b[^\]\n]*\]|[⏺●⎿])\s*[:\-–—]?\s*",
    re.IGNORECASE,
)
_BULLET: Final = re.compile(r"^\s*(?:[-*•+>]|\d{1,3}[.)])\s+")
_CHECKBOX: Final = re.compile(r"^\[[ xX✓✔]\]\s+")
# An unchecked task-list item, "- [ ] Point the frontend at the new database": work still to do.
_PENDING: Final = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])?\s*\[ \]\s+")
# Check/cross marks, arrows used as marks, and pictographs (with their joiners and variation selectors).
_MARK: Final = (
    "\u2190-\u21ff\u2300-\u23ff\u2460-\u24ff\u25a0-\u27bf\u2900-\u297f\u2b00-\u2bff"
    "\u200d\ufe0f\U0001f000-\U0001faff"
)
_PICTOGRAPH: Final = "\u2300-\u23ff\u25a0-\u27bf\u2b00-\u2bff\u200d\ufe0f\U0001f000-\U0001faff"
_LEADING_MARKS: Final = re.compile(rf"^[{_MARK}\s]+")
# Inside a line only pictographs go: an arrow there means something ("GoDaddy → Route 53").
_INLINE_MARKS: Final = re.compile(rf"\s*[{_PICTOGRAPH}]+(?:\s+|$)")
# **bold**, *italic*, ***both***: the markers only, never a lone `**kwargs`. ("__bold__" is left
# alone: in code-heavy replies double underscores are far more often names like `__init__`.)
_EMPHASIS: Final = re.compile(r"(?<![\w*])(\*{1,3})(?=[^\s*])(.+?)(?<=[^\s*])\1(?![\w*])")


def strip_decoration(line: str) -> str:
    """One line of a reply without its tool-call marker, bullet, checkbox, marks and emphasis.

    "- ✅ **Deployed** the API to Fly.io" -> "Deployed the API to Fly.io".
    """
    text = _TOOL_MARKER.sub("", line, count=1)
    for _ in range(2):  # "- [x] ✅ ..." and "✅ - ..." both occur
        text = _BULLET.sub("", text, count=1)
        text = _CHECKBOX.sub("", text, count=1)
        text = _LEADING_MARKS.sub("", text, count=1)
    text = _EMPHASIS.sub(r"\2", text)
    return _INLINE_MARKS.sub(" ", text).strip()


def plain_reply(reply: str) -> str:
    """The reply with every line's decoration removed; list items stay separate lines.

    A decorated list item is kept apart from its neighbours by a blank line, since without its
    bullet the sentence splitter would otherwise join an item that does not end in a full stop to
    the next one. Headings ("## Summary") are left as they are: they are never judged as prose.
    Unchecked task-list items ("- [ ] ...") are left out: they list work still to do, and from a reply
    only what was done or decided is remembered.
    """
    out: list[str] = []
    for line in reply.replace("\r\n", "\n").split("\n"):
        if _PENDING.match(_TOOL_MARKER.sub("", line, count=1)):
            continue
        if line.lstrip().startswith("#"):
            out.append(line)
            continue
        plain = strip_decoration(line)
        if plain != line.strip():
            out += ["", plain, ""]
        else:
            out.append(line)
    return "\n".join(out)

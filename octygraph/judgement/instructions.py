"""Instruction detection: the eight instruction patterns and their scope, without an LLM.

Patterns: process, tool_usage, role_assignment, threshold, exception, preference, correction,
ban. A sentence is an instruction when it is a standing directive ("always", "never", "from now
on", "make sure", "must", "I prefer", a ban such as "Don't ...") or a statement of what a tool is
for / where data lives. Plain descriptions ("Peter handles the Anderson account") are facts, not
instructions: the storage filter keeps them as facts.

Scope: 0.2 when the instruction names a specific person, client, account, organisation or place;
0.5 when it names a team, tool or project; otherwise 1.0 (a universal rule, including
"always"/"never"/"from now on" rules that mention only tools, and rules that only mention
concepts such as "PRs").
"""

from __future__ import annotations

import re
from datetime import date
from typing import Final

from octygraph.judgement.analysis import ONE_OFF, Sentence
from octygraph.models import (
    ExtractedInstruction,
    InstructionPattern,
    InstructionSubtype,
)
from octygraph.safety.checks import redact_secrets
from octygraph.text.words import rx

THRESHOLD: Final = rx(
    r"""(?:\bat\s+(?:least|most)|\bno\s+(?:more|less|fewer)\s+than|\bnot\s+more\s+than|
    \bmore\s+than|\bless\s+than|\bfewer\s+than|\bunder|\bover|\bbelow|\babove|\bmaximum|
    \bminimum|\bmax|\bmin|\bup\s+to|\blimit(?:ed)?\s+(?:is|of|to|at)|\bcap(?:ped)?\s+(?:is|at|of)|
    \bexceed(?:s|ing)?|\bwithin|\bthreshold\s+(?:is|of))\W+(?:[$€£]\s?)?\d
    | \d[\d,.]*\s*(?:%|k|ms|s|words?|characters?|chars?|lines?|hours?|days?|minutes?|mins?|
    seconds?|items?|pages?|usd|dollars?|euros?|files?|tokens?)?\s+(?:or\s+(?:less|more|fewer|
    under|below|above|over)|max(?:imum)?|min(?:imum)?|tops|limit|cap)\b
    | \bthreshold\b"""
)
SWITCHED: Final = rx(r"\bswitched\s+(?:over\s+)?(?:from\s+[\w.@/#+-]+\s+)?to\b")
"""A past switch of tools ("We switched from CircleCI to Buildkite") says what is used now."""
TOOL_USAGE: Final = rx(
    r"""\b(?:use|using|uses)\s+[\w.@/#+-]+(?:\s+[\w.@/#+-]+)?\s+(?:for|to|when|as|instead\s+of)\b
    | \bswitch(?:ed)?\s+(?:over\s+)?(?:from\s+[\w.@/#+-]+\s+)?to\b
    | \b(?:is|are)\s+(?:only\s+)?(?:used\s+)?for\s+(?!the\s+(?:best|worst))\w
    | \b(?:lives?|is\s+stored|are\s+stored|is\s+kept|are\s+kept|can\s+be\s+found|is\s+located|
    are\s+located|go(?:es)?|belongs?)\s+in(?:to|side)?\b
    | \b(?:track|log|file|put|store|keep|record|document|save|upload|post)\s+(?:\w+\s+){0,3}
    (?:in|on|to|into)\s+(?:the\s+)?[\w#@/.-]+
    | \bwe\s+use\b"""
)
_TOOLISH: Final = rx(
    r"""\b(?:folder|directory|dir|channel|repo|repository|sheet|spreadsheet|drive|bucket|wiki|
    board|tracker|database|db|table|notebook|workspace|project|inbox|vault|dashboard|page|doc)\b
    | [/#]\w | \w\.\w{2,4}\b"""
)
ROLE_ASSIGNMENT: Final = rx(
    r"""\b(?:assign|send|route|forward|escalate|hand|give|direct|refer|redirect|delegate)\b
    [^.?!]*\bto\s+@?\w
    | (?:^|,\s*)(?:please\s+)?(?:always\s+)?(?:ask|cc|loop\s+in|ping|notify|check\s+with|consult|
    run\s+it\s+by|talk\s+to)\b
    | \b(?:should|will|must|is\s+going\s+to|needs\s+to)\s+(?:always\s+)?(?:handle|own|manage|
    review|approve|cover|take\s+care\s+of|lead|sign\s+off|be\s+(?:responsible|in\s+charge))\b
    | \b(?:goes|go)\s+(?:straight\s+)?to\s+@?\w"""
)
EXCEPTION: Final = rx(
    r"""\bexcept(?:\s+for)?\b|\bunless\b|\bbut\s+for\b|\bother\s+than\b|\bexception\b|\bexempt\b|
    \b(?:doesn't|does\s+not|don't|do\s+not)\s+apply\s+to\b|\bonly\s+for\b|^for\s+\w+(?:\s+\w+)?,"""
)
PREFERENCE: Final = rx(
    r"""^(?:i\s+(?:would\s+|'d\s+)?prefer|we\s+prefer|i'd\s+rather|i\s+would\s+rather|
    our\s+preference|let's\s+(?:make\s+sure|always|keep|stick|use|not|never)|
    i\s+like\s+it\s+when\s+you|i\s+(?:want|need)\s+you\s+to\s+always|
    please\s+(?:always|never|make\s+sure))\b | \bprefer(?:s|red|ably)?\b"""
)
BAN: Final = rx(
    r"""\bnever\b|\bmust\s+not\b|\bmustn't\b|\bshouldn't\b|\bshould\s+not\b|\bnot\s+allowed\b|
    \bunder\s+no\s+circumstances\b|\bno\s+one\s+should\b|\bnobody\s+should\b|\bforbidden\b|
    \bprohibited\b|\b(?:don't|do\s+not)\s+(?!worry|bother|know|think|forget|mind|care)\w+"""
)
STEPS: Final = rx(
    r"""\b(?:first|then|after\s+that|afterwards|finally|step\s+\d|steps?\s*:|followed\s+by|
    and\s+then|the\s+process\s+(?:for|to|of|is))\b"""
)
GENERAL: Final = rx(
    r"""\b(?:all|every|any|each|always|whenever|by\s+default|instead\s+of|rather\s+than|
    daily|nightly|weekly|monthly|quarterly|yearly|annually|hourly)\b
    | ^(?:when|whenever|if|for|before|after|once|unless)\b"""
)
"""Wording that makes a command a standing one ("Send all invoices to Lisa")."""
PROCESS_CUE: Final = rx(
    r"\b(?:process|procedure|workflow|steps?|checklist|routine|playbook|release|publish\w*)\b|^to\s+\w+"
)
"""Words that make a sequence of steps a procedure to remember, not a one-off to-do list."""
UNIVERSAL: Final = rx(
    r"""\b(?:always|never|from\s+now\s+on|going\s+forward|every\s+time|each\s+time|whenever|
    everyone|everybody|no\s+one|nobody|all|any|every)\b"""
)
TEAM: Final = rx(r"\b(?:team|squad|department|dept|crew|everyone\s+on|channel)\b")

_SUBTYPE: Final[dict[str, InstructionSubtype]] = {
    "process": "rule",
    "tool_usage": "tool_usage",
    "role_assignment": "instruction",
    "threshold": "rule",
    "exception": "rule",
    "preference": "instruction",
    "ban": "rule",
}
_SPECIFIC_KINDS: Final = frozenset({"person", "org", "account", "place"})


def _is_directive(s: Sentence) -> bool:
    """A standing directive: rule wording, a ban, a preference, or a general command."""
    if s.rule or PREFERENCE.search(s.low):
        return True
    if ONE_OFF.search(s.low):
        return False
    return s.ban or (s.imperative and GENERAL.search(s.low) is not None)


def _names_person(s: Sentence) -> bool:
    return any(e.kind in ("person", "org", "account") for e in s.entities)


def _base_pattern(s: Sentence) -> InstructionPattern | None:
    """The pattern of one sentence, or None when it is not an instruction."""
    low = s.low
    directive = _is_directive(s)
    one_off = ONE_OFF.search(low) is not None
    if EXCEPTION.search(low) and s.entities and (directive or s.imperative):
        return "exception"
    if THRESHOLD.search(low) and (
        directive
        or (s.imperative and not one_off)
        or re.search(r"\b(?:limit|cap|threshold|budget|max)", low)
    ):
        return "threshold"
    if (s.ban and directive) or (BAN.search(low) and s.rule):
        return "ban"
    if len(STEPS.findall(low)) >= 2 and (directive or PROCESS_CUE.search(low)):
        return "process"
    tool_entities = [e for e in s.entities if e.kind in ("tool", "project", "document", "concept")]
    if (
        TOOL_USAGE.search(low)
        and (tool_entities or _TOOLISH.search(s.body))
        and (not s.past or SWITCHED.search(low))
        and not (s.imperative and one_off)
    ):
        return "tool_usage"
    if ROLE_ASSIGNMENT.search(low) and _names_person(s) and (directive or s.correction):
        # "Security reports now go to Hugo instead of Lisa" re-routes a standing assignment.
        return "role_assignment"
    if PREFERENCE.search(low):
        return "preference"
    if directive:
        return "process"
    return None


def detect_instruction(s: Sentence, today: date) -> ExtractedInstruction | None:
    """The instruction in one analysed sentence, or None.

    Questions, hypotheticals, greetings and injection attempts are never instructions, nor is a
    dated to-do without rule wording ("We need to ship by Friday" is a plan).
    """
    if s.question or s.hypothetical or s.greeting or s.injection or len(s.content) < 2:
        return None
    dated_future = s.date is not None and s.date.value >= today and s.future
    if dated_future and not (s.strong_rule or s.ban):
        return None
    base = _base_pattern(s)
    if base is None:
        return None
    subtype = _SUBTYPE[base]
    if base == "process" and len(STEPS.findall(s.low)) >= 2:
        subtype = "process"
    # A rule stated as a replacement ("use pnpm instead of npm") corrects an earlier rule.
    pattern: InstructionPattern = "correction" if s.correction else base
    content, _ = redact_secrets(s.body)
    return ExtractedInstruction(
        content=content,
        pattern=pattern,
        subtype=subtype,
        scope=instruction_scope(s),
        entities=[e.name for e in s.entities],
    )


def instruction_scope(s: Sentence) -> float:
    """1.0 universal, 0.5 team/tool-wide, 0.2 entity-specific (see module doc)."""
    kinds = {e.kind for e in s.entities}
    if kinds & _SPECIFIC_KINDS:
        return 0.2
    if TEAM.search(s.low):
        return 0.5
    if not (kinds - {"concept"}) or UNIVERSAL.search(s.low):
        return 1.0  # concepts ("PRs", "API") do not narrow a rule
    return 0.5

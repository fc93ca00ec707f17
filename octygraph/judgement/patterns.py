"""The storage filter's patterns over one analysed sentence: what it would be stored as, and what
may never be stored whatever the learned judgement says.

`sentence_type` names the node type a sentence reads as (the classifier's buckets); `refusal` and
`safety_refusal` say why a segment is refused (a question, a go-ahead, an injection, code, ...);
`recorded_rules` finds the segments a message asks to keep as a standing rule. The decision that
weighs these with the learned gate and verdict is `octygraph.judgement.storage`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Final

from octygraph.judgement.analysis import MAX_ANALYSIS_CHARS, Sentence, resolve_pronouns
from octygraph.judgement.forms import (
    ABOUT_THE_CONVERSATION,
    GO_AHEAD,
    GUESS,
    REFERS_BACK,
    STATED_DECISION,
    WISH_FOR_THE_TASK,
)
from octygraph.judgement.instructions import detect_instruction
from octygraph.models import NodeType
from octygraph.text.lexicon import GENERIC_SUBJECTS
from octygraph.text.words import FILLER_LEAD, rx

MIN_WORDS: Final = 3
"""A memory has a subject, a verb and something more ("We use pnpm")."""
_FIRST_PERSON: Final = frozenset({"i", "we", "our", "my", "us", "me", "i'm", "we're"})
MAX_SENTENCE_CHARS: Final = MAX_ANALYSIS_CHARS
_RULE_PLACE: Final = (
    r"(?:(?:cursor\s+|team\s+|project\s+|new\s+)?(?:rule|guideline|convention|preference|principle)s?"
    r"|claude\.md|agents\.md|contributing(?:\.md)?|\.cursorrules)"
)
_POINTER: Final = (
    r"(?:this|that|these|it)(?:\s+(?:preference|convention|rule|principle|one))?\s*(?:[.,;!]|$)"
)
RECORD_THIS: Final = rx(
    rf"""\b(?:record|document|capture|save|remember|write\s+down|add|put|keep)\w*\s+
        (?:this|that|these|it)\s+(?:as\s+(?:a|an|our)\s+|(?:in|to|into)\s+(?:the\s+|our\s+|a\s+)?)
        {_RULE_PLACE}(?:\s+(?:file|too|as\s+well))?\s*[.!]?\s*$
    | \b(?:recording|documenting|capturing|noting)\s+(?:this|that|these)\s+{_RULE_PLACE}\b
    | \b(?:add|create|make|write|put|save|update)\b[^.?!]{{0,60}}?\b{_RULE_PLACE}\b[^.?!]{{0,40}}?
        \b(?:recording|documenting|capturing|for|about)\s+{_POINTER}
    | {FILLER_LEAD}remember\s+(?:this|that)\s*[.!]?$"""
)
"""A request to write down what the user just said as a standing rule: "add a cursor rule recording
this preference", "put that in CLAUDE.md", "please remember that"."""
RULE_CONTENT: Final = rx(
    rf"""{FILLER_LEAD}(?:
        (?:add|create|write|make|put|start)\s+(?:a|an|another|the)?\s*(?:new\s+)?{_RULE_PLACE}
            \s+(?:entry\s+)?(?:that\s+(?:says|states|mentions)(?:\s+that)?|that|saying|stating|to\s+say)
        | make\s+sure\s+(?:the|that|this|our)\s+{_RULE_PLACE}\s+
            (?:says|states|mentions|explains|includes|notes)\s+that
    )\s+(?!(?:is|are|was|were|does|do|has|have|will|can|would|should|only|also|checks?|matches|
        catches|flags|runs|applies|enforces|allows|prevents)\b)(?P<content>\S.{{10,}})$"""
)
"""A request to record a rule whose content it states: "add a rule that X", "make sure the rule
mentions that X"."""


def recorded_rules(texts: Sequence[str]) -> tuple[dict[int, str], set[int]]:
    """Segments the user asks to keep as a standing rule (by index, with the rule's words), and the
    segments that only ask for it.

    Asking for a rule to be written down (a cursor rule, a CLAUDE.md line) is as explicit as "from
    now on": "add a rule that X" states the rule X; "... recording this preference" points back at
    the segment before it, and is itself only a task.
    """
    rules: dict[int, str] = {}
    requests: set[int] = set()
    for i, text in enumerate(texts):
        content = RULE_CONTENT.search(text.strip())
        if content is not None:
            rules[i] = text.strip()[content.start("content") :].rstrip(" .")
        elif i > 0 and RECORD_THIS.search(text.strip()) and i - 1 not in rules:
            rules[i - 1] = texts[i - 1].strip()
            requests.add(i)
    return rules, requests


CODE: Final = rx(
    r"""[{};]\s*$ | ^\s*(?:def|class|import|const|let|var|function|return|SELECT|INSERT)\s
    | ^\s*from\s+\S+\s+import\b | => | \)\s*\{ | ^\s*[$>]\s"""
)
_ROLE_WORDS: Final = rx(
    r"""\b(?:handles?|owns?|manages?|leads?|runs?|covers?|is\s+responsible\s+for|
    is\s+in\s+charge\s+of|takes?\s+care\s+of|looks?\s+after|works?\s+(?:on|for|at|with)|
    reports?\s+to|taking\s+over|took\s+over|is\s+(?:our|the|their|my)\s+\w+)\b"""
)
_CURRENT_ROLE: Final = rx(
    r"""\b(?:is|are|'s|'re)\s+(?:now\s+)?taking\s+over\b|\btakes\s+over\b|
    \bnow\s+(?:handles?|owns?|manages?|leads?|runs?|covers?|is\s+responsible|is\s+in\s+charge)\b|
    \b(?:handles?|owns?|manages?|leads?|runs?|covers?)\b[^.?!]*\bnow\s*[.!]?\s*$"""
)
"""A role stated in the present as a change ("is taking over", "now handles")."""


def sentence_type(s: Sentence, today: date) -> tuple[NodeType | None, str]:
    """The node type a sentence would be stored as, or None with the reason it is not stored."""
    if s.injection:
        return None, "looks like a prompt injection"
    if s.greeting:
        return None, "a greeting or acknowledgement"
    if s.text.startswith("/") and s.text[1:2].isalpha():
        return None, "a slash command"
    if CODE.search(s.text[:MAX_SENTENCE_CHARS]):
        return None, "code, not a statement"
    if len(s.text) > MAX_SENTENCE_CHARS:
        return None, "too long to be one memory"
    if s.question:
        return None, "a question (asking, not telling)"
    if s.hypothetical:
        return None, "hypothetical or speculative"
    if detect_instruction(s, today) is not None:
        return "instruction", "an instruction"
    if s.future and s.date is not None and s.date.value >= today:
        return "plan", "a dated plan"
    if s.request or s.imperative:
        return None, "a request to the assistant, not a statement"
    if s.vague:
        return None, "too vague to remember"
    if s.opinion:
        return "opinion", "an opinion"
    if s.past and s.correction and _CURRENT_ROLE.search(s.low) and s.anchored:
        # "Elena moved teams, so Ravi is taking over the account": the news is who does it now.
        return "fact", "a correction of who does what now"
    if s.past and (s.date is None or s.date.value <= today):
        return ("event", "a real event") if s.anchored else (None, "too vague to remember")
    if s.future and not _ROLE_WORDS.search(s.low):
        return None, "an intention without a date"
    if not s.anchored or _common_sense(s):
        return None, "general knowledge, not about the user's world"
    return "fact", "a concrete fact"


def _common_sense(s: Sentence) -> bool:
    """ "The sky is blue": a generic subject, and nothing of the user's (no name, number, "our")."""
    if s.entities or any(ch.isdigit() for ch in s.body) or _FIRST_PERSON & set(s.words):
        return False
    return bool(s.content) and s.content[0] in GENERIC_SUBJECTS


def verdict_refusals(sentences: Sequence[Sentence]) -> list[bool]:
    """Per segment, whether a form refuses it (a question, a go-ahead, an "it" only a request
    names, ...). The forms' refusals hold for the verdict too: leave-project-out that kept more
    memories and less junk than letting the verdict override them. So does the specification's
    "no hypotheticals" ("Maybe we could use Kafka"): the forms' gate never keeps them either, and
    of the shared real prompts 1 of 138 that state something lasting is hypothetical throughout."""
    resolved = resolve_pronouns(list(sentences))
    return [
        refusal(s) is not None
        or s.hypothetical
        or (i > 0 and dangles(s, sentences[i - 1], resolved[i]))
        for i, s in enumerate(sentences)
    ]


def dangles(s: Sentence, before: Sentence, entity_names: list[str]) -> bool:
    """Whether `s` is about an "it" or "they" that only the request before it names ("write a
    README explaining that tally is a budgeting tool ... It syncs with the bank nightly"): the
    request is not stored, so the memory would not say what it is about. A pronoun the message
    resolves to a person ("They" after "Mina is our lead.") does not dangle."""
    return (
        REFERS_BACK.search(s.body) is not None
        and (before.imperative or before.request or before.question)
        and entity_names == [e.name for e in s.entities]
    )


def safety_refusal(s: Sentence) -> str | None:
    """Why a segment may never be stored, for safety, whatever the verdict says, or None: an
    injection attempt, a slash command, code. (Secrets are redacted, not refused.)"""
    if s.injection:
        return "looks like a prompt injection"
    if s.text.startswith("/") and s.text[1:2].isalpha():
        return "a slash command"
    if CODE.search(s.text[:MAX_SENTENCE_CHARS]):
        return "code, not a statement"
    return None


def refusal(s: Sentence) -> str | None:
    """Why a segment may never be stored whatever the gate says, or None."""
    if (safety := safety_refusal(s)) is not None:
        return safety
    if s.question:
        return "a question (asking, not telling)"
    if GO_AHEAD.search(s.body) and not s.strong_rule:
        return "a go-ahead for the task at hand"
    if GUESS.search(s.body):
        return "a guess, not something known"
    if WISH_FOR_THE_TASK.search(s.body) and s.date is None:  # a dated plan is the gate's
        return "what the user wants of the work at hand, not a standing preference"
    if ABOUT_THE_CONVERSATION.search(s.body) and not STATED_DECISION.search(s.body):
        return "about what was said earlier in the conversation"
    if len(s.words) < MIN_WORDS:
        return "too short to stand alone"
    return None

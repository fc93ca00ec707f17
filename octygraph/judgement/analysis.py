"""Per-sentence analysis shared by the classifier, the storage filter and instruction extraction.

`analyze` reads one sentence once and records what the other modules ask of it: is it a question,
a hypothetical, a greeting, a request to the assistant, a standing rule, a correction; its tense
and date; its entities. The decisions built on these flags live in `patterns.py` and
`instructions.py`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from functools import lru_cache
from typing import Final

from octygraph.judgement.entities import Gazetteer, extract_entities, first_word_index
from octygraph.models import EntityMention
from octygraph.safety.checks import looks_like_injection
from octygraph.text.dates import DateMatch, find_date
from octygraph.text.lexicon import (
    COMMON_VERBS,
    GREETINGS,
    IRREGULAR_PAST,
    NOT_PAST_ED,
    VAGUE_WORDS,
)
from octygraph.text.words import (
    FILLER_LEAD,
    content_words,
    rx,
    strip_leading_markers,
    words,
)

# Wording that replaces what was said before ("instead of", "now handles", "no longer"): a correction
# here, SUPERSEDES in `octygraph.fallback.reconcile`.
REPLACEMENT: Final = re.compile(
    r"""(?ix)
    \binstead\b | \bno\s+longer\b | \bnot\s+anymore\b | \banymore\b | \bany\s+more\b
    | \btak(?:e|es|ing|en)\s+over\b | \btook\s+over\b
    | \bnow\s+(?:handles?|owns?|manages?|leads?|runs?|covers?|is|are|uses?|goes|reports?|
        responsible|in\s+charge|handled|owned|managed|the)\b
    | \b(?:handles?|owns?|manages?|leads?|runs?|covers?|uses?)\b[^.?!]*\bnow\s*[.!]?\s*$
    | \breplac(?:e|es|ed|ing)\b | \bsupersed(?:e|es|ed|ing)\b
    | \bactually\b | \bcorrection\b | \bi\s+was\s+wrong\b | \bscratch\s+that\b | \bmy\s+mistake\b
    | \bswitch(?:ed|ing)?\s+(?:over\s+)?(?:to|from)\b | \bchanged?\s+(?:it\s+)?to\b
    | \bmov(?:e|ed|ing)\s+(?:over\s+)?to\b | \bused\s+to\b | \bnot\s+\w+\s+but\b
    | \b(?:from\s+now\s+on|going\s+forward)\b[^.?!]*\binstead\b
    | \bthe\s+new\s+\w+\s+(?:is|are)\b | \bhas\s+been\s+(?:changed|updated|moved|reassigned)\b
    """
)

# A role given to someone ("Peter handles Anderson", "Lisa is now responsible for billing").
ROLE_STATEMENT: Final = re.compile(
    r"""(?ix)
    ^(?P<who>[\w'’.\- ]+?)\s+(?:(?:now|also|still|will|should|must|is\s+going\s+to)\s+)?
    (?P<role>handles?|owns?|manages?|leads?|runs?|covers?|reviews?|approves?|maintains?|
        is\s+(?:now\s+)?(?:responsible\s+for|in\s+charge\s+of|the\s+(?:owner|lead|contact|
        point\s+of\s+contact|go-to)\s+(?:for|of|on))|takes?\s+care\s+of|looks?\s+after)
    \s+(?P<what>.+)$
    """
)

_WH: Final = frozenset("who whom whose what which when where why how".split())
_AUX: Final = frozenset(
    """is are was were do does did can could would should will shall have has had am may might
    isn't aren't wasn't weren't don't doesn't didn't can't couldn't won't wouldn't shouldn't
    haven't hasn't""".split()
)
_WH_FOLLOW: Final = _AUX | frozenset(
    "'s much many long often far old come about else exactly".split()
)
_SUBJECTS: Final = frozenset(
    """i you we they he she it there this that these those the a an my our your their his her
    its any anyone someone anybody""".split()
)

QUESTION_PHRASES: Final = rx(
    r"""^(?:do\s+you\s+(?:know|remember|recall)|tell\s+me|remind\s+me|any\s+idea|i\s+wonder|
    i'm\s+wondering|i\s+was\s+wondering|can\s+you\s+(?:tell|remind|check|find|look|show)|
    what\s+about|how\s+about|show\s+me|give\s+me|find\s+(?:me\s+)?(?:out\s+)?|look\s+up|
    explain|summari[sz]e|list\s+(?:all|the|our|my))\b"""
)
_EMBEDDED_WH: Final = r"(?:if|whether|what|why|how|which|who|where|when)"
INDIRECT_QUESTION: Final = rx(
    rf"""{FILLER_LEAD}(?:
    i(?:'m|\s+am|m)\s+(?:just\s+|really\s+|a\s+bit\s+|also\s+)?(?:curious|unsure)\b
    | i(?:'m|\s+am|m|\s+was|\s+wasn'?t)\s+(?:not\s+)?(?:\w+\s+)?sure\s+{_EMBEDDED_WH}\b
    | i(?:'d|\s+would)\s+(?:like|love)\s+to\s+(?:know|understand|hear)\s+{_EMBEDDED_WH}\b
    | i\s+(?:want|need)\s+to\s+(?:know|understand)\s+{_EMBEDDED_WH}\b
    | i\s+(?:don'?t|do\s+not)\s+(?:know|understand)\s+{_EMBEDDED_WH}\b
    )"""
)
"""A question asked as a statement about the speaker: "I'm just curious what the roles would be",
"I wasn't sure if you made the changes", "I'd like to know why it fails". It asks; it tells nothing
to remember (of the training sets' segments it matches 14 not durable and one labelled durable, "i
want to know what changed first")."""
HYPOTHETICAL: Final = rx(
    r"""\bwhat\s+if\b|\bsuppos(?:e|ing)\b|\bimagine\b|\bhypothetical(?:ly)?\b|\blet's\s+say\b|
    \bsay\s+(?:we|i|you)\b|\bin\s+theory\b|\bif\s+(?:i|we|you|they)\s+were\b|
    \b(?:would|could|might)\b(?!\s+(?:like|love|prefer|rather))|\bmaybe\b|\bperhaps\b|
    \bwondering\s+(?:if|whether)\b|\bthinking\s+(?:about|of)\s+(?:maybe|possibly)\b|\bpossibly\b"""
)
STRONG_RULE: Final = rx(
    r"""\b(?:always|never|from\s+now\s+on|going\s+forward|moving\s+forward|in\s+(?:the\s+)?future|
    every\s+time|each\s+time|whenever|no\s+one\s+should|nobody\s+should|
    under\s+no\s+circumstances|as\s+a\s+rule|by\s+default|the\s+rule\s+is|(?:our\s+)?policy\s+is|
    i\s+(?:would\s+|'d\s+)?prefer|we\s+prefer|i'd\s+rather|i\s+would\s+rather|
    let's\s+(?:always|never|make\s+sure|keep|use|stick|not)|
    please\s+(?:always|never|don't|do\s+not|make\s+sure|remember)|
    (?:every|each|all|any)\s+(?:\w+\s+){1,2}(?:must|should|needs?\s+to|has\s+to|have\s+to|
    (?:needs?|requires?)\s+(?:a|an|at\s+least|one|two|three|\d+))\b)\b"""
)
"""Wording that makes a sentence a standing rule on its own."""
MODAL_RULE: Final = rx(
    r"""\b(?:must|mustn't|should|shouldn't|needs?\s+to|ha(?:s|ve)\s+to|(?:is|are)\s+required|
    required\s+to|(?:is|are|isn't|aren't)\s+(?:not\s+)?allowed|not\s+allowed|can't\s+exceed|
    cannot\s+exceed|make\s+sure|be\s+sure\s+to|ensure|remember\s+to|don't\s+forget\s+to|
    do\s+not\s+forget\s+to|
    (?:needs?|requires?)\s+(?:at\s+least|at\s+most|no\s+(?:more|fewer|less)\s+than|
    a\s+(?:minimum|maximum)\s+of|
    (?:\d+|one|two|three|four|five)\s+\w+\s+(?:before|to|for|per)\b))\b"""
)
"""Obligation wording: a rule unless it is the speaker's own to-do ("I should ...") or a one-off."""
_FIRST_PERSON_TODO: Final = rx(r"^(?:i|i'm|i\s+am|i'll)\b")
ONE_OFF: Final = rx(
    r"""\bfor\s+(?:this|that|it|now|today|me)\b|\btoday\b|\btonight\b|\byet\b|
    \b(?:right\s+)?now\b(?!\s+(?:on|needs?|requires?|must|should|has|have|uses?|goes)\b)|
    \bthis\s+time\b|\bfirst\b|\bwhether\b|\basap\b"""
)
"""Wording of a one-off task ("Make sure we check the contract first"), not a standing rule."""
BAN_START: Final = rx(
    r"""^(?:please\s+)?(?:never|don't|do\s+not|dont|stop(?=\s+\w+ing\b)|avoid|no\s+more|
    under\s+no\s+circumstances)
    \b(?!\s+(?:worry|bother|know|think|understand|remember|see|mind|care|get\s+it|have\s+to|
    need\s+to|forget))"""
)
REQUEST: Final = rx(
    r"""^(?:please\s+)?(?:can|could|would|will)\s+you\b|^please\b|\bi\s+(?:need|want)\s+you\s+to\b|
    ^help\s+me\b|^let\s+me\s+know\b|^let's\b(?!\s+(?:always|never|make\s+sure|not))|
    \bi(?:'m|\s+am)\s+(?:about|going|gonna|trying)\s+to\b|^i'll\s+|^let\s+me\b|
    \bi\s+(?:want|need|would\s+like|'d\s+like)\s+to\b"""
)
FUTURE: Final = rx(
    r"""\b(?:will|'ll|shall|going\s+to|gonna|plan(?:s|ned|ning)?\s+to|intend(?:s|ing)?\s+to|
    scheduled|(?:re)?scheduled|(?:moved|postponed|pushed|delayed|bumped)\s+(?:back\s+)?(?:to|until|till)|
    (?:is|are)\s+due|due\s+(?:on|by|next|this|in|tomorrow|today)|deadline|upcoming|
    next\s+(?:week|month|year|quarter|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|
    tomorrow|later\s+today|tonight|(?:launch|start|kick|ship|go)(?:s|es|ing)?\s+(?:off\s+|live\s+)?on|
    (?:is|are)\s+(?:launching|starting|shipping|happening|moving|presenting|meeting|going)|
    in\s+\d+\s+(?:days?|weeks?|months?)|by\s+(?:monday|tuesday|wednesday|thursday|friday|
    saturday|sunday|next|the\s+end|end))\b"""
)
PAST_TIME: Final = rx(
    r"""\b(?:yesterday|last\s+(?:night|week|month|year|quarter|monday|tuesday|wednesday|thursday|
    friday|saturday|sunday)|ago|earlier\s+today|this\s+morning|the\s+other\s+day|just\s+now)\b"""
)
OPINION: Final = rx(
    r"""^(?:i\s+(?:think|feel|believe|guess|suspect|reckon|find|like|love|hate|dislike|
    enjoy|can't\s+stand)|i'm\s+(?:not\s+)?(?:a\s+)?(?:big\s+)?fan|i\s+am\s+not\s+a\s+fan|
    in\s+my\s+(?:opinion|view|experience)|imo|imho|personally|to\s+me)\b|
    \b(?:is|are|was|were)\s+(?:so\s+|really\s+|pretty\s+|too\s+|way\s+)?(?:overrated|underrated|
    terrible|awful|amazing|fantastic|excellent|horrible|annoying|painful|clunky|the\s+best|
    the\s+worst|a\s+mess|a\s+pain)\b"""
)
PRONOUN_START: Final = rx(r"^(?:he|she|they|his|her|their|him|them)\b")
_PERSONAL_PRONOUN_START: Final = rx(r"^(?:he|she|his|her)\b")
_ANCHOR_DETERMINER: Final = frozenset({"the", "this", "that", "our", "my", "we", "us", "i", "me"})
_NOT_PAST_BEFORE: Final = frozenset(
    """is are am be been being get gets the a an to will 's 're this that these those our my
    your their his her its very fully well not""".split()
)


@dataclass(frozen=True)
class Sentence:
    """One analysed sentence."""

    text: str
    body: str
    markers: tuple[str, ...]
    low: str
    words: tuple[str, ...]
    entities: tuple[EntityMention, ...]
    question: bool
    hypothetical: bool
    greeting: bool
    request: bool
    imperative: bool
    strong_rule: bool
    rule: bool
    ban: bool
    correction: bool
    past: bool
    future: bool
    opinion: bool
    injection: bool
    date: DateMatch | None
    content: tuple[str, ...] = field(default=())

    @property
    def anchored(self) -> bool:
        """Names something concrete: an entity, a number, a date, "our"/"the X", a path."""
        if self.entities or self.date is not None or any(ch.isdigit() for ch in self.body):
            return True
        if _PERSONAL_PRONOUN_START.search(self.low):
            return True  # "She approves every vendor contract": about someone just named
        if any(w in _ANCHOR_DETERMINER for w in self.words):
            return True
        return any(ch in "/_`@" for ch in self.body) or re.search(r"\w\.\w", self.body) is not None

    @property
    def vague(self) -> bool:
        """Too little to remember: under two content words, or "stuff"/"things" with no anchor."""
        if len(self.content) < 2:
            return True
        if any(w in VAGUE_WORDS for w in self.words):
            return not (self.entities or any(ch.isdigit() for ch in self.body))
        return False


def _is_question(body: str, low: str, tokens: list[str]) -> bool:
    if body.rstrip().endswith("?") or QUESTION_PHRASES.search(low) or INDIRECT_QUESTION.search(low):
        return True
    if not tokens:
        return False
    first, second = tokens[0], (tokens[1] if len(tokens) > 1 else "")
    if first in _WH:
        if first in ("who", "whom", "whose", "what", "which"):
            # "What a day" is not a question; "When the build fails, ..." is a condition.
            return second not in ("a", "an") and "," not in body[:40]
        return second in _WH_FOLLOW
    if first in _AUX and second in _SUBJECTS and len(tokens) >= 3:
        return True  # "Is Peter ...", "Do you ..."; but "Do it" is a command
    return False


MAX_ANALYSIS_CHARS: Final = 600
"""Longer sentences are analysed by their first 600 characters (and never stored whole)."""
_COMMAND_LEADS: Final = frozenset(
    "please first then next finally also just simply kindly always never so and".split()
)
"""Words before a command's verb ("please first check"): adverbs of the order itself, which
`text.FILLER_LEAD` (filler before any statement) does not hold."""
_CLAUSE_STARTERS: Final = frozenset(
    "for when whenever if before after once unless during with on in".split()
)
_FINITE_AFTER_SUBJECT: Final = frozenset(
    """is are was were has have need needs must should can cannot can't will won't shall
    require requires get gets take takes go goes happen happens""".split()
)
"""Finite verbs that, right after a verb-looking noun phrase, show it is a subject."""
_SUBJECT_ADVERBS: Final = frozenset("now also still always never usually often all".split())


def _is_imperative(tokens: list[str], body: str = "") -> bool:
    """Whether the sentence is a command; "For Acme, bill quarterly" counts (after the comma)."""
    if not tokens:
        return False
    if tokens[0] in _CLAUSE_STARTERS and "," in body:
        tail = [w.lower() for w in words(body.split(",", 1)[1])]
        if _is_imperative(tail):
            return True
    index = 0
    while index < min(3, len(tokens) - 1) and tokens[index] in _COMMAND_LEADS:
        index += 1  # "Please first check ...", "Always run ..."
    head = tokens[index]
    if head not in COMMON_VERBS:
        return False
    # "Test coverage is 80%", "Pull requests now need two approvals": a verb-looking noun (and the
    # noun it starts) followed by a finite verb is the subject of a statement, not a command.
    nxt = tokens[index + 1] if len(tokens) > index + 1 else ""
    if nxt in _FINITE_AFTER_SUBJECT:
        return False
    rest = [t for t in tokens[index + 2 : index + 5] if t not in _SUBJECT_ADVERBS]
    return not (rest and rest[0] in _FINITE_AFTER_SUBJECT)


def _is_past(low: str, tokens: list[str]) -> bool:
    if PAST_TIME.search(low):
        return True
    for index, token in enumerate(tokens):
        if token in ("was", "were"):
            continue  # "Revenue was $1.2M" states a fact; "was deployed" counts by its participle
        if token in IRREGULAR_PAST and not (
            token == "had" and index + 1 < len(tokens) and tokens[index + 1] == "better"
        ):
            return True
        if (
            index > 0
            and token.endswith("ed")
            and len(token) > 4
            and token.isalpha()
            and token not in NOT_PAST_ED
            and tokens[index - 1] not in _NOT_PAST_BEFORE
        ):
            return True
    return False


@lru_cache(maxsize=512)
def analyze(text: str, today: date, gazetteer: Gazetteer | None = None) -> Sentence:
    """Analyse one sentence (see `Sentence`); cached, as several steps read the same sentences.

    Args:
        text: The sentence as the user wrote it.
        today: Reference day for dates.
        gazetteer: Known entity names.
    """
    text = text.strip()
    head = text[:MAX_ANALYSIS_CHARS]  # a pasted wall of text is read by its head only
    body, markers = strip_leading_markers(head)
    low = body.lower().replace("’", "'")
    tokens = [w.lower().replace("’", "'") for w in words(body)]
    offset = len(head) - len(body) if markers else 0
    entities = extract_entities(head, gazetteer, sentence_start=first_word_index(head, offset))
    question = _is_question(body, low, tokens)
    past = _is_past(low, tokens)
    future = FUTURE.search(low) is not None
    found = find_date(body, today, prefer="past" if past and not future else "future")
    if found is not None and found.value > today:
        future = True
    correction = (
        "actually" in markers or "correction" in markers or REPLACEMENT.search(low) is not None
    )
    greeting = bool(tokens) and len(tokens) <= 8 and all(t in GREETINGS for t in tokens)
    return Sentence(
        text=text,
        body=body,
        markers=tuple(markers),
        low=low,
        words=tuple(tokens),
        entities=tuple(entities),
        question=question,
        hypothetical=HYPOTHETICAL.search(low) is not None,
        greeting=greeting,
        request=REQUEST.search(low) is not None,
        imperative=_is_imperative(tokens, body),
        strong_rule=STRONG_RULE.search(low) is not None,
        rule=STRONG_RULE.search(low) is not None
        or (
            MODAL_RULE.search(low) is not None
            and not _FIRST_PERSON_TODO.search(low)
            and not ONE_OFF.search(low)
        ),
        ban=BAN_START.search(low) is not None,
        correction=correction,
        past=past,
        future=future,
        opinion=OPINION.search(low) is not None,
        injection=looks_like_injection(head),
        date=found,
        content=tuple(content_words(body)),
    )


def resolve_pronouns(sentences: list[Sentence]) -> list[list[str]]:
    """Entity names per sentence, adding the previous sentence's only person for "He/She ...".

    Returns:
        For each sentence, the names it mentions (plus the resolved person, if any).
    """
    out: list[list[str]] = []
    previous_people: list[str] = []
    for sentence in sentences:
        names = [e.name for e in sentence.entities]
        if PRONOUN_START.search(sentence.low) and len(previous_people) == 1:
            if previous_people[0].casefold() not in {n.casefold() for n in names}:
                names.insert(0, previous_people[0])
        people = [e.name for e in sentence.entities if e.kind == "person"]
        if people:
            previous_people = people
        out.append(names)
    return out

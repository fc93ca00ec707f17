"""Deterministic reconciliation of a new memory against an existing one.

`judge` decides NO_CONFLICT / SUPERSEDES / CONTRADICTION from the embedding cosine of the two
texts, their word overlap and their wording. Thresholds (module constants, tuned for both the
local MiniLM model and Voyage, whose cosines for paraphrases sit around 0.6-0.9):

- `SAME_TOPIC_COSINE` 0.55: at or above it the two texts are about the same thing.
- `RELATED_COSINE` 0.35 with `SAME_TOPIC_OVERLAP` 0.4: a lower cosine still counts as the same
  topic when at least 40% of the shorter text's content stems are shared.
- Below both: NO_CONFLICT, whatever the wording.

Within one topic: the same role given to a different person, or replacement wording in the new
text ("instead of", "now handles", "taking over", "no longer", "switch to", "actually", ...) ->
SUPERSEDES; opposite polarity ("always" vs "never") -> CONTRADICTION; rules about different named
entities ("Bill Acme quarterly" / "Bill Globex monthly") -> NO_CONFLICT; different values for the
same rule (numbers, "monthly" vs "quarterly", "Fridays" vs "Mondays") without replacement wording
-> CONTRADICTION (flagged for the user, never deleted); otherwise NO_CONFLICT (compatible or a
restatement).
"""

from __future__ import annotations

import re
from typing import Final

from octygraph.judgement.analysis import REPLACEMENT, ROLE_STATEMENT
from octygraph.models import ReconcileJudgement
from octygraph.text.lexicon import NOT_NAMES as _NOT_NAMES
from octygraph.text.words import content_stems, strip_leading_markers, words

SAME_TOPIC_COSINE: Final = 0.55
RELATED_COSINE: Final = 0.35
SAME_TOPIC_OVERLAP: Final = 0.4

_PASSIVE_ROLE: Final = re.compile(
    r"(?i)^(?P<what>.+?)\s+(?:is|are)\s+(?:now\s+)?(?:handled|owned|managed|led|run|covered|"
    r"reviewed|approved|maintained)\s+by\s+(?P<who>.+?)(?:\s+now)?[.!]?$"
)
_NEGATIVE: Final = re.compile(
    r"(?i)\b(?:never|don't|do\s+not|doesn't|does\s+not|must\s+not|mustn't|shouldn't|should\s+not|"
    r"can't|cannot|not\s+allowed|no\s+longer|avoid|stop|without)\b"
)
_VALUE: Final = re.compile(
    r"(?i)\d+(?:[.,]\d+)?|\b(?:hourly|daily|nightly|weekly|biweekly|fortnightly|monthly|quarterly|"
    r"yearly|annually|mondays?|tuesdays?|wednesdays?|thursdays?|fridays?|saturdays?|sundays?)\b"
)
_ROLE_FILLER: Final = frozenset({"now", "also", "still", "the", "a", "an", "account", "all"})


def replacement_signal(text: str) -> bool:
    """True when `text` says it replaces something ("instead of", "now handles", "taking over",
    "no longer", "replaces", "actually", "switch to", "from now on ... instead")."""
    return REPLACEMENT.search(text) is not None


def _role(text: str) -> tuple[set[str], set[str]] | None:
    """(assignee stems, object stems) for "X handles Y" / "Y is handled by X", else None."""
    body, _ = strip_leading_markers(text)
    body = body.strip().rstrip(".!")
    m = ROLE_STATEMENT.match(body) or _PASSIVE_ROLE.match(body)
    if m is None:
        return None
    who, what = m.group("who"), m.group("what")
    if len(words(who)) > 4:
        return None  # not a short subject: not a role statement
    what_stems = content_stems(what) - _ROLE_FILLER
    who_stems = content_stems(who) - _ROLE_FILLER
    if not what_stems or not who_stems:
        return None
    return who_stems, what_stems


def _names(text: str) -> set[str]:
    """Capitalised words after the first one: a rough set of the names a rule is about."""
    tokens = words(strip_leading_markers(text)[0])
    return {t.lower() for t in tokens[1:] if t[:1].isupper() and t.lower() not in _NOT_NAMES}


def _overlap(a: set[str], b: set[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


def judge(new_text: str, old_text: str, cosine: float) -> ReconcileJudgement:
    """Judge a new memory against an existing one without an LLM (thresholds: module doc).

    Args:
        new_text: The memory just stored.
        old_text: An existing memory of the same type.
        cosine: Embedding cosine similarity of the two texts.

    Returns:
        The verdict and a one-sentence reason.
    """
    new_stems, old_stems = content_stems(new_text), content_stems(old_text)
    overlap = _overlap(new_stems, old_stems)
    new_role, old_role = _role(new_text), _role(old_text)
    same_role = (
        new_role is not None and old_role is not None and _overlap(new_role[1], old_role[1]) >= 0.5
    )
    same_topic = (
        cosine >= SAME_TOPIC_COSINE
        or (cosine >= RELATED_COSINE and overlap >= SAME_TOPIC_OVERLAP)
        or (same_role and cosine >= RELATED_COSINE)
    )
    if not same_topic:
        return ReconcileJudgement(
            verdict="NO_CONFLICT",
            reason=f"Different topics (cosine {cosine:.2f}, word overlap {overlap:.2f}).",
        )
    if same_role and new_role is not None and old_role is not None:
        if not (new_role[0] & old_role[0]):
            return ReconcileJudgement(
                verdict="SUPERSEDES",
                reason="Same responsibility, assigned to someone else.",
            )
    if replacement_signal(new_text):
        return ReconcileJudgement(
            verdict="SUPERSEDES", reason="Same topic, and the new memory says it replaces the old."
        )
    new_negative = _NEGATIVE.search(new_text) is not None
    old_negative = _NEGATIVE.search(old_text) is not None
    if new_negative != old_negative:
        return ReconcileJudgement(
            verdict="CONTRADICTION",
            reason="Same topic with opposite rules and no word of replacement.",
        )
    new_names, old_names = _names(new_text), _names(old_text)
    if new_names and old_names and not (new_names & old_names):
        return ReconcileJudgement(
            verdict="NO_CONFLICT", reason="Similar rules about different entities."
        )
    new_values = {v.lower() for v in _VALUE.findall(new_text)}
    old_values = {v.lower() for v in _VALUE.findall(old_text)}
    if new_negative and old_negative:
        # Bans add up ("never on Mondays", "never on Fridays"); only limits can clash.
        new_values = {v for v in new_values if v[0].isdigit()}
        old_values = {v for v in old_values if v[0].isdigit()}
    if new_values and old_values and new_values != old_values:
        return ReconcileJudgement(
            verdict="CONTRADICTION",
            reason="Same rule with different values and no word of replacement.",
        )
    return ReconcileJudgement(
        verdict="NO_CONFLICT", reason="Same topic, compatible (or the same rule restated)."
    )

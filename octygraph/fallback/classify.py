"""Layer 1 without an LLM: entities, intents, statement buckets and operations per sentence."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import date
from typing import Final

from octygraph.judgement.analysis import Sentence, analyze
from octygraph.judgement.entities import Gazetteer
from octygraph.judgement.patterns import CODE, sentence_type
from octygraph.models import Classification, Intent, Operations, merge_classifications
from octygraph.safety.checks import redact_secrets
from octygraph.text.lexicon import (
    COMMON_VERBS,
    IRREGULAR_PAST,
    PERSON_VERBS,
    TIME_WORDS,
    VAGUE_WORDS,
)
from octygraph.text.words import MAX_SENTENCES, rx, split_sentences, stem

_INTENT_PATTERNS: Final[tuple[tuple[Intent, re.Pattern[str]], ...]] = (
    (
        "status",
        rx(
            r"""\b(?:status|progress|how\s+(?:is|are)\s+[\w\s]+\s+going|where\s+are\s+we|blocked|
            any\s+updates?|update\s+on|is\s+[\w\s]+\s+(?:done|finished|ready|live|merged|deployed)|
            still\s+(?:open|pending|running))\b"""
        ),
    ),
    (
        "process",
        rx(
            r"""\bhow\s+(?:do|can|should|would)\s+(?:i|we|you)\b|\bhow\s+to\b|\bsteps?\b|
            \bprocess\b|\bprocedure\b|\bworkflow\b|\bchecklist\b|\bwhat's\s+the\s+way\b"""
        ),
    ),
    (
        "recall",
        rx(
            r"""\bremember\b|\brecall\b|\bdid\s+i\s+(?:tell|mention|say)\b|\bwhat\s+did\b|
            \blast\s+time\b|\bwe\s+(?:discussed|talked)\b|\byou\s+said\b|\bearlier\b"""
        ),
    ),
    (
        "comparison",
        rx(
            r"""\bcompare\b|\bcompared\b|\bversus\b|\bvs\.?\b|\bdifference\s+between\b|
            \bbetter\s+than\b|\bworse\s+than\b|\bwhich\s+is\s+(?:better|faster|cheaper)\b"""
        ),
    ),
    (
        "verification",
        rx(
            r"""\bis\s+it\s+true\b|\bconfirm\b|\bdouble[-\s]check\b|\bverify\b|\bright\?|
            \bcorrect\?|\bisn't\s+it\b|\bis\s+that\s+right\b|\bam\s+i\s+right\b"""
        ),
    ),
    (
        "planning",
        rx(
            r"""\bplan(?:s|ned|ning)?\b|\bschedul\w*|\bdeadlines?\b|\bdue\b|\broadmap\b|
            \bnext\s+steps\b|\bmilestones?\b|\bupcoming\b|\bcoming\s+up\b"""
        ),
    ),
    (
        "delegation",
        rx(
            r"""\bassign\w*|\bdelegat\w*|\bhand\s+(?:off|over)\b|\bask\s+\w+\s+to\b|
            \bhave\s+\w+\s+(?:do|handle|look)\b|\bhandles?\b|\bin\s+charge\b|\bresponsible\b|
            \bowns?\b|\btak(?:e|es|ing)\s+over\b|\bwho\s+(?:handles|owns|manages|is\s+responsible)"""
        ),
    ),
)
_PROCESS_PHRASES: Final = rx(
    r"""\bhow\s+(?:do|can|should|would)\s+(?:i|we|you)\s+(?P<a>[^?.!,]+)
    | \bhow\s+to\s+(?P<b>[^?.!,]+)
    | \b(?:process|procedure|steps|workflow|checklist)\s+(?:for|to|of)\s+(?P<c>[^?.!,]+)
    | \b(?:about|going)\s+to\s+(?P<d>[^?.!,]+)
    | \b(?:before|after)\s+(?P<e>\w+ing(?:\s+(?:the\s+)?\w+)?)"""
)
_VERB_STEMS: Final = frozenset(stem(v) for v in COMMON_VERBS)


def _intents(s: Sentence, kind: str | None, speculative: bool) -> list[Intent]:
    found: list[Intent] = [name for name, pattern in _INTENT_PATTERNS if pattern.search(s.low)]
    if kind == "instruction" or s.strong_rule:
        found.append("instruction")
    if s.correction:
        found.append("correction")
    if s.opinion or kind == "opinion":
        found.append("opinion")
    if kind == "plan" or (s.future and "planning" not in found):
        found.append("planning")
    if (s.imperative or s.request) and not speculative:
        found.append("action")
    if s.question and not found:
        found.append("information")
    if s.question and s.entities and "information" not in found and "status" not in found:
        found.append("information")
    if kind in ("fact", "event") and not found:
        found.append("information")
    return list(dict.fromkeys(found))


def _concepts(s: Sentence) -> list[str]:
    """Topic words: content words that are not names, verbs, time words, numbers or fillers."""
    entity_words = {w.lower() for e in s.entities for w in e.name.split()}
    out: list[str] = []
    for word in s.content:
        if (
            len(word) < 4
            or word in entity_words
            or word in TIME_WORDS
            or word in VAGUE_WORDS
            or word in IRREGULAR_PAST
            or word in PERSON_VERBS
            or not word.replace("-", "").isalpha()
            or word.endswith(("ed", "ly"))
        ):
            continue
        if not word.endswith("ing") and (word in COMMON_VERBS or stem(word) in _VERB_STEMS):
            continue
        out.append(word)
    return list(dict.fromkeys(out))[:5]


def _processes(s: Sentence, kind: str | None) -> list[str]:
    out: list[str] = []
    for m in _PROCESS_PHRASES.finditer(s.body):
        phrase = next(g for g in m.groups() if g)
        phrase = " ".join(phrase.split()[:8]).strip(" ,;:")
        if phrase:
            out.append(phrase)
    if (
        not out
        and not s.question
        and (s.imperative or kind == "instruction")
        and len(s.words) <= 12
    ):
        out.append(s.body.rstrip(".!?"))
    return out


def classify_sentence(s: Sentence, today: date) -> Classification:
    """Classify one analysed sentence (texts are redacted: the result lands in traces)."""
    kind, _ = sentence_type(s, today)
    if s.injection or CODE.search(s.text[:600]):
        # Keep the names for retrieval; read nothing else into code or a steering attempt.
        return Classification(entities=list(s.entities), operations=Operations(retrieve=True))
    text, _ = redact_secrets(s.body.strip())
    speculative = s.question or s.hypothetical
    return Classification(
        entities=list(s.entities),
        implied_facts=[text] if kind == "fact" else [],
        events=[text] if kind == "event" else [],
        plans=[text] if kind == "plan" else [],
        opinions=[text] if kind == "opinion" else [],
        concepts=_concepts(s),
        implied_processes=[]
        if s.hypothetical
        else [redact_secrets(p)[0] for p in _processes(s, kind)],
        intents=_intents(s, kind, speculative),
        operations=Operations(retrieve=not s.greeting),
    )


def classify(
    prompt: str,
    known_entities: Gazetteer | Iterable[str] | Mapping[str, str] = (),
    today: date | None = None,
) -> Classification:
    """Classify a prompt without an LLM (the deterministic Layer 1).

    Each sentence is classified on its own and the results are merged, as the LLM path does.
    Retrieval runs for everything but greetings. Whether anything is worth storing is the storage
    verdict's call, not the sentence patterns': the store flag stays false here, and the pipeline
    sets it from the verdict (`pipeline.nodes.judge_storage.with_verdict`) beside retrieval.

    Args:
        prompt: The user's message.
        known_entities: Entity names from the database (or a name -> kind mapping, or a
            prebuilt `Gazetteer`), matched case-insensitively as whole words.
        today: Reference day for dates (defaults to the local date).

    Returns:
        The merged classification; an empty prompt gives no operations.
    """
    today = today or date.today()
    gazetteer = Gazetteer.coerce(known_entities)
    texts = split_sentences(prompt)[:MAX_SENTENCES]
    if not texts:
        return Classification(operations=Operations(retrieve=False, store=False))
    parts = [classify_sentence(analyze(text, today, gazetteer), today) for text in texts]
    return merge_classifications(parts)

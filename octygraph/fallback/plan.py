"""Layer 1.5 search plan without an LLM: complexity by the spec's table, then a fixed list of steps.

| complexity | when | steps |
|---|---|---|
| SIMPLE_FACT | no entity, no process ("How much revenue?") | search_facts (+ search_events for time words) |
| ENTITY_LOOKUP | a question or statement about named things ("Who is Peter?") | search_entity + get_relationships per entity, search_facts |
| RULE_PROCESS | how-to, instructions, an action about to happen ("I'm about to deploy the API") | search_processes, get_instructions, search_entity per entity, search_facts |
| MULTI_PART | two or more parts with two or more entities or questions ("Dave submitted, what tools for Sarah?") | per part: entity lookups and a targeted search |

Argument names are the tools' own; `get_relationships` gets `entity_name` and the runner resolves
the id. Every value is a string (`days` too).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import date
from typing import Final

from octygraph.judgement.analysis import Sentence, analyze
from octygraph.judgement.entities import Gazetteer, mentions, prompt_gazetteer
from octygraph.models import Classification, Complexity, RetrievalPlan, SearchStep
from octygraph.text.dates import lookback_days
from octygraph.text.words import (
    MAX_SENTENCES,
    content_words,
    normalize_space,
    split_sentences,
)

MAX_ENTITIES: Final = 4
MAX_STEPS: Final = 12
MAX_QUERY_CHARS: Final = 300
MAX_PARTS: Final = 6

_CLAUSE_SPLIT: Final = re.compile(
    r"(?i)(?:,|;|\band\s+also\b|\balso\b)\s+(?=(?:who|what|which|when|where|why|how|is|are|does|do|"
    r"did|can|could)\b)"
)
_TIME_WORDS: Final = re.compile(
    r"(?i)\b(?:when|yesterday|today|last|recent(?:ly)?|lately|ago|this\s+(?:week|month)|happened|"
    r"did|status|progress|latest|since)\b"
)
_RULE_QUESTION: Final = re.compile(
    r"(?i)\b(?:should|shall|supposed\s+to|allowed|may\s+(?:i|we)|can\s+(?:i|we)|"
    r"(?:do|does)\s+(?:i|we)\s+(?:need|have)\s+to|where\s+(?:do|does|should|can|is|are)|"
    r"which\s+(?:tool|channel|repo|repository|folder|service)|what\s+tool|how\s+often)\b"
)
"""A question whose answer is a rule, a tool or a place ("Where should I file this bug?")."""
_PROCESS_INTENTS: Final = frozenset({"process", "instruction", "action"})
_LOOKUP_INTENTS: Final = frozenset(
    {"information", "status", "recall", "delegation", "comparison", "verification", "correction"}
)


def _query(text: str) -> str:
    return normalize_space(text)[:MAX_QUERY_CHARS]


def _topic(text: str) -> str:
    words = [w for w in content_words(text) if not w.isdigit()]
    return " ".join(dict.fromkeys(words)) or _query(text)


def _parts(prompt: str, sentences: list[Sentence]) -> list[str]:
    """Question/statement parts: sentences, with "X, what about Y?" split at the question."""
    parts: list[str] = []
    for s in sentences:
        if s.greeting:
            continue
        parts.extend(p.strip() for p in _CLAUSE_SPLIT.split(s.body) if p.strip())
    return parts[:MAX_PARTS] or [_query(prompt)]


def _complexity(
    classification: Classification, sentences: list[Sentence], parts: list[str]
) -> Complexity:
    intents = set(classification.intents)
    entities = classification.entities
    questions = sum(1 for s in sentences if s.question)
    if len(parts) >= 2 and (len(entities) >= 2 or questions >= 2):
        return "MULTI_PART"
    asks_about_entity = bool(entities) and (
        questions > 0 and intents & _LOOKUP_INTENTS and "process" not in intents
    )
    if asks_about_entity:
        return "ENTITY_LOOKUP"
    if intents & _PROCESS_INTENTS or classification.implied_processes:
        return "RULE_PROCESS"
    if entities:
        return "ENTITY_LOOKUP"
    return "SIMPLE_FACT"


class _Steps:
    def __init__(self) -> None:
        self.steps: list[SearchStep] = []
        self._seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()

    def add(self, tool: str, **args: str | None) -> None:
        clean = {k: v for k, v in args.items() if v}
        key = (tool, tuple(sorted((k, v.casefold()) for k, v in clean.items())))
        if key not in self._seen and len(self.steps) < MAX_STEPS:
            self._seen.add(key)
            self.steps.append(SearchStep(tool=tool, args=clean))


def plan_retrieval(
    prompt: str,
    classification: Classification,
    *,
    today: date | None = None,
    known_entities: Gazetteer | Iterable[str] | None = None,
) -> RetrievalPlan:
    """Build a fixed search plan for the retrieve loop (see the module table).

    Args:
        prompt: The user's message.
        classification: Layer 1 result (LLM or deterministic).
        today: Reference day (only used to analyse sentences; defaults to the local date).
        known_entities: Known entity names (the database gazetteer).

    Returns:
        The plan; no steps when `classification.operations.retrieve` is false.
    """
    if not classification.operations.retrieve:
        return RetrievalPlan(complexity="SIMPLE_FACT", steps=[], reasoning="Nothing to retrieve.")
    today = today or date.today()
    gazetteer = prompt_gazetteer(known_entities, classification.entities)
    sentences = [
        analyze(text, today, gazetteer) for text in split_sentences(prompt)[:MAX_SENTENCES]
    ]
    parts = _parts(prompt, sentences)
    complexity = _complexity(classification, sentences, parts)
    entities = [e.name for e in classification.entities][:MAX_ENTITIES]
    head = prompt[:2000]
    days = lookback_days(head)
    wants_events = (
        days is not None
        # Plans are searched with events: a question about what lies ahead wants them.
        or bool({"status", "recall", "planning"} & set(classification.intents))
        or bool(_TIME_WORDS.search(head) and any(s.question for s in sentences))
    )
    query = _query(" ".join(p for p in parts) if parts else prompt)
    steps = _Steps()

    def events(text: str) -> None:
        steps.add("search_events", query=_query(text), days=str(days) if days else None)

    def lookups(names: list[str]) -> None:
        for name in names:
            steps.add("search_entity", name=name)
            steps.add("get_relationships", entity_name=name)

    # Rules, tools and places live in instructions: a question about them searches those too.
    rule_question = (
        any(part.question for part in sentences) and _RULE_QUESTION.search(head) is not None
    )
    if complexity == "SIMPLE_FACT":
        steps.add("search_facts", query=query)
        if wants_events:
            events(query)
        if rule_question:
            steps.add("search_processes", query=query)
        reasoning = "A single fact with no named entity: one search_facts call."
    elif complexity == "ENTITY_LOOKUP":
        lookups(entities)
        steps.add("search_facts", query=query)
        if wants_events:
            events(query)
        if rule_question:
            steps.add("search_processes", query=query)
        reasoning = f"About {', '.join(entities)}: look up each entity and its relationships."
    elif complexity == "RULE_PROCESS":
        topic = _topic(
            " ".join(classification.implied_processes) or " ".join(classification.concepts) or query
        )
        steps.add(
            "search_processes", query=_query(" ".join(classification.implied_processes) or query)
        )
        steps.add("get_instructions", topic=topic)
        for name in entities:
            steps.add("search_entity", name=name)
        steps.add("search_facts", query=query)
        reasoning = "A how-to or an action: fetch the processes and instructions that apply."
    else:
        for part in parts:
            part_entities = [n for n in entities if mentions(part, n)]
            lookups(part_entities)
            analysed = analyze(part, today, gazetteer)
            if analysed.past:
                events(part)
            elif re.search(r"(?i)\b(?:how|process|steps|tools?|rules?|should|allowed)\b", part):
                steps.add("search_processes", query=_query(part))
                steps.add("get_instructions", topic=_topic(part))
            else:
                steps.add("search_facts", query=_query(part))
        lookups(entities)
        reasoning = f"{len(parts)} parts: targeted searches for each."
    return RetrievalPlan(complexity=complexity, steps=steps.steps, reasoning=reasoning)

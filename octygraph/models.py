"""Shared pydantic models: LLM structured-output schemas and values carried in graph state.

Every field has a description because the models double as function-calling schemas: the LLM reads
them. The schemas stay flat (one level of nesting at most) and every list defaults to `[]`, so a
model that leaves a field out still produces a valid object. Validators normalise the small
mistakes models make (an unknown entity kind, a datetime where a date was asked for, a scope of
0.8) instead of failing the whole parse, which would cost a retry or the deterministic fallback.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, datetime
from typing import Any, Final, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from octygraph.store.schema import DEFAULT_SCOPE
from octygraph.store.schema import SUBTYPES as STORE_SUBTYPES

NodeType = Literal["entity", "fact", "event", "opinion", "instruction", "plan"]

# Spelled out for the LLM's JSON schema; tests/test_models.py checks it is the store's entity subtypes.
EntityKind = Literal[
    "person",
    "org",
    "project",
    "place",
    "tool",
    "process",
    "document",
    "concept",
    "event",
    "account",
]

SUBTYPES: Final[dict[str, tuple[str, ...]]] = STORE_SUBTYPES
"""Allowed subtypes per node type, as in the specification's node table (defined with the schema)."""

DEFAULT_SUBTYPE: Final[dict[str, str | None]] = {
    "entity": "concept",
    "fact": "definitional",
    "event": "action",
    "opinion": None,
    "instruction": "instruction",
    "plan": "scheduled",
}
"""Subtype used when none (or an unknown one) is given."""

SCOPE_DEFAULTS: Final[dict[str, float]] = DEFAULT_SCOPE
"""Default scope for node types that carry one (the specification's table)."""

Intent = Literal[
    "action",
    "information",
    "status",
    "process",
    "recall",
    "comparison",
    "verification",
    "instruction",
    "correction",
    "opinion",
    "planning",
    "delegation",
]

Complexity = Literal["SIMPLE_FACT", "ENTITY_LOOKUP", "RULE_PROCESS", "MULTI_PART"]

InstructionPattern = Literal[
    "process",
    "tool_usage",
    "role_assignment",
    "threshold",
    "exception",
    "preference",
    "correction",
    "ban",
]

InstructionSubtype = Literal["instruction", "tool_usage", "rule", "process"]

Verdict = Literal["NO_CONFLICT", "SUPERSEDES", "CONTRADICTION"]

RETRIEVE_TOOLS: Final[tuple[str, ...]] = (
    "search_entity",
    "get_relationships",
    "search_facts",
    "search_events",
    "search_processes",
    "get_instructions",
    "done",
)
"""Tool names of the retrieve loop, in the specification's order."""

INSTRUCTION_SCOPES: Final[tuple[float, ...]] = (1.0, 0.5, 0.2)
"""Universal, team/tool-wide, entity-specific."""

_KIND_SYNONYMS: Final[dict[str, str]] = {
    "people": "person",
    "user": "person",
    "human": "person",
    "employee": "person",
    "organization": "org",
    "organisation": "org",
    "company": "org",
    "team": "org",
    "business": "org",
    "client": "account",
    "customer": "account",
    "location": "place",
    "city": "place",
    "country": "place",
    "software": "tool",
    "service": "tool",
    "library": "tool",
    "framework": "tool",
    "language": "tool",
    "product": "project",
    "repo": "project",
    "repository": "project",
    "app": "project",
    "workflow": "process",
    "procedure": "process",
    "doc": "document",
    "file": "document",
    "topic": "concept",
    "other": "concept",
    "thing": "concept",
    "meeting": "event",
}

_ENTITY_KINDS: Final[frozenset[str]] = frozenset(get_args(EntityKind))
_INTENTS: Final[frozenset[str]] = frozenset(get_args(Intent))


def normalize_kind(value: object) -> str:
    """Map a free-form entity kind onto the spec's entity subtypes (unknown -> "concept")."""
    text = str(value or "").strip().lower()
    if text in _ENTITY_KINDS:
        return text
    return _KIND_SYNONYMS.get(text, "concept")


def normalize_iso_date(value: object) -> str | None:
    """Return `YYYY-MM-DD` for a date, datetime or ISO string; None when it is not a date."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    text = str(value).strip()
    if not text or text.lower() in {"null", "none", "n/a"}:
        return None
    try:
        return date.fromisoformat(text[:10]).isoformat()
    except ValueError:
        return None


def _dedup(items: Iterable[str]) -> list[str]:
    """Drop exact repeats and empty strings, keeping first-seen order."""
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        if item and item not in seen:
            seen.add(item)
            out.append(item)
    return out


class _Model(BaseModel):
    # Models are values in graph state and in traces: extra keys from a chatty LLM are ignored.
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class EntityMention(_Model):
    """A named thing the user mentions."""

    name: str = Field(
        description="The entity's name as the user wrote it, without articles or possessive 's "
        "(e.g. 'Peter', 'Anderson', 'GitHub Actions')."
    )
    kind: EntityKind = Field(
        default="concept",
        description="What the entity is: person, org, project, place, tool, process, document, "
        "concept, event or account (a client or customer account).",
    )
    ambiguous: bool = Field(
        default=False,
        description="True when the name could refer to more than one thing or its kind is a guess.",
    )

    @field_validator("kind", mode="before")
    @classmethod
    def _kind(cls, value: object) -> str:
        return normalize_kind(value)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return value.strip()


class Operations(_Model):
    """Which halves of the pipeline run for this prompt."""

    retrieve: bool = Field(
        default=True,
        description="True when memory should be searched: questions and almost every prompt "
        "except greetings and acknowledgements.",
    )
    store: bool = Field(
        default=False,
        description="True when the user is telling something new and concrete: an instruction, "
        "a correction, a fact, a real event or a dated plan. False for questions, hypotheticals, "
        "greetings, common sense and vague statements.",
    )


class Classification(_Model):
    """Layer 1 result: what the prompt mentions and which operations to run."""

    entities: list[EntityMention] = Field(
        default_factory=list,
        description="People, organisations, projects, places, tools and other named things mentioned.",
    )
    implied_facts: list[str] = Field(
        default_factory=list,
        description="Specific, concrete facts the user states, in their own words. No generic knowledge.",
    )
    events: list[str] = Field(
        default_factory=list, description="Things that happened, in the user's words."
    )
    plans: list[str] = Field(
        default_factory=list,
        description="Future plans, deadlines and scheduled items, in the user's words.",
    )
    opinions: list[str] = Field(
        default_factory=list, description="Opinions and judgements the user expresses."
    )
    concepts: list[str] = Field(
        default_factory=list,
        description="Topics or concepts the prompt is about (e.g. 'deployment', 'billing').",
    )
    implied_processes: list[str] = Field(
        default_factory=list,
        description="Known procedures the prompt refers to (e.g. 'deploy the API', 'publish an article').",
    )
    intents: list[Intent] = Field(
        default_factory=list,
        description="The user's intents: action, information, status, process, recall, comparison, "
        "verification, instruction, correction, opinion, planning, delegation.",
    )
    operations: Operations = Field(
        default_factory=Operations, description="Whether to retrieve, store, or both."
    )

    @field_validator("intents", mode="before")
    @classmethod
    def _intents(cls, value: object) -> list[str]:
        # Drop intents the model invented rather than failing the whole classification.
        if not isinstance(value, list | tuple):
            return []
        cleaned = (str(v).strip().lower() for v in value)
        return _dedup(v for v in cleaned if v in _INTENTS)


def merge_classifications(parts: Iterable[Classification]) -> Classification:
    """Merge per-sentence classifications into one.

    Entities are deduplicated by case-insensitive name (first spelling and kind win, `ambiguous`
    is OR-ed), operations are OR-ed, and the other lists are concatenated without exact repeats.

    Args:
        parts: The per-sentence results, in sentence order.

    Returns:
        One classification for the whole prompt; an empty one (retrieve only) when `parts` is empty.
    """
    parts = list(parts)
    if not parts:
        return Classification()
    entities: dict[str, EntityMention] = {}
    for part in parts:
        for mention in part.entities:
            key = mention.name.casefold()
            if key in entities:
                known = entities[key]
                if mention.ambiguous and not known.ambiguous:
                    entities[key] = known.model_copy(update={"ambiguous": True})
            else:
                entities[key] = mention

    def cat(field: str) -> list[str]:
        return _dedup(item for part in parts for item in getattr(part, field))

    return Classification(
        entities=list(entities.values()),
        implied_facts=cat("implied_facts"),
        events=cat("events"),
        plans=cat("plans"),
        opinions=cat("opinions"),
        concepts=cat("concepts"),
        implied_processes=cat("implied_processes"),
        intents=cat("intents"),  # type: ignore[arg-type]  # validated by the model
        operations=Operations(
            retrieve=any(p.operations.retrieve for p in parts),
            store=any(p.operations.store for p in parts),
        ),
    )


class SearchStep(_Model):
    """One retrieve-tool call of a search plan."""

    tool: str = Field(
        description="Retrieve tool to call: search_entity, get_relationships, search_facts, "
        "search_events, search_processes or get_instructions."
    )
    args: dict[str, str] = Field(
        default_factory=dict,
        description="Tool arguments as strings, e.g. {'name': 'Peter'} or {'query': '...', 'days': '7'}. "
        "get_relationships takes {'entity_name': ...}; the runner resolves the id.",
    )

    @field_validator("args", mode="before")
    @classmethod
    def _args(cls, value: object) -> dict[str, str]:
        if not isinstance(value, dict):
            return {}
        return {str(k): str(v) for k, v in value.items() if v is not None}


class RetrievalPlan(_Model):
    """Layer 1.5 search strategy."""

    complexity: Complexity = Field(
        description="SIMPLE_FACT (one search_facts), ENTITY_LOOKUP (search_entity + "
        "get_relationships), RULE_PROCESS (search_processes, instructions) or MULTI_PART "
        "(several targeted searches)."
    )
    steps: list[SearchStep] = Field(
        default_factory=list, description="Tool calls to make, in order."
    )
    reasoning: str = Field(default="", description="One sentence on why this plan.")


class StorageItem(_Model):
    """One memory to store."""

    type: NodeType = Field(
        description="Node type: entity, fact, event, opinion, instruction or plan."
    )
    subtype: str | None = Field(
        default=None,
        description="Subtype for the type. fact: definitional, causal, conditional, comparative, "
        "negation. event: action, decision, conversation, incident, outcome, completed_plan. "
        "instruction: instruction, tool_usage, rule, process. plan: scheduled, intended, requested. "
        "entity: person, org, project, place, tool, process, document, concept, event, account. "
        "opinion: none.",
    )
    content: str = Field(
        description="The memory in the user's own words, one self-contained statement."
    )
    entities: list[str] = Field(
        default_factory=list, description="Names of the entities this memory is about."
    )
    valid_from: str | None = Field(
        default=None,
        description="ISO date (YYYY-MM-DD) the plan is due or the event happened; null otherwise.",
    )
    scope: float | None = Field(
        default=None,
        description="Instructions: 1.0 universal, 0.5 team/tool-wide, 0.2 entity-specific. "
        "Plans: breadth 0-1. Null for other types.",
    )
    salience: float = Field(default=1.0, ge=0.0, description="Importance multiplier, 1.0 normal.")
    correction: bool = Field(
        default=False, description="True when this corrects or replaces something stored before."
    )
    replaces: str | None = Field(
        default=None,
        description="For corrections: words that identify the old memory to supersede "
        "(e.g. 'handles the Anderson account'); null otherwise.",
    )

    @field_validator("valid_from", mode="before")
    @classmethod
    def _valid_from(cls, value: object) -> str | None:
        return normalize_iso_date(value)

    @field_validator("scope", mode="before")
    @classmethod
    def _scope(cls, value: object) -> float | None:
        if value is None or value == "":
            return None
        try:
            return min(1.0, max(0.0, float(str(value))))
        except ValueError:
            return None

    @field_validator("content")
    @classmethod
    def _content(cls, value: str) -> str:
        return value.strip()

    @model_validator(mode="after")
    def _subtype_and_scope(self) -> StorageItem:
        allowed = SUBTYPES[self.type]
        if self.type == "entity" and self.subtype is not None:
            self.subtype = normalize_kind(self.subtype)
        elif self.subtype not in allowed:
            self.subtype = DEFAULT_SUBTYPE[self.type]
        if self.scope is None and self.type in SCOPE_DEFAULTS:
            self.scope = SCOPE_DEFAULTS[self.type]
        if self.replaces is not None and not self.replaces.strip():
            self.replaces = None
        return self


class StorageDecision(_Model):
    """Layer 1.5 storage filter: is the user telling something worth remembering?"""

    store: bool = Field(description="True when at least one item should be stored.")
    reason: str = Field(default="", description="One sentence: why store or why not.")
    items: list[StorageItem] = Field(
        default_factory=list, description="The memories to store; empty when store is false."
    )
    # Not shown to a model: only the deterministic verdict proposes candidates.
    candidates: SkipJsonSchema[list[StorageItem]] = Field(
        default_factory=list,
        description="Statements that may last but are unsure: stored as candidates for review, "
        "not given unprompted until confirmed.",
    )
    candidate_p: SkipJsonSchema[float | None] = Field(
        default=None,
        description="The storage verdict's probability for the candidates, when there are any.",
    )


class ExtractedInstruction(_Model):
    """A standing instruction found in the user's message."""

    content: str = Field(description="The instruction in the user's own words.")
    pattern: InstructionPattern = Field(
        description="process, tool_usage, role_assignment, threshold, exception, preference, "
        "correction (updates an existing rule) or ban (something that must not happen)."
    )
    subtype: InstructionSubtype = Field(
        default="instruction",
        description="Instruction node subtype: instruction, tool_usage, rule or process.",
    )
    scope: float = Field(
        default=0.5,
        description="1.0 universal (applies everywhere), 0.5 team- or tool-wide, "
        "0.2 specific to one person, client or account.",
    )
    entities: list[str] = Field(
        default_factory=list, description="Names of the entities the instruction mentions."
    )

    @field_validator("subtype", mode="before")
    @classmethod
    def _subtype(cls, value: object) -> str:
        text = str(value or "").strip().lower()
        return text if text in SUBTYPES["instruction"] else "instruction"

    @field_validator("scope", mode="before")
    @classmethod
    def _scope(cls, value: object) -> float:
        # Snap to the three levels the safety nets and ranking rely on.
        try:
            raw = float(str(value))
        except ValueError:
            return 0.5
        return min(INSTRUCTION_SCOPES, key=lambda level: abs(level - raw))


class InstructionList(_Model):
    """Structured-output wrapper: all instructions in one message (possibly none)."""

    instructions: list[ExtractedInstruction] = Field(
        default_factory=list, description="Every standing instruction found; empty if none."
    )


class ReconcileJudgement(_Model):
    """Verdict on a new instruction against an existing one."""

    verdict: Verdict = Field(
        description="NO_CONFLICT (different topics or compatible), SUPERSEDES (the new one "
        "replaces the old: 'instead of', 'now handles', 'taking over from'), or CONTRADICTION "
        "(same topic, conflicting rules, no explicit replacement)."
    )
    reason: str = Field(default="", description="One sentence explaining the verdict.")

    @field_validator("verdict", mode="before")
    @classmethod
    def _verdict(cls, value: Any) -> Any:
        return str(value).strip().upper().replace(" ", "_") if isinstance(value, str) else value


__all__ = [
    "DEFAULT_SUBTYPE",
    "INSTRUCTION_SCOPES",
    "RETRIEVE_TOOLS",
    "SCOPE_DEFAULTS",
    "SUBTYPES",
    "Classification",
    "Complexity",
    "EntityKind",
    "EntityMention",
    "ExtractedInstruction",
    "InstructionList",
    "InstructionPattern",
    "InstructionSubtype",
    "Intent",
    "NodeType",
    "Operations",
    "ReconcileJudgement",
    "RetrievalPlan",
    "SearchStep",
    "StorageDecision",
    "StorageItem",
    "Verdict",
    "merge_classifications",
    "normalize_iso_date",
    "normalize_kind",
]

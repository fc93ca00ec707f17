"""Graph state: what flows between nodes and is checkpointed.

Keys written by both halves (the retrieve and the store subgraphs run side by side) carry reducers;
everything else is written by exactly one node. Each half takes `HalfInput` only, so what it hands back
is its own work, never a second copy of the notes and timings written before it.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, NotRequired

from typing_extensions import TypedDict

from octygraph.models import (
    Classification,
    ExtractedInstruction,
    RetrievalPlan,
    StorageDecision,
)


def merge_dicts(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    """Reducer for per-stage maps (timings, notes) written by parallel nodes."""
    return {**(left or {}), **(right or {})}


class MemoryRecord(TypedDict):
    """A memory as a tool, a safety net or a write found it: the node's fields (a checkpointable copy),
    how it was found, and what assembly adds when it ranks it."""

    id: str
    type: str
    subtype: str | None
    content: str
    scope: float | None
    salience: float
    valid_from: str | None
    created_at: str
    source: str
    superseded_by: str | None
    via: str
    """The tool or safety net that found it, e.g. `search_facts`, `safety_net:broad_fallback`."""
    search_score: NotRequired[float]
    cosine: NotRequired[float]
    entity_id: NotRequired[str]
    """Found through this entity's edges (with its name and the edge's type)."""
    entity_name: NotRequired[str]
    edge_type: NotRequired[str]
    supersedes: NotRequired[str]
    """A correction: the id of the memory it replaced."""
    candidate: NotRequired[bool]
    """Unconfirmed (`octygraph.memory.candidates`): searchable, not given unprompted."""
    vias: NotRequired[list[str]]
    """Assembly: every way it was found."""
    relevance: NotRequired[float]
    rank: NotRequired[float]
    promoted_from_plan: NotRequired[bool]
    """Assembly: a plan whose date has passed, shown as an event."""


Record = MemoryRecord


class Flag(TypedDict):
    """A new memory that contradicts a stored one, for the user's review (reconciliation)."""

    kind: Literal["CONTRADICTION"]
    new_id: str
    existing_id: str
    new: str
    existing: str
    reason: str
    judge: str


LayerMode = Literal["model", "fallback", "offline", "skipped"]


class Layer(TypedDict):
    """What one stage ran: the model, the fallback provider, the deterministic path, or nothing; and
    when it was not the model, why (the fault, e.g. `HTTP 500`, `deadline reached`)."""

    mode: LayerMode
    reason: NotRequired[str]


class ToolCall(TypedDict):
    """One tool call of a loop, the fixed plan, the safety nets or force_store, as the trace shows it."""

    loop: str
    """Who called: `retrieve_loop`, `store_loop` (the agents), `fixed_plan` (the plan run before the
    agent; `retrieve_loop` offline), `safety_nets`, `force_store`."""
    tool: str
    args: dict[str, Any]
    status: Literal["success", "error"]
    result: str
    """What the tool answered (cut to 2,000 characters), or the error the caller was told."""
    fault: NotRequired[str]
    """On errors, the kind of fault: `invalid tool arguments`, `unknown tool`, `store error`,
    `tool failed`."""


class InputState(TypedDict, total=False):
    """What a caller passes in."""

    prompt: str
    """The user's message (or, for the Stop hook, the assistant's report)."""


class OutputState(TypedDict, total=False):
    """What a caller gets back."""

    context: str
    """The exact text to inject; empty when nothing relevant was found."""
    sections: dict[str, list[Record]]
    stored: list[Record]
    candidates: list[Record]
    superseded: list[str]
    flags: list[Flag]
    timings_ms: dict[str, float]
    layers: dict[str, Layer]
    needed_again: list[str]


class PipelineState(InputState, total=False):
    """The whole state of one run."""

    context: str
    sections: dict[str, list[Record]]
    classification: Classification
    classified_offline: bool
    """L1 is the deterministic classifier (no model, the Stop hook, or the model's reply did not parse):
    its store flag is then the storage verdict's, set in the store half (`judge_storage`)."""
    l1_raw: list[str]
    """Raw L1 replies (LLM path), for the trace."""
    plan: RetrievalPlan
    storage: StorageDecision
    instructions: list[ExtractedInstruction]
    retrieved: Annotated[list[Record], operator.add]
    """Records found by the retrieve loop and the safety nets."""
    tool_calls: Annotated[list[ToolCall], operator.add]
    """Every tool call of both loops: tool, args, result summary, loop."""
    stored: Annotated[list[Record], operator.add]
    candidates: Annotated[list[Record], operator.add]
    """Stored as candidates: the verdict was unsure (`octygraph.memory.candidates`)."""
    superseded: Annotated[list[str], operator.add]
    flags: Annotated[list[Flag], operator.add]
    notes: Annotated[list[str], operator.add]
    """Why something degraded (timeouts, parse failures, fallbacks)."""
    timings_ms: Annotated[dict[str, float], merge_dicts]
    layers: Annotated[dict[str, Layer], merge_dicts]
    """Per stage, what ran (`model`, `fallback`, `offline`, `skipped`) and why (see nodes/_common.py)."""
    assembled: str
    """The ranked, budgeted context before curation."""
    needed_again: list[str]
    """Memories the prompt needed that the session had been given already (counted as uses)."""


class HalfInput(TypedDict, total=False):
    """What each half (subgraph) reads from the parent: the prompt, L1's classification and the plan.

    What to store is judged inside the store half (`judge_storage`), so retrieval never waits for it."""

    prompt: str
    classification: Classification
    classified_offline: bool
    plan: RetrievalPlan


class RetrieveOutput(TypedDict, total=False):
    """What the retrieve half hands back to the parent."""

    context: str
    sections: dict[str, list[Record]]
    assembled: str
    needed_again: list[str]
    retrieved: Annotated[list[Record], operator.add]
    tool_calls: Annotated[list[ToolCall], operator.add]
    notes: Annotated[list[str], operator.add]
    timings_ms: Annotated[dict[str, float], merge_dicts]
    layers: Annotated[dict[str, Layer], merge_dicts]


class StoreOutput(TypedDict, total=False):
    """What the store half hands back to the parent: its storage judgement (refined by the model when
    there is one), and L1's classification with the storage verdict as its store flag when L1 had no
    model (the retrieve half never writes it)."""

    classification: Classification
    storage: StorageDecision
    instructions: list[ExtractedInstruction]
    stored: Annotated[list[Record], operator.add]
    candidates: Annotated[list[Record], operator.add]
    superseded: Annotated[list[str], operator.add]
    flags: Annotated[list[Flag], operator.add]
    tool_calls: Annotated[list[ToolCall], operator.add]
    notes: Annotated[list[str], operator.add]
    timings_ms: Annotated[dict[str, float], merge_dicts]
    layers: Annotated[dict[str, Layer], merge_dicts]

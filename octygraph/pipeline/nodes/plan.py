"""L1.5: search plan, storage filter and instruction extraction, run concurrently."""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar, cast, get_args

from langgraph.runtime import Runtime

from octygraph.heuristics.plan import plan_retrieval
from octygraph.judgement.storage import filter_storage
from octygraph.models import (
    Classification,
    ExtractedInstruction,
    InstructionList,
    InstructionSubtype,
    RetrievalPlan,
    StorageDecision,
    StorageItem,
)
from octygraph.pipeline import prompts
from octygraph.pipeline.context import Context
from octygraph.pipeline.nodes._common import NO_MODEL, Layer, ask_structured, combine, layer, timed
from octygraph.pipeline.state import PipelineState
from octygraph.pipeline.tools.writes import Refused, check_content

INSTRUCTION_SUBTYPES = get_args(InstructionSubtype)
Told = TypeVar("Told", StorageItem, ExtractedInstruction)


def _keep_safe(found: list[Told], prompt: str) -> tuple[list[Told], list[str]]:
    """Keep what passes the write-time checks (grounded, no injection), with secrets redacted.

    The same `check_content` guards every write; running it here keeps unsafe items away from the store
    agent and records why in the trace.
    """
    kept: list[Told] = []
    notes: list[str] = []
    for item in found:
        try:
            content = check_content(item.content, prompt)
        except Refused as exc:
            notes.append(f"plan: dropped {item.content[:80]!r}: {exc}")
            continue
        kept.append(
            item if content == item.content else item.model_copy(update={"content": content})
        )
    return kept, notes


async def _llm_or(
    ctx: Context, schema: Any, system: str, user: str, fallback: Any, label: str
) -> tuple[Any, list[str], Layer]:
    if ctx.l2_model is None:
        return fallback, [], layer("offline", NO_MODEL)
    asked = await ask_structured(ctx, ctx.l2_model, schema, system, user, "l2")
    if asked.parsed is None:
        note = f"plan: {label} fell back to the deterministic path ({asked.error})"
        return fallback, [note], asked.layer
    return asked.parsed, [], asked.layer


def split_instructions(
    storage: StorageDecision,
) -> tuple[StorageDecision, list[ExtractedInstruction]]:
    """The storage decision without its rules, and the rules as instructions.

    The instructions are the stored items that are rules: one judgement, not two.
    """
    instructions = [
        ExtractedInstruction(
            content=item.content,
            pattern="correction"
            if item.correction
            else "preference"
            if item.subtype == "instruction"
            else "process",
            subtype=cast(InstructionSubtype, item.subtype)
            if item.subtype in INSTRUCTION_SUBTYPES
            else "rule",
            scope=item.scope if item.scope is not None else 1.0,
            entities=item.entities,
        )
        for item in storage.items
        if item.type == "instruction"
    ]
    rest = storage.model_copy(
        update={"items": [i for i in storage.items if i.type != "instruction"]}
    )
    return rest, instructions


@timed("plan")
async def plan(state: PipelineState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Plan the retrieval, filter what to store and extract instructions (three steps at once)."""
    ctx = runtime.context
    prompt = state.get("prompt", "")
    classification = state.get("classification") or Classification()
    today = ctx.day()
    known = ctx.built_gazetteer()  # classify built it: no worker thread needed
    if known is None:
        known = await asyncio.to_thread(ctx.gazetteer)
    offline_plan = plan_retrieval(prompt, classification, today=today, known_entities=known)
    wants_store = classification.operations.store and not ctx.read_only
    # Judged even when L1 wants nothing stored: what the verdict is unsure of is kept as a candidate.
    offline_storage = (
        await asyncio.to_thread(
            filter_storage,
            prompt,
            classification,
            today,
            known_entities=known,
            assistant=ctx.source == "claude",
            project=ctx.get_settings().project_id,
        )
        if not ctx.read_only
        else StorageDecision(store=False, reason="Read-only: nothing is stored.")
    )
    if not wants_store:
        offline_storage = StorageDecision(
            store=False,
            reason="L1: nothing durable to store.",
            candidates=offline_storage.candidates,
            candidate_p=offline_storage.candidate_p,
        )
    offline_storage, offline_instructions = split_instructions(offline_storage)
    context_line = f"Message: {prompt}\nClassification: {classification.model_dump_json()}"
    drafted = state.get("plan")
    n1: list[str] = []
    ran: dict[str, Layer] = {}
    if drafted is not None:
        # The model planned alongside classification (see `draft_plan`): no second call in a row.
        retrieval = drafted
    else:
        retrieval, n1, l1 = await _llm_or(
            ctx, RetrievalPlan, prompts.PLAN_SYSTEM, context_line, offline_plan, "plan_retrieval"
        )
        ran = {"plan": l1}
    if not wants_store:
        # L1 found nothing durable: no storage calls at all, with or without an LLM.
        return {
            "plan": retrieval,
            "storage": offline_storage,
            "instructions": [],
            "notes": n1,
            "layers": ran,
        }
    # The deterministic judgement goes to the store half; with a model, the store half refines it there
    # (`refine_storage`), off the prompt's critical path.
    items, n4 = _keep_safe(list(offline_storage.items), prompt)
    found, n5 = _keep_safe(offline_instructions, prompt)
    storage = offline_storage.model_copy(
        update={"items": items, "store": bool(items) and offline_storage.store}
    )
    return {
        "plan": retrieval,
        "storage": storage,
        "instructions": found,
        "notes": [*n1, *n4, *n5],
        "layers": ran,
    }


async def draft_plan(
    ctx: Context, prompt: str, classification: Classification
) -> tuple[RetrievalPlan | None, list[str], Layer]:
    """The model's search plan, asked at the same time as classification (with the deterministic
    classification as its hint), so classify and plan cost one LLM round trip, not two. None when the
    model gave no usable plan: `plan` then makes the deterministic one from the final classification."""
    if ctx.l2_model is None:
        return None, [], layer("offline", NO_MODEL)
    context_line = f"Message: {prompt}\nClassification: {classification.model_dump_json()}"
    asked = await ask_structured(
        ctx, ctx.l2_model, RetrievalPlan, prompts.PLAN_SYSTEM, context_line, "l2"
    )
    if not isinstance(asked.parsed, RetrievalPlan):
        note = f"plan: plan_retrieval fell back to the deterministic path ({asked.error})"
        return None, [note], asked.layer
    return asked.parsed, [], asked.layer


async def refine_storage(
    ctx: Context,
    prompt: str,
    classification: Classification,
    storage: StorageDecision,
    instructions: list[ExtractedInstruction],
) -> tuple[StorageDecision, list[ExtractedInstruction], list[str], Layer]:
    """The model's storage filter and instruction extraction (in the store half, after the answer),
    starting from the deterministic judgement, which stays when the model fails."""
    today = ctx.day()
    context_line = f"Message: {prompt}\nClassification: {classification.model_dump_json()}"
    (told, n2, l2), (rules, n3, l3) = await asyncio.gather(
        _llm_or(
            ctx,
            StorageDecision,
            prompts.FILTER_SYSTEM.format(today=today.isoformat()),
            context_line,
            storage,
            "filter_storage",
        ),
        _llm_or(
            ctx,
            InstructionList,
            prompts.INSTRUCTIONS_SYSTEM,
            context_line,
            InstructionList(instructions=instructions),
            "extract_instructions",
        ),
    )
    items, n4 = _keep_safe(list(told.items), prompt)
    found, n5 = _keep_safe(list(rules.instructions), prompt)
    store_ok = classification.operations.store or bool(items) or bool(found)
    # The model sees no candidates; what the verdict was unsure of stays one unless the model stores.
    unsure = [] if items or found else storage.candidates
    told = told.model_copy(
        update={
            "items": items,
            "store": bool(items) and told.store,
            "candidates": unsure,
            "candidate_p": storage.candidate_p if unsure else None,
        }
    )
    if not store_ok:
        told = told.model_copy(update={"store": False, "items": []})  # candidates stay
        found = []
    return told, found, [*n2, *n3, *n4, *n5], combine([l2, l3])

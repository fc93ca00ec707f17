"""L1.5: search plan, storage filter and instruction extraction, run concurrently."""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar, cast, get_args

from langgraph.runtime import Runtime

from octygraph import heuristics, prompts
from octygraph.context import Context
from octygraph.models import (
    Classification,
    ExtractedInstruction,
    InstructionList,
    InstructionSubtype,
    RetrievalPlan,
    StorageDecision,
    StorageItem,
)
from octygraph.nodes._common import NO_MODEL, Layer, ask_structured, combine, layer, timed
from octygraph.state import PipelineState
from octygraph.tools.writes import Refused, check_content

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


@timed("plan")
async def plan(state: PipelineState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Plan the retrieval, filter what to store and extract instructions (three steps at once)."""
    ctx = runtime.context
    prompt = state.get("prompt", "")
    classification = state.get("classification") or Classification()
    today = ctx.day()
    known = await asyncio.to_thread(ctx.gazetteer)
    offline_plan = heuristics.plan_retrieval(
        prompt, classification, today=today, known_entities=known
    )
    wants_store = classification.operations.store and not ctx.read_only
    offline_storage = (
        await asyncio.to_thread(
            heuristics.filter_storage,
            prompt,
            classification,
            today,
            known_entities=known,
            assistant=ctx.source == "claude",
            project=ctx.get_settings().project_id,
        )
        if wants_store
        else StorageDecision(store=False, reason="L1: nothing durable to store.")
    )
    # The instructions are the stored items that are rules: one judgement, not two.
    offline_instructions = [
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
        for item in offline_storage.items
        if item.type == "instruction"
    ]
    offline_storage = offline_storage.model_copy(
        update={"items": [i for i in offline_storage.items if i.type != "instruction"]}
    )
    context_line = f"Message: {prompt}\nClassification: {classification.model_dump_json()}"

    retrieval_step = _llm_or(
        ctx, RetrievalPlan, prompts.PLAN_SYSTEM, context_line, offline_plan, "plan_retrieval"
    )
    if not wants_store:
        # L1 found nothing durable: no storage calls at all, with or without an LLM.
        retrieval, n1, l1 = await retrieval_step
        return {
            "plan": retrieval,
            "storage": offline_storage,
            "instructions": [],
            "notes": n1,
            "layers": {"plan": l1},
        }
    (retrieval, n1, l1), (storage, n2, l2), (instructions, n3, l3) = await asyncio.gather(
        retrieval_step,
        _llm_or(
            ctx,
            StorageDecision,
            prompts.FILTER_SYSTEM.format(today=today.isoformat()),
            context_line,
            offline_storage,
            "filter_storage",
        ),
        _llm_or(
            ctx,
            InstructionList,
            prompts.INSTRUCTIONS_SYSTEM,
            context_line,
            InstructionList(instructions=offline_instructions),
            "extract_instructions",
        ),
    )
    items, n4 = _keep_safe(list(storage.items), prompt)
    found, n5 = _keep_safe(list(instructions.instructions), prompt)
    store_ok = classification.operations.store or bool(items) or bool(found)
    storage = storage.model_copy(update={"items": items, "store": bool(items) and storage.store})
    if not store_ok:
        storage = storage.model_copy(update={"store": False, "items": []})
        found = []
    return {
        "plan": retrieval,
        "storage": storage,
        "instructions": found,
        "notes": [*n1, *n2, *n3, *n4, *n5],
        "layers": {"plan": combine([l1, l2, l3])},
    }

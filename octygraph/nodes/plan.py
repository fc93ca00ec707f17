"""L1.5: search plan, storage filter and instruction extraction, run concurrently."""

from __future__ import annotations

import asyncio
from typing import Any

from langgraph.runtime import Runtime

from octygraph import heuristics, prompts
from octygraph.context import Context
from octygraph.heuristics.safety import is_grounded, looks_like_injection, redact_secrets
from octygraph.models import (
    Classification,
    ExtractedInstruction,
    InstructionList,
    RetrievalPlan,
    StorageDecision,
    StorageItem,
)
from octygraph.nodes._common import ask_structured, timed
from octygraph.state import PipelineState


def _safe_items(items: list[StorageItem], prompt: str) -> tuple[list[StorageItem], list[str]]:
    """Keep items grounded in the prompt and free of injection text; redact secrets."""
    kept: list[StorageItem] = []
    notes: list[str] = []
    for item in items:
        content, redacted = redact_secrets(item.content)
        if looks_like_injection(content):
            notes.append(f"plan: refused to store injection-like text: {content[:80]!r}")
            continue
        if not is_grounded(content, prompt):
            notes.append(f"plan: dropped an item not grounded in the prompt: {content[:80]!r}")
            continue
        kept.append(item.model_copy(update={"content": content}) if redacted else item)
    return kept, notes


def _safe_instructions(
    found: list[ExtractedInstruction], prompt: str
) -> tuple[list[ExtractedInstruction], list[str]]:
    kept: list[ExtractedInstruction] = []
    notes: list[str] = []
    for ins in found:
        content, _ = redact_secrets(ins.content)
        if looks_like_injection(content):
            notes.append(f"plan: refused injection-like instruction: {content[:80]!r}")
        elif not is_grounded(content, prompt):
            notes.append(
                f"plan: dropped an instruction not grounded in the prompt: {content[:80]!r}"
            )
        else:
            kept.append(ins.model_copy(update={"content": content}))
    return kept, notes


async def _llm_or(
    ctx: Context, schema: Any, system: str, user: str, fallback: Any, label: str
) -> tuple[Any, list[str]]:
    if ctx.l2_model is None:
        return fallback, []
    parsed, _raw, error = await ask_structured(ctx, ctx.l2_model, schema, system, user, "l2")
    if parsed is None:
        return fallback, [f"plan: {label} fell back to the deterministic path ({error})"]
    return parsed, []


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
    offline_storage = heuristics.filter_storage(prompt, classification, today, known_entities=known)
    offline_instructions = heuristics.extract_instructions(
        prompt, classification, today=today, known_entities=known
    )
    context_line = f"Message: {prompt}\nClassification: {classification.model_dump_json()}"

    (retrieval, n1), (storage, n2), (instructions, n3) = await asyncio.gather(
        _llm_or(
            ctx, RetrievalPlan, prompts.PLAN_SYSTEM, context_line, offline_plan, "plan_retrieval"
        ),
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
    items, n4 = _safe_items(list(storage.items), prompt)
    found, n5 = _safe_instructions(list(instructions.instructions), prompt)
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
    }

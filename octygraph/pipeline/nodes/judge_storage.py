"""What to store: the storage verdict and filter, first in the store half, and the model's refinement.

Judged beside retrieval, never in front of it: the answer needs only the retrieve half. Offline, it
is judged once the answer is out.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, TypeVar, cast, get_args

from langgraph.runtime import Runtime

from octygraph.judgement.storage import filter_storage, has_durable
from octygraph.models import (
    Classification,
    ExtractedInstruction,
    InstructionList,
    InstructionSubtype,
    StorageDecision,
    StorageItem,
)
from octygraph.pipeline import prompts
from octygraph.pipeline.context import Context
from octygraph.pipeline.nodes._common import Layer, ask_or_fall_back, combine, timed
from octygraph.pipeline.state import PipelineState
from octygraph.pipeline.tools.writes import Refused, check_content

INSTRUCTION_SUBTYPES = get_args(InstructionSubtype)
ANSWER_WAIT_S = 1.0
"""The longest the offline store half waits for the answer to go out before it starts anyway."""
Told = TypeVar("Told", StorageItem, ExtractedInstruction)


def with_verdict(classification: Classification, prompt: str, *, assistant: bool) -> Classification:
    """L1 without a model: the deterministic classification, with the storage verdict as its store
    flag (`has_durable`), so a message the verdict refuses costs no storage calls."""
    durable = has_durable(prompt, assistant=assistant)
    operations = classification.operations.model_copy(update={"store": durable})
    return classification.model_copy(update={"operations": operations})


def _keep_safe(found: list[Told], prompt: str, stage: str) -> tuple[list[Told], list[str]]:
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
            notes.append(f"{stage}: dropped {item.content[:80]!r}: {exc}")
            continue
        kept.append(
            item if content == item.content else item.model_copy(update={"content": content})
        )
    return kept, notes


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


def _filter(ctx: Context, prompt: str, classification: Classification) -> StorageDecision:
    """The storage filter with the store's known entities: one trip to a worker thread."""
    return filter_storage(
        prompt,
        classification,
        ctx.day(),
        known_entities=ctx.gazetteer(),
        assistant=ctx.source == "claude",
        project=ctx.get_settings().project_id,
    )


async def judge_storage(state: PipelineState, runtime: Runtime[Context]) -> dict[str, Any]:
    """The deterministic storage judgement: the verdict (L1's store flag when L1 had no model), the
    items and candidates worth storing, and the rules among them as instructions."""
    ctx = runtime.context
    if ctx.answered is not None and ctx.offline:
        # Nothing here waits on a model, and the judgement's embeddings would share the machine with
        # the answer's search: they run once the answer is out (about 5 ms off it on two cores), or
        # after ANSWER_WAIT_S if the answer is slow, so that a late answer does not cost the memory.
        # The wait is not the judgement's time: `timings_ms` counts only `_judge`.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(ctx.answered.wait(), ANSWER_WAIT_S)
    return await _judge(state, runtime)


@timed("judge_storage")
async def _judge(state: PipelineState, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = runtime.context
    prompt = state.get("prompt", "")
    classification = state.get("classification") or Classification()
    verdict: dict[str, Any] = {}
    if state.get("classified_offline"):
        # An assistant's reply, as the Stop hook sends, is read as one.
        classification = await asyncio.to_thread(
            with_verdict, classification, prompt, assistant=ctx.store_only
        )
        verdict = {"classification": classification}
    wants_store = classification.operations.store and not ctx.read_only
    # Judged even when L1 wants nothing stored: what the verdict is unsure of is kept as a candidate.
    if ctx.read_only:
        storage = StorageDecision(store=False, reason="Read-only: nothing is stored.")
    else:
        storage = await asyncio.to_thread(_filter, ctx, prompt, classification)
    if not wants_store:
        storage = StorageDecision(
            store=False,
            reason="L1: nothing durable to store.",
            candidates=storage.candidates,
            candidate_p=storage.candidate_p,
        )
    storage, instructions = split_instructions(storage)
    if not wants_store:
        # L1 found nothing durable: no storage calls at all, with or without an LLM.
        return {**verdict, "storage": storage, "instructions": []}
    # With a model, the store loop refines this judgement (`refine_storage`).
    items, dropped = _keep_safe(list(storage.items), prompt, "judge_storage")
    found, refused = _keep_safe(instructions, prompt, "judge_storage")
    storage = storage.model_copy(update={"items": items, "store": bool(items) and storage.store})
    return {
        **verdict,
        "storage": storage,
        "instructions": found,
        "notes": [*dropped, *refused],
    }


async def refine_storage(
    ctx: Context,
    prompt: str,
    classification: Classification,
    storage: StorageDecision,
    instructions: list[ExtractedInstruction],
) -> tuple[StorageDecision, list[ExtractedInstruction], list[str], Layer]:
    """The model's storage filter and instruction extraction (in the store loop, after the answer),
    starting from the deterministic judgement, which stays when the model fails."""
    today = ctx.day()
    context_line = f"Message: {prompt}\nClassification: {classification.model_dump_json()}"
    (told, n2, l2), (rules, n3, l3) = await asyncio.gather(
        ask_or_fall_back(
            ctx,
            StorageDecision,
            prompts.FILTER_SYSTEM.format(today=today.isoformat()),
            context_line,
            storage,
            "refine_storage: filter_storage",
        ),
        ask_or_fall_back(
            ctx,
            InstructionList,
            prompts.INSTRUCTIONS_SYSTEM,
            context_line,
            InstructionList(instructions=instructions),
            "refine_storage: extract_instructions",
        ),
    )
    items, n4 = _keep_safe(list(told.items), prompt, "refine_storage")
    found, n5 = _keep_safe(list(rules.instructions), prompt, "refine_storage")
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

"""After the store loop: force-store what it missed, then reconcile new instructions with old ones."""

from __future__ import annotations

import asyncio
from typing import Any

from langgraph.runtime import Runtime

from octygraph.fallback import reconcile as wording
from octygraph.models import (
    Classification,
    ExtractedInstruction,
    ReconcileJudgement,
    StorageDecision,
    StorageItem,
)
from octygraph.pipeline import prompts
from octygraph.pipeline.context import Context
from octygraph.pipeline.nodes._common import ask_structured, timed, tool_call
from octygraph.pipeline.state import Flag, PipelineState, Record, ToolCall
from octygraph.pipeline.tools import registry, writes
from octygraph.safety.secrets import is_secret_name
from octygraph.store import GraphStore, StoreError

CORRECTION_MIN_COSINE = 0.45
"""How close an old memory must be to a correction to be the one it replaces."""
RECONCILE_MIN_COSINE = 0.35
"""Existing instructions below this similarity to a new one are not judged at all."""
RECONCILE_CANDIDATES = 5


def _find_replaced(store: GraphStore, item: StorageItem, entity_ids: list[str]) -> str | None:
    """The current memory a correction replaces, about the same entity when known."""
    query = item.replaces or item.content
    # Any type but entities: a correction told as a fact may replace an instruction and vice versa.
    types = ["fact", "opinion", "event", "instruction", "plan"]
    scopes: list[str | None] = list(entity_ids) or [None]
    candidates = []
    for entity_id in scopes:
        candidates += store.search(query, types=types, entity_id=entity_id, limit=5)
    best = None
    for hit in sorted(candidates, key=lambda h: h.cosine, reverse=True):
        if hit.node.content.strip().lower() == item.content.strip().lower():
            continue
        if hit.cosine >= CORRECTION_MIN_COSINE:
            best = hit.node.id
            break
    return best


def _force_store(
    ctx: Context,
    prompt: str,
    classification: Classification,
    items: list[StorageItem],
    instructions: list[ExtractedInstruction],
    candidate: float | None = None,
) -> tuple[list[Record], list[str], list[ToolCall], list[str]]:
    """Write `items` and `instructions`: (records written, ids superseded, calls, notes).

    With `candidate` (the storage verdict's probability) the items are written as candidates, which
    replace nothing; a candidate said again is confirmed instead (`writes.store_memory`)."""
    store = ctx.memory()
    kinds = {e.name.casefold(): e.kind for e in classification.entities}
    stored: list[Record] = []
    superseded: list[str] = []
    calls: list[ToolCall] = []
    notes: list[str] = []
    contents = {i.content.strip().casefold() for i in items}
    extra = [
        StorageItem(
            type="instruction",
            subtype=i.subtype,
            content=i.content,
            entities=i.entities,
            scope=i.scope,
            # "now two approvals instead of one" replaces the rule it corrects, not kept beside it
            correction=i.pattern == "correction",
        )
        for i in instructions
        if i.content.strip().casefold() not in contents
    ]
    for item in [*items, *extra]:
        try:
            entity_ids = [
                store.ensure_entity(name, kinds.get(name.casefold()))[0].id
                for name in item.entities
                if name.strip() and not is_secret_name(name)
            ]
            correction = item.correction and candidate is None
            old_id = _find_replaced(store, item, entity_ids) if correction else None
            if old_id:
                result = writes.supersede_memory(
                    store,
                    old_id=old_id,
                    new_content=item.content,
                    grounding_text=prompt,
                    injection=ctx.injection,
                    source=ctx.source,
                    run_id=ctx.run_id,
                )
                for entity_id in entity_ids:  # the corrected memory is also about the new names
                    store.add_edge(result.records[0]["id"], entity_id, "about")
                superseded.append(old_id)
            else:
                result = writes.store_memory(
                    store,
                    node_type=item.type,
                    content=item.content,
                    grounding_text=prompt,
                    injection=ctx.injection,
                    subtype=item.subtype,
                    valid_from=item.valid_from,
                    entity_ids=entity_ids,
                    salience=item.salience,
                    source=ctx.source,
                    scope=item.scope,
                    candidate=candidate,
                    run_id=ctx.run_id,
                )
            stored.extend(result.records)
            calls.append(
                tool_call(
                    "force_store",
                    "supersede_memory" if old_id else "store_memory",
                    item.model_dump(),
                    result.text,
                )
            )
        except StoreError as exc:
            notes.append(f"force_store: {exc}")
            calls.append(
                tool_call(
                    "force_store",
                    "store_memory",
                    item.model_dump(),
                    str(exc),
                    registry.fault_of(exc),
                )
            )
    return stored, superseded, calls, notes


@timed("force_store")
async def force_store(state: PipelineState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Store directly with sensible defaults when the loop stored nothing despite storable items,
    or keep what the storage verdict was unsure of as candidates; a message's opening kept as a
    candidate beside what was stored of it is written either way."""
    ctx = runtime.context
    storage = state.get("storage") or StorageDecision(store=False)
    instructions = state.get("instructions") or []
    if ctx.read_only:
        return {}
    told = bool(storage.items or instructions)
    stored_by_loop = bool(state.get("stored"))
    batches: list[tuple[list[StorageItem], list[ExtractedInstruction], float | None]] = []
    if told and not stored_by_loop:
        batches.append((list(storage.items), list(instructions), None))
    # What the verdict was unsure of: alone, or a message's opening beside what was stored of it.
    if storage.candidates and (told or not stored_by_loop):
        batches.append((list(storage.candidates), [], storage.candidate_p or 0.0))
    if not batches:
        return {}
    prompt = state.get("prompt", "")
    classification = state.get("classification") or Classification()
    written: list[Record] = []
    superseded: list[str] = []
    calls: list[ToolCall] = []
    notes: list[str] = []
    for items, rules, candidate in batches:
        done = await asyncio.to_thread(
            _force_store, ctx, prompt, classification, items, rules, candidate
        )
        written, superseded = [*written, *done[0]], [*superseded, *done[1]]
        calls, notes = [*calls, *done[2]], [*notes, *done[3]]
    return {
        # A candidate said again is confirmed, and stored as an ordinary memory.
        "stored": [r for r in written if not r.get("candidate")],
        "candidates": [r for r in written if r.get("candidate")],
        "superseded": superseded,
        "tool_calls": calls,
        "notes": notes,
    }


async def _judge(ctx: Context, new: str, old: str, cosine: float) -> tuple[ReconcileJudgement, str]:
    if ctx.l2_model is not None:
        asked = await ask_structured(
            ctx,
            ctx.l2_model,
            ReconcileJudgement,
            prompts.RECONCILE_SYSTEM,
            prompts.RECONCILE_USER.format(new=new, old=old),
            "reconciliation",
        )
        if isinstance(asked.parsed, ReconcileJudgement):
            return asked.parsed, "llm"
    return wording.judge(new, old, cosine), "wording"


@timed("reconcile")
async def reconcile(state: PipelineState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Judge each new instruction against similar existing ones: supersede, flag, or leave alone."""
    ctx = runtime.context
    log = ctx.session_log()
    own = [*(state.get("stored") or []), *(state.get("candidates") or [])]
    if log is not None and not ctx.read_only and own:
        # Stored from this session's own messages: already in its transcript, never injected back
        # (and the candidates among them are settled when the session ends: `consolidation`).
        await asyncio.to_thread(log.add, stored=[r["id"] for r in own])
    new_instructions = [
        r
        for r in state.get("stored") or []
        if r.get("type") == "instruction" and not r.get("supersedes")
    ]
    if ctx.read_only or not new_instructions:
        return {}
    store = ctx.memory()
    run_ids = {r["id"] for r in own}  # this store half's own writes: not judged against themselves
    superseded: list[str] = []
    flags: list[Flag] = []
    for record in new_instructions:
        hits = await asyncio.to_thread(
            store.search, record["content"], types=["instruction"], limit=RECONCILE_CANDIDATES + 1
        )
        for hit in hits:
            if hit.node.id in run_ids or hit.cosine < RECONCILE_MIN_COSINE:
                continue
            verdict, judge = await _judge(ctx, record["content"], hit.node.content, hit.cosine)
            if verdict.verdict == "SUPERSEDES":
                await asyncio.to_thread(store.mark_superseded, hit.node.id, record["id"])
                superseded.append(hit.node.id)
            elif verdict.verdict == "CONTRADICTION":
                # Flag both for the user's review; nothing is deleted or replaced.
                await asyncio.to_thread(
                    store.set_attributes, record["id"], contradicts=hit.node.id, needs_review=True
                )
                flags.append(
                    {
                        "kind": "CONTRADICTION",
                        "new_id": record["id"],
                        "existing_id": hit.node.id,
                        "new": record["content"],
                        "existing": hit.node.content,
                        "reason": verdict.reason,
                        "judge": judge,
                    }
                )
    return {"superseded": superseded, "flags": flags}

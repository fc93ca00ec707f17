"""L1: classify the prompt (entities, facts, events, plans, intents, operations)."""

from __future__ import annotations

import asyncio
from typing import Any

from langgraph.runtime import Runtime

from octygraph.fallback.classify import classify as classify_offline
from octygraph.models import Classification, merge_classifications
from octygraph.pipeline import prompts
from octygraph.pipeline.context import Context
from octygraph.pipeline.nodes._common import NO_MODEL, ask_structured, combine, layer, log, timed
from octygraph.pipeline.nodes.plan import draft_plan
from octygraph.pipeline.state import PipelineState
from octygraph.text.words import split_sentences


@timed("classify")
async def classify(state: PipelineState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Classify each sentence (LLM, in parallel) and merge; fall back to the deterministic classifier.

    Whether to store is not asked here when L1 has no model: the storage verdict decides it in the
    store half (`judge_storage`, told by `classified_offline`), so the answer never waits for it."""
    ctx = runtime.context
    prompt = state.get("prompt", "")
    if ctx.store_only:
        offline = await asyncio.to_thread(_classify_offline, ctx, prompt)
        offline_layer = {"classify": layer("offline", "the Stop hook classifies without a model")}
        # The Stop hook: what the assistant reported is only stored, never used to retrieve, and only
        # when it reports something done or decided with lasting effect (not narration or next steps),
        # as the verdict, reading it as a reply, says.
        return {
            "classification": offline.model_copy(
                update={"operations": offline.operations.model_copy(update={"retrieve": False})}
            ),
            "classified_offline": True,
            "layers": offline_layer,
        }
    # The query's vector is embedded beside the sentence rules (the embedding model releases the GIL)
    # and the LLM calls: the retrieve loop and the safety nets both need it whatever L1 says, and
    # would otherwise each embed it at once, beside the storage judgement, on the answer's path.
    warm = asyncio.create_task(asyncio.to_thread(_embed_query, ctx, prompt))
    offline = await asyncio.to_thread(_classify_offline, ctx, prompt)
    if ctx.l1_model is None:
        await _embedded(warm)
        return {
            "classification": offline,
            "classified_offline": True,
            "layers": {"classify": layer("offline", NO_MODEL)},
        }

    # The search plan is asked at the same time, with the deterministic classification as its hint:
    # classify and plan then cost one LLM round trip on the prompt's critical path, not two.
    planning = asyncio.create_task(draft_plan(ctx, prompt, offline))
    sentences = split_sentences(prompt) or [prompt]
    calls = [
        ask_structured(
            ctx,
            ctx.l1_model,
            Classification,
            prompts.CLASSIFY_SYSTEM,
            prompts.CLASSIFY_USER.format(prompt=prompt, sentence=sentence),
            "l1",
        )
        for sentence in sentences
    ]
    results = await asyncio.gather(*calls)
    drafted, plan_notes, plan_layer = await planning
    await _embedded(warm)
    raws = [r.raw for r in results]
    parts = [r.parsed for r in results]
    which = {"classify": combine([r.layer for r in results]), "plan": plan_layer}
    planned: dict[str, Any] = {"plan": drafted} if drafted is not None else {}
    if any(part is None for part in parts):
        errors = "; ".join(r.error for r in results if r.error)
        return {
            "classification": offline,
            "classified_offline": True,
            "l1_raw": raws,
            "layers": which,
            **planned,
            "notes": [
                f"classify: LLM output did not parse twice, used the deterministic classifier ({errors})",
                *plan_notes,
            ],
        }
    merged = merge_classifications([p for p in parts if p is not None])
    # Names the LLM missed but the gazetteer knows still count: they drive the entity lookups.
    known_names = {e.name.casefold() for e in merged.entities}
    extra = [e for e in offline.entities if e.name.casefold() not in known_names]
    if extra:
        merged = merged.model_copy(update={"entities": [*merged.entities, *extra]})
    return {
        "classification": merged,
        "l1_raw": raws,
        "layers": which,
        **planned,
        "notes": plan_notes,
    }


def _classify_offline(ctx: Context, prompt: str) -> Classification:
    """The deterministic classification with the store's known entities: one trip to a worker thread."""
    return classify_offline(prompt, known_entities=ctx.gazetteer(), today=ctx.day())


def _embed_query(ctx: Context, prompt: str) -> None:
    """The query's vector into the store's cache (opening the store, when first used, off the loop)."""
    ctx.memory().embed_query(prompt)


async def _embedded(warm: asyncio.Task[Any]) -> None:
    try:
        await warm
    except Exception as exc:  # the nets will say so themselves
        log.info("classify: embedding the query failed: %s", exc)

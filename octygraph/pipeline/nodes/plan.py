"""L1.5: the retrieval plan (what to store is judged in the store half: `judge_storage`)."""

from __future__ import annotations

import asyncio
from typing import Any

from langgraph.runtime import Runtime

from octygraph.fallback.plan import plan_retrieval
from octygraph.models import Classification, RetrievalPlan
from octygraph.pipeline import prompts
from octygraph.pipeline.context import Context
from octygraph.pipeline.nodes._common import (
    NO_MODEL,
    Layer,
    ask_or_fall_back,
    ask_structured,
    layer,
    timed,
)
from octygraph.pipeline.state import PipelineState


@timed("plan")
async def plan(state: PipelineState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Plan the retrieval: the model's plan drafted beside classification, else the model's or the
    deterministic plan from the final classification."""
    ctx = runtime.context
    drafted = state.get("plan")
    if drafted is not None:
        # The model planned alongside classification (see `draft_plan`): no second call in a row.
        return {"plan": drafted}
    prompt = state.get("prompt", "")
    classification = state.get("classification") or Classification()
    known = ctx.built_gazetteer()  # classify built it: no worker thread needed
    if known is None:
        known = await asyncio.to_thread(ctx.gazetteer)
    offline_plan = plan_retrieval(prompt, classification, today=ctx.day(), known_entities=known)
    context_line = f"Message: {prompt}\nClassification: {classification.model_dump_json()}"
    retrieval, notes, ran = await ask_or_fall_back(
        ctx, RetrievalPlan, prompts.PLAN_SYSTEM, context_line, offline_plan, "plan: plan_retrieval"
    )
    return {"plan": retrieval, "notes": notes, "layers": {"plan": ran}}


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

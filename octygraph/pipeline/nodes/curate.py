"""Curation (Method B): per section, in parallel, the LLM copies relevant records verbatim.

Only lines that match an input record exactly are kept, so curation can drop records but never invent or
rephrase one. Without an LLM the assembled, ranked, budgeted context is the answer.
"""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from octygraph.pipeline import prompts
from octygraph.pipeline.context import Context
from octygraph.pipeline.nodes._common import (
    NO_MODEL,
    Layer,
    answered,
    combine,
    layer,
    short_reason,
    timed,
)
from octygraph.pipeline.nodes.assemble import record_line, render, rendered_ids
from octygraph.pipeline.state import PipelineState, Record

NO_RELEVANT = "NO_RELEVANT_RECORDS"
CURATE_RESERVE_S = 0.1


def _normal(line: str) -> str:
    return " ".join(line.strip().lstrip("-*• ").split())


async def _curate_section(
    ctx: Context, prompt: str, name: str, records: list[Record]
) -> tuple[str, list[Record] | None, str | None, Layer]:
    """(section, kept records or None when the LLM failed, note, what ran)."""
    assert ctx.l2_model is not None
    lines = {_normal(record_line(name, r)): r for r in records}
    user = prompts.CURATE_USER.format(
        prompt=prompt, section=name, records="\n".join(f"- {line}" for line in lines)
    )
    try:
        reply = await ctx.l2_model.ainvoke(
            [SystemMessage(prompts.CURATE_SYSTEM), HumanMessage(user)],
            # Last stage: only rendering comes after it, so it may use the run's time to the end.
            config=ctx.llm_config("curation", reserve_s=CURATE_RESERVE_S),
        )
    except Exception as exc:
        reason = short_reason(f"{type(exc).__name__}: {exc}")
        return name, None, f"curate: {name} kept uncurated ({reason})", layer("offline", reason)
    ran = answered(reply)
    text = reply.text if isinstance(reply.text, str) else str(reply.content)
    if NO_RELEVANT in text:
        return name, [], None, ran
    kept: list[Record] = []
    for raw in text.splitlines():
        record = lines.get(_normal(raw))
        if record is not None and record not in kept:
            kept.append(record)
    if not kept:
        # A reply that copies no record is prose, not a verdict: only NO_RELEVANT_RECORDS may drop a section.
        why = "reply matched no record"
        return name, None, f"curate: {name} kept uncurated ({why})", layer("offline", why)
    return name, kept, None, ran


@timed("curate")
async def curate(state: PipelineState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Curate every section at once, then render the final context within the budget."""
    ctx = runtime.context
    sections: dict[str, list[Record]] = dict(state.get("sections") or {})
    if ctx.l2_model is None or not sections:
        ran = layer("offline", NO_MODEL) if ctx.l2_model is None else layer("skipped")
        return {"context": state.get("assembled", ""), "layers": {"curate": ran}}
    results = await asyncio.gather(
        *(
            _curate_section(ctx, state.get("prompt", ""), name, recs)
            for name, recs in sections.items()
        )
    )
    curated: dict[str, list[Record]] = {}
    notes: list[str] = []
    for name, kept, note, _ in results:
        if note:
            notes.append(note)
        chosen = sections[name] if kept is None else kept
        if chosen:
            curated[name] = chosen
    context = render(curated, ctx.context_budget_chars)
    log = ctx.session_log()
    if log is not None and not ctx.read_only and context:
        await asyncio.to_thread(log.add, injected=rendered_ids(curated, context))
    return {
        "sections": curated,
        "context": context,
        "notes": notes,
        "layers": {"curate": combine([r[3] for r in results])},
    }

"""Assembly: deduplicate, drop superseded, rank per section, promote past plans, render within budget."""

from __future__ import annotations

import asyncio
import re
from collections import defaultdict
from datetime import date
from typing import Any, NamedTuple

import numpy as np
from langgraph.runtime import Runtime

from octygraph.judgement.relevance import MemoryText, relevance_model
from octygraph.memory.candidates import is_candidate
from octygraph.pipeline.context import Context
from octygraph.pipeline.nodes._common import timed
from octygraph.pipeline.state import PipelineState, Record
from octygraph.pipeline.tools.writes import RESTATEMENT_COSINE, key_tokens, written_by
from octygraph.store import GraphStore
from octygraph.text.dates import asked_window
from octygraph.text.words import reads_as_question

SECTION_ORDER = ("instructions", "facts", "events", "plans", "relationships", "entities")
"""Order in the injected text, which is also the order the budget is filled in."""
SECTION_TITLES = {
    "instructions": "Instructions and rules",
    "facts": "Facts",
    "events": "Events",
    "plans": "Upcoming plans",
    "relationships": "Related",
    "entities": "Known entities",
}
SECTION_LIMITS = {"entities": 15, "instructions": 15, "facts": 30, "events": 15, "plans": 10}

MAX_RECORDS = 4
"""Most prompts need 0-3 records; a few need more, never a wall of them."""
CURATED_BAR_SHARE = 0.5
"""With an LLM curating afterwards, candidates need only half the relevance bar to reach it."""

CANDIDATE_COSINE = 0.5
"""A candidate (unconfirmed memory) is given unprompted only when the prompt resembles it this much,
and only the one most like it: a candidate holds the opening of the message it came from, and a
later message on the same matter reads like that message (the cosine of the two texts' vectors).
Leave-project-out through the hook path, against giving candidates the relevance model rated 0.4 or
more, this doubled the injection precision of projects no model saw (`bench/README.md`). The bar was
read off the training set's prompts, leave-project-out: 0.5 in 20 of 24 folds."""

_WORDS = re.compile(r"\w+")

HEADER = "Relevant memories from earlier sessions (octygraph):"


def _section(record: Record, today: str) -> str:
    kind = record["type"]
    if kind == "entity":
        return "entities"
    if kind == "instruction":
        return "instructions"
    if kind in ("fact", "opinion"):
        return "facts"
    if kind == "event":
        return "events"
    if kind == "plan":
        when = record.get("valid_from")
        return "events" if when and str(when)[:10] < today else "plans"
    return "facts"


def _plain(text: str) -> str:
    """Its words, case and punctuation aside, space-delimited: to tell whether a prompt says a memory."""
    return f" {' '.join(_WORDS.findall(text.casefold()))} "


def _says_again(
    content: str, cosine: float | None, said: str, said_keys: set[str], asks: bool
) -> bool:
    """Whether the prompt says this memory again: word for word, or, when it does not ask, above the
    store half's restatement cosine and naming no name or number the prompt does not (the prompt may
    say more, so its key tokens hold the memory's rather than equal them as in `is_restatement`).
    The store half confirms or counts such a memory; giving it back would only echo the prompt, and
    whether it did would depend on which half got there first. A question close to a memory is asking
    for it."""
    if _plain(content) in said:
        return True
    return (
        not asks
        and cosine is not None
        and cosine >= RESTATEMENT_COSINE
        and key_tokens(content) <= said_keys
    )


class Collected(NamedTuple):
    """What a prompt is given, and what it needed that the session already had."""

    sections: dict[str, list[Record]]
    needed_again: list[str]
    """Ids of memories past the bar that the session was given before: not given twice, but used."""


def collect(
    store: GraphStore,
    prompt: str,
    retrieved: list[Record],
    today: date,
    offline: bool,
    seen: set[str] | frozenset[str] = frozenset(),
    run_id: str | None = None,
    given: set[str] | frozenset[str] = frozenset(),
) -> Collected:
    """Sections of the current records that clear the relevance bar, most relevant first.

    Every candidate gets a calibrated probability of being relevant to the prompt (the relevance
    model); only those above its threshold are kept, at most `MAX_RECORDS`. With an LLM curating
    afterwards the bar is lower (curation drops more). Records this session has already seen
    (`seen`: injected earlier, or stored from its own prompts) are left out: they are in the
    transcript. Those it was `given` (not its own statements) that clear the bar are `needed_again`:
    a standing memory the session start gave is used when a prompt needs it. What the run `run_id`
    wrote is left out too: the user's own message, not worth echoing back. Of the unconfirmed
    memories, only the one the prompt resembles most is given, when it resembles it enough
    (`CANDIDATE_COSINE`).
    """
    merged: dict[str, Record] = {}
    for record in retrieved:
        if record.get("type") == "entity":
            continue
        current = merged.get(record["id"])
        if current is None:
            merged[record["id"]] = {**record, "vias": [record["via"]]}
        else:
            current.setdefault("vias", []).append(record["via"])
            # The first way through an entity names it.
            if "entity_id" in record:
                current.setdefault("entity_id", record["entity_id"])
            if "entity_name" in record:
                current.setdefault("entity_name", record["entity_name"])
            if "edge_type" in record:
                current.setdefault("edge_type", record["edge_type"])
    if not merged:
        return Collected({}, [])
    # Superseded or deleted since the tool saw them, or written by this very run (its store half runs
    # alongside): ask the store, the only source of truth. What the prompt itself says is left out
    # too, whether or not the store half has got to it yet (a candidate restated, still unconfirmed).
    said, said_keys = _plain(prompt), key_tokens(prompt)
    asks = reads_as_question(prompt)
    fresh = [
        n
        for n in store.get_nodes(merged)
        if not n.superseded_by
        and n.node_type != "entity"
        and not (run_id is not None and written_by(n, run_id))
    ]
    cosines = store.cosines(store.embed_query(prompt), [n.id for n in fresh]) if fresh else {}
    nodes = {
        n.id: n
        for n in fresh
        if not _says_again(n.content, cosines.get(n.id), said, said_keys, asks)
    }
    if not nodes:
        return Collected({}, [])
    ids = list(nodes)
    model = relevance_model()
    probabilities, triggered = model.judge(
        prompt, [MemoryText(nodes[i].content, nodes[i].node_type, nodes[i].scope) for i in ids]
    )
    # A question about what lies ahead ("What's coming up?") wants the plans of the days it asks
    # about, which share no words with it: in that window, a plan applies.
    window = asked_window(prompt, today) if asks else None
    if window is not None:
        first, last = window[0].isoformat(), window[1].isoformat()
        triggered = triggered | np.array(
            [
                nodes[i].node_type == "plan" and first <= (nodes[i].valid_from or "")[:10] <= last
                for i in ids
            ],
            dtype=bool,
        )
    bar = model.threshold if offline else model.threshold * CURATED_BAR_SHARE
    # The one candidate most like the prompt, if like enough, applies; no other candidate does.
    alike = max(
        ((cosines.get(i) or 0.0, i) for i in ids if is_candidate(nodes[i])), default=(0.0, None)
    )
    given_candidate = alike[1] if alike[0] >= CANDIDATE_COSINE else None
    chosen = sorted(
        (
            (max(float(p), bar) if applies or node_id == given_candidate else float(p), node_id)
            for p, applies, node_id in zip(probabilities, triggered, ids, strict=True)
            if (node_id == given_candidate if is_candidate(nodes[node_id]) else p >= bar or applies)
        ),
        reverse=True,
    )
    needed_again = [node_id for _, node_id in chosen if node_id in given]
    chosen = [(p, node_id) for p, node_id in chosen if node_id not in seen][:MAX_RECORDS]
    today_s = today.isoformat()
    sections: dict[str, list[Record]] = defaultdict(list)
    for probability, node_id in chosen:
        node, record = nodes[node_id], merged[node_id]
        record.update(
            {
                "content": node.content,
                "valid_from": node.valid_from,
                "scope": node.scope,
                "salience": node.salience,
                "relevance": round(probability, 4),
                "rank": round(probability, 4),
            }
        )
        name = _section(record, today_s)
        if name == "events" and record["type"] == "plan":
            record["promoted_from_plan"] = True
        sections[name].append(record)
    for name, records in sections.items():
        records[:] = _unique_content(records)
        if name == "plans":  # upcoming plans read best in date order
            records.sort(key=lambda r: (str(r.get("valid_from") or "9999"), -r["rank"]))
        sections[name] = records[: SECTION_LIMITS.get(name, 15)]
    ordered = {name: sections[name] for name in SECTION_ORDER if sections.get(name)}
    return Collected(ordered, needed_again)


def _unique_content(records: list[Record]) -> list[Record]:
    """One record per wording: bulk-imported copies of the same sentence would fill a section."""
    best: dict[str, Record] = {}
    for record in records:
        key = " ".join(str(record["content"]).casefold().split())
        if key not in best or record["rank"] > best[key]["rank"]:
            best[key] = record
    return list(best.values())


def record_line(section: str, record: Record) -> str:
    """One record as a factual line (what curation copies verbatim)."""
    content = " ".join(str(record["content"]).split())
    if section == "entities":
        return f"{content} ({record.get('subtype') or 'entity'})"
    if section == "plans" and record.get("valid_from"):
        return f"{content} (planned for {record['valid_from']})"
    if section == "events":
        when = record.get("valid_from") or str(record.get("created_at") or "")[:10]
        if record.get("promoted_from_plan"):
            return f"{content} (was planned for {when})"
        return f"{content} ({when})" if when else content
    if section == "relationships" and record.get("entity_name"):
        return f"{record['entity_name']}: {content}"
    return content


def render(sections: dict[str, list[Record]], budget: int, *, header: str = HEADER) -> str:
    """The injected text: `header`, then sections in order, lines added while they fit in `budget`."""
    if not sections or budget <= len(header) + 10:
        return ""
    used = len(header)
    chosen: dict[str, list[str]] = {}
    for name in SECTION_ORDER:
        title = f"\n\n{SECTION_TITLES[name]}:"
        lines: list[str] = []
        for record in sections.get(name, []):
            line = f"\n- {record_line(name, record)}"
            cost = len(line) + (0 if lines else len(title))
            if used + cost > budget:
                continue
            lines.append(line)
            used += cost
        if lines:
            chosen[name] = lines
    if not chosen:
        return ""
    return header + "".join(
        f"\n\n{SECTION_TITLES[n]}:" + "".join(chosen[n]) for n in SECTION_ORDER if n in chosen
    )


@timed("assemble")
async def assemble(state: PipelineState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Collect everything the loop and the safety nets found into ranked, limited sections."""
    ctx = runtime.context
    log = ctx.session_log()
    # What this session was already given, and what its own messages stored, is in its conversation:
    # skip it (until a compaction drops it; the SessionStart hook then clears the log).
    given: set[str] = set()
    stored: set[str] = set()
    if log is not None:
        given, stored = await asyncio.to_thread(log.given_and_stored)
    sections, needed_again = await asyncio.to_thread(
        collect,
        ctx.memory(),
        state.get("prompt", ""),
        state.get("retrieved") or [],
        ctx.day(),
        ctx.l2_model is None,
        given | stored,
        ctx.run_id,
        given,
    )
    text = render(sections, ctx.context_budget_chars)
    if log is not None and not ctx.read_only and ctx.l2_model is None and text:
        # With an LLM, curation decides what is injected and records it.
        await asyncio.to_thread(log.add, injected=rendered_ids(sections, text))
    return {"sections": sections, "assembled": text, "needed_again": needed_again}


def rendered_ids(sections: dict[str, list[Record]], text: str) -> list[str]:
    """Ids of the records whose line made it into the rendered text (the budget may drop some)."""
    return [
        r["id"]
        for name, records in sections.items()
        for r in records
        if f"- {record_line(name, r)}" in text
    ]

"""Assembly: deduplicate, drop superseded, rank per section, promote past plans, render within budget."""

from __future__ import annotations

import asyncio
import re
from collections import defaultdict
from datetime import date
from typing import Any

from langgraph.runtime import Runtime

from octygraph.context import Context
from octygraph.nodes._common import timed
from octygraph.state import PipelineState, Record
from octygraph.store import MemoryStore

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
RELATIONSHIPS_PER_ENTITY = 8
RELATIONSHIP_VIA = ("search_entity", "get_relationships")

# Without curation the ranked list is the answer, so weak matches are cut: a record must reach the
# absolute floor and a share of its section's best match (relationships of a named entity are kept).
OFFLINE_MIN_COSINE = 0.25
OFFLINE_RELATIVE = 0.55
CURATED_MIN_COSINE = 0.1
SEARCH_SCORE_WEIGHT = 0.5

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


def _mentioned(name: str, prompt: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(name.strip())}(?!\w)", prompt, re.IGNORECASE) is not None


def _rank(record: Record) -> float:
    """Cosine to the prompt, lifted by a score floor (global rules) or a strong hybrid search score.

    Half the search score counts because keyword matches the embedding misses ("commit message" for
    "Write a commit message ...") are real hits too.
    """
    return max(
        float(record.get("cosine") or 0.0),
        float(record.get("score_floor") or 0.0),
        SEARCH_SCORE_WEIGHT * float(record.get("search_score") or 0.0),
    )


def collect(
    store: MemoryStore, prompt: str, retrieved: list[Record], today: date, offline: bool
) -> dict[str, list[Record]]:
    """Sections of ranked, deduplicated, current records."""
    merged: dict[str, Record] = {}
    for record in retrieved:
        current = merged.get(record["id"])
        if current is None:
            merged[record["id"]] = {**record, "vias": [record.get("via")]}
        else:
            current["vias"].append(record.get("via"))
            for key in ("entity_id", "entity_name", "edge_type"):
                current.setdefault(key, record.get(key))
            for key in ("score_floor", "search_score"):
                current[key] = max(current.get(key) or 0, record.get(key) or 0)
    if not merged:
        return {}
    # Superseded or deleted since the tool saw them: ask the store, the only source of truth.
    nodes = {n.id: n for n in store.get_nodes(merged)}
    cosines = store.cosines(store.embed_query(prompt), nodes)
    today_s = today.isoformat()
    sections: dict[str, list[Record]] = defaultdict(list)
    by_entity: dict[str, list[Record]] = defaultdict(list)
    for node_id, record in merged.items():
        node = nodes.get(node_id)
        if node is None or node.superseded_by:
            continue
        if node.node_type == "entity" and _mentioned(node.content, prompt):
            continue  # the user just named it; restating the name adds nothing
        record.update(
            content=node.content,
            valid_from=node.valid_from,
            scope=node.scope,
            salience=node.salience,
            cosine=round(cosines.get(node_id, 0.0), 4),
        )
        record["rank"] = round(_rank(record), 4)
        only_via_relationship = all(v in RELATIONSHIP_VIA for v in record["vias"])
        if record["type"] != "entity" and only_via_relationship and record.get("entity_id"):
            by_entity[record["entity_id"]].append(record)
        else:
            name = _section(record, today_s)
            if name == "events" and record["type"] == "plan":
                record["promoted_from_plan"] = True
            sections[name].append(record)

    floor = OFFLINE_MIN_COSINE if offline else CURATED_MIN_COSINE
    for name, records in sections.items():
        records[:] = _unique_content(records)
        if name == "plans":
            records.sort(key=lambda r: (str(r.get("valid_from") or "9999"), -r["rank"]))
        elif name == "instructions":
            records.sort(key=lambda r: (-r["rank"], -(r.get("scope") or 0)))
        else:
            records.sort(key=lambda r: -r["rank"])
        best = max((r["rank"] for r in records), default=0.0)
        cut = max(floor, best * OFFLINE_RELATIVE) if offline else floor
        kept = [r for r in records if r["rank"] >= cut]
        sections[name] = kept[: SECTION_LIMITS.get(name, 15)]
    related: list[Record] = []
    placed = {r["id"] for rs in sections.values() for r in rs}
    for records in by_entity.values():
        records.sort(key=lambda r: (-(r.get("salience") or 0), -r["rank"]))
        related += [r for r in records if r["id"] not in placed][:RELATIONSHIPS_PER_ENTITY]
    if related:
        sections["relationships"] = related
    return {name: sections[name] for name in SECTION_ORDER if sections.get(name)}


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


def render(sections: dict[str, list[Record]], budget: int) -> str:
    """The injected text: sections in order, lines added while they fit in `budget` characters."""
    if not sections or budget <= len(HEADER) + 10:
        return ""
    used = len(HEADER)
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
    return HEADER + "".join(
        f"\n\n{SECTION_TITLES[n]}:" + "".join(chosen[n]) for n in SECTION_ORDER if n in chosen
    )


@timed("assemble")
async def assemble(state: PipelineState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Collect everything the loop and the safety nets found into ranked, limited sections."""
    ctx = runtime.context
    # What this very run stored is the user's own message: echoing it back adds nothing.
    own = {r["id"] for r in state.get("stored") or []} | set(state.get("superseded") or [])
    sections = await asyncio.to_thread(
        collect,
        ctx.memory(),
        state.get("prompt", ""),
        [r for r in state.get("retrieved") or [] if r["id"] not in own],
        ctx.day(),
        ctx.l2_model is None,
    )
    text = render(sections, ctx.context_budget_chars)
    return {"sections": sections, "assembled": text}

"""What the review page shows, shaped from the store and the debug traces (no HTTP here)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from octygraph.pipeline.traces import TraceNotFound, load_trace, read_trace_files
from octygraph.store import NODE_TYPES, AdminStore, Node

MAX_TRACES = 1000
"""Pages that scan traces read at most this many, newest first."""


def read_traces(debug_dir: Path, limit: int = MAX_TRACES) -> list[dict[str, Any]]:
    """Whole traces, newest first; unreadable files are skipped."""
    out = []
    for path, data in read_trace_files(debug_dir, limit):
        if isinstance(data, dict):
            data.setdefault("trace_id", path.stem)
            out.append(data)
    return out


@dataclass
class Injected:
    """One record that went into a prompt's context, and why."""

    section: str
    id: str
    kind: str
    content: str
    rules: list[str]
    relevance: float | None
    rank: float | None
    search_score: float | None


@dataclass
class PromptView:
    trace_id: str
    created_at: str
    prompt: str
    mode: str
    session_id: str
    context: str
    injected: list[Injected] = field(default_factory=list)
    stored: list[dict[str, Any]] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)
    cost_usd: float | None = None
    total_ms: float | None = None


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def prompt_view(trace: dict[str, Any]) -> PromptView:
    """A trace as the prompts page shows it: what was injected (with rule and score) and what was stored."""
    injected = []
    for section, records in (trace.get("sections") or {}).items():
        for rec in records or []:
            if not isinstance(rec, dict):
                continue
            rules = [str(v) for v in rec.get("vias") or [] if v] or (
                [str(rec["via"])] if rec.get("via") else []
            )
            injected.append(
                Injected(
                    section=str(section),
                    id=str(rec.get("id", "")),
                    kind=str(rec.get("type", ""))
                    + (f"/{rec['subtype']}" if rec.get("subtype") else ""),
                    content=str(rec.get("content", "")),
                    rules=rules,
                    relevance=_num(rec.get("relevance")),
                    rank=_num(rec.get("rank")),
                    search_score=_num(rec.get("search_score")),
                )
            )
    usage = (trace.get("usage") or {}).get("total") or {}
    return PromptView(
        trace_id=str(trace.get("trace_id", "")),
        created_at=str(trace.get("created_at") or ""),
        prompt=str(trace.get("prompt") or ""),
        mode=str(trace.get("mode") or ""),
        session_id=str(trace.get("session_id") or ""),
        context=str(trace.get("context") or ""),
        injected=injected,
        stored=[s for s in trace.get("stored") or [] if isinstance(s, dict)],
        superseded=[str(s) for s in trace.get("superseded") or []],
        cost_usd=_num(usage.get("cost_usd")),
        total_ms=_num((trace.get("timings_ms") or {}).get("total")),
    )


def find_trace(debug_dir: Path, trace_id: str) -> dict[str, Any] | None:
    try:
        return load_trace(debug_dir, trace_id)
    except TraceNotFound:
        return None


def provenance(traces: list[dict[str, Any]], node_id: str) -> dict[str, list[PromptView]]:
    """The prompts that stored a memory, and those it was injected into."""
    stored, injected = [], []
    for trace in traces:
        view = prompt_view(trace)
        if any(s.get("id") == node_id for s in view.stored):
            stored.append(view)
        if any(i.id == node_id for i in view.injected):
            injected.append(view)
    return {"stored": stored, "injected": injected[:20]}


@dataclass
class DayUsage:
    day: str
    runs: int = 0
    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    priced: bool = True
    offline_runs: int = 0


def usage_by_day(traces: list[dict[str, Any]]) -> list[DayUsage]:
    """Runs, tokens and cost per UTC day, oldest first (embeddings count as calls, not LLM calls)."""
    days: dict[str, DayUsage] = {}
    for trace in traces:
        day = str(trace.get("created_at") or trace.get("trace_id") or "")[:10]
        if len(day) == 8 and day.isdigit():  # a trace id's timestamp: 20261123T...
            day = f"{day[:4]}-{day[4:6]}-{day[6:]}"
        row = days.setdefault(day, DayUsage(day))
        row.runs += 1
        if trace.get("mode") == "offline":
            row.offline_runs += 1
        for layer, bucket in (trace.get("usage") or {}).items():
            if layer == "total" or not isinstance(bucket, dict):
                continue
            row.input_tokens += int(bucket.get("input_tokens") or 0)
            row.output_tokens += int(bucket.get("output_tokens") or 0)
            if layer != "embeddings":
                row.llm_calls += int(bucket.get("calls") or 0)
            cost = _num(bucket.get("cost_usd"))
            if cost is not None:
                row.cost_usd += cost
            if bucket.get("calls") and not bucket.get("priced"):
                row.priced = False
    return sorted(days.values(), key=lambda d: d.day)


# ----------------------------------------------------------------------------------------- memories


@dataclass
class Filters:
    q: str = ""
    type: str = ""
    entity: str = ""
    since: str = ""
    until: str = ""
    status: str = "current"  # current, archived, all


def list_memories(
    store: AdminStore, f: Filters, limit: int = 100
) -> tuple[list[tuple[Node, float | None]], str | None]:
    """Memories matching the filters (search-ranked with a query, else newest first), and a problem."""
    types = [f.type] if f.type in NODE_TYPES else None
    entity_id = None
    if f.entity.strip():
        entity = store.find_entity(f.entity.strip(), semantic=False)
        if entity is None:
            return [], f"No entity named {f.entity.strip()!r}."
        entity_id = entity.id
    since = f.since or None
    until = (f.until + "T23:59:59") if f.until and len(f.until) == 10 else (f.until or None)
    if f.status == "archived":
        nodes = [
            n
            for n in store.archived_nodes(limit * 5)
            if _keep(n, types, since, until)
            and (entity_id is None or n.id in store.linked_node_ids(entity_id))
            and (not f.q or f.q.lower() in n.content.lower())
        ]
        return [(n, None) for n in nodes[:limit]], None
    include = f.status == "all"
    if f.q.strip():
        hits = store.search(
            f.q,
            types=types,
            entity_id=entity_id,
            since=since,
            until=until,
            limit=limit,
            include_superseded=include,
        )
        return [(h.node, h.score) for h in hits], None
    if entity_id is not None:
        linked = store.get_nodes(store.linked_node_ids(entity_id))
        nodes = [
            n
            for n in linked
            if _keep(n, types, since, until) and (include or n.superseded_by is None)
        ]
        nodes.sort(key=lambda n: n.created_at, reverse=True)
        return [(n, None) for n in nodes[:limit]], None
    nodes = store.list_nodes(
        types=types, since=since, limit=None if until else limit, include_superseded=include
    )
    nodes = [n for n in nodes if _keep(n, None, None, until)]
    return [(n, None) for n in nodes[:limit]], None


def _keep(node: Node, types: list[str] | None, since: str | None, until: str | None) -> bool:
    if types and node.node_type not in types:
        return False
    if since and node.created_at < since:
        return False
    return not (until and node.created_at > until)


def type_counts(store: AdminStore) -> dict[str, int]:
    by_type: dict[str, int] = defaultdict(int)
    by_type.update(store.stats()["by_type"])
    return {t: by_type[t] for t in NODE_TYPES}

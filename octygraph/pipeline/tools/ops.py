"""What the tools do, as plain functions over the store.

Both ways of thinking call these: the LLM loops through LangChain tool wrappers, the offline path through a
fixed plan. Each returns a `ToolResult`: the text the model reads and the records the assembly uses. Result
caps are the seed's Tools Reference.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from octygraph.memory.candidates import is_candidate
from octygraph.pipeline.state import MemoryRecord
from octygraph.store import GraphStore, Hit, Node, StoreError

ENTITY_RELATIONSHIPS_CAP = 15
RELATIONSHIPS_CAP = 25
FACTS_CAP = 10
EVENTS_CAP = 20
PROCESSES_CAP = 10
INSTRUCTIONS_CAP = 15


@dataclass
class ToolResult:
    """Text for the model and records for the assembly."""

    text: str
    records: list[MemoryRecord] = field(default_factory=list)


Artifact = tuple[str, list[MemoryRecord]]
"""What a tool returns with response_format="content_and_artifact": `ToolResult` as a pair."""


def to_record(
    node: Node,
    via: str,
    *,
    search_score: float | None = None,
    cosine: float | None = None,
    entity_id: str | None = None,
    entity_name: str | None = None,
    edge_type: str | None = None,
    supersedes: str | None = None,
) -> MemoryRecord:
    """A node as a plain, checkpointable record; how it was found, where known."""
    record: MemoryRecord = {
        "id": node.id,
        "type": node.node_type,
        "subtype": node.subtype,
        "content": node.content,
        "scope": node.scope,
        "salience": node.salience,
        "valid_from": node.valid_from,
        "created_at": node.created_at,
        "source": node.source,
        "superseded_by": node.superseded_by,
        "via": via,
    }
    if search_score is not None:
        record["search_score"] = search_score
    if cosine is not None:
        record["cosine"] = cosine
    if entity_id is not None:
        record["entity_id"] = entity_id
    if entity_name is not None:
        record["entity_name"] = entity_name
    if edge_type is not None:
        record["edge_type"] = edge_type
    if supersedes is not None:
        record["supersedes"] = supersedes
    if is_candidate(node):
        record["candidate"] = True
    return record


def _line(node: Node, score: float | None = None) -> str:
    kind = node.node_type + (f"/{node.subtype}" if node.subtype else "")
    bits = [f"[{node.id}] ({kind})", node.content]
    if node.valid_from:
        bits.append(f"(date {node.valid_from})")
    if node.scope is not None and node.node_type == "instruction":
        bits.append(f"(scope {node.scope:g})")
    if score is not None:
        bits.append(f"(relevance {score:.2f})")
    return " ".join(bits)


def _hits_result(hits: list[Hit], via: str, empty: str) -> ToolResult:
    if not hits:
        return ToolResult(empty)
    lines = [_line(h.node, h.score) for h in hits]
    records = [to_record(h.node, via, search_score=h.score) for h in hits]
    return ToolResult("\n".join(lines), records)


def _check_entity(store: GraphStore, entity_id: str | None) -> str | None:
    if not entity_id:
        return None
    node = store.get_node(entity_id)
    if node is None:
        raise StoreError(
            f"No entity with id {entity_id!r}; call search_entity first to get a valid id."
        )
    return node.id


def search_entity(store: GraphStore, name: str) -> ToolResult:
    """Entity profile plus its top relationships."""
    if not name or not name.strip():
        raise StoreError("search_entity needs a name.")
    entity = store.find_entity(name)
    if entity is None:
        return ToolResult(f"No entity named {name!r} is stored.")
    rels = store.relationships(entity.id, limit=ENTITY_RELATIONSHIPS_CAP)
    records = [to_record(entity, "search_entity")]
    lines = [f"Entity {_line(entity)}"]
    for rel in rels:
        lines.append(
            f"  {rel.edge.edge_type} {'->' if rel.direction == 'out' else '<-'} {_line(rel.node)}"
        )
        records.append(
            to_record(
                rel.node,
                "search_entity",
                entity_id=entity.id,
                entity_name=entity.content,
                edge_type=rel.edge.edge_type,
            )
        )
    return ToolResult("\n".join(lines), records)


def get_relationships(store: GraphStore, entity_id: str) -> ToolResult:
    """All edges of an entity with the node at the other end, capped."""
    entity = store.get_node(entity_id) if entity_id else None
    if entity is None:
        raise StoreError(
            f"No entity with id {entity_id!r}; call search_entity first to get its id."
        )
    rels = store.relationships(entity.id, limit=RELATIONSHIPS_CAP)
    if not rels:
        return ToolResult(f"{entity.content} has no stored relationships.")
    lines = [f"{rel.edge.edge_type}: {_line(rel.node)}" for rel in rels]
    records = [
        to_record(
            rel.node,
            "get_relationships",
            entity_id=entity.id,
            entity_name=entity.content,
            edge_type=rel.edge.edge_type,
        )
        for rel in rels
    ]
    return ToolResult("\n".join(lines), records)


def search_facts(store: GraphStore, query: str, entity_id: str | None = None) -> ToolResult:
    """Facts and opinions matching the query, optionally about one entity."""
    hits = store.search(
        query, types=["fact", "opinion"], entity_id=_check_entity(store, entity_id), limit=FACTS_CAP
    )
    return _hits_result(hits, "search_facts", "No matching facts.")


def search_events(
    store: GraphStore, query: str, entity_id: str | None = None, days: int | None = None
) -> ToolResult:
    """Events (and plans) matching the query, optionally about one entity or within the last `days`."""
    if days is not None and days <= 0:
        raise StoreError("days must be a positive number of days.")
    hits = store.search(
        query,
        types=["event", "plan"],
        entity_id=_check_entity(store, entity_id),
        days=days,
        limit=EVENTS_CAP,
    )
    return _hits_result(hits, "search_events", "No matching events.")


def search_processes(store: GraphStore, query: str, entity_id: str | None = None) -> ToolResult:
    """Instructions (rules, processes, tool usage) matching the query."""
    hits = store.search(
        query, types=["instruction"], entity_id=_check_entity(store, entity_id), limit=PROCESSES_CAP
    )
    return _hits_result(hits, "search_processes", "No matching instructions or processes.")


def get_instructions(
    store: GraphStore, topic: str | None = None, entity_id: str | None = None
) -> ToolResult:
    """Instructions matching a topic, or connected to an entity through edges."""
    records: list[MemoryRecord] = []
    lines: list[str] = []
    seen: set[str] = set()
    if entity_id:
        _check_entity(store, entity_id)
        for rel in store.relationships(entity_id, limit=RELATIONSHIPS_CAP * 2):
            if rel.node.node_type == "instruction" and rel.node.id not in seen:
                seen.add(rel.node.id)
                lines.append(_line(rel.node))
                records.append(to_record(rel.node, "get_instructions", entity_id=entity_id))
    if topic and topic.strip():
        for hit in store.search(topic, types=["instruction"], limit=INSTRUCTIONS_CAP):
            if hit.node.id not in seen:
                seen.add(hit.node.id)
                lines.append(_line(hit.node, hit.score))
                records.append(to_record(hit.node, "get_instructions", search_score=hit.score))
    if not topic and not entity_id:
        raise StoreError("get_instructions needs a topic or an entity_id.")
    if not lines:
        return ToolResult("No matching instructions.")
    return ToolResult("\n".join(lines[:INSTRUCTIONS_CAP]), records[:INSTRUCTIONS_CAP])

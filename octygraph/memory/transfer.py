"""Export and import of memories: Markdown for people to read, JSONL for machines.

JSONL holds one record per line: a header, then every node (`"kind": "node"`, the fields of `Node.to_dict`)
and every edge (`"kind": "edge"`), ids included. Importing it is idempotent: nodes and edges already present
(same id) are skipped, new contents are embedded with the configured model, supersessions are restored.
"""

from __future__ import annotations

import dataclasses
import json
import os
import stat
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from octygraph.judgement.planted import planted_reason
from octygraph.profiles.graph import GraphSpec, ProgressFn, write_graph
from octygraph.safety.secrets import (
    is_secret_name,
    redact_deep,
    redact_secrets,
    redacted_away,
)
from octygraph.store import (
    NODE_TYPES,
    SUBTYPES,
    AdminStore,
    Edge,
    NewNode,
    Node,
    StoreError,
    utcnow,
)

EXPORT_KIND = "octygraph-export"
EXPORT_VERSION = 1
SECTION_TITLES = (
    ("entity", "Entities"),
    ("instruction", "Instructions"),
    ("fact", "Facts"),
    ("event", "Events"),
    ("plan", "Plans"),
    ("opinion", "Opinions"),
)
ENTITY_GROUPS = {
    "person": "People",
    "org": "Organisations",
    "account": "Accounts",
    "project": "Projects",
    "tool": "Tools",
    "place": "Places",
    "process": "Processes",
    "document": "Documents",
    "concept": "Concepts",
    "event": "Named events",
}
NO_ENTITY = "Not about a particular entity"


class TransferError(StoreError):
    """An export or import cannot proceed; the message is one sentence."""


@dataclass(frozen=True)
class ImportResult:
    nodes_added: int
    nodes_skipped: int
    edges_added: int
    edges_skipped: int
    superseded: int

    def to_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)


# ---------------------------------------------------------------------------------------------- export


def node_record(node: Node) -> dict[str, Any]:
    return {"kind": "node", **node.to_dict()}


def edge_record(edge: Edge) -> dict[str, Any]:
    return {
        "kind": "edge",
        "id": edge.id,
        "source_id": edge.source_id,
        "target_id": edge.target_id,
        "edge_type": edge.edge_type,
        "attributes": edge.attributes,
        "created_at": edge.created_at,
    }


def _exported_nodes(store: AdminStore) -> list[Node]:
    """Every node as an export writes it: redacted again, so a memory stored before the redaction
    learned a shape ("login is admin / Hunter2x!") does not carry it into the file."""
    return [
        dataclasses.replace(
            n, content=redact_secrets(n.content)[0], attributes=redact_deep(n.attributes)
        )
        for n in store.iter_all()
    ]


def export_jsonl(store: AdminStore, out: TextIO) -> tuple[int, int]:
    """Write every node and edge as JSON lines, after a header; returns (nodes, edges)."""
    nodes = _exported_nodes(store)
    edges = store.all_edges()
    header = {
        "kind": EXPORT_KIND,
        "version": EXPORT_VERSION,
        "exported_at": utcnow(),
        "embedding_model": store.meta().get("embedding_model"),
        "nodes": len(nodes),
        "edges": len(edges),
    }
    out.write(json.dumps(header, ensure_ascii=False) + "\n")
    for node in nodes:
        out.write(json.dumps(node_record(node), ensure_ascii=False, sort_keys=True) + "\n")
    for edge in edges:
        out.write(json.dumps(edge_record(edge), ensure_ascii=False, sort_keys=True) + "\n")
    return len(nodes), len(edges)


def export_markdown(store: AdminStore, out: TextIO, *, title: str) -> tuple[int, int]:
    """Write a Markdown page for people: grouped by type, then by the entity each memory is about."""
    nodes = _exported_nodes(store)
    edges = store.all_edges()
    by_id = {n.id: n for n in nodes}
    linked: dict[str, list[str]] = defaultdict(list)  # memory id -> entity ids, in edge order
    relations: dict[str, list[tuple[str, str]]] = defaultdict(
        list
    )  # entity id -> (edge type, entity id)
    for edge in edges:
        source, target = by_id.get(edge.source_id), by_id.get(edge.target_id)
        if source is None or target is None:
            continue
        if source.node_type == "entity" and target.node_type == "entity":
            relations[source.id].append((edge.edge_type, target.id))
        elif target.node_type == "entity":
            linked[source.id].append(target.id)
        elif source.node_type == "entity":
            linked[target.id].append(source.id)

    current = [n for n in nodes if not n.superseded_by]
    replaced = [n for n in nodes if n.superseded_by]
    model = store.meta().get("embedding_model", "?")
    out.write(f"# {title}\n\n")
    out.write(
        f"Exported {utcnow()} UTC: {len(current)} current memories, {len(replaced)} replaced, "
        f"{len(edges)} links (embedding model {model}).\n"
    )

    for node_type, heading in SECTION_TITLES:
        members = [n for n in current if n.node_type == node_type]
        if not members:
            continue
        out.write(f"\n## {heading} ({len(members)})\n")
        if node_type == "entity":
            _write_entities(out, members, relations, by_id)
            continue
        groups: dict[str, list[Node]] = defaultdict(list)
        for node in members:
            entity_ids = [e for e in linked.get(node.id, []) if e in by_id]
            groups[by_id[entity_ids[0]].content if entity_ids else NO_ENTITY].append(node)
        for name in sorted(groups, key=lambda g: (g == NO_ENTITY, g.lower())):
            out.write(f"\n### {name}\n\n")
            for node in _ordered(groups[name]):
                others = [by_id[e].content for e in linked.get(node.id, [])[1:] if e in by_id]
                out.write(f"- {node.content}{_details(node, others)}\n")

    if replaced:
        out.write(f"\n## Replaced memories ({len(replaced)})\n\n")
        for node in replaced:
            out.write(
                f"- ~~{node.content}~~ ({node.node_type}, {node.created_at[:10]}), "
                f"replaced by `{node.superseded_by}` `{node.id}`\n"
            )
    return len(nodes), len(edges)


def _write_entities(
    out: TextIO,
    members: list[Node],
    relations: dict[str, list[tuple[str, str]]],
    by_id: dict[str, Node],
) -> None:
    groups: dict[str, list[Node]] = defaultdict(list)
    for node in members:
        groups[node.subtype or "other"].append(node)
    order = [*ENTITY_GROUPS, *sorted(set(groups) - set(ENTITY_GROUPS))]
    for subtype in order:
        if subtype not in groups:
            continue
        out.write(f"\n### {ENTITY_GROUPS.get(subtype, subtype.capitalize())}\n\n")
        for node in sorted(groups[subtype], key=lambda n: n.content.lower()):
            aliases = node.attributes.get("aliases") or []
            line = f"- **{node.content}**"
            if aliases:
                line += f" (also: {', '.join(str(a) for a in aliases)})"
            rel = [
                f"{edge_type.replace('_', ' ')} {by_id[target].content}"
                for edge_type, target in relations.get(node.id, [])
                if not by_id[target].superseded_by
            ]
            if rel:
                line += ": " + "; ".join(rel)
            out.write(f"{line} `{node.id}`\n")


def _ordered(nodes: list[Node]) -> list[Node]:
    """Plans by their date, instructions broadest first, the rest oldest first."""
    kind = nodes[0].node_type
    if kind == "plan":
        return sorted(nodes, key=lambda n: (n.valid_from or "9999", n.created_at))
    if kind == "instruction":
        return sorted(nodes, key=lambda n: (-(n.scope or 0.0), n.created_at))
    return nodes


def _details(node: Node, others: list[str]) -> str:
    parts = [node.subtype] if node.subtype else []
    if node.node_type == "instruction" and node.scope is not None:
        parts.append(f"scope {node.scope:g}")
    if node.valid_from:
        parts.append(
            f"from {node.valid_from}" + (f" to {node.valid_until}" if node.valid_until else "")
        )
    parts.append(node.created_at[:10])
    if node.source != "user":
        parts.append(f"said by {node.source}")
    if others:
        parts.append("also about " + ", ".join(others))
    return f" ({'; '.join(parts)}) `{node.id}`"


# ---------------------------------------------------------------------------------------------- import


class _NodeRecord(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1, max_length=128)
    type: str
    subtype: str | None = None
    content: str = Field(min_length=1)
    salience: float = 1.0
    confidence: float = 1.0
    source: str = "user"
    created_at: str | None = None
    valid_from: str | None = None
    valid_until: str | None = None
    superseded_by: str | None = None
    attributes: dict[str, Any] = Field(default_factory=dict)
    scope: float | None = None

    @field_validator("type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        if value not in NODE_TYPES:
            raise ValueError(f"unknown memory type {value!r}")
        return value

    @field_validator("source")
    @classmethod
    def _known_source(cls, value: str) -> str:
        if value not in ("user", "claude"):
            raise ValueError(f"{_shown(value)} is not user or claude")
        return value

    @field_validator("created_at", "valid_from", "valid_until")
    @classmethod
    def _a_date(cls, value: str | None) -> str | None:
        try:
            if value is not None:
                datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"{_shown(value)} is not a date such as 2025-05-01") from None
        return value

    def to_new_node(self) -> NewNode:
        allowed = SUBTYPES[self.type]
        if self.subtype is not None and allowed and self.subtype not in allowed:
            raise ValueError(f"unknown subtype {self.subtype!r} for {self.type}")
        if not self.content.strip():
            raise ValueError("empty content")
        # An export from elsewhere may carry secrets: they are redacted before anything is written.
        return NewNode(
            node_type=self.type,
            content=redact_secrets(self.content)[0],
            subtype=self.subtype,
            salience=self.salience,
            confidence=self.confidence,
            source=self.source,
            valid_from=self.valid_from,
            valid_until=self.valid_until,
            scope=self.scope,
            attributes=redact_deep(self.attributes),
            id=self.id,
            created_at=self.created_at or utcnow(),
        )


class _EdgeRecord(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1, max_length=128)
    source_id: str = Field(min_length=1)
    target_id: str = Field(min_length=1)
    edge_type: str = Field(min_length=1)
    attributes: dict[str, Any] = Field(default_factory=dict)
    created_at: str | None = None

    def to_edge(self) -> Edge:
        return Edge(
            self.id,
            self.source_id,
            self.target_id,
            self.edge_type,
            redact_deep(self.attributes),
            self.created_at or utcnow(),
        )


@dataclass
class ParsedExport:
    """The records of a JSONL export, checked."""

    nodes: list[NewNode]
    superseded_by: dict[str, str]
    edges: list[Edge]


MAX_LINE_CHARS = 1_000_000
"""The longest line import reads: an export's record is far shorter, and a longer line is not read whole."""


def _open_regular(path: Path) -> TextIO:
    """`path` opened as UTF-8 text, when it is a regular file; a device or a FIFO is refused unread."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO with no writer must not hang here
    except FileNotFoundError:
        raise TransferError(f"There is no file {path} to import.") from None
    except IsADirectoryError:
        raise TransferError(f"{path} is a folder; give the JSONL file to import.") from None
    try:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise TransferError(f"{path} is a folder; give the JSONL file to import.")
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise TransferError(
                f"{path} is not a regular file; give the JSONL file that "
                "`octygraph memory export --format jsonl` writes."
            )
        os.set_blocking(fd, True)
        return open(fd, encoding="utf-8")  # the caller closes it
    except BaseException:
        os.close(fd)
        raise


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with _open_regular(path) as handle:
        number = 0
        while True:
            try:
                line = handle.readline(MAX_LINE_CHARS + 1)
            except UnicodeDecodeError:
                raise TransferError(
                    f"Line {number + 1} of {path.name} is not UTF-8 text; import takes the JSONL "
                    "that `octygraph memory export --format jsonl` writes."
                ) from None
            if not line:
                return
            number += 1
            if len(line) > MAX_LINE_CHARS and not line.endswith("\n"):
                raise TransferError(
                    f"Line {number} of {path.name} is longer than {MAX_LINE_CHARS:,} characters, "
                    "so it is not a record that `octygraph memory export --format jsonl` writes."
                )
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):
                raise TransferError(
                    f"Line {number} of {path.name} is not JSON; import takes the JSONL that "
                    "`octygraph memory export --format jsonl` writes."
                ) from None
            if not isinstance(record, dict):
                raise TransferError(f"Line {number} of {path.name} is not a JSON object.")
            yield number, record


def _shown(value: Any) -> str:
    """A value as a message quotes it: JSON, at most 40 characters."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:39] + "…"


def _check_version(version: Any) -> None:
    """Refuse an export header whose version is not a version number this octygraph reads."""
    whole = isinstance(version, int) or (isinstance(version, float) and version.is_integer())
    if isinstance(version, bool) or not whole or version < 1:
        raise ValueError(
            f"its header gives version {_shown(version)}, not a version number such as "
            f"{EXPORT_VERSION}"
        )
    if version > EXPORT_VERSION:
        raise ValueError("it was written by a newer octygraph")


def parse_jsonl(path: Path) -> ParsedExport:
    """Read and check a whole JSONL export before anything is written."""
    parsed = ParsedExport([], {}, [])
    seen: set[str] = set()
    dropped: set[str] = set()
    raws: list[str] = []  # each node's content as the file gives it
    for number, record in _records(path):
        kind = record.get("kind")
        try:
            if kind == "node":
                node = _NodeRecord.model_validate(record)
                if node.id in seen:
                    raise ValueError(f"memory id {node.id!r} appears twice")
                seen.add(node.id)
                if (node.type == "entity" and is_secret_name(node.content)) or planted_reason(
                    node.content
                ) is not None:
                    # A secret is never an entity, an injection never a memory; links go with them.
                    dropped.add(node.id)
                    continue
                parsed.nodes.append(node.to_new_node())
                raws.append(node.content)
                if node.superseded_by:
                    parsed.superseded_by[node.id] = node.superseded_by
            elif kind == "edge":
                edge = _EdgeRecord.model_validate(record).to_edge()
                if not {edge.source_id, edge.target_id} & dropped:
                    parsed.edges.append(edge)
            elif kind == EXPORT_KIND:
                _check_version(record.get("version", EXPORT_VERSION))
            elif kind is None:
                raise ValueError(
                    f"it has no kind; each line is a node, an edge or an {EXPORT_KIND}"
                )
            else:
                raise ValueError(f"its kind {_shown(kind)} is not node, edge or {EXPORT_KIND}")
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "record"
            reason = str(first["msg"]).removeprefix("Value error, ")
            raise TransferError(
                f"Line {number} of {path.name} is not a valid {kind} record ({where}: {reason})."
            ) from None
        except (ValueError, TypeError, ArithmeticError) as exc:
            raise TransferError(
                f"Line {number} of {path.name} cannot be imported: {exc}."
            ) from None
    # Nor is a word that redaction took out of another memory of the file ("admin / Hunter2x").
    texts = [
        (raw, n.content) for raw, n in zip(raws, parsed.nodes, strict=True) if raw != n.content
    ]
    late = {
        n.id
        for n in parsed.nodes
        if n.id and n.node_type == "entity" and any(redacted_away(n.content, *t) for t in texts)
    }
    if late:
        dropped |= late
        parsed.nodes = [n for n in parsed.nodes if n.id not in late]
        parsed.edges = [e for e in parsed.edges if not {e.source_id, e.target_id} & late]
    parsed.superseded_by = {k: v for k, v in parsed.superseded_by.items() if v not in dropped}
    if not parsed.nodes and not parsed.edges:
        raise TransferError(f"{path.name} holds no memories to import.")
    return parsed


def import_jsonl(
    store: AdminStore,
    path: Path,
    *,
    parsed: ParsedExport | None = None,
    progress: ProgressFn | None = None,
) -> ImportResult:
    """Import a JSONL export into `store`; what is already there (same ids) is skipped.

    Args:
        store: Where to import.
        path: The JSONL file (named in messages).
        parsed: `parse_jsonl(path)`, when the caller already checked the file.
        progress: Progress callback for the embedding and writing stages.
    """
    parsed = parsed or parse_jsonl(path)
    file_ids = {n.id for n in parsed.nodes if n.id}
    existing = {n.id for n in store.get_nodes(file_ids)}
    new_nodes = [n for n in parsed.nodes if n.id not in existing]
    new_ids = {n.id for n in new_nodes if n.id}

    # Every edge and replacement must point at a node that will exist; check before writing.
    referenced = {e.source_id for e in parsed.edges} | {e.target_id for e in parsed.edges}
    referenced |= set(parsed.superseded_by.values())
    outside = referenced - file_ids
    known = {n.id for n in store.get_nodes(outside)} | file_ids
    missing = sorted(referenced - known)
    if missing:
        raise TransferError(
            f"{path.name} links to memory {missing[0]!r}, which is neither in the file nor in the "
            "database; nothing was imported."
        )

    pairs = [(old, new) for old, new in parsed.superseded_by.items() if old in new_ids]
    spec = GraphSpec(new_nodes, parsed.edges, pairs)
    added_edges = write_graph(store, spec, progress=progress, label="import")
    return ImportResult(
        nodes_added=len(new_nodes),
        nodes_skipped=len(parsed.nodes) - len(new_nodes),
        edges_added=added_edges,
        edges_skipped=len(parsed.edges) - added_edges,
        superseded=len(pairs),
    )

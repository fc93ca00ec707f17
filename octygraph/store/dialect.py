"""The few ways SQLite and PostgreSQL spell the same query, and the node filters written once over them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from octygraph.store.model import StoreError
from octygraph.store.schema import NODE_TYPES


@dataclass(frozen=True)
class Dialect:
    """How a backend writes a parameter, an insertion-order column, a row lock and JSON look-ups."""

    mark: str  # a query parameter: "?" or "%s"
    order: str  # a column in insertion order, the tie-break of newest-first lists: "rowid" or "seq"
    for_update: str  # locks the rows a write transaction reads ("" where the whole file is locked)
    # Ties come back in scan order (SQLite) rather than in any order (PostgreSQL, which needs `order`).
    scan_ordered: bool
    archived_at: str  # when a node `n` was archived, from its attributes
    needs_review: str  # a node `n` is flagged for review, from its attributes
    alias_is: str  # one of a node `n`'s aliases equals a parameter, ignoring case

    def order_by(self, *keys: str, table: str = "") -> str:
        """` ORDER BY keys`, then insertion order where the database would leave ties in any order."""
        if not self.scan_ordered:
            keys = (*keys, f"{table}.{self.order}" if table else self.order)
        return " ORDER BY " + ", ".join(keys) if keys else ""

    def one_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """`column` is one of `values`: IN (?, ?, …) on SQLite, = ANY(%s) with one array on PostgreSQL."""
        if self.mark == "%s":
            return f"{column} = ANY(%s)", [list(values)]
        return f"{column} IN ({','.join('?' * len(values))})", list(values)


SQLITE = Dialect(
    mark="?",
    order="rowid",
    for_update="",
    scan_ordered=True,
    archived_at="json_extract(n.attributes, '$.archived.at')",
    needs_review="json_extract(n.attributes, '$.needs_review')",
    alias_is="EXISTS (SELECT 1 FROM json_each(n.attributes, '$.aliases') a "
    "WHERE lower(a.value)=lower(?))",
)
POSTGRES = Dialect(
    mark="%s",
    order="seq",
    for_update=" FOR UPDATE",
    scan_ordered=False,
    archived_at="(n.attributes::jsonb -> 'archived' ->> 'at')",
    needs_review="COALESCE((n.attributes::jsonb ->> 'needs_review')::boolean, FALSE)",
    # The LIKE skips parsing the JSON of the many nodes without aliases.
    alias_is="n.attributes LIKE '%%aliases%%' AND EXISTS (SELECT 1 FROM "
    "jsonb_array_elements_text(CASE WHEN jsonb_typeof(n.attributes::jsonb -> 'aliases') = "
    "'array' THEN n.attributes::jsonb -> 'aliases' ELSE '[]'::jsonb END) a "
    "WHERE lower(a) = lower(%s))",
)


def node_filters(
    dialect: Dialect,
    types: Sequence[str] | None = None,
    entity_id: str | None = None,
    since: str | None = None,
    until: str | None = None,
    include_superseded: bool = True,
    *,
    source: str | None = None,
    min_scope: float | None = None,
) -> tuple[list[str], list[Any]]:
    """WHERE conditions on `nodes n` (joined with AND) and their arguments, in order."""
    m = dialect.mark
    where: list[str] = []
    args: list[Any] = []
    if types:
        for t in types:
            if t not in NODE_TYPES:
                raise StoreError(f"Unknown memory type {t!r}; use one of: {', '.join(NODE_TYPES)}.")
        condition, values = dialect.one_of("n.node_type", types)
        where.append(condition)
        args.extend(values)
    if not include_superseded:
        where.append("n.superseded_by IS NULL")
    if since:
        where.append(f"(n.created_at >= {m} OR n.valid_from >= {m})")
        args.extend([since, since])
    if until:
        where.append(f"(n.created_at <= {m} OR n.valid_from <= {m})")
        args.extend([until, until])
    if entity_id:
        where.append(
            f"n.id IN (SELECT target_id FROM edges WHERE source_id = {m} "
            f"UNION SELECT source_id FROM edges WHERE target_id = {m})"
        )
        args.extend([entity_id, entity_id])
    if source:
        where.append(f"n.source = {m}")
        args.append(source)
    if min_scope is not None:
        where.append(f"n.scope >= {m}")
        args.append(min_scope)
    return where, args

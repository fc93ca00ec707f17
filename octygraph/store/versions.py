"""Versions of a memory, written once for every backend: supersede, archive, restore, the chain.

A memory replaced by another points at it (`superseded_by`); an archived one points at ARCHIVED. The rules
that keep one current version in a chain live here, in `VersionedStore`, over the row steps of `VersionRows`
(the same SQL for both backends, through their `Dialect`). A backend supplies its transaction, its node
insert, its edge write (and look-up, where no index skips a present edge) and how it takes a vector in or
out of search (`_set_active`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np

from octygraph.store.dialect import Dialect, node_filters
from octygraph.store.model import Edge, NewNode, Node, StoreError, new_id, utcnow, validate_node
from octygraph.store.protocol import AdminStore
from octygraph.store.schema import ARCHIVED

EdgeRow = tuple[str, str, str, dict[str, Any]]


class VersionRows:
    """The row steps of the version rules, inside one write transaction on `conn`."""

    def __init__(
        self,
        conn: Any,
        dialect: Dialect,
        set_active: Callable[[Any, Sequence[str], bool], None],
        insert_edge: Callable[[Any, str, str, str, dict[str, Any]], object],
    ) -> None:
        self.conn = conn
        self.d = dialect
        self._set_active = set_active
        self._insert_edge = insert_edge

    def lock(self, node_id: str) -> tuple[str | None, dict[str, Any]] | None:
        """(superseded_by, attributes) of a node, locked until the transaction ends; None if absent."""
        m = self.d.mark
        row = self.conn.execute(
            f"SELECT superseded_by, attributes FROM nodes WHERE id = {m}{self.d.for_update}",
            (node_id,),
        ).fetchone()
        return None if row is None else (row[0], json.loads(row[1] or "{}"))

    def lock_present(self, node_id: str) -> tuple[str | None, dict[str, Any]]:
        """`lock` of a node that must be there: a missing one is an error."""
        found = self.lock(node_id)
        if found is None:
            raise StoreError(f"No memory with id {node_id!r}.")
        return found

    def replaced_by(self, node_id: str) -> list[str]:
        """Ids of the nodes that point at `node_id` (the versions it replaced)."""
        m = self.d.mark
        rows = self.conn.execute(f"SELECT id FROM nodes WHERE superseded_by = {m}", (node_id,))
        return [r[0] for r in rows.fetchall()]

    def pointer(self, node_id: str) -> tuple[bool, str | None]:
        """(exists, superseded_by) of a node."""
        m = self.d.mark
        row = self.conn.execute(
            f"SELECT superseded_by FROM nodes WHERE id = {m}", (node_id,)
        ).fetchone()
        return (False, None) if row is None else (True, row[0])

    def point(
        self, node_id: str, superseded_by: str | None, attributes: dict[str, Any] | None = None
    ) -> None:
        m = self.d.mark
        if attributes is None:
            self.conn.execute(
                f"UPDATE nodes SET superseded_by = {m} WHERE id = {m}", (superseded_by, node_id)
            )
            return
        self.conn.execute(
            f"UPDATE nodes SET superseded_by = {m}, attributes = {m} WHERE id = {m}",
            (superseded_by, json.dumps(attributes, sort_keys=True), node_id),
        )

    def repoint(self, old_target: str, new_target: str | None) -> None:
        """Nodes that pointed at `old_target` point at `new_target` (None: they are current again)."""
        m = self.d.mark
        self.conn.execute(
            f"UPDATE nodes SET superseded_by = {m} WHERE superseded_by = {m}",
            (new_target, old_target),
        )

    def set_active(self, node_ids: Sequence[str], active: bool) -> None:
        """Take vectors in (current) or out of (replaced, archived) vector search."""
        if node_ids:
            self._set_active(self.conn, node_ids, active)

    def edges_touching(self, node_id: str) -> list[EdgeRow]:
        m = self.d.mark
        rows = self.conn.execute(
            f"SELECT source_id, target_id, edge_type, attributes FROM edges "
            f"WHERE source_id = {m} OR target_id = {m} ORDER BY {self.d.order}",
            (node_id, node_id),
        ).fetchall()
        return [(s, t, e, json.loads(a or "{}")) for s, t, e, a in rows]

    def insert_edge(self, source: str, target: str, edge_type: str, attrs: dict[str, Any]) -> None:
        self._insert_edge(self.conn, source, target, edge_type, attrs)


def hand_over(rows: VersionRows, old_id: str, new_id: str) -> None:
    """`old_id` is replaced by `new_id`: its links are copied over and it leaves vector search."""
    for source_id, target_id, edge_type, attributes in rows.edges_touching(old_id):
        source = new_id if source_id == old_id else source_id
        target = new_id if target_id == old_id else target_id
        rows.insert_edge(source, target, edge_type, attributes)
    rows.point(old_id, new_id)
    rows.set_active([old_id], False)


def release_replaced(rows: VersionRows, node_id: str) -> None:
    """The versions `node_id` had replaced become current again (before it is deleted)."""
    previous = rows.replaced_by(node_id)
    rows.repoint(node_id, None)
    rows.set_active(previous, True)


class VersionedStore(AdminStore):
    """Version rules shared by the backends; each supplies the hooks below."""

    dialect: Dialect

    # ------------------------------------------------------------ supplied by each backend

    def transaction(self) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _insert(self, conn: Any, item: NewNode, vec: np.ndarray) -> Node:
        raise NotImplementedError

    def _insert_edge(
        self,
        conn: Any,
        source_id: str,
        target_id: str,
        edge_type: str,
        attributes: dict[str, Any],
        created_at: str | None = None,
        edge_id: str | None = None,
    ) -> Edge | None:
        """Insert one edge unless it links a node to itself or is there already (its id, or its
        ends and type); None then. A missing target is an error."""
        if source_id == target_id:
            return None
        if self._edge_present(conn, source_id, target_id, edge_type, edge_id):
            return None
        m = self.dialect.mark
        if not conn.execute(f"SELECT 1 FROM nodes WHERE id = {m}", (target_id,)).fetchone():
            raise StoreError(f"No memory with id {target_id!r} to link to.")
        edge = Edge(
            edge_id or new_id(), source_id, target_id, edge_type, attributes, created_at or utcnow()
        )
        return edge if self._write_edge(conn, edge) else None

    def _edge_present(
        self, conn: Any, source_id: str, target_id: str, edge_type: str, edge_id: str | None
    ) -> bool:
        """The edge is there already, looked up before the write; False where the database's unique
        index on an edge's ends and type skips a present one as it writes (`_write_edge`)."""
        return False

    def _write_edge(self, conn: Any, edge: Edge) -> bool:
        """Write a new edge's row; False when the database skipped it as present."""
        raise NotImplementedError

    def _set_active(self, conn: Any, node_ids: Sequence[str], active: bool) -> None:
        raise NotImplementedError

    def _select_nodes(self, tail: str, args: Sequence[Any] = ()) -> list[Node]:
        """The nodes of `SELECT <node columns> FROM nodes n <tail>` (tail: WHERE, ORDER BY, LIMIT)."""
        raise NotImplementedError

    def _rows_for(self, conn: Any) -> VersionRows:
        return VersionRows(conn, self.dialect, self._set_active, self._insert_edge)

    # ------------------------------------------------------------ shared

    def _filters(
        self,
        types: Sequence[str] | None,
        entity_id: str | None,
        since: str | None,
        until: str | None,
        include_superseded: bool,
    ) -> tuple[list[str], list[Any]]:
        return node_filters(self.dialect, types, entity_id, since, until, include_superseded)

    def list_nodes(
        self,
        *,
        types: Sequence[str] | None = None,
        since: str | None = None,
        limit: int | None = 50,
        include_superseded: bool = True,
        source: str | None = None,
        min_scope: float | None = None,
    ) -> list[Node]:
        """Nodes newest first, optionally filtered by type, creation time, source and scope."""
        where, args = node_filters(
            self.dialect,
            types,
            None,
            since,
            None,
            include_superseded,
            source=source,
            min_scope=min_scope,
        )
        sql = " WHERE " + " AND ".join(where) if where else ""
        sql += f" ORDER BY n.created_at DESC, n.{self.dialect.order} DESC"
        if limit:
            sql += f" LIMIT {int(limit)}"
        return self._select_nodes(sql, args)

    def supersede(self, old_id: str, new_content: str, **overrides: Any) -> Node:
        """Replace a memory: the old node points at the new one, which inherits its edges."""
        old = self.get_node(old_id)
        if old is None:
            raise StoreError(f"No memory with id {old_id!r}.")
        if old.superseded_by:
            raise StoreError(f"Memory {old_id} was already replaced by {old.superseded_by}.")
        item = NewNode(
            node_type=overrides.pop("node_type", old.node_type),
            content=new_content,
            subtype=overrides.pop("subtype", old.subtype),
            salience=overrides.pop("salience", old.salience),
            confidence=overrides.pop("confidence", old.confidence),
            source=overrides.pop("source", old.source),
            valid_from=overrides.pop("valid_from", old.valid_from),
            valid_until=overrides.pop("valid_until", old.valid_until),
            scope=overrides.pop("scope", old.scope),
            attributes={**old.attributes, **overrides.pop("attributes", {}), "supersedes": old.id},
        )
        if overrides:
            raise StoreError(f"Unknown fields for supersede: {', '.join(sorted(overrides))}.")
        validate_node(item.node_type, item.subtype)
        vec = self.embedder.embed_array([new_content.strip()])[0]
        with self.transaction() as conn:
            rows = self._rows_for(conn)
            found = rows.lock(old_id)
            if found is None or found[0]:
                raise StoreError(f"Memory {old_id} changed while it was being replaced; try again.")
            # Replaced first, so a renamed entity ("acme" -> "Acme") does not meet itself in the index.
            item.id = item.id or new_id()
            rows.point(old_id, item.id)
            new = self._insert(conn, item, vec)
            hand_over(rows, old_id, new.id)
        return new

    def mark_superseded(self, old_id: str, new_id: str) -> None:
        """Mark an existing node as replaced by another existing one, copying its edges over."""
        with self.transaction() as conn:
            rows = self._rows_for(conn)
            old, new = rows.lock(old_id), rows.lock(new_id)
            if old is None or new is None:
                raise StoreError(f"No memory with id {old_id if old is None else new_id!r}.")
            if old[0]:
                raise StoreError(f"Memory {old_id} was already replaced by {old[0]}.")
            hand_over(rows, old_id, new_id)

    def archive_node(self, node_id: str) -> Node:
        """Forget a memory softly: it leaves search and retrieval but keeps its links, and can be restored.

        Like `delete_node`, a version it had replaced becomes current again; `restore_node` undoes both.
        """
        with self.transaction() as conn:
            rows = self._rows_for(conn)
            was, attributes = rows.lock_present(node_id)
            if was == ARCHIVED:
                raise StoreError(f"Memory {node_id} is already archived.")
            previous = rows.replaced_by(node_id)
            attributes["archived"] = {"at": utcnow(), "was": was, "revived": previous}
            rows.point(node_id, ARCHIVED, attributes)
            rows.set_active([node_id], False)
            # Versions it replaced now point past it: to its own successor, or nowhere (current again).
            rows.repoint(node_id, was)
            if was is None:
                rows.set_active(previous, True)
        return self._required(node_id)

    def restore_node(self, node_id: str) -> Node:
        """Undo `archive_node`: the memory is back where it was, and what it replaced is again replaced."""
        with self.transaction() as conn:
            rows = self._rows_for(conn)
            pointer, attributes = rows.lock_present(node_id)
            if pointer != ARCHIVED:
                raise StoreError(f"Memory {node_id} is not archived; nothing to restore.")
            info = attributes.pop("archived", None) or {}
            was = info.get("was")
            # The version it pointed at may have been forgotten since: then this one is current.
            if was and not rows.pointer(was)[0]:
                was = None
            rows.point(node_id, was, attributes)
            rows.set_active([node_id], was is None)
            # Older versions still where the archive left them go back to being replaced by this one.
            moved = []
            for prev_id in (str(i) for i in info.get("revived") or []):
                exists, points_at = rows.pointer(prev_id)
                if exists and points_at in (None, info.get("was")):
                    rows.point(prev_id, node_id)
                    moved.append(prev_id)
            rows.set_active(moved, False)
        return self._required(node_id)

    def supersede_chain(self, node_id: str) -> list[Node]:
        """The versions of a memory, oldest first, that lead to and from `node_id`."""
        node = self.get_node(node_id)
        if node is None:
            return []
        back: list[Node] = []
        seen = {node.id}
        for older in self._walk_back(node.id):
            if older.id in seen:
                break
            seen.add(older.id)
            back.append(older)
        chain = [*reversed(back), node]
        current = node
        while current.superseded_by and current.superseded_by not in seen:
            nxt = self.get_node(current.superseded_by)
            if nxt is None:
                break
            seen.add(nxt.id)
            chain.append(nxt)
            current = nxt
        return chain

    def _walk_back(self, node_id: str) -> Iterator[Node]:
        """The version each one replaced, one after another, from `node_id` back."""
        m = self.dialect.mark
        current = node_id
        while True:
            rows = self._select_nodes(f" WHERE n.superseded_by = {m} LIMIT 1", (current,))
            if not rows:
                return
            yield rows[0]
            current = rows[0].id

    def _required(self, node_id: str) -> Node:
        node = self.get_node(node_id)
        assert node is not None
        return node

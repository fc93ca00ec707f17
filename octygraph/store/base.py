"""What both backends do alike, written once: search's flow, entity look-up, attributes, node lists.

`StoreBase` adds to the version rules (`versions.VersionedStore`) the operations whose only difference
between SQLite and PostgreSQL is spelling (`dialect.Dialect`). A backend supplies its candidates (vector
and keyword), its exact entity look-ups and `_rows`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from octygraph.store.model import NODE_SELECT, Hit, NewNode, Node, StoreError, _row_to_node
from octygraph.store.protocol import SearchMode
from octygraph.store.ranking import rank_hits
from octygraph.store.versions import VersionedStore

# A name's meaning must be this close to an entity's for a semantic match (`find_entity`).
ENTITY_MATCH_MIN_COSINE = 0.72
# Scoped searches (an entity, a time window) score at most this many memories exactly.
SCOPED_MAX = 20000


class StoreBase(VersionedStore):
    """Operations written once over the backend hooks below (public ones as `protocol` declares them)."""

    # ------------------------------------------------------------ supplied by each backend

    def _rows(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        """All rows of one read query (under the backend's lock)."""
        raise NotImplementedError

    def _vectors_of(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def _vector_candidates(
        self, query_vec: np.ndarray, k: int, types: Sequence[str] | None, include_superseded: bool
    ) -> list[tuple[str, float]]:
        raise NotImplementedError

    def _keyword_candidates(
        self, query: str, k: int, where: list[str], args: list[Any]
    ) -> list[tuple[str, float]]:
        raise NotImplementedError

    def _find_entity_exact(self, name: str) -> Node | None:
        """A current entity named `name`: exactly, then ignoring case, then by an alias."""
        raise NotImplementedError

    # ------------------------------------------------------------ shared

    def _select_nodes(self, tail: str, args: Sequence[Any] = ()) -> list[Node]:
        return [
            _row_to_node(r) for r in self._rows(f"SELECT {NODE_SELECT} FROM nodes n{tail}", args)
        ]

    def add_node(self, node_type: str, content: str, **kwargs: Any) -> Node:
        """Create one node (embedded at once) with edges to `entity_ids` and `related_ids`."""
        return self.add_nodes([NewNode(node_type=node_type, content=content, **kwargs)])[0]

    def set_attributes(self, node_id: str, **updates: Any) -> Node:
        """Merge keys into a node's attributes (e.g. a contradiction flag for review)."""
        with self.transaction() as conn:
            rows = self._rows_for(conn)
            found = rows.lock(node_id)
            if found is None:
                raise StoreError(f"No memory with id {node_id!r}.")
            rows.point(node_id, found[0], {**found[1], **updates})
        return self._required(node_id)

    def entity_kinds(self, limit: int = 5000) -> dict[str, str | None]:
        """Names and aliases of current entities with their subtype (the classifier's gazetteer)."""
        d = self.dialect
        rows = self._rows(
            "SELECT content, subtype, attributes FROM nodes WHERE node_type = 'entity' "
            f"AND superseded_by IS NULL ORDER BY salience DESC, {d.order} DESC LIMIT {d.mark}",
            (int(limit),),
        )
        kinds: dict[str, str | None] = {}
        for content, subtype, attributes in rows:
            kinds.setdefault(content, subtype)
            try:
                for alias in json.loads(attributes or "{}").get("aliases", []):
                    kinds.setdefault(str(alias), subtype)
            except (TypeError, ValueError, AttributeError):
                pass
        return kinds

    def entity_names(self, limit: int = 5000) -> list[str]:
        """Names and aliases of current entities."""
        return list(self.entity_kinds(limit))

    def find_entity(self, name: str, *, semantic: bool = True) -> Node | None:
        """Find an entity by name: exact, case-insensitive, alias, then (optionally) semantic."""
        name = name.strip()
        if not name:
            return None
        found = self._find_entity_exact(name)
        if found is not None or not semantic:
            return found
        hits = self.search(name, types=["entity"], limit=1, mode="vector")
        if hits and hits[0].cosine >= ENTITY_MATCH_MIN_COSINE:
            return hits[0].node
        return None

    def _scoped_ids(self, where: list[str], args: list[Any]) -> list[str]:
        sql = "SELECT n.id FROM nodes n"
        if where:
            sql += " WHERE " + " AND ".join(where)
        return [r[0] for r in self._rows(f"{sql} LIMIT {SCOPED_MAX}", args)]

    def search(
        self,
        query: str,
        *,
        types: Sequence[str] | None = None,
        entity_id: str | None = None,
        since: str | None = None,
        until: str | None = None,
        days: int | None = None,
        limit: int = 10,
        include_superseded: bool = False,
        mode: SearchMode = "hybrid",
        query_vec: np.ndarray | None = None,
        min_cosine: float | None = None,
    ) -> list[Hit]:
        """Search memories by meaning and words; every hit carries its cosine similarity too.

        `hybrid` adds the z-scores over the candidates of the cosine (less each candidate's hubness, see
        HUB_WEIGHT) and of BM25 (BM25_K1, BM25_B), weighted by VECTOR_WEIGHT; `vector` ranks by
        raw cosine, `keyword` by BM25. Filters: node types, an entity the node is linked to, a
        creation/validity window (`since`/`until` or the last `days`). Superseded nodes are left out unless
        asked for.
        """
        if not query or not query.strip():
            raise StoreError("The search needs some words.")
        if limit <= 0:
            raise StoreError("The search limit must be at least 1.")
        if days is not None:
            since = (datetime.now(UTC) - timedelta(days=days)).strftime("%Y-%m-%d %H:%M:%S")
        where, args = self._filters(types, entity_id, since, until, include_superseded)
        pool = max(limit * 5, 50)
        qvec = (
            query_vec
            if query_vec is not None
            else (self.embed_query(query) if mode != "keyword" else None)
        )
        vector: dict[str, float] = {}
        if qvec is not None and mode != "keyword":
            if entity_id or since or until:
                # Scoped searches are small: score the scope exactly instead of an over-fetched KNN.
                vector = self.cosines(qvec, self._scoped_ids(where, args))
            else:
                vector = dict(self._vector_candidates(qvec, pool, types, include_superseded))
        keyword: dict[str, float] = {}
        if mode != "vector":
            keyword = dict(self._keyword_candidates(query, pool, where, args))
        return rank_hits(
            vector,
            keyword,
            mode=mode,
            pool=pool,
            qvec=qvec,
            limit=limit,
            min_cosine=min_cosine,
            include_superseded=include_superseded,
            vectors_of=self._vectors_of,
            cosines=self.cosines,
            get_nodes=self.get_nodes,
        )

"""What the rest of octygraph may ask of a memory store, whatever the database under it.

`GraphStore` is what the graph, its tools and the service use; `AdminStore` adds the maintenance a
command line needs (stats, export, re-embedding, backup). This is the one declaration of what a store
offers: `MemoryStore` (SQLite, one file a project) and `PostgresStore` (one schema a project on a shared
server) derive from `AdminStore` through `versions.VersionedStore` and `base.StoreBase`, which add only
private hooks; mypy checks both are complete through the assignments at the bottom of
`octygraph.store.backends`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from octygraph.store.model import Edge, Embedder, Hit, NewNode, Node, Relationship

SearchMode = Literal["hybrid", "vector", "keyword"]


# runtime_checkable: Studio's context is a pydantic model that checks field types with isinstance.
@runtime_checkable
class GraphStore(Protocol):
    """The operations the pipeline's nodes and tools perform on memory."""

    embedder: Embedder

    @property
    def location(self) -> str:
        """Where the memories live, for messages and cache keys (a file path or a server schema)."""
        ...

    def revision(self) -> tuple[int, int, int]: ...

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
    ) -> list[Hit]: ...

    def embed_query(self, query: str) -> np.ndarray: ...

    def cosines(self, query_vec: np.ndarray, ids: Iterable[str]) -> dict[str, float]: ...

    def get_node(self, node_id: str) -> Node | None: ...

    def get_nodes(self, ids: Iterable[str]) -> list[Node]: ...

    def list_nodes(
        self,
        *,
        types: Sequence[str] | None = None,
        since: str | None = None,
        limit: int | None = 50,
        include_superseded: bool = True,
        source: str | None = None,
        min_scope: float | None = None,
    ) -> list[Node]: ...

    def find_entity(self, name: str, *, semantic: bool = True) -> Node | None: ...

    def entity_kinds(self, limit: int = 5000) -> dict[str, str | None]: ...

    def relationships(self, entity_id: str, limit: int = 25) -> list[Relationship]: ...

    def add_node(self, node_type: str, content: str, **kwargs: Any) -> Node: ...

    def add_edge(
        self,
        source_id: str,
        target_id: str,
        edge_type: str,
        attributes: dict[str, Any] | None = None,
    ) -> Edge | None: ...

    def ensure_entity(self, name: str, subtype: str | None = None) -> tuple[Node, bool]: ...

    def supersede(self, old_id: str, new_content: str, **overrides: Any) -> Node: ...

    def mark_superseded(self, old_id: str, new_id: str) -> None: ...

    def set_attributes(self, node_id: str, **updates: Any) -> Node: ...

    def close(self) -> None: ...


@runtime_checkable
class AdminStore(GraphStore, Protocol):
    """Maintenance on top of the graph's operations: what commands, profiles and exports use."""

    def meta(self) -> dict[str, str]: ...

    def stats(self) -> dict[str, Any]: ...

    def add_nodes(
        self,
        items: Sequence[NewNode],
        *,
        vectors: np.ndarray | None = None,
        batch_size: int = 256,
        progress: Callable[[int], None] | None = None,
    ) -> list[Node]: ...

    def add_edges(self, edges: Iterable[Edge]) -> int: ...

    def delete_node(self, node_id: str) -> bool: ...

    def archive_node(self, node_id: str) -> Node: ...

    def restore_node(self, node_id: str) -> Node: ...

    def archived_nodes(self, limit: int = 200) -> list[Node]: ...

    def flagged_for_review(self, limit: int = 200) -> list[Node]: ...

    def iter_all(self) -> Iterator[Node]: ...

    def all_edges(self) -> list[Edge]: ...

    def edges_of(self, node_id: str) -> list[Edge]: ...

    def supersede_chain(self, node_id: str) -> list[Node]: ...

    def entity_names(self, limit: int = 5000) -> list[str]: ...

    def linked_node_ids(self, entity_id: str) -> set[str]: ...

    def content_vectors(self, limit: int) -> list[tuple[str, np.ndarray]]: ...

    def vectors_by_id(self, *, current_only: bool = False) -> Iterator[tuple[str, np.ndarray]]: ...

    def enable_vector_cache(self) -> None: ...

    def reindex(
        self, progress: Callable[[int, int], None] | None = None, batch: int = 64
    ) -> int: ...

    def backup_to(self, target: str | Path) -> None: ...

    def __enter__(self) -> AdminStore: ...

    def __exit__(self, *exc: object) -> None: ...

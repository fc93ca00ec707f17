"""Which backend holds a project's memories: an SQLite file, or a schema on a PostgreSQL server."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from octygraph.store.protocol import AdminStore
from octygraph.store.sqlite import Embedder, MemoryStore, StoreError

if TYPE_CHECKING:
    from octygraph.store.postgres import PostgresStore

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(url: str | None) -> bool:
    return bool(url) and str(url).startswith(POSTGRES_SCHEMES)


def open_backend(
    *,
    path: Path,
    embedder: Embedder,
    database_url: str | None = None,
    project_id: str = "default",
    create: bool = True,
    check_model: bool = True,
) -> AdminStore:
    """The SQLite file at `path`, or the project's schema on the server `database_url` names."""
    if database_url:
        if not is_postgres_url(database_url):
            raise StoreError(
                "OCTY_DATABASE_URL must start with postgresql://; unset it to use the local SQLite file."
            )
        from octygraph.store.postgres import PostgresStore

        return PostgresStore.open(
            database_url, embedder, project_id=project_id, create=create, check_model=check_model
        )
    return MemoryStore.open(path, embedder, create=create, check_model=check_model)


if TYPE_CHECKING:
    # mypy proves here that both backends implement all of the protocols (else they are abstract).
    _sqlite: type[AdminStore] = MemoryStore
    _postgres: type[AdminStore] = PostgresStore

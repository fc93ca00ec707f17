"""Opening the pieces a command needs (settings -> embeddings -> store), in one place."""

from __future__ import annotations

from octygraph.config.settings import Settings
from octygraph.embeddings import make_embeddings
from octygraph.store import AdminStore
from octygraph.store.backends import open_backend


def database_url(settings: Settings) -> str | None:
    """The PostgreSQL server's URL when OCTY_DATABASE_URL is set, else None (the SQLite file)."""
    return settings.database_url.get_secret_value() if settings.database_url else None


def open_store(settings: Settings, *, create: bool = True, check_model: bool = True) -> AdminStore:
    """The project's memory store, created with private folders when missing.

    SQLite by default; the project's schema on a PostgreSQL server when OCTY_DATABASE_URL is set.
    """
    paths = settings.paths
    if create:
        paths.ensure()
    return open_backend(
        path=paths.db,
        embedder=make_embeddings(settings),
        database_url=database_url(settings),
        project_id=settings.project_id,
        create=create,
        check_model=check_model,
    )


def store_exists(settings: Settings) -> bool:
    """Whether the project may have memories to open without creating them.

    On a server that is asked when opening (a missing project is a clear StoreError there); locally it
    is whether the SQLite file exists.
    """
    return settings.database_url is not None or settings.paths.db.exists()

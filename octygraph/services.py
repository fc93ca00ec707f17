"""Opening the pieces a command needs (settings -> embeddings -> store), in one place."""

from __future__ import annotations

from octygraph.embeddings import make_embeddings
from octygraph.settings import Settings
from octygraph.store import MemoryStore


def open_store(settings: Settings, *, create: bool = True, check_model: bool = True) -> MemoryStore:
    """The project's memory database, created with private folders when missing."""
    paths = settings.paths
    if create:
        paths.ensure()
    return MemoryStore.open(
        paths.db, make_embeddings(settings), create=create, check_model=check_model
    )

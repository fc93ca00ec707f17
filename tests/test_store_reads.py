"""A long-lived store keeps the nodes it read until the database changes, whoever changes it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from octygraph.config.settings import Settings
from octygraph.store.opening import open_store


class Undo(Exception):
    pass


def test_nodes_read_again_after_every_kind_of_change(home: Path) -> None:
    settings = Settings.from_env(project_id="reads")
    with open_store(settings) as store, open_store(settings) as other:
        store.enable_vector_cache()  # as the service does: turns the kept reads on
        first = store.add_node("fact", "Maria owns the billing service")
        assert store.get_nodes([first.id]) == [first]
        assert store.get_nodes([first.id])[0] is store.get_nodes([first.id])[0]  # kept

        store.set_attributes(first.id, needs_review=True)  # this connection
        assert store.get_nodes([first.id])[0].attributes == {"needs_review": True}
        newer = other.supersede(first.id, "Peter owns the billing service")  # another connection
        assert store.get_nodes([first.id])[0].superseded_by == newer.id
        # Another process: only SQLite's data_version tells.
        with sqlite3.connect(settings.paths.db) as raw:
            raw.execute("UPDATE nodes SET content = 'Peter runs billing' WHERE id = ?", (newer.id,))
        assert store.get_nodes([newer.id])[0].content == "Peter runs billing"
        # Inside a transaction, reads see its own uncommitted writes.
        with pytest.raises(Undo), store.transaction() as conn:
            conn.execute("UPDATE nodes SET content = 'Ana runs billing' WHERE id = ?", (newer.id,))
            assert store.get_nodes([newer.id])[0].content == "Ana runs billing"
            raise Undo  # rolled back
        assert store.get_nodes([newer.id])[0].content == "Peter runs billing"
        assert store.get_nodes(["missing", newer.id, first.id]) == store.get_nodes(
            [newer.id, first.id]
        )

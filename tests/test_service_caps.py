"""The service keeps a bounded number of stores and checkpoint files open, however many projects it serves."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from octygraph.config.settings import Settings
from octygraph.service.checkpointers import CheckpointerPool
from octygraph.service.kept_files import max_open_stores
from octygraph.service.pool import StorePool


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_the_cap_has_a_default_and_reads_its_setting() -> None:
    assert max_open_stores({}) == 32
    assert max_open_stores({"OCTY_SERVE_MAX_STORES": "5"}) == 5
    assert max_open_stores({"OCTY_SERVE_MAX_STORES": "-1"}) == 32  # a bad value: the default


def test_open_stores_stay_within_the_cap_as_projects_grow(home: Path) -> None:
    pool = StorePool(max_open=2)
    projects = [Settings.from_env(project_id=f"cap{i}") for i in range(6)]

    async def serve(settings: Settings) -> None:
        async with pool.lease(settings) as store:
            store.add_node("fact", f"Project {settings.project_id} deploys with Helm.")

    counts: list[int] = []
    fds: list[int] = []
    try:
        for settings in projects:
            asyncio.run(serve(settings))
            counts.append(pool.open_stores())
            fds.append(_fds())
        while pool.stats()["priming"]:  # the background priming of each new database ends
            asyncio.run(asyncio.sleep(0.05))
        assert max(counts) <= 2
        assert pool.stats()["databases"] <= 2
        # Three projects over a cap of two, then three more: no descriptor is kept for the extra ones.
        assert fds[5] <= fds[2]
        # The most recent project is the one kept: its store is lent again, not reopened.
        asyncio.run(serve(projects[-1]))
        assert pool.stats()["runs_by_database"][str(projects[-1].paths.db.absolute())] == 2
    finally:
        pool.close_all()
    assert pool.open_stores() == 0


def test_checkpoint_files_stay_within_the_cap(home: Path) -> None:
    pool = CheckpointerPool(max_kept=2)

    async def serve_all() -> list[int]:
        kept = []
        for i in range(5):
            async with pool.lease(Settings.from_env(project_id=f"ck{i}")):
                pass
            kept.append(len(pool))
        await pool.close_all()
        return kept

    assert max(asyncio.run(serve_all())) <= 2
    assert len(pool) == 0


def test_a_checkpointer_in_use_is_closed_only_when_given_back(home: Path) -> None:
    pool = CheckpointerPool(max_kept=1)

    async def overlap() -> None:
        first = Settings.from_env(project_id="busy")
        async with pool.lease(first) as saver:
            async with pool.lease(Settings.from_env(project_id="other")):
                pass
            # Retired by the cap while in use: still usable until this run gives it back.
            config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
            assert await saver.aget_tuple(config) is None
        await pool.close_all()

    asyncio.run(overlap())

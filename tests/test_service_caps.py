"""The service keeps a bounded number of stores and checkpoint files open, however many projects it serves."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from octygraph.config.settings import Settings
from octygraph.pipeline.store_lease import StoreBusy
from octygraph.service.checkpointers import CheckpointerPool
from octygraph.service.kept_files import max_open_stores
from octygraph.service.pool import StorePool
from octygraph.store.opening import open_store


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


def test_a_checkpointer_in_use_is_never_closed_and_a_new_file_waits_for_it(home: Path) -> None:
    pool = CheckpointerPool(max_kept=1)

    async def overlap() -> list[str]:
        order: list[str] = []
        first = Settings.from_env(project_id="busy")

        async def other() -> None:
            async with pool.lease(Settings.from_env(project_id="other")):
                order.append("other")
                assert len(pool) == 1

        async with pool.lease(first) as saver:
            waiting = asyncio.create_task(other())
            await asyncio.sleep(0.3)
            # The cap is one file, and it is in use: the other project's run waits, this one goes on.
            assert not waiting.done() and len(pool) == 1
            config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
            assert await saver.aget_tuple(config) is None
            order.append("busy")
        await waiting
        await pool.close_all()
        return order

    assert asyncio.run(overlap()) == ["busy", "other"]


def _store_files_open() -> int:
    """This process's descriptors on memory databases (the file, its WAL and shared memory)."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            if os.path.basename(os.readlink(f"/proc/self/fd/{fd}")).startswith("memory.db"):
                count += 1
    return count


def test_many_runs_on_different_databases_at_once_never_open_more_than_the_cap(
    home: Path,
) -> None:
    cap, runs = 3, 12
    pool = StorePool(max_open=cap)
    projects = [Settings.from_env(project_id=f"many{i}") for i in range(runs)]
    for settings in projects[:cap]:  # a few databases already served: their idle stores are closed
        asyncio.run(_use(pool, settings))
    seen: list[int] = []
    files: list[int] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            seen.append(pool.open_stores())
            files.append(_store_files_open())
            time.sleep(0.002)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        with ThreadPoolExecutor(
            runs
        ) as threads:  # each thread its own event loop, as the team server
            done = list(threads.map(lambda s: asyncio.run(_use(pool, s, hold_s=0.2)), projects))
    finally:
        stop.set()
        sampler.join()
    try:
        assert done == [f"stored in {s.project_id}" for s in projects]
        assert max(seen) <= cap
        assert max(files) <= 3 * cap  # each store: the database, its WAL and its shared memory
        assert pool.stats()["databases"] <= cap
        for settings in projects:  # every run wrote, none was turned away
            with open_store(settings) as store:
                assert store.list_nodes(limit=5)
    finally:
        pool.close_all()


async def _use(pool: StorePool, settings: Settings, hold_s: float = 0.0) -> str:
    async with pool.lease(settings) as store:
        await asyncio.to_thread(
            store.add_node, "fact", f"Project {settings.project_id} deploys with Helm."
        )
        await asyncio.sleep(hold_s)
    return f"stored in {settings.project_id}"


def test_a_run_past_its_deadline_with_every_store_lent_gets_none(home: Path) -> None:
    pool = StorePool(max_open=1)

    async def crowded() -> None:
        async with pool.lease(Settings.from_env(project_id="holder")):
            started = time.monotonic()
            with pytest.raises(StoreBusy):
                async with pool.lease(Settings.from_env(project_id="late"), deadline=started + 0.3):
                    raise AssertionError("a store beyond the cap")
            assert 0.25 <= time.monotonic() - started < 5
            assert pool.open_stores() == 1
        # Given back: the next run on another database gets a store (the idle one is closed for it).
        async with pool.lease(Settings.from_env(project_id="late"), deadline=time.monotonic() + 5):
            assert pool.open_stores() == 1

    try:
        asyncio.run(crowded())
    finally:
        pool.close_all()

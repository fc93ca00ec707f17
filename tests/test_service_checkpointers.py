"""The service keeps one checkpointer open per `checkpoints.db`: runs share it, a replaced file gets a new
one (the old one closes when its last run gives it back), and what runs write through it is on disk."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
from pathlib import Path

from octygraph.config.settings import Settings
from octygraph.pipeline import inflight
from octygraph.pipeline.runner import RunOptions, run_prompt
from octygraph.service.checkpointers import CheckpointerPool
from octygraph.store.opening import open_store


def _threads(db: Path) -> set[str]:
    with sqlite3.connect(db) as conn:
        return {t for (t,) in conn.execute("SELECT DISTINCT thread_id FROM checkpoints")}


def test_runs_share_one_open_checkpointer_and_write_through_it(home: Path) -> None:
    settings = Settings.from_env()

    async def main() -> tuple[list[str], int, bool]:
        pool = CheckpointerPool()
        with open_store(settings) as store:
            ids = []
            for prompt in ("Maria owns the billing service", "Who owns the billing service?"):
                options = RunOptions(offline=True, checkpointers=pool.lease)
                ids.append((await run_prompt(prompt, settings, store, options))["trace_id"])
            store.close()
        # Each run's in-flight record goes once it ended (removed in a worker thread).
        for _ in range(200):
            if not inflight.in_flight_ids(settings):
                break
            await asyncio.sleep(0.01)
        assert not inflight.in_flight_ids(settings)
        async with pool.lease(settings) as first, pool.lease(settings) as second:
            same = first is second
        kept = len(pool)
        await pool.close_all()
        return ids, kept, same

    ids, kept, same = asyncio.run(main())
    assert same and kept == 1
    assert set(ids) <= _threads(settings.paths.checkpoints)


def test_a_replaced_file_gets_a_new_connection_and_the_old_one_closes_after_its_run(
    home: Path,
) -> None:
    settings = Settings.from_env()
    db = settings.paths.checkpoints

    async def main() -> None:
        pool = CheckpointerPool()
        async with pool.lease(settings) as old:
            # The memory folder is wiped while a run still holds the old connection.
            shutil.rmtree(db.parent)
            async with pool.lease(settings) as new:
                assert new is not old
                await new.conn.execute("SELECT 1")
            await old.conn.execute("SELECT 1")  # still open for the run that has it
        assert not old.conn._running  # closed once given back
        assert db.is_file()
        await pool.close_all()
        assert not new.conn._running

    asyncio.run(main())

"""The retrieve half's checkpoints wait in memory until the answer is out, then reach `checkpoints.db`
in full and in order; the run's own and the store half's are written as they happen (a resume needs them)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from octygraph.config.settings import Settings
from octygraph.pipeline.checkpoint_buffer import WriteBehindSaver
from octygraph.pipeline.persistence import make_serde
from octygraph.pipeline.runner import RunOptions, checkpoint_steps, replay, run_prompt
from octygraph.store.opening import open_store


def _rows(db: Path, thread_id: str, retrieve: bool) -> int:
    """Checkpoints of the run in the retrieve half's namespaces (or in the others)."""
    if not db.exists():
        return 0
    with sqlite3.connect(db) as conn:
        try:
            namespaces = [
                ns
                for (ns,) in conn.execute(
                    "SELECT checkpoint_ns FROM checkpoints WHERE thread_id = ?", (thread_id,)
                )
            ]
        except sqlite3.OperationalError:  # no table yet
            return 0
    return sum(ns.startswith("retrieve:") == retrieve for ns in namespaces)


def test_answer_comes_before_the_checkpoints_and_replay_still_works(home: Path) -> None:
    settings = Settings.from_env()
    db = settings.paths.checkpoints
    seen_at_answer: list[int] = []

    async def on_answer(early: dict[str, Any]) -> None:
        seen_at_answer.append(_rows(db, early["trace_id"], retrieve=True))

    with open_store(settings) as store:
        told = asyncio.run(
            run_prompt("Maria owns the billing service", settings, store, RunOptions(offline=True))
        )
        result = asyncio.run(
            run_prompt(
                "Who owns the billing service?",
                settings,
                store,
                RunOptions(offline=True),
                on_answer=on_answer,
            )
        )
        assert "Maria owns the billing service" in result["context"]
        assert seen_at_answer == [0]  # nothing of the retrieve half written while the user waited
        assert _rows(db, result["trace_id"], retrieve=True) > 0  # all of it once the run ended
        assert _rows(db, result["trace_id"], retrieve=False) > 0
        # Both halves run side by side, for a question too: the store half judges what to store.
        for run in (told, result):
            steps = asyncio.run(checkpoint_steps(settings, run["trace_id"]))
            assert any(sorted(s["next"]) == ["retrieve", "store"] for s in steps), steps
        replayed = asyncio.run(replay(result["trace_id"], settings, store))
        assert replayed["same"] and replayed["context"] == result["context"]


def _config(checkpoint_id: str | None = None, ns: str = "retrieve:1") -> dict[str, Any]:
    configurable = {"thread_id": "t", "checkpoint_ns": ns}
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def _checkpoint(checkpoint_id: str, value: int, saver: WriteBehindSaver) -> dict[str, Any]:
    version = saver.get_next_version(None, None)
    return {
        "v": 1,
        "id": checkpoint_id,
        "ts": "2026-11-23T00:00:00+00:00",
        "channel_values": {"count": value},
        "channel_versions": {"count": version},
        "versions_seen": {},
        "pending_sends": [],
        "updated_channels": ["count"],
    }


def test_buffered_writes_reach_the_target_in_order_then_write_through() -> None:
    async def scenario() -> None:
        target = InMemorySaver(serde=make_serde())
        opened: list[int] = []

        async def open_target() -> InMemorySaver:
            opened.append(1)
            return target

        saver = WriteBehindSaver(open_target, make_serde(), defer=lambda ns: ns == "retrieve:1")
        first = _checkpoint("1", 1, saver)
        config = await saver.aput(_config(), first, {"step": 0}, first["channel_versions"])  # type: ignore[arg-type]
        await saver.aput_writes(config, [("count", 2)], "task-a")
        # Reads see the buffered checkpoint; the target has nothing and is not even open yet.
        buffered = await saver.aget_tuple(_config())
        assert buffered is not None and buffered.checkpoint["channel_values"] == {"count": 1}
        assert buffered.pending_writes == [("task-a", "count", 2)]
        assert opened == [] and await target.aget_tuple(_config()) is None
        # Another namespace goes straight through (the run's own steps, the store half).
        other = _checkpoint("9", 9, saver)
        await saver.aput(_config(ns=""), other, {"step": 0}, other["channel_versions"])  # type: ignore[arg-type]
        assert opened == [1] and await target.aget_tuple(_config(ns="")) is not None
        assert await target.aget_tuple(_config()) is None

        await saver.flush()
        on_disk = await target.aget_tuple(_config())
        assert on_disk is not None and on_disk.checkpoint["id"] == "1"
        assert on_disk.pending_writes == [("task-a", "count", 2)]

        # After the flush a write goes straight through, with its parent kept.
        second = _checkpoint("2", 2, saver)
        await saver.aput(_config("1"), second, {"step": 1}, second["channel_versions"])  # type: ignore[arg-type]
        latest = await target.aget_tuple(_config())
        assert latest is not None and latest.checkpoint["id"] == "2"
        assert latest.parent_config is not None
        assert latest.parent_config["configurable"]["checkpoint_id"] == "1"
        await saver.flush()  # idempotent
        assert opened == [1]
        assert [t.checkpoint["id"] async for t in saver.alist(_config())] == ["2", "1"]
        everything = {
            t.checkpoint["id"] async for t in saver.alist({"configurable": {"thread_id": "t"}})
        }
        assert everything == {"1", "2", "9"}

    asyncio.run(scenario())


def test_a_new_threads_unwritten_namespaces_are_not_looked_up() -> None:
    async def scenario() -> None:
        target = InMemorySaver(serde=make_serde())
        old = _checkpoint("0", 0, WriteBehindSaver(_never, make_serde(), defer=lambda ns: False))
        # Something under another thread id is still read from the target.
        await target.aput(
            {"configurable": {"thread_id": "old", "checkpoint_ns": ""}},
            old,  # type: ignore[arg-type]
            {"step": 0},
            old["channel_versions"],
        )
        asked: list[str] = []

        class Watched(InMemorySaver):
            async def aget_tuple(self, config: Any) -> Any:
                asked.append(config["configurable"]["checkpoint_ns"])
                return await super().aget_tuple(config)

        watched = Watched(serde=make_serde())
        watched.storage, watched.writes, watched.blobs = target.storage, target.writes, target.blobs

        async def open_target() -> InMemorySaver:
            return watched

        saver = WriteBehindSaver(
            open_target, make_serde(), defer=lambda ns: ns == "retrieve:1", new_thread="t"
        )
        assert await saver.aget_tuple(_config(ns="")) is None
        assert await saver.aget_tuple(_config(ns="store:2")) is None
        assert asked == []  # a new run's first looks cost no database round trip
        first = _checkpoint("1", 1, saver)
        await saver.aput(_config(ns=""), first, {"step": 0}, first["channel_versions"])  # type: ignore[arg-type]
        found = await saver.aget_tuple(_config(ns=""))
        assert found is not None and found.checkpoint["id"] == "1" and asked == [""]
        other = await saver.aget_tuple({"configurable": {"thread_id": "old", "checkpoint_ns": ""}})
        assert other is not None and other.checkpoint["id"] == "0"

    asyncio.run(scenario())


async def _never() -> InMemorySaver:
    raise AssertionError("not opened")


def test_the_target_is_opened_once_when_steps_ask_for_it_at_once() -> None:
    async def scenario() -> None:
        target = InMemorySaver(serde=make_serde())
        opened: list[int] = []

        async def open_target() -> InMemorySaver:
            opened.append(1)
            await asyncio.sleep(0.01)  # a connection and its setup take a while
            return target

        saver = WriteBehindSaver(open_target, make_serde(), defer=lambda ns: False, new_thread="t")
        puts = []
        for i in range(3):
            checkpoint = _checkpoint(str(i), i, saver)
            puts.append(
                saver.aput(
                    _config(ns=f"store:{i}"),
                    checkpoint,  # type: ignore[arg-type]
                    {"step": 0},
                    checkpoint["channel_versions"],
                )
            )
        await asyncio.gather(*puts)
        assert opened == [1]

    asyncio.run(scenario())

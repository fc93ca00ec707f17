"""The deferred checkpointer writes the same history as LangGraph's own, in one transaction."""

from __future__ import annotations

import asyncio
import operator
import sqlite3
from pathlib import Path
from typing import Annotated, Any

from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from octygraph.persistence import make_serde, open_checkpointer


class Steps(TypedDict):
    seen: Annotated[list[str], operator.add]


def _graph() -> Any:
    """A parent with a subgraph, fanned out beside a plain node: namespaces, writes, parallel steps."""
    inner = StateGraph(Steps)
    inner.add_node("a", lambda s: {"seen": ["a"]})
    inner.add_node("b", lambda s: {"seen": ["b"]})
    inner.add_edge(START, "a")
    inner.add_edge("a", "b")
    inner.add_edge("b", END)
    outer = StateGraph(Steps)
    outer.add_node("start", lambda s: {"seen": ["start"]})
    outer.add_node("half", inner.compile())
    outer.add_node("other", lambda s: {"seen": ["other"]})
    outer.add_edge(START, "start")
    outer.add_edge("start", "half")
    outer.add_edge("start", "other")
    outer.add_edge("half", END)
    outer.add_edge("other", END)
    return outer


def _rows(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """What a run left in the database, without the ids that differ from run to run."""
    with sqlite3.connect(path) as conn:
        checkpoints = conn.execute(
            "SELECT checkpoint_ns != '', json_extract(metadata, '$.step'), "
            "json_extract(metadata, '$.source') FROM checkpoints ORDER BY 1, 2, 3"
        ).fetchall()
        writes = conn.execute(
            "SELECT checkpoint_ns != '', channel, idx, type FROM writes ORDER BY 1, 2, 3, 4"
        ).fetchall()
    return {"checkpoints": checkpoints, "writes": writes}


async def _run_stock(path: Path) -> dict[str, Any]:
    import aiosqlite

    async with aiosqlite.connect(str(path)) as conn:
        saver = AsyncSqliteSaver(conn, serde=make_serde())
        await saver.setup()
        graph = _graph().compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "t"}}
        result = await graph.ainvoke({"seen": []}, config, durability="async")
        history = [s.next async for s in graph.aget_state_history(config)]
    return {"result": result, "history": history}


async def _run_deferred(path: Path) -> dict[str, Any]:
    async with open_checkpointer(path) as saver:
        graph = _graph().compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "t"}}
        result = await graph.ainvoke({"seen": []}, config, durability="async")
        waiting_after_run = bool(saver._pending)
        on_disk_before_read = _rows(path)["checkpoints"]
        history = [s.next async for s in graph.aget_state_history(config)]
    return {
        "result": result,
        "history": history,
        "waiting": waiting_after_run,
        "before_read": on_disk_before_read,
    }


def test_deferred_saver_writes_the_stock_history(tmp_path: Path) -> None:
    stock = asyncio.run(_run_stock(tmp_path / "stock.db"))
    deferred = asyncio.run(_run_deferred(tmp_path / "deferred.db"))
    assert deferred["result"] == stock["result"]
    # Nothing was committed while the run went on; reading the thread back wrote it all.
    assert deferred["waiting"] and deferred["before_read"] == []
    assert deferred["history"] == stock["history"]
    assert _rows(tmp_path / "deferred.db") == _rows(tmp_path / "stock.db")
    assert _rows(tmp_path / "stock.db")["writes"]  # the comparison is not between two empty tables


def test_deferred_saver_flushes_when_closed(tmp_path: Path) -> None:
    path = tmp_path / "closed.db"

    async def run() -> None:
        async with open_checkpointer(path) as saver:
            graph = _graph().compile(checkpointer=saver)
            await graph.ainvoke({"seen": []}, {"configurable": {"thread_id": "t"}})

    asyncio.run(run())
    assert _rows(path)["checkpoints"]

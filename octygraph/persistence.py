"""Checkpoints: LangGraph's AsyncSqliteSaver on `checkpoints.db`, with our state types allow-listed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiosqlite
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from octygraph.models import (
    Classification,
    EntityMention,
    ExtractedInstruction,
    Operations,
    RetrievalPlan,
    SearchStep,
    StorageDecision,
    StorageItem,
)
from octygraph.private import private_mkdir

STATE_TYPES = [
    Classification,
    EntityMention,
    Operations,
    RetrievalPlan,
    SearchStep,
    StorageDecision,
    StorageItem,
    ExtractedInstruction,
]


def make_serde() -> JsonPlusSerializer:
    """The checkpoint serializer, allowing exactly the pydantic models we keep in state."""
    return JsonPlusSerializer(allowed_msgpack_modules=STATE_TYPES)


@asynccontextmanager
async def open_checkpointer(path: str | Path) -> AsyncIterator[AsyncSqliteSaver]:
    """An AsyncSqliteSaver on `path` (WAL), closed on exit; the file is private to the user."""
    path = Path(path)
    private_mkdir(path.parent)
    conn = await aiosqlite.connect(str(path), timeout=15.0)
    try:
        await conn.execute("PRAGMA busy_timeout = 15000")
        saver = AsyncSqliteSaver(conn, serde=make_serde())
        await saver.setup()
        try:
            path.chmod(0o600)
        except OSError:
            pass
        yield saver
    finally:
        await conn.close()

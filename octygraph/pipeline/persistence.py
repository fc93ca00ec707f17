"""Checkpoints: LangGraph's AsyncSqliteSaver on `checkpoints.db`, with our state types allow-listed.

With OCTY_DATABASE_URL set they go to the same PostgreSQL server as the memories, in the project's
schema (langgraph-checkpoint-postgres), so a run started on one machine can be replayed from another.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiosqlite
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

if TYPE_CHECKING:
    from octygraph.config.settings import Settings

from octygraph.config.private import private_mkdir
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
    # `timeout` is SQLite's busy timeout: a run waits for another that is writing its checkpoints.
    conn = await aiosqlite.connect(str(path), timeout=15.0)
    try:
        saver = AsyncSqliteSaver(conn, serde=make_serde())
        await saver.setup()
        # WAL with synchronous=NORMAL: a commit per step no longer waits for the disk, and a killed
        # process still keeps every committed step (only a power cut can lose the last few). A restarted
        # service resumes a killed run's store half from them (octygraph/service/resume.py).
        await conn.execute("PRAGMA synchronous=NORMAL")
        try:
            path.chmod(0o600)
        except OSError:
            pass
        yield saver
    finally:
        await conn.close()


@asynccontextmanager
async def open_postgres_checkpointer(url: str, project_id: str) -> AsyncIterator[Any]:
    """An AsyncPostgresSaver in the project's schema on the server at `url`, closed on exit."""
    import psycopg
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.conninfo import make_conninfo

    from octygraph.store.postgres import schema_name

    schema = schema_name(project_id)
    # The project's schema first: its checkpoint tables sit beside its memories.
    conninfo = make_conninfo(url, options=f"-c search_path={schema},public")
    async with AsyncPostgresSaver.from_conn_string(conninfo, serde=make_serde()) as saver:
        key = (conninfo, schema)
        # Concurrent first runs race on the saver's CREATE ... IF NOT EXISTS; one at a time in this
        # process (a thread lock: the team server runs each request on a loop of its own), and a
        # retry for a race with another process. Not an advisory lock: the saver's CREATE INDEX
        # CONCURRENTLY would wait for the very sessions queued on it.
        with _SETUP_LOCK:
            for attempt in range(3):
                if key in _SET_UP:
                    break
                try:
                    await saver.setup()
                    _SET_UP.add(key)
                except (psycopg.errors.UniqueViolation, psycopg.errors.DeadlockDetected):
                    if attempt == 2:
                        raise
                    await asyncio.sleep(0.2 * (attempt + 1))
        yield saver


# Checkpoint schemas this process has set up already (setup is a few round trips per run otherwise).
_SET_UP: set[tuple[str, str]] = set()
_SETUP_LOCK = threading.Lock()


@asynccontextmanager
async def checkpointer_for(settings: Settings) -> AsyncIterator[Any]:
    """The project's checkpointer: PostgreSQL when OCTY_DATABASE_URL is set, else `checkpoints.db`."""
    if settings.database_url is not None:
        url = settings.database_url.get_secret_value()
        async with open_postgres_checkpointer(url, settings.project_id) as saver:
            yield saver
    else:
        async with open_checkpointer(settings.paths.checkpoints) as saver:
            yield saver

"""Checkpoints: LangGraph's AsyncSqliteSaver on `checkpoints.db`, with our state types allow-listed.

With OCTY_DATABASE_URL set they go to the same PostgreSQL server as the memories, in the project's
schema (langgraph-checkpoint-postgres), so a run started on one machine can be replayed from another.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiosqlite
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

if TYPE_CHECKING:
    from octygraph.settings import Settings

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


_PUT_CHECKPOINT = (
    "INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, "
    "parent_checkpoint_id, type, checkpoint, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_WRITES_COLUMNS = (
    "INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, "
    "type, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


class DeferredSqliteSaver(AsyncSqliteSaver):
    """AsyncSqliteSaver that writes a run's checkpoints in one transaction, not one per step.

    Each checkpoint and write is serialized when LangGraph hands it over (as the parent does) and
    kept; they reach the database, in order, when anything reads a thread that has some waiting,
    or at `flush()` (`open_checkpointer` flushes before it closes). A commit per step cost a run
    about 60 ms of CPU before its answer (bench/README.md); the history written is the same. A
    process killed mid-run leaves none of that run's checkpoints (before: its finished steps').
    """

    def __init__(self, conn: aiosqlite.Connection, *, serde: Any = None) -> None:
        super().__init__(conn, serde=serde)
        self._pending: list[tuple[str, list[tuple[Any, ...]]]] = []
        self._waiting: set[tuple[str, str]] = set()

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        thread_id = str(config["configurable"]["thread_id"])
        checkpoint_ns = config["configurable"]["checkpoint_ns"]
        type_, serialized = self.serde.dumps_typed(checkpoint)
        meta = json.dumps(get_checkpoint_metadata(config, metadata), ensure_ascii=False)
        row = (
            thread_id,
            checkpoint_ns,
            checkpoint["id"],
            config["configurable"].get("checkpoint_id"),
            type_,
            serialized,
            meta.encode("utf-8", "ignore"),
        )
        self._pending.append((_PUT_CHECKPOINT, [row]))
        self._waiting.add((thread_id, checkpoint_ns))
        return {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": checkpoint_ns,
                "checkpoint_id": checkpoint["id"],
            }
        }

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        # As the parent: special channels replace their row, others keep the first one written.
        verb = (
            "INSERT OR REPLACE"
            if all(w[0] in WRITES_IDX_MAP for w in writes)
            else "INSERT OR IGNORE"
        )
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        checkpoint_ns = str(configurable["checkpoint_ns"])
        rows = [
            (
                thread_id,
                checkpoint_ns,
                str(configurable["checkpoint_id"]),
                task_id,
                task_path,
                WRITES_IDX_MAP.get(channel, idx),
                channel,
                *self.serde.dumps_typed(value),
            )
            for idx, (channel, value) in enumerate(writes)
        ]
        self._pending.append((f"{verb} {_WRITES_COLUMNS}", rows))
        self._waiting.add((thread_id, checkpoint_ns))

    async def flush(self) -> None:
        """Write what is waiting, in the order it came, in one transaction."""
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        self._waiting.clear()
        await self.setup()
        async with self.lock:
            try:
                for sql, rows in pending:
                    await self.conn.executemany(sql, rows)
                await self.conn.commit()
            except BaseException:
                await self.conn.rollback()
                raise

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        configurable = config.get("configurable") or {}
        key = (str(configurable.get("thread_id")), str(configurable.get("checkpoint_ns", "")))
        if key in self._waiting:  # a new subgraph namespace has nothing waiting: no flush
            await self.flush()
        return await super().aget_tuple(config)

    async def alist(
        self, config: RunnableConfig | None, **kwargs: Any
    ) -> AsyncIterator[CheckpointTuple]:
        await self.flush()
        async for item in super().alist(config, **kwargs):
            yield item

    async def adelete_thread(self, thread_id: str) -> None:
        await self.flush()
        await super().adelete_thread(thread_id)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        await self.flush()
        return await super().aget_delta_channel_history(config=config, channels=channels)


@asynccontextmanager
async def open_checkpointer(path: str | Path) -> AsyncIterator[DeferredSqliteSaver]:
    """A checkpointer on `path` (WAL), flushed and closed on exit; the file is private to the user."""
    path = Path(path)
    private_mkdir(path.parent)
    conn = await aiosqlite.connect(str(path), timeout=15.0)
    try:
        await conn.execute("PRAGMA busy_timeout = 15000")
        saver = DeferredSqliteSaver(conn, serde=make_serde())
        await saver.setup()
        try:
            path.chmod(0o600)
        except OSError:
            pass
        try:
            yield saver
        finally:
            await saver.flush()
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

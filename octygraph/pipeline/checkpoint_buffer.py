"""The retrieve half's checkpoints, held in memory until the prompt has its answer, then written.

A run's retrieve half writes a checkpoint and its task writes at every step (its own and its loop's).
Written as they happen, each goes through aiosqlite's thread (or a PostgreSQL round trip) and competes
with the retrieval for the interpreter while the user waits. `WriteBehindSaver` keeps the checkpoints of
the namespaces it is told to defer in an in-memory saver (reads see them at once) and writes them to the
real checkpointer, in the order they were made, when `flush` is called: after the answer went out.

Every other namespace (the run's own steps, the store half) is written through as it happens, as before:
a restarted service resumes an unfinished store half from them (octygraph/service/resume.py) even when the process
died before the flush, since a finished retrieve half's result is in the run's own writes. A replay reads
the same checkpoints once the run has ended.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.base import SerializerProtocol

Opener = Callable[[], Awaitable[BaseCheckpointSaver[Any]]]


class WriteBehindSaver(BaseCheckpointSaver[str]):
    """Buffers the checkpoints of deferred namespaces until `flush`; writes the others through.

    The target is opened by `open_target` on first use. Versions are the strings every saver we use
    makes (SQLite, PostgreSQL and in-memory share the formula), so buffered checkpoints load anywhere.
    """

    def __init__(
        self,
        open_target: Opener,
        serde: SerializerProtocol,
        defer: Callable[[str], bool],
        *,
        new_thread: str | None = None,
    ) -> None:
        """`new_thread`: a thread id nothing was ever written under (a new run's): reading one of its
        namespaces before this saver wrote to it answers "nothing" without asking the database."""
        super().__init__(serde=serde)
        self._open_target = open_target
        self._target: BaseCheckpointSaver[Any] | None = None
        self._defer = defer
        self._memory = InMemorySaver(serde=serde)
        self._pending: list[tuple[str, tuple[Any, ...]]] | None = []
        self._opening = asyncio.Lock()
        self._new_thread = new_thread
        self._written: set[str] = set()
        """Namespaces of `new_thread` sent to the target (or buffered for it) so far."""

    @staticmethod
    def _thread_and_ns(config: RunnableConfig | None) -> tuple[str, str]:
        configurable = (config or {}).get("configurable", {})
        return str(configurable.get("thread_id") or ""), str(
            configurable.get("checkpoint_ns") or ""
        )

    def _note(self, config: RunnableConfig) -> None:
        thread, ns = self._thread_and_ns(config)
        if thread == self._new_thread:
            self._written.add(ns)

    def _never_written(self, config: RunnableConfig) -> bool:
        thread, ns = self._thread_and_ns(config)
        return (
            self._new_thread is not None and thread == self._new_thread and ns not in self._written
        )

    def _deferred(self, config: RunnableConfig | None) -> bool:
        """Whether a call on `config` goes to the buffer (only until the flush)."""
        if self._pending is None or config is None:
            return False
        return self._defer(str(config.get("configurable", {}).get("checkpoint_ns") or ""))

    async def flush(self) -> None:
        """Write what was buffered, in order, and write through from now on. Idempotent."""
        if self._pending is None:
            return
        target = await self._target_saver()
        # Steps may buffer more while these writes are awaited: drain until none is left, then switch
        # (no await between the last check and the switch, so nothing can slip in between).
        while self._pending:
            batch, self._pending = self._pending, []
            for kind, args in batch:
                if kind == "put":
                    await target.aput(*args)
                else:
                    await target.aput_writes(*args)
        self._pending = None
        self._memory = InMemorySaver(serde=self.serde)  # nothing reads it any more

    async def _target_saver(self) -> BaseCheckpointSaver[Any]:
        if self._target is None:
            # One opening however many steps ask at once (LangGraph's background puts do): a second
            # one would leak a connection, and PostgreSQL's setup lock would stop the event loop.
            async with self._opening:
                if self._target is None:
                    self._target = await self._open_target()
        return self._target

    # ------------------------------------------------------------------ the saver interface

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        if self._deferred(config):
            return await self._memory.aget_tuple(config)
        if self._never_written(config):
            return None  # a new run's first look for a checkpoint: a database round trip saved
        return await (await self._target_saver()).aget_tuple(config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        if self._deferred(config):
            source: BaseCheckpointSaver[Any] = self._memory
        else:
            if config is None or "checkpoint_ns" not in config.get("configurable", {}):
                await self.flush()  # every namespace asked for: the buffered ones too
            source = await self._target_saver()
        async for item in source.alist(config, filter=filter, before=before, limit=limit):
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        self._note(config)
        if not self._deferred(config):
            return await (await self._target_saver()).aput(
                config, checkpoint, metadata, new_versions
            )
        assert self._pending is not None
        # By reference, as LangGraph's own async durability does: a step's checkpoint is not changed
        # after it is handed over.
        self._pending.append(("put", (config, checkpoint, metadata, new_versions)))
        return await self._memory.aput(config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self._note(config)
        if not self._deferred(config):
            await (await self._target_saver()).aput_writes(config, writes, task_id, task_path)
            return
        assert self._pending is not None
        self._pending.append(("writes", (config, list(writes), task_id, task_path)))
        await self._memory.aput_writes(config, writes, task_id, task_path)

    def get_next_version(self, current: str | None, channel: None) -> str:
        return self._memory.get_next_version(current, channel)

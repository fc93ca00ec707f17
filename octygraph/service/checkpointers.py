"""One open SQLite checkpointer per `checkpoints.db`, kept by the service for its life.

Opening one per run costs a new aiosqlite thread, a connection and the schema check, about 4 ms in front
of every prompt. `AsyncSqliteSaver` already serialises its own calls (an asyncio lock around each one),
so the runs of one event loop can share it. A file that was replaced or removed gets a fresh connection;
the old one closes when its last run gives it back. PostgreSQL checkpointers are opened per run, as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from octygraph.service.kept_files import file_identity, max_open_stores

if TYPE_CHECKING:
    from octygraph.config.settings import Settings


@dataclass
class _Kept:
    saver: Any
    identity: tuple[int, int] | None
    stack: contextlib.AsyncExitStack
    users: int = 0
    retired: bool = False
    last_used: float = field(default_factory=time.monotonic)


class CheckpointerPool:
    """Lends each run the open checkpointer of its project's `checkpoints.db` (one event loop only).

    At most `max_kept` files stay open (`OCTY_SERVE_MAX_STORES`): opening one more retires the least
    recently used, which closes once its last run gives it back.
    """

    def __init__(self, max_kept: int | None = None) -> None:
        self._kept: dict[str, _Kept] = {}
        self._opening = asyncio.Lock()
        self._max_kept = max(1, max_kept if max_kept is not None else max_open_stores())

    async def _get(self, path: Path) -> _Kept:
        key = str(path.absolute())
        async with self._opening:  # two first runs on one file open it once
            kept = self._kept.get(key)
            if kept is not None and kept.identity == file_identity(path):
                return kept
            if kept is not None:
                # Replaced or removed (e.g. a wiped memory folder): new runs get a new connection.
                del self._kept[key]
                await self._retire(kept)
            from octygraph.pipeline.persistence import (
                open_checkpointer,  # LangGraph: loaded by the warm-up
            )

            stack = contextlib.AsyncExitStack()
            saver = await stack.enter_async_context(open_checkpointer(path))
            kept = self._kept[key] = _Kept(saver, file_identity(path), stack)
            while len(self._kept) > self._max_kept:
                oldest = min(self._kept, key=lambda k: self._kept[k].last_used)
                await self._retire(self._kept.pop(oldest))
            return kept

    async def _retire(self, kept: _Kept) -> None:
        kept.retired = True
        if kept.users == 0:
            await kept.stack.aclose()

    @contextlib.asynccontextmanager
    async def lease(self, settings: Settings) -> AsyncIterator[Any]:
        """The project's checkpointer for one run."""
        if settings.database_url is not None:
            from octygraph.pipeline.persistence import checkpointer_for

            async with checkpointer_for(settings) as saver:
                yield saver
            return
        kept = await self._get(settings.paths.checkpoints)
        kept.users += 1
        kept.last_used = time.monotonic()
        try:
            yield kept.saver
        finally:
            kept.users -= 1
            if kept.retired and kept.users == 0:
                await kept.stack.aclose()

    async def close_all(self) -> None:
        """Close every kept connection (at shutdown, once the runs are done)."""
        async with self._opening:
            kept, self._kept = list(self._kept.values()), {}
        for one in kept:
            with contextlib.suppress(Exception):
                await self._retire(one)

    def __len__(self) -> int:
        return len(self._kept)

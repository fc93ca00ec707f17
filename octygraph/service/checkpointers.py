"""One open SQLite checkpointer per `checkpoints.db`, kept by the service for its life.

Opening one per run costs a new aiosqlite thread, a connection and the schema check, about 4 ms in front
of every prompt. `AsyncSqliteSaver` already serialises its own calls (an asyncio lock around each one),
so the runs of one event loop can share it. A file that was replaced or removed gets a fresh connection;
the old one closes when its last run gives it back, and counts against the cap until then. PostgreSQL
checkpointers are opened per run, as before.
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

LEASE_WAIT_S = 60.0
"""How long a run waits for a checkpoint file to be free when every one the cap allows is in use."""

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

    At most `max_kept` files are open (`OCTY_SERVE_MAX_STORES`), a retired one still in use included:
    opening one more closes the least recently used file no run uses, or, with every file in use,
    waits (at most `LEASE_WAIT_S`) for a run to give one back.
    """

    def __init__(self, max_kept: int | None = None) -> None:
        self._kept: dict[str, _Kept] = {}
        self._retiring: list[_Kept] = []
        """Retired (replaced, removed) files a run still uses: open until it gives them back."""
        self._opening = asyncio.Condition()
        self._max_kept = max(1, max_kept if max_kept is not None else max_open_stores())

    def _open_count(self) -> int:
        return len(self._kept) + len(self._retiring)

    async def _get(self, path: Path) -> _Kept:
        key = str(path.absolute())
        async with self._opening:  # two first runs on one file open it once
            kept = self._kept.get(key)
            if kept is not None and kept.identity == file_identity(path):
                kept.users += 1
                return kept
            if kept is not None:
                # Replaced or removed (e.g. a wiped memory folder): new runs get a new connection.
                del self._kept[key]
                await self._retire(kept)
            async with asyncio.timeout(LEASE_WAIT_S):
                while self._open_count() >= self._max_kept:
                    idle = [k for k, one in self._kept.items() if one.users == 0]
                    if idle:
                        oldest = min(idle, key=lambda k: self._kept[k].last_used)
                        await self._retire(self._kept.pop(oldest))
                    else:  # every open file is in use: wait for a run to give one back
                        await self._opening.wait()
                        if (again := self._kept.get(key)) is not None:
                            # Another run opened this very file meanwhile.
                            again.users += 1
                            return again
            from octygraph.pipeline.persistence import (
                open_checkpointer,  # LangGraph: loaded by the warm-up
            )

            stack = contextlib.AsyncExitStack()
            saver = await stack.enter_async_context(open_checkpointer(path))
            kept = self._kept[key] = _Kept(saver, file_identity(path), stack, users=1)
            return kept

    async def _retire(self, kept: _Kept) -> None:
        kept.retired = True
        if kept.users == 0:
            await kept.stack.aclose()
        else:
            self._retiring.append(kept)

    @contextlib.asynccontextmanager
    async def lease(self, settings: Settings) -> AsyncIterator[Any]:
        """The project's checkpointer for one run."""
        if settings.database_url is not None:
            from octygraph.pipeline.persistence import checkpointer_for

            async with checkpointer_for(settings) as saver:
                yield saver
            return
        kept = await self._get(settings.paths.checkpoints)
        kept.last_used = time.monotonic()
        try:
            yield kept.saver
        finally:
            kept.users -= 1
            if kept.users == 0:
                if kept.retired:
                    with contextlib.suppress(ValueError):
                        self._retiring.remove(kept)
                    await kept.stack.aclose()
                async with self._opening:
                    self._opening.notify_all()

    async def close_all(self) -> None:
        """Close every kept connection (at shutdown, once the runs are done)."""
        async with self._opening:
            kept, self._kept = list(self._kept.values()), {}
        for one in kept:
            with contextlib.suppress(Exception):
                await self._retire(one)

    def __len__(self) -> int:
        """Checkpoint files open right now, in use or not."""
        return self._open_count()

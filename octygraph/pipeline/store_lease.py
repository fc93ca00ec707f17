"""How a run gets the project's store: lent by whoever holds it, for the run's length.

The resident service keeps stores open and lends one per run (`octygraph.service.pool`); a hook run in
its own process opens the store and closes it afterwards (`open_store_for_run`).
"""

from __future__ import annotations

import asyncio
import errno
import logging
import sqlite3
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Protocol

from octygraph.config.settings import Settings

if TYPE_CHECKING:
    from octygraph.store import AdminStore

log = logging.getLogger(__name__)


class StoreLease(Protocol):
    """Lends the project's store for one run: the service keeps stores open, a hook process opens one.

    `deadline` (a `time.monotonic()` value) bounds how long the lease may wait for a store when every
    one the service may keep open is lent; past it the lease raises `StoreBusy`.
    """

    def __call__(
        self, settings: Settings, *, deadline: float | None = None
    ) -> AbstractAsyncContextManager[AdminStore]: ...


class StoreBusy(TimeoutError):
    """No store could be had before the run's deadline: every one the cap allows is lent to other runs."""


_RESOURCE_ERRNOS = frozenset(
    {errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS, errno.EAGAIN}
)
_RESOURCE_WORDS = ("too many open files", "out of memory")


def for_want_of_resources(exc: BaseException | None) -> bool:
    """Whether a run failed for lack of a resource that may be there later (descriptors, memory, a
    free store), not for anything in its request: such a run is worth trying again."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, StoreBusy):
            return True
        if isinstance(exc, OSError) and exc.errno in _RESOURCE_ERRNOS:
            return True
        if isinstance(exc, sqlite3.OperationalError | MemoryError) and (
            isinstance(exc, MemoryError) or any(w in str(exc).lower() for w in _RESOURCE_WORDS)
        ):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


@asynccontextmanager
async def open_store_for_run(
    settings: Settings, *, deadline: float | None = None
) -> AsyncIterator[AdminStore]:
    """Open the project's store for one run and close it afterwards (the in-process path).

    The uses the run noted (`octygraph.memory.uses`) wait in memory for a resident service to write
    them in one go; no process outlives this one, so they are written before the store closes."""
    from octygraph.memory.uses import write_noted
    from octygraph.store.opening import open_store

    store = await asyncio.to_thread(open_store, settings)
    try:
        yield store
    finally:
        try:
            await asyncio.to_thread(write_noted, store)
        except Exception as exc:
            # A read-only home, a locked file: the uses only rank the start block.
            log.warning("memory uses not written: %s", exc)
        store.close()

"""How a run gets the project's store: lent by whoever holds it, for the run's length.

The resident service keeps stores open and lends one per run (`octygraph.service.pool`); a hook run in
its own process opens the store and closes it afterwards (`open_store_for_run`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING

from octygraph.config.settings import Settings

if TYPE_CHECKING:
    from octygraph.store import AdminStore

StoreLease = Callable[[Settings], AbstractAsyncContextManager["AdminStore"]]
"""Lends the project's store for one run: the service keeps stores open, a hook process opens one."""


@asynccontextmanager
async def open_store_for_run(settings: Settings) -> AsyncIterator[AdminStore]:
    """Open the project's store for one run and close it afterwards (the in-process path)."""
    from octygraph.store.opening import open_store

    store = await asyncio.to_thread(open_store, settings)
    try:
        yield store
    finally:
        store.close()

"""Open memory stores kept warm by the service, per database file, with one write lock per file.

Each run borrows a store of its own (its own SQLite connection), so runs on one database read at the
same time (WAL); every write transaction of any run on that database first takes the database's lock,
so writes queue in order inside the service instead of spinning on SQLite's busy handler.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any

from octygraph.config.settings import Settings
from octygraph.embeddings import LocalEmbeddings, make_embeddings
from octygraph.pipeline.store_lease import StoreBusy
from octygraph.service.kept_files import file_identity, max_open_stores
from octygraph.store import AdminStore, MemoryStore
from octygraph.store.opening import open_store

MAX_IDLE_PER_DB = 4
LEASE_WAIT_S = 60.0
"""How long a lease with no deadline of its own (upkeep, a resume) waits for a store to be free."""

log = logging.getLogger("octygraph.service")


class LockedStore(MemoryStore):
    """A store whose write transactions also hold a lock shared by every store on the same file.

    `for_database` makes one subclass per file, so the lock is there from the first transaction
    (`open` creates the schema in one).
    """

    write_lock: threading.RLock = threading.RLock()

    @classmethod
    def for_database(cls, lock: threading.RLock) -> type[LockedStore]:
        return type("LockedStore", (cls,), {"write_lock": lock})

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        # Always the database lock first, then the connection's: one order, no deadlock.
        with self.write_lock, super().transaction() as conn:
            yield conn


@dataclass
class _Slot:
    """The idle stores of one database file and what they were opened on."""

    write_lock: threading.RLock = field(default_factory=threading.RLock)
    store_cls: type[LockedStore] = LockedStore
    idle: list[AdminStore] = field(default_factory=list)
    identity: tuple[int, int] | None = None
    leased: int = 0
    runs: int = 0
    primed: bool = False
    last_used: float = field(default_factory=time.monotonic)


TRIGGER_BATCH = 64
MAX_RULES = 5000


def prime_rule_triggers(store: AdminStore) -> int:
    """Embed the trigger clauses of the current rules ("... before deploying") into the judges' cache.

    The relevance judge weighs a rule by the activity its trigger names; the store holds no vector for
    that clause, so without this each prompt whose candidates bring new rules embeds their triggers on
    its critical path. Runs in the background once per database; returns how many were embedded.
    """
    from octygraph.embeddings import local as vectors
    from octygraph.judgement.relevance import MemoryText, trigger_clause

    try:
        rules = store.list_nodes(types=["instruction"], limit=MAX_RULES, include_superseded=False)
    except Exception:  # closed or replaced meanwhile: the judge embeds triggers as it meets them
        return 0
    clauses = list(
        dict.fromkeys(
            t
            for n in rules
            if (t := trigger_clause(MemoryText(n.content, "instruction"))) is not None
        )
    )
    for start in range(0, len(clauses), TRIGGER_BATCH):
        vectors.cached_local_embed(clauses[start : start + TRIGGER_BATCH])
    return len(clauses)


class StorePool:
    """Lends open stores per database path (and embedding model) to runs in the service.

    At most `max_open` stores are open across every database, leased ones and ones being opened
    included: a run that needs a new one closes the idle store of the least recently used database, or,
    with every store lent, waits (until its deadline) for one to be given back. A database with nothing
    open is forgotten, so descriptors stay flat however many projects, and runs at once, the service has.
    """

    def __init__(self, max_idle: int = MAX_IDLE_PER_DB, max_open: int | None = None) -> None:
        self._max_idle = max_idle
        self._max_open = max(1, max_open if max_open is not None else max_open_stores())
        self._slots: dict[tuple[str, str], _Slot] = {}
        self._guard = threading.Lock()
        self._priming = 0
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    @property
    def max_open(self) -> int:
        """The cap on open stores across every database."""
        return self._max_open

    @staticmethod
    def _key(settings: Settings) -> tuple[str, str]:
        backend = settings.embedding_backend
        model = settings.voyage_model if backend == "voyage" else "local"
        if settings.database_url is not None:
            # One slot per server and project; the URL itself (it may hold a password) is not kept.
            server = hashlib.sha256(settings.database_url.get_secret_value().encode()).hexdigest()
            return (f"postgresql:{server[:16]}:{settings.project_id}", f"{backend}:{model}")
        return (str(settings.paths.db.absolute()), f"{backend}:{model}")

    def _take(self, settings: Settings) -> tuple[_Slot | None, AdminStore | None, list[AdminStore]]:
        """The slot for this database and an idle store, or room to open one, and the stores to close.

        Room to open a store is there below the cap, or made by closing the idle store of the least
        recently used database. With none (every open store is lent), the slot is None: wait for a
        give-back. A store to be opened counts as leased from here, so no two runs take the same room.
        """
        key = self._key(settings)
        identity = file_identity(settings.paths.db)
        closing: list[AdminStore] = []
        with self._guard:
            slot = self._slots.get(key)
            if slot is None:
                slot = self._slots[key] = _Slot()
                slot.store_cls = LockedStore.for_database(slot.write_lock)
            if slot.identity != identity:
                # `memory unload` or a restore may have replaced the file: old connections see old data.
                closing, slot.idle = slot.idle, []
                slot.identity = identity
            if slot.idle:
                slot.leased += 1
                return slot, slot.idle.pop(), closing
            while self._open_count_locked() >= self._max_open:
                victim = self._least_recent_idle_locked()
                if victim is None:
                    if slot.leased == 0:
                        del self._slots[key]  # nothing open for it: not a database served yet
                    return None, None, closing
                closing.append(victim)
            slot.leased += 1
        return slot, None, closing

    def _least_recent_idle_locked(self) -> AdminStore | None:
        """Take out an idle store of the least recently used database (caller holds the guard)."""
        idle = [(key, slot) for key, slot in self._slots.items() if slot.idle]
        if not idle:
            return None
        key, slot = min(idle, key=lambda item: item[1].last_used)
        store = slot.idle.pop(0)
        if not slot.idle and slot.leased == 0:
            del self._slots[key]  # reopened (and primed again) if the project comes back
        return store

    async def _acquire(
        self, settings: Settings, deadline: float | None
    ) -> tuple[_Slot, AdminStore | None]:
        """`_take`, waiting for a give-back while every store the cap allows is lent.

        Raises:
            StoreBusy: still none at `deadline` (`LEASE_WAIT_S` from now when the run has none).
        """
        end = time.monotonic() + LEASE_WAIT_S if deadline is None else deadline
        loop = asyncio.get_running_loop()
        while True:
            waiter: asyncio.Future[None] = loop.create_future()
            with self._guard:
                # Queued before trying, so a give-back between the try and the wait is not missed.
                self._waiters.append((loop, waiter))
            try:
                slot, store, closing = self._take(settings)
            except BaseException:
                self._forget_waiter(loop, waiter)
                raise
            for old in closing:
                old.close()
            if slot is not None:
                self._forget_waiter(loop, waiter)
                return slot, store
            left = end - time.monotonic()
            try:
                if left <= 0:
                    raise TimeoutError
                async with asyncio.timeout(left):
                    await waiter
            except TimeoutError:
                self._forget_waiter(loop, waiter)
                with self._guard:
                    lent = self._open_count_locked()
                raise StoreBusy(
                    f"no memory store free before the deadline ({lent} open, the cap is {self._max_open})"
                ) from None
            except BaseException:
                self._forget_waiter(loop, waiter)
                raise

    def _forget_waiter(self, loop: asyncio.AbstractEventLoop, waiter: asyncio.Future[None]) -> None:
        """Leave the queue; a wake-up this waiter got but will not use goes to the next one."""
        with self._guard:
            if (loop, waiter) in self._waiters:
                self._waiters.remove((loop, waiter))
                return
        # A give-back chose this waiter: its wake-up is passed on now, or by `_wake` when it comes.
        if waiter.done() and not waiter.cancelled():
            self._wake_one()
        else:
            waiter.cancel()

    def _wake_one(self) -> None:
        """Tell the longest waiting run (on whichever loop it waits) that a store was given back."""
        while True:
            with self._guard:
                if not self._waiters:
                    return
                loop, waiter = self._waiters.pop(0)
            try:
                loop.call_soon_threadsafe(self._wake, waiter)
                return
            except RuntimeError:  # its loop is closed: the next one
                continue

    def _wake(self, waiter: asyncio.Future[None]) -> None:
        if waiter.done():  # gave up meanwhile: the next one
            self._wake_one()
        else:
            waiter.set_result(None)

    def _open(self, settings: Settings, slot: _Slot) -> AdminStore:
        paths = settings.paths.ensure()
        store: AdminStore
        if settings.database_url is not None:
            # PostgreSQL queues writers itself (see octygraph.store.postgres): no file lock needed.
            store = open_store(settings)
        else:
            store = slot.store_cls.open(paths.db, make_embeddings(settings))
        store.enable_vector_cache()  # the service searches often: NumPy over RAM beats a vec0 scan
        with self._guard:
            slot.identity = file_identity(paths.db)
            prime, slot.primed = not slot.primed, True
        if prime and isinstance(store.embedder, LocalEmbeddings):
            # The relevance and storage judges read the local model's vectors of the memories they
            # weigh; the store holds exactly those already, so a new prompt need not embed them again.
            from octygraph.embeddings import local as vectors

            vectors.prime(store.content_vectors(vectors.CACHE_SIZE))
            # Counted before the thread starts: whoever reads `priming` right after this lease
            # (a status call, a benchmark waiting for a settled service) must see it under way.
            with self._guard:
                self._priming += 1
            threading.Thread(
                target=self._prime, args=(store,), name="octy-prime", daemon=True
            ).start()
        return store

    def _prime(self, store: AdminStore) -> None:
        try:
            prime_rule_triggers(store)
        except Exception as exc:  # the judge embeds the triggers as it meets them instead
            log.warning("rule triggers not primed: %s", exc)
        finally:
            with self._guard:
                self._priming -= 1

    def _give_back(self, settings: Settings, slot: _Slot, store: AdminStore | None) -> None:
        keep = False
        with self._guard:
            slot.leased -= 1
            slot.runs += 1
            slot.last_used = time.monotonic()
            if store is not None and file_identity(settings.paths.db) == slot.identity:
                if len(slot.idle) < self._max_idle:
                    slot.idle.append(store)
                    keep = True
            key = self._key(settings)
            if not slot.idle and slot.leased == 0 and self._slots.get(key) is slot:
                del self._slots[key]  # nothing open: reopened (and primed again) if it comes back
        if store is not None and not keep:
            store.close()
        self._wake_one()  # a store given back, or the room of one closed

    def _open_count_locked(self) -> int:
        return sum(len(s.idle) + s.leased for s in self._slots.values())

    def open_stores(self) -> int:
        """Stores open right now, idle or leased, across every database."""
        with self._guard:
            return self._open_count_locked()

    @asynccontextmanager
    async def lease(
        self, settings: Settings, *, deadline: float | None = None
    ) -> AsyncIterator[AdminStore]:
        """Borrow a store of the project's database for one run.

        When every store the cap allows is lent, waits for one to be given back, until `deadline`.

        Raises:
            StoreBusy: no store was free before the deadline (the run degrades; nothing was opened).
        """
        slot, store = await self._acquire(settings, deadline)
        try:
            if store is None:
                store = await asyncio.to_thread(self._open, settings, slot)
            yield store
        finally:
            self._give_back(settings, slot, store)

    def close_all(self) -> None:
        """Close every idle store (at shutdown)."""
        with self._guard:
            stores = [s for slot in self._slots.values() for s in slot.idle]
            for slot in self._slots.values():
                slot.idle = []
        for store in stores:
            store.close()

    def stats(self) -> dict[str, Any]:
        """Databases served so far, with runs and open connections per file."""
        with self._guard:
            return {
                "databases": len(self._slots),
                "max_open_stores": self._max_open,
                "open_connections": sum(len(s.idle) + s.leased for s in self._slots.values()),
                "runs_by_database": {key[0]: slot.runs for key, slot in self._slots.items()},
                # Databases whose rules' trigger clauses are still being embedded (see above).
                "priming": self._priming,
            }

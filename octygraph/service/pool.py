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
from octygraph.service.kept_files import file_identity, max_open_stores
from octygraph.store import AdminStore, MemoryStore
from octygraph.store.opening import open_store

MAX_IDLE_PER_DB = 4

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

    At most `max_open` stores stay open across every database (leased ones count): giving one back
    beyond that closes idle stores of the least recently used databases first, and forgets a database
    with nothing open, so descriptors stay flat however many projects the service has served.
    """

    def __init__(self, max_idle: int = MAX_IDLE_PER_DB, max_open: int | None = None) -> None:
        self._max_idle = max_idle
        self._max_open = max(1, max_open if max_open is not None else max_open_stores())
        self._slots: dict[tuple[str, str], _Slot] = {}
        self._guard = threading.Lock()
        self._priming = 0

    @staticmethod
    def _key(settings: Settings) -> tuple[str, str]:
        backend = settings.embedding_backend
        model = settings.voyage_model if backend == "voyage" else "local"
        if settings.database_url is not None:
            # One slot per server and project; the URL itself (it may hold a password) is not kept.
            server = hashlib.sha256(settings.database_url.get_secret_value().encode()).hexdigest()
            return (f"postgresql:{server[:16]}:{settings.project_id}", f"{backend}:{model}")
        return (str(settings.paths.db.absolute()), f"{backend}:{model}")

    def _take(self, settings: Settings) -> tuple[_Slot, AdminStore | None]:
        """The slot for this database and an idle store, unless the file was replaced or removed."""
        key = self._key(settings)
        identity = file_identity(settings.paths.db)
        stale: list[AdminStore] = []
        with self._guard:
            slot = self._slots.get(key)
            if slot is None:
                slot = self._slots[key] = _Slot()
                slot.store_cls = LockedStore.for_database(slot.write_lock)
            if slot.identity != identity:
                # `memory unload` or a restore may have replaced the file: old connections see old data.
                stale, slot.idle = slot.idle, []
                slot.identity = identity
            store = slot.idle.pop() if slot.idle else None
            slot.leased += 1
        for old in stale:
            old.close()
        return slot, store

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
            evicted = self._evict_locked()
        if store is not None and not keep:
            store.close()
        for old in evicted:
            old.close()

    def _open_count_locked(self) -> int:
        return sum(len(s.idle) + s.leased for s in self._slots.values())

    def _evict_locked(self) -> list[AdminStore]:
        """Idle stores beyond the cap, least recently used database first (caller holds the guard)."""
        evicted: list[AdminStore] = []
        excess = self._open_count_locked() - self._max_open
        for key, slot in sorted(self._slots.items(), key=lambda item: item[1].last_used):
            if excess <= 0:
                break
            while slot.idle and excess > 0:
                evicted.append(slot.idle.pop(0))
                excess -= 1
            if not slot.idle and slot.leased == 0:
                del self._slots[key]  # reopened (and primed again) if the project comes back
        return evicted

    def open_stores(self) -> int:
        """Stores open right now, idle or leased, across every database."""
        with self._guard:
            return self._open_count_locked()

    @asynccontextmanager
    async def lease(self, settings: Settings) -> AsyncIterator[AdminStore]:
        """Borrow a store of the project's database for one run."""
        slot, store = self._take(settings)
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

"""`octygraph serve`: one resident process per user that answers hook calls on a Unix socket.

It keeps LangGraph, LangChain, the embedding model and open databases loaded, so a hook process only
pays for Python's start-up and a round trip. It serves every project and Claude session of the user
(one asyncio loop; runs on one database read concurrently, their writes queue on a per-database lock),
stops after `OCTY_SERVE_IDLE_S` without requests, and exits when a client runs a different installed
version or process environment (the client then starts a fresh one).

While no request is under way it does its upkeep (`octygraph.service.upkeep`): it learns the storage
verdict from the user's examples and settles the sessions whose SessionEnd never came.

Files in `$OCTYBOT_HOME`: `octygraph.sock` (0600, in the 0700 folder), `octygraph.pid`, and
`octygraph.lock`, held with `flock` for the process's life so two services never run at once.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import concurrent.futures
import contextlib
import fcntl
import logging
import os
import signal
import socket
import stat
import struct
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any

from octygraph.service import client, protocol
from octygraph.service.client import NOTIFY_ENV, ServiceUnavailable, exchange
from octygraph.service.upkeep import Upkeep

# One BLAS thread, set before NumPy loads OpenBLAS: a search multiplies one query by the whole vector
# matrix, which is bound by memory, not arithmetic. On a busy 2-core machine OpenBLAS's worker threads
# wait for CPU and made that 3x slower (bench/README.md). A user's own setting wins.
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

After = Callable[[], Awaitable[BaseException | None]]
"""Work for after the reply: the run's store half, then the hook's bookkeeping; returns why the run
failed, or None."""

log = logging.getLogger("octygraph.serve")

READ_TIMEOUT_S = 10.0
LOCK_WAIT_S = 20.0
DRAIN_TIMEOUT_S = 60.0
SPOOL_INTERVAL_S = 2.0
HANDED_IDS = 10_000
STORING_WAIT_S = 0.3
"""How long a hook call waits for the store halves still running from earlier prompts, so that a
prompt sent right after another (or a session started right after it) reads what that one stored."""
HANDOFF_EVENTS = (*protocol.HANDOFF_EVENTS, "session-start")
"""Session-start is still taken as a hand-off from older clients and their spooled requests."""


def with_own_secrets(message: dict[str, Any], own: Mapping[str, str]) -> None:
    """Put back, from the service's environment, the secret settings a spooled request left out.

    The spool never holds a key (`client.at_rest`); the service was started with the client's
    environment, so its own values are the ones the request was made with.
    """
    left_out, env = message.get("secrets_left_out"), message.get("env")
    if isinstance(left_out, list) and isinstance(env, dict):
        env.update({n: own[n] for n in left_out if isinstance(n, str) and n in own})


class _Notifier:
    """The pipe of the hook that started this service: told once that it listens, or why it cannot."""

    def __init__(self) -> None:
        raw = os.environ.pop(NOTIFY_ENV, "")
        self.fd: int | None = int(raw) if raw.isdigit() else None

    def send(self, line: str) -> None:
        if self.fd is None:
            return
        fd, self.fd = self.fd, None
        with contextlib.suppress(OSError):
            os.write(fd, (" ".join(line.split()) + "\n").encode("utf-8", "replace"))
        with contextlib.suppress(OSError):
            os.close(fd)


notifier = _Notifier()


class ServiceError(Exception):
    """The service cannot start; the message says why in one sentence."""


def _peer_uid(writer: asyncio.StreamWriter) -> int | None:
    """The uid of the process at the other end (Linux), or None where the OS does not tell."""
    sock = writer.get_extra_info("socket")
    option = getattr(socket, "SO_PEERCRED", None)
    if sock is None or option is None:
        return None
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    except OSError:
        return None
    _pid, uid, _gid = struct.unpack("3i", creds)
    return int(uid)


def _answers(sock_path: Path) -> bool:
    try:
        exchange(sock_path, {"op": "status"}, 2.0)
    except ServiceUnavailable:
        return False
    return True


def acquire_lock(paths: protocol.ServicePaths, wait_s: float = LOCK_WAIT_S) -> int | None:
    """Take the service lock; None when another service holds it and answers (or never lets go).

    A service that is shutting down still holds the lock while it finishes its last runs but no longer
    answers; this waits for it rather than giving up at once.
    """
    fd = os.open(paths.lock_file, os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            pass
        if _answers(paths.socket) or time.monotonic() > deadline:
            os.close(fd)
            return None
        time.sleep(0.1)


def _remove_stale_socket(path: Path) -> None:
    """Remove a socket file nobody listens on (we hold the lock, so no live service owns it)."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        raise ServiceError(f"{path} is a folder; remove it so the service can use that name.")
    log.info("removing stale socket %s", path)
    path.unlink()


class Service:
    """The running service: listener, warm pipeline, store pool, counters and shutdown."""

    def __init__(self, home: Path, idle_s: float) -> None:
        self.home = home
        self.paths = protocol.ServicePaths(home)
        self.idle_s = idle_s
        self.version = protocol.package_version()
        self.process_env = protocol.process_env(os.environ)
        self.started_at = time.time()
        self.requests = 0
        self.recent_ms: collections.deque[float] = collections.deque(maxlen=200)
        self.failures = 0
        self.active = 0
        self.last_activity = time.monotonic()
        self.reason = ""
        self._stopping: asyncio.Event | None = None
        self._ready: asyncio.Future[None] | None = None
        self._server: asyncio.AbstractServer | None = None
        self._socket_id: tuple[int, int] | None = None
        self._handle: Callable[..., Any] | None = None
        self._pool: Any = None
        self._checkpointers: Any = None
        self._background: set[asyncio.Task[None]] = set()
        self._storing: set[asyncio.Task[Any]] = set()
        """The store halves still running after their answers went out."""
        self._handed: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._spool_running: set[str] = set()
        """Spool files whose run is under way: each stays on disk until its run succeeds."""
        self.spooled = 0
        self.resumed = 0
        self.upkeep = Upkeep(
            home,
            idle_s,
            start=lambda work: self._start_counted(work, upkeep=True),
            quiet_since=self._quiet_since,
        )

    # ------------------------------------------------------------------ start-up

    def _warm_up(self) -> None:
        """Import the pipeline, load the embedding model and compile the graph once (in a thread).

        The model and the judges load in a second thread meanwhile: ONNX Runtime builds its session
        without the GIL, so on two cores that time hides behind LangGraph's imports (a new user's
        first prompt waits for all of it).
        """
        t0 = time.perf_counter()
        models = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="octy-warm")
        loading = models.submit(self._load_models)
        try:
            from octygraph.pipeline.graph import build_graph
            from octygraph.service.pool import StorePool
            from octygraph.session import hooks

            self._handle = hooks.handle
            self._pool = StorePool()
            build_graph().compile()
            from octygraph.pipeline import runner

            runner.compiled_graph()  # what the first run uses
        finally:
            loading.result()
            models.shutdown()
        log.info("warm in %.2f s", time.perf_counter() - t0)

    def _load_models(self) -> None:
        """The embedding model and the fitted judges; a bad setting is logged, not raised."""
        try:
            from octygraph.config.settings import Settings

            settings = Settings.from_env(cwd=self.home if self.home.is_dir() else None)
            if settings.embedding_backend == "local":
                from octygraph.embeddings import local_embeddings

                local_embeddings().embed_array(["warm up"])
                # The judges of what to store and inject load their fitted weights on first use.
                from octygraph.judgement.gate import storage_gate
                from octygraph.judgement.relevance import relevance_model

                relevance_model()
                storage_gate()
        except Exception as exc:  # a bad setting fails the requests that need it, not the service
            log.warning("embedding model not preloaded: %s", exc)

    async def _listen(self) -> None:
        sock_path = self.paths.socket
        _remove_stale_socket(sock_path)
        old_umask = os.umask(0o077)  # the socket is born owner-only
        try:
            self._server = await asyncio.start_unix_server(
                self._on_client, path=os.fspath(sock_path)
            )
        finally:
            os.umask(old_umask)
        os.chmod(sock_path, 0o600)
        info = sock_path.stat()
        self._socket_id = (info.st_dev, info.st_ino)

    # ------------------------------------------------------------------ requests

    async def _on_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.active += 1
        self.last_activity = time.monotonic()
        after: After | None = None
        try:
            uid = _peer_uid(writer)
            if uid is not None and uid != os.getuid():
                log.warning("refused a connection from uid %s", uid)
                return
            header = await asyncio.wait_for(
                reader.readexactly(protocol.HEADER.size), READ_TIMEOUT_S
            )
            size = protocol.frame_size(header)
            message = protocol.decode(
                await asyncio.wait_for(reader.readexactly(size), READ_TIMEOUT_S)
            )
            answer, after = await self._dispatch(message)
            writer.write(protocol.encode(answer))
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, TimeoutError) as exc:
            log.info("client went away: %s", type(exc).__name__)
        except protocol.ProtocolError as exc:
            log.warning("bad request: %s", exc)
        except Exception:
            self.failures += 1
            log.exception("request failed")
        finally:
            with contextlib.suppress(Exception):
                writer.close()
            try:
                if after is not None:
                    # The store half, then manifest, dev log and usage report: after the client has its answer.
                    await after()
            finally:
                self.active -= 1
                self.last_activity = time.monotonic()

    async def _dispatch(self, message: dict[str, Any]) -> tuple[dict[str, Any], After | None]:
        op = message.get("op")
        if op == "status":
            return {"status": "ok", "health": self.health()}, None
        if op == "stop":
            self.shutdown("asked to stop")
            return {"status": "ok", "pid": os.getpid()}, None
        if op != "hook":
            return {"status": "error", "message": f"unknown op {op!r}"}, None
        reason = ""
        if message.get("version") != self.version:
            reason = f"version {message.get('version')} != {self.version}"
        elif message.get("process_env") != self.process_env:
            theirs = message.get("process_env")
            names = set(theirs) if isinstance(theirs, dict) else set()
            differ = sorted(
                n
                for n in names | set(self.process_env)
                if (theirs or {}).get(n) != self.process_env.get(n)
            )
            # Names only: values may be secrets.
            reason = f"the client's environment differs ({', '.join(differ[:5])})"
        if reason:
            self.shutdown(f"restart: {reason}")
            return {"status": "restart", "reason": reason}, None
        if message.get("handoff"):
            event = str(message.get("event") or "")
            if event not in HANDOFF_EVENTS:
                return {"status": "error", "message": f"cannot hand off {event!r}"}, None
            # The receipt goes out first; the work runs after it, so the hook can return at once.
            self._in_background(message)
            return {"status": "accepted"}, None
        return await self._hook(message)

    def _in_background(self, message: dict[str, Any], spooled: Path | None = None) -> bool:
        """Run a hand-off request after its receipt; counted as active so a shutdown waits for it.

        Returns False (and runs nothing) for a request id already taken: a hook whose receipt came too
        late spools the same request. A run that fails for want of resources (descriptors, a free store
        before its deadline) is kept for later: its spool file (`spooled`) stays, or, handed off live,
        it is written to the spool. Any other outcome removes the spool file.
        """
        request_id = str(message.get("request_id") or "")
        if request_id:
            if request_id in self._handed:
                return False
            self._handed[request_id] = None
            while len(self._handed) > HANDED_IDS:
                self._handed.popitem(last=False)

        async def work() -> None:
            failed: BaseException | None = None
            try:
                answer, after = await self._hook(message)
                if answer.get("status") != "ok":
                    log.warning("hand-off not done: %s", answer.get("message"))
                if after is not None:
                    failed = await after()
            except Exception as exc:
                failed = exc
                self.failures += 1
                log.exception("hand-off failed")
            except BaseException as exc:  # cut off (the service stopping): kept for later too
                failed = exc
                raise
            finally:
                self._hand_off_done(message, spooled, failed)

        self._start_counted(work())
        return True

    def _hand_off_done(
        self, message: dict[str, Any], spooled: Path | None, failed: BaseException | None
    ) -> None:
        """Remove a hand-off's spool file, or keep the request for a later try (see `_in_background`)."""
        from octygraph.pipeline.store_lease import for_want_of_resources

        if spooled is not None:
            self._spool_running.discard(spooled.name)
        if not (for_want_of_resources(failed) or isinstance(failed, asyncio.CancelledError)):
            if spooled is not None:
                with contextlib.suppress(OSError):
                    spooled.unlink()
            return
        # Tried again by a later drain of the spool, which must not take it for a request already run.
        self._handed.pop(str(message.get("request_id") or ""), None)
        if spooled is None and client.spool(self.home, message) is None:
            log.warning("a hand-off that could not run now could not be spooled either")
            return
        log.warning("hand-off left in the spool for later: %s", failed)

    def _start_counted(self, work: Coroutine[Any, Any, None], *, upkeep: bool = False) -> None:
        """Run `work` as a task counted as active, so a shutdown waits for it (and idling does not start).

        Upkeep (learning, settling sessions) does not count as activity once done: the service idles on.
        """
        self.active += 1

        async def counted() -> None:
            try:
                await work
            finally:
                self.active -= 1
                if not upkeep:
                    self.last_activity = time.monotonic()

        task = asyncio.create_task(counted())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def drain_spool(self) -> int:
        """Start the hand-off requests that hooks left in the spool folder when no service took them.

        A file stays until its run is done (one that failed for want of resources stays for the next
        drain); at most as many run at once as the service may keep stores open.
        """
        folder = self.paths.spool_dir
        try:
            names = sorted(n for n in os.listdir(folder) if n.endswith(".json"))
        except OSError:
            return 0
        room = (self._pool.max_open if self._pool is not None else 1) - len(self._spool_running)
        started = 0
        for name in names:
            if started >= room:
                break
            if name in self._spool_running:
                continue
            path = folder / name
            try:
                body = path.read_bytes()
                message = protocol.decode(body)
            except (OSError, protocol.ProtocolError) as exc:
                log.warning("spooled request %s unreadable: %s", name, exc)
                with contextlib.suppress(OSError):
                    path.unlink()
                continue
            if message.get("event") not in HANDOFF_EVENTS:
                with contextlib.suppress(OSError):
                    path.unlink()
                continue
            # The spool is worked through with this service's code, whatever client wrote it.
            message["elapsed_s"] = 0.0
            with_own_secrets(message, os.environ)
            self._spool_running.add(name)
            if self._in_background(message, spooled=path):
                started += 1
            else:  # a request already run (or under way) under its id: this copy goes
                self._spool_running.discard(name)
                with contextlib.suppress(OSError):
                    path.unlink()
        if started:
            self.spooled += started
            log.info("working through %d spooled requests", started)
        return started

    def _resume_unfinished(self) -> None:
        """Finish, in the background, the runs a dead service (or hook) left with their store half to do.

        Started once the service answers, so the first prompt never waits for it; counted as active so
        a shutdown lets the current one end.
        """

        async def work() -> None:
            try:
                from octygraph.service.resume import resume_unfinished

                assert self._pool is not None and self._stopping is not None
                outcomes = await resume_unfinished(
                    self.home, self._pool.lease, stopping=self._stopping.is_set
                )
                self.resumed += sum(o.status == "resumed" for o in outcomes)
            except Exception:
                log.exception("resuming unfinished runs failed")

        self._start_counted(work())

    async def _hook(self, message: dict[str, Any]) -> tuple[dict[str, Any], After | None]:
        received = time.monotonic()
        event = str(message.get("event") or "")
        if event not in protocol.HOOK_EVENTS:
            return {"status": "error", "message": f"unknown event {event!r}"}, None
        raw = base64.b64decode(str(message.get("payload_b64") or ""), validate=False)
        elapsed = message.get("elapsed_s")
        started = received - (float(elapsed) if isinstance(elapsed, int | float) else 0.0)
        requested = message.get("env")
        pairs = requested.items() if isinstance(requested, dict) else ()
        env = protocol.service_env(os.environ, {str(k): str(v) for k, v in pairs})
        assert self._ready is not None
        try:
            await self._ready
        except Exception as exc:
            reason = f"the memory service could not start ({type(exc).__name__}: {exc})"
            return {
                "status": "error",
                "message": reason,
                "notice": f"memory is off: {reason}",
            }, None
        assert self._handle is not None and self._pool is not None
        if self._storing:
            await asyncio.wait(list(self._storing), timeout=STORING_WAIT_S)
        reply = await self._handle(
            event,
            raw,
            env=env,
            cwd=str(message.get("cwd") or "") or None,
            stores=self._pool.lease,
            started=started,
            checkpointers=self._checkpointers.lease,
        )
        if reply.rest is not None:  # marked before the answer goes out, so the next call sees it
            self._storing.add(reply.rest)
            reply.rest.add_done_callback(self._storing.discard)
        self.requests += 1
        took_ms = (time.monotonic() - received) * 1000
        self.recent_ms.append(took_ms)
        log.info("%s answered in %.0f ms (%d chars)", event, took_ms, len(reply.stdout))

        async def after() -> BaseException | None:
            await reply.settle()  # the run's store half goes on after the reply
            await asyncio.to_thread(reply.finish)
            self.upkeep.note_request(reply.session)
            return reply.error

        return {"status": "ok", "stdout": reply.stdout, "notice": reply.notice}, after

    def health(self) -> dict[str, Any]:
        """What `octygraph serve status` shows."""
        pool = self._pool.stats() if self._pool is not None else {}
        recent = sorted(self.recent_ms)
        return {
            "pid": os.getpid(),
            "uptime_s": round(time.time() - self.started_at, 1),
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(self.started_at)),
            "version": self.version,
            "socket": str(self.paths.socket),
            "requests": self.requests,
            "failures": self.failures,
            # Time inside the service per hook call, over the last 200 calls.
            "median_ms": round(recent[len(recent) // 2], 1) if recent else None,
            "p95_ms": round(recent[min(len(recent) - 1, int(0.95 * len(recent)))], 1)
            if recent
            else None,
            "active": self.active,
            "spooled": self.spooled,
            "resumed": self.resumed,
            "warm": bool(self._ready is not None and self._ready.done()),
            "idle_timeout_s": self.idle_s,
            "idle_for_s": round(time.monotonic() - self.last_activity, 1),
            "python": sys.executable,
            # Checkpoint files kept open (capped with the stores by OCTY_SERVE_MAX_STORES).
            "checkpoint_files": len(self._checkpointers) if self._checkpointers is not None else 0,
            **self.upkeep.health(),
            **pool,
        }

    # ------------------------------------------------------------------ shutdown

    def shutdown(self, reason: str) -> None:
        """Stop taking requests; the ones under way finish first."""
        if self._stopping is not None and not self._stopping.is_set():
            self.reason = reason
            log.info("shutting down: %s", reason)
            self._stopping.set()

    def _quiet_since(self) -> float | None:
        """The last activity (a request that came or ended); None once the service is stopping."""
        stopping = self._stopping is not None and self._stopping.is_set()
        return None if stopping else self.last_activity

    async def _watch_idle(self) -> None:
        assert self._stopping is not None and self._ready is not None
        interval = max(0.05, min(SPOOL_INTERVAL_S, self.idle_s / 4))
        while not self._stopping.is_set():
            await asyncio.sleep(interval)
            warm = self._ready.done() and not self._ready.exception()
            if warm:
                self.drain_spool()
            if self.active:
                continue
            idle_for = time.monotonic() - self.last_activity
            if warm:
                self.upkeep.learn_if_due()
                if self.upkeep.settle_when_idle(self._pool.lease):
                    continue  # settled first; then, still idle, the service stops
            if self.active == 0 and idle_for >= self.idle_s:
                self.shutdown(f"idle for {idle_for:.0f} s")

    def _unlink_socket(self) -> None:
        # Only our own file: a new service may already have bound a fresh one at that path.
        try:
            info = self.paths.socket.lstat()
        except OSError:
            return
        if (info.st_dev, info.st_ino) == self._socket_id:
            with contextlib.suppress(OSError):
                self.paths.socket.unlink()

    async def run(self) -> None:
        """Serve until stopped, idle, or asked to restart."""
        loop = asyncio.get_running_loop()
        # Runs cut off by their budget leave worker threads behind; keep room for the next runs.
        loop.set_default_executor(
            concurrent.futures.ThreadPoolExecutor(max_workers=32, thread_name_prefix="octy")
        )
        self._stopping = asyncio.Event()
        self._ready = loop.create_future()
        from octygraph.service.checkpointers import CheckpointerPool

        self._checkpointers = CheckpointerPool()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self.shutdown, f"signal {sig.name}")
        await self._listen()
        notifier.send("ready")
        log.info(
            "listening on %s (pid %d, version %s)", self.paths.socket, os.getpid(), self.version
        )

        async def warm() -> None:
            try:
                await asyncio.to_thread(self._warm_up)
            except BaseException as exc:
                log.exception("warm-up failed")
                assert self._ready is not None
                self._ready.set_exception(exc)
                self.shutdown(f"warm-up failed: {exc}")
            else:
                assert self._ready is not None
                self._ready.set_result(None)
                self.drain_spool()
                self._resume_unfinished()
                await self.upkeep.read_last_learn()

        warming = asyncio.create_task(warm())
        watcher = asyncio.create_task(self._watch_idle())
        try:
            await self._stopping.wait()
        finally:
            assert self._server is not None
            self._server.close()
            self._unlink_socket()
            deadline = time.monotonic() + DRAIN_TIMEOUT_S
            while self.active and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            watcher.cancel()
            with contextlib.suppress(BaseException):
                await warming
            if self._pool is not None:
                self._pool.close_all()
            with contextlib.suppress(Exception):
                await self._checkpointers.close_all()
            log.info("stopped (%s) after %d requests", self.reason, self.requests)


def serve(home: Path, idle_s: float | None = None) -> int:
    """Run the service in this process until it stops; returns an exit code.

    Raises:
        ServiceError: another service already runs for this home, or the socket path is unusable.
    """
    try:
        return _serve(home, idle_s)
    except BaseException as exc:
        notifier.send(f"error {exc}")  # the hook that started it gives up at once
        raise
    finally:
        notifier.send("error the service stopped before it listened")


def _serve(home: Path, idle_s: float | None) -> int:
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    with contextlib.suppress(OSError):
        home.chmod(0o700)
    paths = protocol.ServicePaths(home)
    lock_fd = acquire_lock(paths)
    if lock_fd is None:
        notifier.send("busy")
        raise ServiceError(
            f"A memory service is already running for {home}; see `octygraph serve status`."
        )
    try:
        paths.pid_file.write_text(f"{os.getpid()}\n")
        with contextlib.suppress(OSError):
            paths.pid_file.chmod(0o600)
        service = Service(home, idle_s or protocol.idle_timeout_s(os.environ))
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(service.run())
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            # Unlike asyncio.run, do not wait for worker threads a budget cut off: close() lets them be.
            loop.close()
    finally:
        with contextlib.suppress(OSError):
            if paths.pid_file.read_text().strip() == str(os.getpid()):
                paths.pid_file.unlink()
        os.close(lock_fd)  # releases the flock
    return 0


def configure_logging() -> None:
    """One line per event on stderr (the log file when the service runs detached)."""
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.WARNING,
        format="%(asctime)s octygraph-serve[%(process)d] %(levelname)s %(message)s",
    )
    # The service's own events; the pipeline's stage logs stay out unless verbose mode asks for them.
    log.setLevel(logging.INFO)
    # How sessions were settled (candidates confirmed, merged, judged) is the service's work too.
    logging.getLogger("octygraph.hooks").setLevel(logging.INFO)
    from octygraph.safety.secrets import redact_logs

    redact_logs()  # the log file is on disk too: no secret reaches it


def main() -> None:
    """`python -m octygraph.service.server`: what a hook starts, without the command line's imports."""
    configure_logging()
    home = protocol.home_from_env(os.environ)
    try:
        code = serve(home)
    except (ServiceError, OSError) as exc:
        print(str(exc), file=sys.stderr)
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    # Worker threads a budget cut off may still be waiting on the network; the service is done.
    os._exit(code)


if __name__ == "__main__":
    main()

"""The hook's thin client: hand the payload to the resident service within a hard budget.

Standard library only at import time. Claude Code starts a new process for every hook, so this path
must not import LangGraph, LangChain, NumPy or onnxruntime: with a warm service a prompt costs a
Python start-up and a socket round trip.

Budgets are counted from the start of the hook process (interpreter start-up and imports included),
and a watchdog thread ends the process with exit 0 when one runs out, whatever the service does:

- `prompt` waits for the service's answer until `KEPT_S` (2 s) before its budget (`OCTY_HOOK_BUDGET_S`);
  the service's own run ends before that, so only a frozen or stuck service is waited out. When no
  service listens it starts one (detached: new session, double fork) and waits for it; a
  service that misses the deadline is killed and replaced, and the prompt goes on without context.
  Nothing is ever re-run in the hook process after a service failed.
- `session-start` asks like a prompt, within `START_BUDGET_S`: the warm service answers with the
  standing block at once (and opens the project's store, so the first prompt finds it warm).
- `stop` hands its payload over: the service acknowledges receipt before it does the work, so the
  hook returns in a few tens of milliseconds. When no service takes it, the payload goes to the
  spool folder, which the service works through when it (next) runs.
"""

from __future__ import annotations

import binascii
import errno
import os
import sys
import time

# The C modules, not `socket` and `base64` (their enums and regexes cost a few ms on every prompt).
from _socket import AF_UNIX, SOCK_STREAM
from _socket import socket as unix_socket

from octygraph.config import setting_table as table
from octygraph.service import protocol

# Not `typing.TYPE_CHECKING` (see protocol): the client imports only what it needs on every prompt.
# Nor pathlib: the warm path works on string paths; `Path` is imported where one is made.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path
    from typing import Any, Literal

    from octygraph.config.settings import Settings

    Via = Literal["service", "in-process", "skipped", "spooled"]
    Failure = Literal["absent", "broken", "timeout"]

CONNECT_TIMEOUT_S = 0.5
STATUS_TIMEOUT_S = 2.0
HANDOFF_BUDGET_S = 0.25
"""A hand-off hook (stop, session-end) returns within this, from process start."""
START_BUDGET_S = table.START_BUDGET_S
HANDOFF_ACK_S = 0.12
"""How long a hand-off waits for the service's receipt before spooling the payload."""
EXIT_MARGIN_S = 0.05
"""The watchdog ends the process this long before the budget runs out."""
WRITE_GUARD_S = 0.5
"""The watchdog lets an answer whose write has begun finish for at most this long."""
KEPT_S = table.KEPT_S
WAIT_MARGIN_S = 0.25
"""The prompt hook stops waiting for the service this long before its budget runs out."""
UNKNOWN_START_S = 0.15
"""Assumed interpreter start-up where the OS does not say when the process started."""
STDIN_LIMIT = 1_000_000  # as octygraph.claude.hook_io
NOTIFY_ENV = "OCTY_SERVE_NOTIFY_FD"
"""A service started by a hook writes `ready` (or `error <why>`) to this pipe once it listens."""


class ServiceUnavailable(Exception):
    """No service answered: `absent` (nothing listening), `broken` (it failed mid-way), `timeout`."""

    def __init__(self, kind: Failure, detail: str) -> None:
        super().__init__(detail)
        self.kind: Failure = kind


class HookResult:
    """What a hook printed and which path produced it (`service`, `in-process`, `spooled`, `skipped`)."""

    __slots__ = ("fallback", "notice", "note", "stdout", "via")

    def __init__(
        self, stdout: str, via: Via, note: str = "", notice: str = "", *, fallback: bool = False
    ) -> None:
        self.stdout = stdout
        self.via: Via = via
        self.note = note
        self.notice = notice
        """Something the user should know (memory is degraded); shown once per session."""
        self.fallback = fallback
        """No service took the call and none is to be started: the caller may run it in-process."""

    def __repr__(self) -> str:
        return f"HookResult(via={self.via!r}, stdout={len(self.stdout)} chars, note={self.note!r})"


def process_age_s() -> float:
    """Seconds since this process started (interpreter start-up included), from /proc where it exists."""
    try:
        with open("/proc/self/stat", "rb") as f:
            stat = f.read()
        ticks = int(stat[stat.rindex(b")") + 2 :].split()[19])
        now = time.clock_gettime(time.CLOCK_BOOTTIME)
        return max(0.0, now - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError, AttributeError):
        return UNKNOWN_START_S


class Deadline:
    """A point in `time.monotonic()` time."""

    __slots__ = ("at", "started")

    def __init__(self, started: float, budget_s: float) -> None:
        self.started = started
        self.at = started + budget_s

    def left(self) -> float:
        return self.at - time.monotonic()


def start_watchdog(deadline: float, guard: Any) -> None:
    """End the process with exit 0 at `deadline` (monotonic), unless it is writing its answer."""
    import _thread

    def watch() -> None:
        time.sleep(max(0.0, deadline - time.monotonic()))
        # Let a write that has begun finish; then nothing else starts.
        guard.acquire(timeout=WRITE_GUARD_S)
        os._exit(0)

    _thread.start_new_thread(watch, ())


def _recv_exact(sock: unix_socket, size: int, deadline: float) -> bytes:
    chunks: list[bytes] = []
    left = size
    while left:
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ServiceUnavailable("broken", "the service closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def exchange(socket_path: str | Path, message: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """Send one message to the service and wait at most `timeout_s` in all for its answer.

    Raises:
        ServiceUnavailable: nothing listens (`absent`), the connection broke (`broken`), or no answer
            came within `timeout_s` (`timeout`).
    """
    deadline = time.monotonic() + timeout_s
    sock = unix_socket(AF_UNIX, SOCK_STREAM)
    try:
        sock.settimeout(max(0.001, min(CONNECT_TIMEOUT_S, timeout_s)))
        try:
            sock.connect(os.fspath(socket_path))
        except (FileNotFoundError, ConnectionRefusedError, NotADirectoryError) as exc:
            raise ServiceUnavailable("absent", f"no service at {socket_path}: {exc}") from None
        except TimeoutError:
            raise ServiceUnavailable("timeout", "the service does not accept connections") from None
        except OSError as exc:
            kind: Failure = (
                "absent" if exc.errno in (errno.ENOENT, errno.ECONNREFUSED) else "broken"
            )
            raise ServiceUnavailable(kind, f"cannot connect to {socket_path}: {exc}") from None
        try:
            sock.settimeout(max(0.001, deadline - time.monotonic()))
            sock.sendall(protocol.encode(message))
            size = protocol.frame_size(_recv_exact(sock, protocol.HEADER.size, deadline))
            return protocol.decode(_recv_exact(sock, size, deadline))
        except TimeoutError:
            raise ServiceUnavailable("timeout", f"no answer within {timeout_s:g} s") from None
        except (OSError, protocol.ProtocolError) as exc:
            raise ServiceUnavailable("broken", f"the exchange failed: {exc}") from None
    finally:
        sock.close()


# --------------------------------------------------------------------------- starting a service


def _service_env(env: Mapping[str, str], notify_fd: int | None) -> dict[str, str]:
    child_env = dict(env)
    for name in ("OCTY_NO_SERVICE", "OCTY_NO_HOOKS", NOTIFY_ENV):
        child_env.pop(name, None)
    child_env["PYTHONUNBUFFERED"] = "1"
    if notify_fd is not None:
        child_env[NOTIFY_ENV] = str(notify_fd)
    return child_env


def _log_fd(home: Path) -> int:
    paths = protocol.ServicePaths(home)
    try:
        paths.log_file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        _rotate(paths.log_file)
        return os.open(paths.log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    except OSError:
        return os.open(os.devnull, os.O_WRONLY)


def spawn_detached(
    argv: list[str], env: Mapping[str, str], cwd: str, log_fd: int, keep_fd: int
) -> bool:
    """Run `argv` fully detached from this process: new session, double fork, stdio redirected.

    The grandchild that runs `argv` is not a child of this process nor in its process group or session,
    so Claude Code killing the hook (or its process group, or its child processes) does not reach it.
    `keep_fd` (or -1) stays open in it. Returns whether the first fork succeeded.
    """
    child_env = dict(env)
    top = max(1024, min(os.sysconf("SC_OPEN_MAX"), 1 << 20))
    try:
        pid = os.fork()
    except OSError:
        return False
    if pid == 0:  # first child: a new session, then fork again and leave
        try:
            os.setsid()
            if os.fork() == 0:
                null = os.open(os.devnull, os.O_RDONLY)
                os.dup2(null, 0)
                os.dup2(log_fd, 1)
                os.dup2(log_fd, 2)
                keep = [keep_fd] if keep_fd >= 0 else []
                for fd in keep:
                    os.set_inheritable(fd, True)
                # Only stdio and the notify pipe: no other descriptor of the hook lives on in it.
                os.closerange(3, keep[0] if keep else top)
                if keep:
                    os.closerange(keep[0] + 1, top)
                try:
                    os.chdir(cwd)
                except OSError:
                    os.chdir("/")
                os.execve(argv[0], argv, child_env)
        except BaseException:
            pass
        os._exit(0)
    try:
        os.waitpid(pid, 0)
    except OSError:
        pass
    return True


def start_service(home: Path, env: Mapping[str, str] | None = None) -> int | None:
    """Start the service (`octygraph serve`, without the CLI's imports) detached, output in its log.

    Returns:
        The read end of a pipe on which the new service writes `ready` once it listens (or `error
        <why>`; end of file when it died first), or None when it could not be started.
        Two clients may both start one: the second finds the first holding the lock and reports `busy`.
    """
    env = os.environ if env is None else env
    try:
        read_fd, write_fd = os.pipe()
    except OSError:
        return None
    log_fd = _log_fd(home)
    try:
        cwd = str(home) if home.is_dir() else "/"
        argv = [sys.executable, "-m", "octygraph.service.server"]
        started = spawn_detached(argv, _service_env(env, write_fd), cwd, log_fd, write_fd)
    finally:
        os.close(log_fd)
        os.close(write_fd)
    if not started:
        os.close(read_fd)
        return None
    return read_fd


def wait_ready(fd: int, timeout_s: float) -> str:
    """What a service started with `start_service` reported: `ready`, `busy`, `error <why>`, `timeout`.

    Closes `fd` unless the answer is `timeout`.
    """
    import select

    deadline = time.monotonic() + timeout_s
    data = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return "timeout"
        try:
            readable, _, _ = select.select([fd], [], [], left)
        except (OSError, ValueError):
            readable = [fd]
        if not readable:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            chunk = b""
        data += chunk
        if not chunk or b"\n" in data:
            os.close(fd)
            line = data.decode("utf-8", "replace").strip()
            return line or "error the service exited before it listened; see its log"


def replace_service(home: Path, env: Mapping[str, str]) -> int | None:
    """Kill the service of `home` (it missed a deadline) and start a fresh one; see `start_service`."""
    import signal

    pid = read_pid(home)
    if pid is not None and pid != os.getpid():
        try:
            os.kill(pid, signal.SIGKILL)  # a frozen process does not act on SIGTERM
        except OSError:
            pass
    return start_service(home, env)


def _rotate(log: Path, max_bytes: int = 1_000_000) -> None:
    try:
        if log.stat().st_size > max_bytes:
            os.replace(log, log.with_name(log.name + ".1"))
    except OSError:
        pass


# --------------------------------------------------------------------------- requests


def hook_request(
    event: str, raw: bytes, env: Mapping[str, str], elapsed_s: float
) -> dict[str, Any]:
    """The message for one hook call."""
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = ""
    return {
        "op": "hook",
        "event": event,
        "payload_b64": binascii.b2a_base64(raw, newline=False).decode("ascii"),
        "env": protocol.request_env(env),
        "cwd": cwd,
        "process_env": protocol.process_env(env),
        "version": protocol.package_version(),
        "elapsed_s": elapsed_s,
        "handoff": event in protocol.HANDOFF_EVENTS,
        # A hand-off whose receipt came too late is also spooled: the id lets the service run it once.
        "request_id": f"{time.time_ns()}-{os.getpid()}",
    }


def at_rest(message: Mapping[str, Any]) -> dict[str, Any]:
    """A request as the spool keeps it on disk: without the values of secret settings (API keys,
    the database URL). Their names are kept, for the service to put its own values back."""
    from octygraph.config.setting_table import SECRET_NAMES

    kept = dict(message)
    left_out: set[str] = set()
    for key in ("env", "process_env"):
        values = kept.get(key)
        if isinstance(values, dict):
            left_out |= {name for name in values if name in SECRET_NAMES}
            kept[key] = {k: v for k, v in values.items() if k not in SECRET_NAMES}
    kept["secrets_left_out"] = sorted(left_out)
    if isinstance(kept.get("payload_b64"), str):
        kept["payload_b64"] = _payload_at_rest(kept["payload_b64"])
    return kept


_TEXT_FIELDS = ("last_assistant_message", "prompt")
"""The payload fields that hold what the user or the assistant wrote."""


def _payload_at_rest(payload_b64: str) -> str:
    """The hook payload with its texts redacted as memories are, so no secret waits in the spool.

    A text judged an injection attempt is left out: nothing of it would be stored, and redaction
    could hide the encoded part that made it one.
    """
    import json

    from octygraph.safety.intent import injection_reason
    from octygraph.safety.secrets import redact_secrets

    raw = binascii.a2b_base64(payload_b64.encode("ascii"))
    try:
        payload = json.loads(raw)
    except ValueError:
        payload = None
    if isinstance(payload, dict):
        for key in _TEXT_FIELDS:
            text = payload.get(key)
            if isinstance(text, str):
                payload[key] = "" if injection_reason(text) else redact_secrets(text)[0]
        data = json.dumps(payload).encode()
    else:
        data = redact_secrets(raw.decode("utf-8", "replace"))[0].encode()
    return binascii.b2a_base64(data, newline=False).decode("ascii")


def spool(home: Path, message: Mapping[str, Any]) -> Path | None:
    """Keep a hand-off request for the service to work through when it (next) runs; None if impossible."""
    import json

    folder = protocol.ServicePaths(home).spool_dir
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        name = f"{time.time_ns()}-{os.getpid()}"
        tmp = folder / f".{name}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(at_rest(message), f)
        final = folder / f"{name}.json"
        os.replace(tmp, final)
        return final
    except OSError:
        return None


def worth_running(event: str, raw: bytes) -> bool:
    """False for payloads the pipeline skips (slash commands, garbage, subagents): no service is
    started for them. Only asked when no service answered, so the warm path never parses."""
    from octygraph.claude import hook_io

    try:
        return hook_io.parse_payload(event, raw) is not None
    except Exception:
        return False


def home_problem(home: str | Path) -> str:
    """Why the service cannot keep its files in `home` ("" when it can)."""
    probe = os.fspath(home).rstrip("/") or "/"
    while not os.path.exists(probe):
        parent = os.path.dirname(probe) or "."
        if parent == probe:
            break
        probe = parent
    if not os.path.isdir(probe):
        return f"{probe} is not a folder"
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"{probe} is not writable"
    return ""


def in_process_end(started: float, event: str, env: Mapping[str, str]) -> float:
    """When (`time.monotonic()`) a hook run in its own process stops waiting for the run: `WAIT_MARGIN_S`
    before the watchdog (its notice and answer to write), so the process is gone `KEPT_S` before its
    budget ends."""
    return started + watchdog_budget_s(event, env, False) - WAIT_MARGIN_S


def _in_process(
    event: str,
    raw: bytes,
    started: float,
    team_note: str = "",
    env: Mapping[str, str] | None = None,
) -> tuple[str, str]:
    """The hook run in this process, waited for until `in_process_end`: its stdout and its notice.

    The run (its imports, the embedding model and the store included) goes on in a daemon thread, so no
    import, model load, LLM call or thread join holds the process past that moment. What is not done by
    then is left, and nothing stored is lost: a prompt's answer that came goes out, and its store half
    is finished by the next service from the run's in-flight record (`octygraph.service.resume`); a stop
    or session end not done is spooled for the service, as when no service takes one.
    """
    import threading

    env = os.environ if env is None else env
    until = in_process_end(started, event, env)
    notices: list[str] = []
    answered: list[str] = []
    done = threading.Event()
    settled = threading.Event()
    returned: list[str] = []

    def run() -> None:
        try:
            from octygraph.session import hooks

            returned.append(
                hooks.answer(
                    event,
                    raw,
                    started=started,
                    notices=notices,
                    emit=answered.append,
                    until=until,
                    settled=settled.set,
                )
            )
        finally:
            done.set()

    if until - time.monotonic() > 0:
        threading.Thread(target=run, name="octy-hook", daemon=True).start()
        done.wait(max(0.0, until - time.monotonic()))
    if returned:
        stdout = returned[0]
    else:
        stdout = answered[0] if answered else ""
        if event in protocol.HANDOFF_EVENTS and not settled.is_set():
            # Too late to finish here: the service does it when it (next) runs.
            message = hook_request(event, raw, env, time.monotonic() - started)
            spool(_path(protocol.home_dir(env)), message)
    if team_note and not notices:
        notices.append(f"team memory is off for now: {team_note}")
    return stdout, "".join(notices[:1])


def _path(home: str) -> Path:
    from pathlib import Path  # off the warm path: only when a service is to be started or replaced

    return Path(home)


def _ask(
    event: str,
    raw: bytes,
    env: Mapping[str, str],
    home: str,
    deadline: Deadline,
    start_if_missing: bool,
) -> HookResult:
    """A prompt or a session start: the service's answer, waiting for a service it starts, all
    within `deadline`."""
    sock = protocol.socket_path(home)
    spawned = False
    pending: int | None = None
    note = ""
    while True:
        left = deadline.left()
        if left <= 0.01:
            return HookResult("", "skipped", note or "the budget ran out")
        message = hook_request(event, raw, env, time.monotonic() - deadline.started)
        try:
            answer = exchange(sock, message, left)
        except ServiceUnavailable as exc:
            note = f"service {exc.kind}: {exc}"
            if exc.kind == "timeout":
                # Frozen or stuck: replace it so the next prompt finds a working one; no re-run here.
                fd = replace_service(_path(home), env)
                if fd is not None:
                    os.close(fd)
                return HookResult("", "skipped", f"{note}; replaced it")
            if not start_if_missing:
                return HookResult("", "skipped", note, fallback=True)
        else:
            status = answer.get("status")
            if status == "ok":
                notice = str(answer.get("notice") or "")
                return HookResult(str(answer.get("stdout") or ""), "service", notice=notice)
            note = f"service answered {status}: {answer.get('reason') or answer.get('message')}"
            if status != "restart":
                return HookResult("", "skipped", note, notice=str(answer.get("notice") or ""))
            if not start_if_missing:
                return HookResult("", "skipped", note, fallback=True)
        # Nothing serves this home (or the one that did is leaving): start one and wait for it.
        if not spawned:
            if not worth_running(event, raw):
                return HookResult("", "skipped", f"{note}; nothing to do for this payload")
            problem = home_problem(home)
            if problem and not os.path.isdir(os.path.join(home, "projects")):
                return HookResult("", "skipped", note, notice=f"memory is off: {problem}")
            if problem:
                # No service can keep its files here, but a home we may only read still holds
                # memories: the caller answers in this process, reading them.
                return HookResult("", "skipped", f"{note}; {problem}", fallback=True)
            pending = start_service(_path(home), env)
            spawned = True
            if pending is None:
                return HookResult("", "skipped", f"{note}; could not start a service")
        if pending is not None:
            state = wait_ready(pending, max(0.0, deadline.left()))
            if state == "timeout":
                return HookResult("", "skipped", f"{note}; the new service is not ready yet")
            pending = None
            if state.startswith("error"):
                reason = state[len("error") :].strip()
                return HookResult(
                    "", "skipped", f"{note}; {reason}", notice=f"memory is off: {reason}"
                )
        else:
            time.sleep(min(0.05, max(0.0, deadline.left())))


def _handoff(
    event: str,
    raw: bytes,
    env: Mapping[str, str],
    home: str,
    deadline: Deadline,
    start_if_missing: bool,
) -> HookResult:
    """Stop: the service takes the payload, or it goes to the spool."""
    sock = protocol.socket_path(home)
    message = hook_request(event, raw, env, time.monotonic() - deadline.started)
    try:
        answer = exchange(sock, message, max(0.01, min(HANDOFF_ACK_S, deadline.left())))
    except ServiceUnavailable as exc:
        note = f"service {exc.kind}: {exc}"
        # A receipt that does not come in time may be a busy service: spool, and let it pick it up
        # (a frozen one is replaced by the next prompt, and its successor works through the spool).
        start = exc.kind != "timeout"
    else:
        status = answer.get("status")
        if status == "accepted":
            return HookResult("", "service")
        note = f"service answered {status}: {answer.get('reason') or answer.get('message')}"
        start = status == "restart"
    if start and not worth_running(event, raw):
        return HookResult("", "skipped", f"{note}; nothing to do for this payload")
    if start and not start_if_missing:
        return HookResult("", "skipped", note, fallback=True)  # the caller runs it here
    if spool(_path(home), message) is None:
        return HookResult("", "skipped", f"{note}; could not spool it")
    if start:
        fd = start_service(_path(home), env)
        if fd is not None:
            os.close(fd)  # do not wait: the service works through the spool when it is ready
    return HookResult("", "spooled", note)


def _warm_local_fallback(env: Mapping[str, str], home: Path, start_if_missing: bool) -> None:
    """While the team server is asked, make local memory ready, so a fallback fits in the reserve.

    With a team server the local service is usually not running, and starting one (or loading the
    pipeline in this process) takes longer than LOCAL_RESERVE_S on a busy machine.
    """
    if env.get("OCTY_NO_SERVICE") == "1" or not start_if_missing:
        import threading

        threading.Thread(target=_preload_pipeline, name="octy-preload", daemon=True).start()
        return
    if home_problem(home) or read_pid(home) is not None:
        return
    fd = start_service(home, env)  # detached; a later `_ask` finds it listening, or starting
    if fd is not None:
        os.close(fd)


def _preload_pipeline() -> None:
    """Import and compile what an in-process hook run needs (it then finds them loaded)."""
    try:
        import octygraph.llm.factory  # noqa: F401  (the model SDKs: seconds of imports)
        from octygraph.config.settings import Settings
        from octygraph.pipeline.runner import compiled_graph

        compiled_graph()
        if Settings.from_env().embedding_backend == "local":
            from octygraph.embeddings import local_embeddings

            local_embeddings().embed_array(["warm up"])
    except Exception:
        pass  # the run itself reports what is wrong


def run_hook(
    event: str,
    raw: bytes,
    *,
    env: Mapping[str, str] | None = None,
    started: float | None = None,
    start_if_missing: bool = True,
) -> HookResult:
    """Answer one hook call through the service, within the hook's budget.

    Args:
        event: `prompt`, `stop` or `session-start`.
        raw: The hook's stdin bytes.
        env: The client's environment (default `os.environ`).
        started: `time.monotonic()` when the hook process started, so the budget covers all of it.
        start_if_missing: Start a detached service when none answers. False (the `python -m octygraph
            hook` route) runs the hook in this process instead when no service answers.

    Returns:
        The text to print and the path that produced it. Never raises.
    """
    env = os.environ if env is None else env
    if started is None:
        started = time.monotonic() - process_age_s()
    home = protocol.home_dir(env)
    if event in protocol.HANDOFF_EVENTS:
        deadline = Deadline(started, HANDOFF_BUDGET_S)
    else:
        # Whatever is asked (a team server, a service, this process in the end), all of it is over
        # `WAIT_MARGIN_S` before the watchdog, so the process is gone `KEPT_S` before the budget.
        deadline = Deadline(
            started, watchdog_budget_s(event, env, start_if_missing) - WAIT_MARGIN_S
        )
    result = HookResult("", "skipped", "OCTY_NO_SERVICE=1", fallback=True)
    team_note = ""
    if env.get("OCTY_SERVER_URL"):
        # A team server first; when it cannot answer in time, local offline memory below.
        from octygraph.service.remote import LOCAL_RESERVE_S, RemoteUnavailable, remote_hook

        if event not in protocol.HANDOFF_EVENTS:
            _warm_local_fallback(env, _path(home), start_if_missing)
        try:
            reply = remote_hook(event, raw, env, deadline.left() - LOCAL_RESERVE_S)
            return HookResult(reply["stdout"], "service", "team server", notice=reply["notice"])
        except RemoteUnavailable as exc:
            team_note = f"{exc}; local memory instead"
        except Exception as exc:
            team_note = f"team server: {type(exc).__name__}: {exc}; local memory instead"
    try:
        if env.get("OCTY_NO_SERVICE") != "1":
            if event in protocol.HANDOFF_EVENTS:
                result = _handoff(event, raw, env, home, deadline, start_if_missing)
            else:
                result = _ask(event, raw, env, home, deadline, start_if_missing)
        if not result.fallback:
            return result
    except Exception as exc:  # the prompt goes through whatever happens
        return HookResult("", "skipped", f"client error: {type(exc).__name__}: {exc}")
    # No service (OCTY_NO_SERVICE=1, or the `python -m octygraph hook` route): run it here, within
    # the watchdog's budget.
    try:
        stdout, notice = _in_process(event, raw, started, team_note, env)
        return HookResult(stdout, "in-process", result.note or team_note, notice=notice)
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            return HookResult("", "in-process", "interrupted")
        return HookResult("", "in-process", f"{type(exc).__name__}: {exc}")


# --------------------------------------------------------------------------- telling the user once

NOTICES_NAME = "notices.json"
MAX_NOTICE_SESSIONS = 500


def _notices_file(home: Path) -> Path:
    if not home_problem(home):
        return home / NOTICES_NAME
    # An unwritable home cannot keep the record: a private folder in the temp dir does, one per home.
    import hashlib

    digest = hashlib.sha256(os.fsencode(str(home.absolute()))).hexdigest()[:16]
    return protocol.short_socket_dir() / f"notices-{digest}.json"


def first_time(home: Path, session_id: str, notice: str) -> bool:
    """Record that `session_id` was told `notice`; False when it was told already (or cannot be told)."""
    import json

    if not session_id:
        return False
    try:
        path = _notices_file(home)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict):
                data = {}
        except (OSError, ValueError):
            data = {}
        told = data.get(session_id)
        told = told if isinstance(told, list) else []
        if notice in told:
            return False
        data.pop(session_id, None)
        data[session_id] = [*told, notice]  # newest last; the oldest sessions are dropped first
        while len(data) > MAX_NOTICE_SESSIONS:
            data.pop(next(iter(data)))
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except (OSError, ValueError):
        return False
    return True


def _session_id(raw: bytes) -> str:
    import json

    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return ""
    value = data.get("session_id") if isinstance(data, dict) else None
    return value if isinstance(value, str) else ""


def client_notice(env: Mapping[str, str], home: str | Path) -> str:
    """What is wrong that the client can see cheaply: a bad setting, a home it cannot write."""
    problems = table.problems(env)
    if problems:
        return f"memory is off: {problems[0]}"
    problem = home_problem(home)
    return f"memory is off: {problem}" if problem else ""


def with_notice(event: str, stdout: str, notice: str) -> str:
    """The hook's stdout with a one-line `systemMessage` for the user added."""
    import json

    message = f"octygraph: {notice.rstrip('.')}. Run `octygraph doctor` to see how to fix it."
    try:
        data = json.loads(stdout) if stdout.strip() else {}
    except ValueError:
        return stdout
    if not isinstance(data, dict):
        return stdout
    data["systemMessage"] = message
    return json.dumps(data, ensure_ascii=False)


def read_stdin(limit: int = STDIN_LIMIT) -> bytes:
    """The hook payload: at most `limit` bytes of stdin; b"" for a terminal or a read error."""
    try:
        if sys.stdin is None or sys.stdin.isatty():
            return b""
        return sys.stdin.buffer.read(limit)
    except (AttributeError, OSError, ValueError):
        return b""


def hook_budget_s(event: str, env: Mapping[str, str]) -> float:
    """The budget of an answering hook (prompt, session-start), from process start."""
    budget = protocol.hook_budget_s(env)
    return min(budget, START_BUDGET_S) if event == "session-start" else budget


def watchdog_budget_s(event: str, env: Mapping[str, str], start_if_missing: bool) -> float:
    """How long, from process start, the hook process may live at most."""
    budget = hook_budget_s(event, env)
    in_process = env.get("OCTY_NO_SERVICE") == "1" or not start_if_missing
    if in_process:
        # In-process, a stop run gets four prompt budgets, as in the service. Whatever the run does,
        # the process (an answer's write included) is gone `KEPT_S` before the budget ends.
        if event in protocol.HANDOFF_EVENTS:
            budget *= 4
        return max(0.0, budget - KEPT_S - WRITE_GUARD_S - EXIT_MARGIN_S)
    if event in protocol.HANDOFF_EVENTS:
        return HANDOFF_BUDGET_S * 2
    # The service's run is over `KEPT_S` plus its answer's margin before the budget (`run_deadline`):
    # waiting past `KEPT_S` would only wait out a frozen service.
    return budget - KEPT_S - EXIT_MARGIN_S


def hook_main(event: str, *, start_if_missing: bool = True) -> None:
    """The whole hook process: read stdin, answer, print, and exit 0 (never returns).

    A watchdog thread ends the process with exit 0 when the budget, counted from process start, runs
    out, whatever the service or an in-process run is doing.
    """
    started = time.monotonic() - process_age_s()
    try:
        import _thread

        guard = _thread.allocate_lock()
        env = os.environ
        start_watchdog(started + watchdog_budget_s(event, env, start_if_missing), guard)
        if env.get("OCTY_NO_HOOKS") != "1":
            raw = read_stdin()
            result = run_hook(
                event, raw, env=env, started=started, start_if_missing=start_if_missing
            )
            out = result.stdout
            if event not in protocol.HANDOFF_EVENTS:
                home = protocol.home_dir(env)
                notice = result.notice or client_notice(env, home)
                if notice and first_time(_path(home), _session_id(raw), notice):
                    out = with_notice(event, out, notice)
            if out and guard.acquire(blocking=False):
                data = out.encode("utf-8", "surrogateescape")
                while data:
                    data = data[os.write(1, data) :]
    except BaseException:
        pass
    # Exit now: a pipeline thread cut off by the budget must not hold the prompt until it returns.
    os._exit(0)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_pid(home: Path) -> int | None:
    """The pid in the service's pid file, when that process still exists."""
    try:
        pid = int(protocol.ServicePaths(home).pid_file.read_text().strip() or "0")
    except (OSError, ValueError):
        return None
    return pid if pid > 0 and _pid_alive(pid) else None


def health_at(home: Path, timeout_s: float = STATUS_TIMEOUT_S) -> dict[str, Any]:
    """The service's health for an OCTYBOT_HOME folder (see `service_health`)."""
    paths = protocol.ServicePaths(home)
    sock = paths.socket
    base: dict[str, Any] = {
        "running": False,
        "state": "stopped",
        "pid": None,
        "uptime_s": None,
        "version": None,
        "socket": str(sock),
        "requests": None,
        "log": str(paths.log_file),
    }
    try:
        answer = exchange(sock, {"op": "status"}, timeout_s)
    except ServiceUnavailable as exc:
        pid = read_pid(home)
        if exc.kind == "timeout" or (pid is not None and sock.exists()):
            return {**base, "state": "not answering", "pid": pid}
        if pid is not None:
            return {**base, "state": "starting or stopping", "pid": pid}
        if sock.exists():
            return {**base, "state": "stale socket"}
        return base
    return {**base, **answer.get("health", {}), "running": True, "state": "running"}


def service_health(settings: Settings) -> dict[str, Any]:
    """Health of the user's service: running, state, pid, uptime_s, version, socket, requests, ...

    Never raises and never starts a service; `running` is False when none answers.
    """
    try:
        return health_at(_path(str(settings.home)))
    except Exception as exc:
        return {"running": False, "state": f"unknown ({type(exc).__name__})", "pid": None}


def stop_service(home: Path, timeout_s: float = 30.0) -> dict[str, Any]:
    """Ask the service to stop (SIGTERM when it does not answer) and wait until it has let go.

    Returns:
        `{"was_running": bool, "stopped": bool, "pid": int | None}`.
    """
    import signal

    pid = read_pid(home)
    sock = protocol.ServicePaths(home).socket
    try:
        answer = exchange(sock, {"op": "stop"}, STATUS_TIMEOUT_S)
        pid = int(answer.get("pid") or 0) or pid
    except ServiceUnavailable:
        if pid is None:
            return {"was_running": False, "stopped": True, "pid": None}
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if read_pid(home) is None:
            return {"was_running": True, "stopped": True, "pid": pid}
        time.sleep(0.05)
    return {"was_running": True, "stopped": False, "pid": pid}

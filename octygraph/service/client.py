"""The hook's thin client: hand the payload to the resident service, or run the pipeline in-process.

Standard library only at import time. Claude Code starts a new process for every hook, so this path
must not import LangGraph, LangChain, NumPy or onnxruntime: with a warm service a prompt costs a
Python start-up and a socket round trip. When no service answers, the client starts one (detached)
and runs this prompt in-process, so the prompt still gets its context and the next one is fast.
"""

from __future__ import annotations

import base64
import errno
import os
import socket
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from octygraph.service import protocol

# Not `typing.TYPE_CHECKING` (see protocol): the client imports only what it needs on every prompt.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal

    from octygraph.settings import Settings

    Via = Literal["service", "in-process", "skipped"]
    Failure = Literal["absent", "broken", "timeout"]

CONNECT_TIMEOUT_S = 0.5
STATUS_TIMEOUT_S = 2.0
# A stop run gets four budgets in the service (as in-process); the client waits a little longer.
STOP_BUDGET_FACTOR = 4.0
GRACE_S = 1.5
STDIN_LIMIT = 1_000_000  # as octygraph.claude.hook_io


class ServiceUnavailable(Exception):
    """No service answered: `absent` (nothing listening), `broken` (it failed mid-way), `timeout`."""

    def __init__(self, kind: Failure, detail: str) -> None:
        super().__init__(detail)
        self.kind: Failure = kind


class HookResult:
    """What a hook printed and which path produced it (`service`, `in-process` or `skipped`)."""

    __slots__ = ("note", "stdout", "via")

    def __init__(self, stdout: str, via: Via, note: str = "") -> None:
        self.stdout = stdout
        self.via: Via = via
        self.note = note

    def __repr__(self) -> str:
        return f"HookResult(via={self.via!r}, stdout={len(self.stdout)} chars, note={self.note!r})"


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    chunks: list[bytes] = []
    left = size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ServiceUnavailable("broken", "the service closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def exchange(socket_path: Path, message: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """Send one message to the service and wait for its answer.

    Raises:
        ServiceUnavailable: nothing listens (`absent`), the connection broke (`broken`), or no answer
            came within `timeout_s` (`timeout`).
    """
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT_S)
        try:
            sock.connect(os.fspath(socket_path))
        except (FileNotFoundError, ConnectionRefusedError, NotADirectoryError) as exc:
            raise ServiceUnavailable("absent", f"no service at {socket_path}: {exc}") from None
        except OSError as exc:
            kind: Failure = (
                "absent" if exc.errno in (errno.ENOENT, errno.ECONNREFUSED) else "broken"
            )
            raise ServiceUnavailable(kind, f"cannot connect to {socket_path}: {exc}") from None
        sock.settimeout(timeout_s)
        try:
            sock.sendall(protocol.encode(message))
            size = protocol.frame_size(_recv_exact(sock, protocol.HEADER.size))
            return protocol.decode(_recv_exact(sock, size))
        except TimeoutError:
            raise ServiceUnavailable("timeout", f"no answer within {timeout_s:g} s") from None
        except (OSError, protocol.ProtocolError) as exc:
            raise ServiceUnavailable("broken", f"the exchange failed: {exc}") from None
    finally:
        sock.close()


def start_service(home: Path, env: Mapping[str, str] | None = None) -> int | None:
    """Start `python -m octygraph serve` detached, its output in the service log; returns its pid.

    Two clients may both start one: the second finds the first holding the lock and exits.
    """
    import subprocess

    paths = protocol.ServicePaths(home)
    child_env = dict(os.environ if env is None else env)
    for name in ("OCTY_NO_SERVICE", "OCTY_NO_HOOKS"):
        child_env.pop(name, None)
    child_env["PYTHONUNBUFFERED"] = "1"
    try:
        paths.log_file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        _rotate(paths.log_file)
        fd = os.open(paths.log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    except OSError:
        fd = os.open(os.devnull, os.O_WRONLY)
    try:
        child = subprocess.Popen(
            [sys.executable, "-m", "octygraph", "serve"],
            stdin=subprocess.DEVNULL,
            stdout=fd,
            stderr=fd,
            cwd=str(home) if home.is_dir() else None,
            env=child_env,
            start_new_session=True,
            close_fds=True,
        )
    except OSError:
        return None
    finally:
        os.close(fd)
    return child.pid


def _rotate(log: Path, max_bytes: int = 1_000_000) -> None:
    try:
        if log.stat().st_size > max_bytes:
            os.replace(log, log.with_name(log.name + ".1"))
    except OSError:
        pass


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
        "payload_b64": base64.b64encode(raw).decode("ascii"),
        "env": protocol.request_env(env),
        "cwd": cwd,
        "process_env": protocol.process_env(env),
        "version": protocol.package_version(),
        "elapsed_s": elapsed_s,
    }


def _worth_running(event: str, raw: bytes) -> bool:
    """False for payloads the pipeline would skip anyway (slash commands, garbage, subagents)."""
    from octygraph.claude import hook_io

    if event == "prompt":
        return hook_io.parse_prompt_payload(raw) is not None
    if event == "stop":
        request = hook_io.parse_stop_payload(raw)
        return request is not None and bool(request.last_assistant_message.strip())
    return False


def _in_process(event: str, raw: bytes, started: float) -> str:
    from octygraph import hooks

    return hooks.answer(event, raw, started=started)


def run_hook(
    event: str,
    raw: bytes,
    *,
    env: Mapping[str, str] | None = None,
    started: float | None = None,
    start_if_missing: bool = True,
) -> HookResult:
    """Answer one hook call: through the service when one answers, else in-process.

    Args:
        event: `prompt` or `stop`.
        raw: The hook's stdin bytes.
        env: The client's environment (default `os.environ`).
        started: `time.monotonic()` when the hook process started, so the budget covers all of it.
        start_if_missing: Start a detached service when none answers (the next call will use it).

    Returns:
        The text to print and the path that produced it. Never raises.
    """
    env = os.environ if env is None else env
    started = time.monotonic() if started is None else started
    note = "OCTY_NO_SERVICE=1"
    start = False
    home = protocol.home_from_env(env)
    if env.get("OCTY_NO_SERVICE") != "1":
        # The service parses the payload itself: the client stays free of the parsing modules.
        budget = protocol.hook_budget_s(env)
        wait_s = budget * (STOP_BUDGET_FACTOR if event == "stop" else 1.0) + GRACE_S
        try:
            sock = protocol.ServicePaths(home).socket
            message = hook_request(event, raw, env, time.monotonic() - started)
            answer = exchange(sock, message, wait_s)
            status = answer.get("status")
            if status == "ok":
                return HookResult(str(answer.get("stdout") or ""), "service")
            note = f"service answered {status}: {answer.get('reason') or answer.get('message')}"
            start = status == "restart"
        except ServiceUnavailable as exc:
            note = f"service {exc.kind}: {exc}"
            # A slow service is still alive; anything else means none is serving this home.
            start = exc.kind != "timeout"
            if exc.kind == "timeout" and event == "stop":
                # The service is still storing it; running it again here would store it twice.
                return HookResult("", "skipped", note)
        except Exception as exc:  # the prompt goes through whatever happens
            note = f"client error: {type(exc).__name__}: {exc}"
    try:
        if not _worth_running(event, raw):
            return HookResult("", "skipped", note)
    except Exception:
        return HookResult("", "skipped", note)
    if start and start_if_missing:
        start_service(home, env)
    try:
        return HookResult(_in_process(event, raw, started), "in-process", note)
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            return HookResult("", "in-process", "interrupted")
        return HookResult("", "in-process", f"{type(exc).__name__}: {exc}")


def read_stdin(limit: int = STDIN_LIMIT) -> bytes:
    """The hook payload: at most `limit` bytes of stdin; b"" for a terminal or a read error."""
    try:
        if sys.stdin is None or sys.stdin.isatty():
            return b""
        return sys.stdin.buffer.read(limit)
    except (AttributeError, OSError, ValueError):
        return b""


def hook_main(event: str, *, start_if_missing: bool = True) -> None:
    """The whole hook process: read stdin, answer, print, and exit 0 at once (never returns)."""
    started = time.monotonic()
    try:
        if os.environ.get("OCTY_NO_HOOKS") != "1":
            result = run_hook(
                event, read_stdin(), started=started, start_if_missing=start_if_missing
            )
            if result.stdout:
                sys.stdout.write(result.stdout)
            sys.stdout.flush()
            sys.stderr.flush()
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
        return health_at(Path(settings.home))
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

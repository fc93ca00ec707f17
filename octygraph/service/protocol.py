"""What the hook client and the resident service agree on: file locations, framing, versions, env.

Standard library only: the hook client imports this module on every prompt, before anything heavy.

Messages are JSON objects, each sent as a 4-byte big-endian length followed by that many bytes of UTF-8.
A hook request is `{"op": "hook", "event", "payload_b64", "env", "process_env", "cwd", "version",
"elapsed_s", "handoff"}`; the answer is `{"status": "ok", "stdout": ..., "notice": ...}` (`notice`: one
line for the user when memory is degraded, or ""), `{"status": "accepted"}` for a hand-off (stop and
session-end: acknowledged on receipt, worked on afterwards; session-start answers like a prompt),
`{"status": "restart", "reason": ...}` or `{"status": "error", "message": ...}`. `{"op": "status"}`
answers the service's health and `{"op": "stop"}` asks it to finish what it is doing and exit.
"""

from __future__ import annotations

import os
import struct

import octygraph
from octygraph.config import setting_table as table

# Not `typing.TYPE_CHECKING`: importing typing costs the hook client milliseconds on every prompt.
# Nor pathlib at import time (it brings re, fnmatch and urllib.parse): the warm hook path works on
# strings (`home_dir`, `socket_path`), and `Path` is imported where one is made. Nor `json` (it brings
# re and enum, several ms a prompt): frames go through its C half, `_json`, below.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path
    from typing import Any

HOOK_EVENTS = ("prompt", "stop", "session-start", "session-end")
"""`octygraph hook EVENT`: UserPromptSubmit, Stop, SessionStart and SessionEnd."""
HANDOFF_EVENTS = ("stop", "session-end")
"""Events whose work the service does after acknowledging receipt (nothing to answer)."""

SOCKET_NAME = "octygraph.sock"
PID_NAME = "octygraph.pid"
LOCK_NAME = "octygraph.lock"
LOG_NAME = "serve.log"
SPOOL_NAME = "spool"
# sun_path is 108 bytes on Linux and 104 on macOS; keep a margin for the terminating NUL.
MAX_SOCKET_PATH = 100
MAX_FRAME = 16 * 1024 * 1024
HEADER = struct.Struct(">I")
DEFAULT_IDLE_S: float = table.default("OCTY_SERVE_IDLE_S")
DEFAULT_HOOK_BUDGET_S: float = table.default("OCTY_HOOK_BUDGET_S")

# Variables the pipeline reads through `Settings.from_env(env=...)`: the service takes them from each
# request, so one service serves projects and shells that set them differently.
SETTINGS_VARS = table.REQUEST_VARS
# Read by the client alone, or configure the service itself: they never force a restart.
CLIENT_VARS = table.CLIENT_VARS
# Read from the service's own environment: a service started with other values is replaced.
SERVICE_VARS = table.SERVICE_VARS


class ProtocolError(Exception):
    """A frame that is too large, truncated or not a JSON object."""


class ServicePaths:
    """Where one user's service keeps its socket, pid file, lock and log."""

    __slots__ = ("home",)

    def __init__(self, home: Path) -> None:
        self.home = home

    @property
    def socket(self) -> Path:
        from pathlib import Path

        return Path(socket_path(str(self.home)))  # the client's string path, exactly

    @property
    def pid_file(self) -> Path:
        return self.home / PID_NAME

    @property
    def lock_file(self) -> Path:
        return self.home / LOCK_NAME

    @property
    def log_file(self) -> Path:
        return self.home / "debug" / LOG_NAME

    @property
    def spool_dir(self) -> Path:
        """Hand-off requests (stop) no service took; the service works through them."""
        return self.home / SPOOL_NAME


def long_home_socket_name(home: str) -> str:
    """The socket's name in `short_socket_dir()` for a home too deep to hold it: one per home."""
    import hashlib

    return hashlib.sha256(os.fsencode(os.path.abspath(home))).hexdigest()[:16] + ".sock"


def socket_path(home: str) -> str:
    """`ServicePaths(home).socket` as a string, without pathlib (the hook client's warm path)."""
    path = os.path.join(home, SOCKET_NAME)
    if len(os.fsencode(os.path.abspath(path))) <= MAX_SOCKET_PATH:
        return path
    # A deep OCTYBOT_HOME cannot hold a socket: use a private folder in the temp dir, one per home.
    return os.path.join(short_socket_dir(), long_home_socket_name(home))


def short_socket_dir() -> Path:
    """`<tmp>/octygraph-<uid>`, created 0700; refuses a folder that another user owns."""
    import tempfile
    from pathlib import Path

    folder = Path(tempfile.gettempdir()) / f"octygraph-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    info = folder.lstat()
    if info.st_uid != os.getuid() or not folder.is_dir() or folder.is_symlink():
        raise PermissionError(f"{folder} is not a private folder of this user.")
    if info.st_mode & 0o077:
        folder.chmod(0o700)
    return folder


def home_from_env(env: Mapping[str, str]) -> Path:
    """`$OCTYBOT_HOME` or `~/.octybot`, as `Settings.from_env` resolves it."""
    from pathlib import Path

    return Path(home_dir(env))


def home_dir(env: Mapping[str, str]) -> str:
    """`home_from_env` as a string, without pathlib."""
    return os.path.expanduser(env.get("OCTYBOT_HOME") or os.path.join("~", ".octybot"))


def hook_budget_s(env: Mapping[str, str]) -> float:
    """`OCTY_HOOK_BUDGET_S` (default 12 s); a bad value falls back to the default, as hooks never fail."""
    return float(table.lenient("OCTY_HOOK_BUDGET_S", env))


def idle_timeout_s(env: Mapping[str, str]) -> float:
    """`OCTY_SERVE_IDLE_S` (default 30 minutes)."""
    return float(table.lenient("OCTY_SERVE_IDLE_S", env))


def request_env(env: Mapping[str, str]) -> dict[str, str]:
    """The part of the client's environment that the service needs to answer like the client would.

    Relative paths are made absolute here, against the client's working folder, not the service's.
    """
    found = {k: v for k, v in env.items() if k in SETTINGS_VARS}
    for name in ("DB_PATH", "OCTYBOT_HOME"):
        if found.get(name):
            found[name] = os.path.abspath(os.path.expanduser(found[name]))
    return found


def process_env(env: Mapping[str, str]) -> dict[str, str]:
    """The variables the service reads from its own environment (a service started with others restarts).

    Only the `service` rows of the settings table: other variables (`ANTHROPIC_MODEL`, anything the
    pipeline never reads) do not matter to it.
    """
    return {k: v for k, v in env.items() if k in SERVICE_VARS}


def service_env(base: Mapping[str, str], requested: Mapping[str, str]) -> dict[str, str]:
    """The environment a request runs with: the service's own, with the settings variables of the client."""
    merged = {k: v for k, v in base.items() if k not in SETTINGS_VARS}
    merged.update({k: v for k, v in requested.items() if k in SETTINGS_VARS})
    return merged


def package_version() -> str:
    """`__version__` plus the newest mtime of the package folder and its subpackage folders.

    Installing another build replaces the files, and saving a source file usually renames a new file into
    its folder, so either changes a folder's mtime; a running service with older code then restarts.
    """
    root = os.path.dirname(octygraph.__file__)
    newest = 0
    try:
        newest = os.stat(root).st_mtime_ns
        with os.scandir(root) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False) and not entry.name.startswith(("_", ".")):
                    newest = max(newest, entry.stat(follow_symlinks=False).st_mtime_ns)
    except OSError:
        pass
    return f"{octygraph.__version__}+{newest}"


class _Plain:
    """The options `_json.make_scanner` reads from a decoder: those of a plain `json.loads`."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.get


def _unencodable(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _json_codec() -> tuple[Any, Any]:
    """(encode, scan): `json.dumps(..., ensure_ascii=False, separators=(",", ":"))` and `json.loads`,
    from the C accelerator `json` itself uses; `json` where a Python has no `_json`."""
    try:
        import _json
    except ImportError:  # pragma: no cover (CPython has it)
        import json

        return (
            lambda obj: json.dumps(obj, ensure_ascii=False, separators=(",", ":")),
            lambda text: (json.loads(text), len(text)),
        )

    def dumps(obj: object) -> str:
        # A new encoder each time, as `json.dumps` makes: its dict of markers must start empty.
        make = _json.make_encoder(
            {}, _unencodable, _json.encode_basestring, None, ":", ",", False, False, True
        )
        return "".join(make(obj, 0))

    scan = _json.make_scanner(_Plain())  # type: ignore[arg-type]  # it reads the attributes only
    return (dumps, lambda text: scan(text, 0))


_ENCODE, _SCAN = _json_codec()


def encode(message: Mapping[str, Any]) -> bytes:
    """One frame: length prefix and compact JSON."""
    body = _ENCODE(message).encode("utf-8", "surrogatepass")
    if len(body) > MAX_FRAME:
        raise ProtocolError(f"A message of {len(body)} bytes is larger than {MAX_FRAME}.")
    return HEADER.pack(len(body)) + body


def frame_size(header: bytes) -> int:
    """The body length announced by a header; refuses oversized frames."""
    (size,) = HEADER.unpack(header)
    if size > MAX_FRAME:
        raise ProtocolError(f"A frame of {size} bytes is larger than {MAX_FRAME}.")
    return int(size)


def decode(body: bytes) -> dict[str, Any]:
    """The JSON object in a frame body."""
    try:
        text = body.decode("utf-8", "surrogatepass").strip(" \t\n\r")
        data, end = _SCAN(text)
    except StopIteration as stop:  # the scanner's "nothing parsable at this index"
        raise ProtocolError(f"A frame is not JSON (at character {stop.value}).") from None
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ProtocolError(f"A frame is not JSON: {exc}") from None
    if end != len(text):
        raise ProtocolError(f"A frame is not JSON: extra data at character {end}.")
    if not isinstance(data, dict):
        raise ProtocolError("A frame is not a JSON object.")
    return data

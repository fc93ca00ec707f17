"""What the hook client and the resident service agree on: file locations, framing, versions, env.

Standard library only: the hook client imports this module on every prompt, before anything heavy.

Messages are JSON objects, each sent as a 4-byte big-endian length followed by that many bytes of UTF-8.
A hook request is `{"op": "hook", "event", "payload_b64", "env", "process_env", "cwd", "version",
"elapsed_s"}`; the answer is `{"status": "ok", "stdout": ...}`, `{"status": "restart", "reason": ...}`
or `{"status": "error", "message": ...}`. `{"op": "status"}` answers the service's health and
`{"op": "stop"}` asks it to finish what it is doing and exit.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Mapping
from pathlib import Path

import octygraph

# Not `typing.TYPE_CHECKING`: importing typing costs the hook client milliseconds on every prompt.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SOCKET_NAME = "octygraph.sock"
PID_NAME = "octygraph.pid"
LOCK_NAME = "octygraph.lock"
LOG_NAME = "serve.log"
# sun_path is 108 bytes on Linux and 104 on macOS; keep a margin for the terminating NUL.
MAX_SOCKET_PATH = 100
MAX_FRAME = 16 * 1024 * 1024
HEADER = struct.Struct(">I")
DEFAULT_IDLE_S = 30 * 60.0
DEFAULT_HOOK_BUDGET_S = 12.0

# Variables the pipeline reads through `Settings.from_env(env=...)`: the service takes them from each
# request, so one service serves projects and shells that set them differently.
SETTINGS_VARS = frozenset(
    {
        "OCTYBOT_HOME",
        "OCTYBOT_PROJECT",
        "CLAUDE_PROJECT_DIR",  # names the project when the hooks pin none (user scope, the plugin)
        "DB_PATH",
        "OPENROUTER_API_KEY",
        "OCTY_LLM_BASE_URL",
        "OCTY_LLM_API_KEY",
        "CLOUDFLARE_API_TOKEN",
        "CF_ACCOUNT_ID",
        "ANTHROPIC_API_KEY",
        "LAYER1",
        "LAYER2",
        "OCTY_EMBEDDINGS",
        "VOYAGE_API_KEY",
        "VOYAGE_MODEL",
        "WORKER_URL",
        "OCTY_MAX_TURNS",
        "OCTY_LOOP_TIMEOUT_S",
        "OCTY_CONTEXT_BUDGET",
        "OCTY_HOOK_BUDGET_S",
        "OCTY_DEBUG",
    }
)
# Read by the client alone, or configure the service itself: they never force a restart.
CLIENT_VARS = frozenset({"OCTY_NO_SERVICE", "OCTY_NO_HOOKS", "OCTY_SERVE_IDLE_S"})
# Other variables that change what the pipeline does but are read from the process environment
# (base-URL overrides, retry delays, tracing): a service started with different values restarts.
_PROCESS_PREFIXES = ("OCTY_", "OCTYBOT_", "LANGSMITH_", "LANGCHAIN_", "ANTHROPIC_", "OPENAI_")


class ProtocolError(Exception):
    """A frame that is too large, truncated or not a JSON object."""


class ServicePaths:
    """Where one user's service keeps its socket, pid file, lock and log."""

    __slots__ = ("home",)

    def __init__(self, home: Path) -> None:
        self.home = home

    @property
    def socket(self) -> Path:
        path = self.home / SOCKET_NAME
        if len(os.fsencode(str(path.absolute()))) <= MAX_SOCKET_PATH:
            return path
        # A deep OCTYBOT_HOME cannot hold a socket: use a private folder in the temp dir, one per home.
        import hashlib

        digest = hashlib.sha256(os.fsencode(str(self.home.absolute()))).hexdigest()[:16]
        return short_socket_dir() / f"{digest}.sock"

    @property
    def pid_file(self) -> Path:
        return self.home / PID_NAME

    @property
    def lock_file(self) -> Path:
        return self.home / LOCK_NAME

    @property
    def log_file(self) -> Path:
        return self.home / "debug" / LOG_NAME


def short_socket_dir() -> Path:
    """`<tmp>/octygraph-<uid>`, created 0700; refuses a folder that another user owns."""
    import tempfile

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
    return Path(env.get("OCTYBOT_HOME") or Path.home() / ".octybot").expanduser()


def hook_budget_s(env: Mapping[str, str]) -> float:
    """`OCTY_HOOK_BUDGET_S` (default 12 s); a bad value falls back to the default, as hooks never fail."""
    try:
        value = float(env.get("OCTY_HOOK_BUDGET_S") or DEFAULT_HOOK_BUDGET_S)
    except ValueError:
        return DEFAULT_HOOK_BUDGET_S
    return value if value > 0 else DEFAULT_HOOK_BUDGET_S


def idle_timeout_s(env: Mapping[str, str]) -> float:
    """`OCTY_SERVE_IDLE_S` (default 30 minutes)."""
    try:
        value = float(env.get("OCTY_SERVE_IDLE_S") or DEFAULT_IDLE_S)
    except ValueError:
        return DEFAULT_IDLE_S
    return value if value > 0 else DEFAULT_IDLE_S


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
    """The variables read from the process environment (a service started with others restarts)."""
    return {
        k: v
        for k, v in env.items()
        if k.startswith(_PROCESS_PREFIXES) and k not in SETTINGS_VARS and k not in CLIENT_VARS
    }


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
    root = Path(octygraph.__file__).parent
    newest = 0
    try:
        newest = root.stat().st_mtime_ns
        with os.scandir(root) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False) and not entry.name.startswith(("_", ".")):
                    newest = max(newest, entry.stat(follow_symlinks=False).st_mtime_ns)
    except OSError:
        pass
    return f"{octygraph.__version__}+{newest}"


def encode(message: Mapping[str, Any]) -> bytes:
    """One frame: length prefix and compact JSON."""
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode(
        "utf-8", "surrogatepass"
    )
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
        data = json.loads(body.decode("utf-8", "surrogatepass"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ProtocolError(f"A frame is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ProtocolError("A frame is not a JSON object.")
    return data

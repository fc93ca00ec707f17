"""Dev and verbose modes: flag files toggled by `/octybot dev-mode` and `/octybot verbose-mode`.

A mode is on while its flag file exists (`debug/.dev-mode`, `debug/.verbose-mode`). In dev mode, pipeline
details are appended to `debug/dev.log`, one timestamped line per event.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from octygraph.config.private import private_mkdir
from octygraph.config.settings import ProjectPaths

# Past this size the dev log is rotated to `dev.log.1` so it cannot grow without bound.
DEV_LOG_MAX_BYTES = 5_000_000


def is_on(flag_path: Path) -> bool:
    """True when the mode's flag file exists."""
    try:
        return flag_path.is_file()
    except OSError:
        return False


def set_mode(flag_path: Path, on: bool) -> bool:
    """Turn a mode on (create the flag file) or off (remove it); returns the new state."""
    if on:
        private_mkdir(flag_path.parent)
        fd = os.open(flag_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(datetime.now(UTC).isoformat(timespec="seconds") + "\n")
    else:
        flag_path.unlink(missing_ok=True)
    return on


def toggle(flag_path: Path) -> bool:
    """Flip a mode and return its new state (True = on)."""
    return set_mode(flag_path, not is_on(flag_path))


def dev_log(paths: ProjectPaths, event: str, data: dict[str, Any]) -> None:
    """Append `<timestamp> <event> <json>` to the dev log when dev mode is on; never raises."""
    try:
        if not is_on(paths.dev_mode_flag):
            return
        log = paths.dev_log
        private_mkdir(log.parent)
        try:
            if log.stat().st_size > DEV_LOG_MAX_BYTES:
                os.replace(log, log.with_name(log.name + ".1"))
        except FileNotFoundError:
            pass
        stamp = datetime.now(UTC).isoformat(timespec="milliseconds")
        from octygraph.safety.secrets import redact_deep

        body = json.dumps(redact_deep(data), ensure_ascii=False, default=str, sort_keys=True)
        line = f"{stamp} {event} {body}\n"
        # O_APPEND keeps lines from concurrent hooks whole.
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as handle:
            handle.write(line)
    except Exception:  # logging must never break the hook
        return

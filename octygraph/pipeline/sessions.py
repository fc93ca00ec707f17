"""What one Claude Code session has already seen: memories injected into it, memories stored from it.

Both are in the conversation already, so injecting them again only repeats context. What octygraph
injected it knows went into the conversation; what the session stored is the user's own words, which
the pipeline takes as still in front of the model while the hook names a transcript that exists. After
Claude Code compacts the conversation (SessionStart with source "compact") the transcript is a summary,
and everything may be injected again. One small JSON file per session, under the project's memory
folder; a missing or unreadable file means "nothing seen yet".

The file also says which of the stored ids a consolidation pass has settled (`octygraph.session.consolidation`:
at SessionEnd, or when the service goes idle for a session whose SessionEnd never came), so a session is
settled once, and again only for what it stored after that.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Final

SESSIONS_DIR: Final = "sessions"
MAX_AGE_S: Final = 14 * 24 * 3600
"""Session files older than this are removed when a new session starts writing."""
_SAFE: Final = re.compile(r"[^A-Za-z0-9_.-]")
_KEYS: Final = ("injected", "stored", "settled")
_LOCK = threading.Lock()


class SessionLog:
    """The ids one session has seen; writes are atomic (temp file + rename)."""

    def __init__(self, memory_dir: Path, session_id: str) -> None:
        self.folder = memory_dir / SESSIONS_DIR
        self.path = self.folder / f"{_SAFE.sub('_', session_id)[:120]}.json"

    def _read(self) -> dict[str, list[str]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        if not isinstance(data, dict):
            data = {}
        return {key: [str(i) for i in data.get(key) or []] for key in _KEYS}

    def _write(self, data: dict[str, list[str]]) -> None:
        fresh = not self.folder.exists()
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if fresh or not self.path.exists():
            _prune(self.folder)
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.path)

    def seen(self) -> set[str]:
        """Ids injected into this session, and those stored from its messages."""
        given, stored = self.given_and_stored()
        return given | stored

    def given_and_stored(self) -> tuple[set[str], set[str]]:
        """Ids injected into this session, and ids stored from its messages, in one read."""
        with _LOCK:
            data = self._read()
        return set(data["injected"]), set(data["stored"])

    def stored(self) -> list[str]:
        """Ids stored from this session's messages, oldest first."""
        with _LOCK:
            return self._read()["stored"]

    def unsettled(self) -> list[str]:
        """Every id stored from this session, oldest first, when some were stored since it was last
        settled (a pass looks at the session as a whole); else nothing."""
        with _LOCK:
            data = self._read()
        return data["stored"] if set(data["stored"]) - set(data["settled"]) else []

    def mark_settled(self, ids: Iterable[str]) -> None:
        """A consolidation pass has settled `ids`."""
        ids = list(ids)
        if not ids:
            return
        with _LOCK:
            data = self._read()
            data["settled"] = list(dict.fromkeys([*data["settled"], *ids]))
            self._write(data)

    def add(self, *, injected: Iterable[str] = (), stored: Iterable[str] = ()) -> None:
        injected, stored = list(injected), list(stored)
        if not injected and not stored:
            return
        with _LOCK:
            data = self._read()
            data["injected"] = list(dict.fromkeys([*data["injected"], *injected]))
            data["stored"] = list(dict.fromkeys([*data["stored"], *stored]))
            self._write(data)

    def forget(self) -> None:
        """After compaction: the conversation no longer holds what was injected or stored."""
        with _LOCK:
            try:
                self.path.unlink()
            except OSError:
                pass


def every_log(home: Path) -> list[SessionLog]:
    """The session logs of every project under `home` (`$OCTYBOT_HOME/projects/*/memory/sessions/`)."""
    # A file's stem is its session id made safe, which making safe again leaves as it is.
    return [
        SessionLog(path.parent.parent, path.stem)
        for path in sorted(home.glob(f"projects/*/memory/{SESSIONS_DIR}/*.json"))
    ]


def _prune(folder: Path) -> None:
    cutoff = time.time() - MAX_AGE_S
    for old in folder.glob("*.json"):
        try:
            if old.stat().st_mtime < cutoff:
                old.unlink()
        except OSError:
            pass

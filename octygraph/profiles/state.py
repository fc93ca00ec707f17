"""`memory-profile-state.json`: which profile the active database was loaded from, when and from where."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

from typing_extensions import TypedDict

from octygraph.config.private import private_mkdir


class ProfileState(TypedDict):
    """The profile state file's content."""

    current_profile: str | None
    loaded_at: str | None
    source: str | None  # the file the active database was copied from
    snapshot: str | None  # the snapshot name, when it came from `freeze load`


def empty_state() -> ProfileState:
    return {"current_profile": None, "loaded_at": None, "source": None, "snapshot": None}


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def read_state(path: Path) -> ProfileState:
    """The saved state; a missing or unreadable file means nothing was loaded."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return empty_state()
    if not isinstance(raw, dict):
        return empty_state()
    state = empty_state()
    for key in state:
        value = raw.get(key)
        state[key] = value if isinstance(value, str) and value else None  # type: ignore[literal-required]
    return state


def write_state(path: Path, state: ProfileState) -> None:
    """Write the state atomically (temp file, then rename), private to the user."""
    private_mkdir(path.parent)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(state, indent=2) + "\n", encoding="utf-8")
    try:
        tmp.chmod(0o600)
    except OSError:
        pass
    os.replace(tmp, path)

"""Debug traces: one JSON file per run in the project's `debug/` folder."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from octygraph.config.private import private_mkdir


class TraceNotFound(LookupError):
    """No trace with that id."""


def new_trace_id() -> str:
    """Sortable and unique: UTC timestamp plus random bits."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ") + "-" + os.urandom(3).hex()


def to_jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


def write_trace(debug_dir: Path, trace: dict[str, Any]) -> Path:
    """Write atomically, private to the user, with every secret redacted."""
    from octygraph.safety.secrets import redact_deep

    trace = redact_deep(to_jsonable(trace))
    private_mkdir(debug_dir)
    path = debug_dir / f"{trace['trace_id']}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(to_jsonable(trace), ensure_ascii=False, indent=2), encoding="utf-8")
    os.chmod(tmp, 0o600)
    tmp.replace(path)
    return path


def read_trace_files(debug_dir: Path, limit: int) -> Iterator[tuple[Path, Any]]:
    """The newest `limit` trace files and their parsed JSON, newest first; unreadable files are
    skipped (a missing folder has none)."""
    if not debug_dir.is_dir():
        return
    for path in sorted(debug_dir.glob("*.json"), reverse=True)[:limit]:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        yield path, data


def list_traces(debug_dir: Path, limit: int = 20) -> list[dict[str, Any]]:
    """Newest first: id, time, prompt preview, mode, stored count, context size."""
    rows = []
    for path, data in read_trace_files(debug_dir, limit):
        rows.append(
            {
                "trace_id": data.get("trace_id", path.stem),
                "created_at": data.get("created_at"),
                "prompt": str(data.get("prompt", ""))[:80],
                "mode": data.get("mode"),
                "stored": len(data.get("stored") or []),
                "context_chars": len(data.get("context") or ""),
                "total_ms": (data.get("timings_ms") or {}).get("total"),
                # Finished by a later service after the process that ran it died (octygraph/service/resume.py).
                "resumed": bool(data.get("resumed")),
            }
        )
    return rows


def load_trace(debug_dir: Path, trace_id: str) -> dict[str, Any]:
    """A trace by id (or a unique prefix of one)."""
    if not trace_id or "/" in trace_id or "\\" in trace_id:
        raise TraceNotFound(f"No trace {trace_id!r}; see `octygraph trace list`.")
    exact = debug_dir / f"{trace_id}.json"
    candidates = [exact] if exact.exists() else sorted(debug_dir.glob(f"{trace_id}*.json"))
    if len(candidates) != 1:
        raise TraceNotFound(
            f"No trace {trace_id!r}; see `octygraph trace list`."
            if not candidates
            else f"{trace_id!r} matches {len(candidates)} traces; give more of the id."
        )
    try:
        data: dict[str, Any] = json.loads(candidates[0].read_text(encoding="utf-8"))
    except ValueError:
        raise TraceNotFound(f"Trace {candidates[0].name} is not valid JSON.") from None
    return data

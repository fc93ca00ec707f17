"""A hook's call to the team server (OCTY_SERVER_URL, OCTY_SERVER_TOKEN), standard library only.

When the server answers within its share of the hook budget, its reply is the hook's reply. When it
cannot be reached, refuses the token, or is too slow, the hook goes on with local offline memory, so a
prompt never waits on a network it cannot have; the time left for that is kept back (LOCAL_RESERVE_S).
"""

from __future__ import annotations

import json
import os
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from pathlib import Path

# Seconds of the hook budget kept for the local fallback (interpreter, model and pipeline, offline).
LOCAL_RESERVE_S = 5.0
MIN_REMOTE_S = 0.5


class RemoteUnavailable(Exception):
    """The team server did not give an answer; the message says why, for the trace."""


def project_of(raw: bytes, env: Mapping[str, str]) -> str:
    """The project this hook belongs to, as the local path would name it."""
    from octygraph.config.settings import Settings

    try:
        cwd = json.loads(raw or b"{}").get("cwd")
    except (ValueError, AttributeError):
        cwd = None
    folder = Path(cwd) if isinstance(cwd, str) and cwd and os.path.isdir(cwd) else None
    return Settings.from_env(env=env, cwd=folder).project_id


def remote_hook(event: str, raw: bytes, env: Mapping[str, str], seconds: float) -> dict[str, str]:
    """POST the hook's stdin to the team server; its {"stdout", "notice"} or RemoteUnavailable."""
    base = (env.get("OCTY_SERVER_URL") or "").rstrip("/")
    token = env.get("OCTY_SERVER_TOKEN") or ""
    if not base.startswith(("http://", "https://")):
        raise RemoteUnavailable("OCTY_SERVER_URL must start with http:// or https://")
    if seconds < MIN_REMOTE_S:
        raise RemoteUnavailable("no time left for the team server")
    project = urllib.parse.quote(project_of(raw, env), safe="")
    request = urllib.request.Request(
        f"{base}/v1/projects/{project}/hook/{event}",
        data=raw,
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    # In a thread joined with a timeout: urlopen's timeout bounds each read, not the whole answer, so
    # a server that sends a byte now and then (or a slow name look-up) would hold the hook past its budget.
    outcome: dict[str, object] = {}

    def call() -> None:
        try:
            with urllib.request.urlopen(request, timeout=seconds) as response:
                outcome["body"] = response.read()
        except BaseException as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=call, name="octy-team-server", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise RemoteUnavailable(f"the team server did not answer within {seconds:.1f} s")
    error = outcome.get("error")
    if isinstance(error, urllib.error.HTTPError):
        raise RemoteUnavailable(f"the team server answered {error.code}")
    if isinstance(error, (urllib.error.URLError, OSError)):
        raise RemoteUnavailable(f"the team server is unreachable ({error})")
    if error is not None:
        raise RemoteUnavailable(f"the team server call failed ({type(error).__name__}: {error})")
    try:
        body = json.loads(outcome.get("body") or b"{}")  # type: ignore[arg-type]
    except ValueError as exc:
        raise RemoteUnavailable(f"the team server sent no JSON ({exc})") from None
    if not isinstance(body, dict):
        raise RemoteUnavailable("the team server sent something else than a JSON object")
    return {"stdout": str(body.get("stdout") or ""), "notice": str(body.get("notice") or "")}

"""Usage and cost reports: POST one JSON object to `$WORKER_URL/usage` after a hook run.

The hook must not wait on the network, so `spawn_report` hands the payload to a fully detached child
(`python -m octygraph.claude.usage_report`, payload JSON on stdin) and returns at once. The child's
outcome is only written down when it failed and a debug folder was given.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from octygraph.config.private import private_mkdir

if TYPE_CHECKING:
    from octygraph.config.settings import Settings

REPORT_LOG = "usage-report.log"
MAX_PAYLOAD_BYTES = 1_000_000


def device_file_for(settings: Settings) -> Path:
    """Where the paired device token lives: `$OCTYBOT_HOME/device.json`."""
    return settings.home / "device.json"


def read_device_token(device_file: Path) -> str | None:
    """The token in `device.json` (`{"token": ...}`, or `{"device_token": ...}`), else None."""
    try:
        data = json.loads(device_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    for key in ("token", "device_token"):
        value = data.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def usage_url(worker_url: str) -> str | None:
    """`<worker_url>/usage`, or None when the URL is not http(s)."""
    base = worker_url.strip().rstrip("/")
    if not base.lower().startswith(("http://", "https://")):
        return None
    return f"{base}/usage"


def report_usage(
    worker_url: str | None, device_file: Path, payload: dict[str, Any], timeout_s: float = 3.0
) -> str:
    """POST `payload` to `{worker_url}/usage` with the device token as a bearer token.

    Args:
        worker_url: The worker's base URL (`WORKER_URL`); empty or None skips the report.
        device_file: `device.json` holding the paired device token.
        payload: The usage record (tokens and cost per layer, model, project...).
        timeout_s: Total time allowed for the request.

    Returns:
        `"sent"`, `"skipped: <why>"` or `"failed: <why>"`. Never raises.
    """
    try:
        if not worker_url:
            return "skipped: no WORKER_URL"
        url = usage_url(worker_url)
        if url is None:
            return "skipped: WORKER_URL is not an http(s) URL"
        token = read_device_token(device_file)
        if token is None:
            return f"skipped: no device token in {device_file}"
        body = json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8")

        import httpx  # deferred: only the detached child pays for the import

        response = httpx.post(
            url,
            content=body,
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            timeout=httpx.Timeout(timeout_s),
            follow_redirects=False,  # never carry the token to another host
        )
        if 200 <= response.status_code < 300:
            return "sent"
        return f"failed: HTTP {response.status_code}"
    except Exception as exc:  # the report is best effort; the caller only logs the outcome
        return f"failed: {type(exc).__name__}: {exc}"[:300]


def _package_root() -> Path:
    """The folder that holds the `octygraph` package, so the child can import it from anywhere."""
    return Path(__file__).resolve().parents[2]


def spawn_report(
    worker_url: str | None,
    device_file: Path,
    payload: dict[str, Any],
    debug_dir: Path | None = None,
    timeout_s: float = 3.0,
) -> int | None:
    """Send the report from a detached child process and return at once.

    Args:
        worker_url: The worker's base URL; nothing is spawned when it is empty or not http(s).
        device_file: `device.json`; nothing is spawned when it is missing.
        payload: The usage record (JSON-serialisable; other values are sent as strings).
        debug_dir: When given, the child appends failures to `<debug_dir>/usage-report.log`.
        timeout_s: The child's request timeout.

    Returns:
        The child's pid, or None when nothing was spawned. Never raises.
    """
    try:
        if not worker_url or usage_url(worker_url) is None or not device_file.is_file():
            return None
        data = json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8")
        root = str(_package_root())
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        argv = [
            sys.executable,
            "-m",
            "octygraph.claude.usage_report",
            "--worker-url",
            worker_url,
            "--device-file",
            str(device_file),
            "--timeout",
            str(timeout_s),
        ]
        if debug_dir is not None:
            argv += ["--debug-dir", str(debug_dir)]
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=root,
            env=env,
            start_new_session=True,  # survives the hook and Claude Code's teardown of its group
            close_fds=True,
        )
        assert proc.stdin is not None
        try:
            proc.stdin.write(data)
        except OSError:
            pass
        finally:
            try:
                proc.stdin.close()
            except OSError:
                pass
        return proc.pid
    except Exception:
        return None


def _log_failure(debug_dir: Path, outcome: str) -> None:
    try:
        private_mkdir(debug_dir)
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        try:
            from octygraph.safety.secrets import redact_secrets

            outcome = redact_secrets(outcome)[0]  # a server's error text may echo a token
        except Exception:
            pass
        fd = os.open(debug_dir / REPORT_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as handle:
            handle.write(f"{stamp} {outcome}\n")
    except OSError:
        pass


def main(argv: list[str] | None = None) -> int:
    """Child entry point: read the payload JSON on stdin and report it; always exits 0."""
    parser = argparse.ArgumentParser(prog="python -m octygraph.claude.usage_report")
    parser.add_argument("--worker-url", required=True)
    parser.add_argument("--device-file", required=True, type=Path)
    parser.add_argument("--debug-dir", type=Path, default=None)
    parser.add_argument("--timeout", type=float, default=3.0)
    args = parser.parse_args(argv)
    try:
        raw = sys.stdin.buffer.read(MAX_PAYLOAD_BYTES + 1)
        payload = json.loads(raw.decode("utf-8")) if len(raw) <= MAX_PAYLOAD_BYTES else None
        if not isinstance(payload, dict):
            outcome = "failed: the payload on stdin is not a JSON object"
        else:
            outcome = report_usage(args.worker_url, args.device_file, payload, args.timeout)
    except Exception as exc:
        outcome = f"failed: {type(exc).__name__}: {exc}"[:300]
    if outcome.startswith("failed") and args.debug_dir is not None:
        _log_failure(args.debug_dir, outcome)
    return 0


if __name__ == "__main__":
    sys.exit(main())

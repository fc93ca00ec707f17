"""Claude Code hook entrypoints: `octygraph hook prompt` and `octygraph hook stop`.

Whatever happens (bad stdin, a broken database, an LLM that is down, the time budget running out) these
print valid output or nothing and return normally, so the caller always exits 0 and the prompt goes through.
Why a run degraded is written to the project's trace folder.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
import traceback
from pathlib import Path
from typing import IO, Any

from octygraph.claude import hook_io, manifest, modes
from octygraph.settings import Settings

log = logging.getLogger("octygraph.hooks")


def _settings(cwd: str | None) -> Settings:
    folder = Path(cwd) if cwd and Path(cwd).is_dir() else None
    return Settings.from_env(cwd=folder)


def _record_failure(settings: Settings | None, event: str, reason: str) -> None:
    """Leave a trace of why a hook gave less context; never raises."""
    try:
        if settings is None:
            settings = Settings.from_env()
        from octygraph.traces import new_trace_id, write_trace

        paths = settings.paths
        paths.debug_dir.mkdir(parents=True, exist_ok=True)
        write_trace(
            paths.debug_dir,
            {
                "trace_id": new_trace_id(),
                "event": event,
                "degraded": True,
                "notes": [settings.redact(reason)],
                "context": "",
                "stored": [],
            },
        )
        modes.dev_log(paths, f"{event}-failed", {"reason": settings.redact(reason)})
    except Exception:
        pass


def _after_run(settings: Settings, event: str, session_id: str, result: dict[str, Any]) -> None:
    """Manifest, dev log and the usage report: all best effort."""
    paths = settings.paths
    stored = result.get("stored") or []
    if stored:
        try:
            manifest.append(
                paths.manifest,
                [
                    {
                        "session_id": session_id or "unknown",
                        "node_id": r["id"],
                        "type": r["type"],
                        "subtype": r.get("subtype"),
                        "content": r["content"],
                        "source": "claude" if event == "stop" else "user",
                    }
                    for r in stored
                ],
            )
        except Exception as exc:
            log.warning("manifest not updated: %s", exc)
    modes.dev_log(
        paths,
        event,
        {
            "trace_id": result.get("trace_id"),
            "timings_ms": result.get("timings_ms"),
            "stored": len(stored),
            "context_chars": len(result.get("context") or ""),
        },
    )
    if settings.worker_url:
        try:
            from octygraph.claude.usage_report import device_file_for, spawn_report

            device = device_file_for(settings)
            if device.exists():
                spawn_report(
                    settings.worker_url,
                    device,
                    {
                        "project": settings.project_id,
                        "session_id": session_id,
                        "event": event,
                        "trace_id": result.get("trace_id"),
                        "usage": result.get("usage"),
                    },
                    debug_dir=paths.debug_dir,
                )
        except Exception as exc:
            log.warning("usage report not sent: %s", exc)


def _configure_logging(settings: Settings) -> None:
    if settings.debug or modes.is_on(settings.paths.verbose_flag):
        logging.basicConfig(
            stream=sys.stderr,
            level=logging.INFO,
            format="%(asctime)s octygraph %(levelname)s %(message)s",
        )


async def _run(
    settings: Settings, prompt: str, session_id: str, *, store_only: bool, budget: float
) -> dict[str, Any]:
    from octygraph.runner import RunOptions, run_prompt
    from octygraph.services import open_store

    store = await asyncio.to_thread(open_store, settings)
    try:
        options = RunOptions(
            session_id=session_id,
            source="claude" if store_only else "user",
            store_only=store_only,
            deadline_s=budget,
        )
        return await run_prompt(prompt, settings, store, options)
    finally:
        store.close()


def prompt_hook(stdin: IO[bytes], stdout: IO[str]) -> None:
    """UserPromptSubmit: print the documented JSON with the context, or nothing."""
    started = time.monotonic()
    settings: Settings | None = None
    try:
        raw = hook_io.read_stdin_bounded(stdin)
        request = hook_io.parse_prompt_payload(raw)
        if request is None:
            return
        settings = _settings(request.cwd)
        _configure_logging(settings)
        budget = max(1.0, settings.hook_budget_s - (time.monotonic() - started))
        result = asyncio.run(
            _run(settings, request.prompt, request.session_id, store_only=False, budget=budget)
        )
        output = hook_io.format_prompt_output(
            result.get("context") or "", max_chars=min(9000, settings.context_budget_chars + 500)
        )
        if output:
            stdout.write(output)
            stdout.flush()
        _after_run(settings, "prompt", request.session_id, result)
    except BaseException as exc:  # the prompt must go through, whatever failed
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            return
        _record_failure(
            settings, "prompt", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=5)}"
        )


def stop_hook(stdin: IO[bytes], stdout: IO[str]) -> None:
    """Stop: store what the assistant reports having done or decided; print nothing."""
    settings: Settings | None = None
    try:
        raw = hook_io.read_stdin_bounded(stdin)
        request = hook_io.parse_stop_payload(raw)
        if request is None or not request.last_assistant_message.strip():
            return
        settings = _settings(request.cwd)
        _configure_logging(settings)
        result = asyncio.run(
            _run(
                settings,
                request.last_assistant_message,
                request.session_id,
                store_only=True,
                budget=settings.hook_budget_s * 4,
            )
        )
        _after_run(settings, "stop", request.session_id, result)
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            return
        _record_failure(
            settings, "stop", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=5)}"
        )


def main(event: str) -> int:
    """Entry for `octygraph hook EVENT`; always 0."""
    if os.environ.get("OCTY_NO_HOOKS") == "1":
        return (
            0  # set around our own `claude -p` fallback calls, so a user-level hook cannot recurse
        )
    handler = {"prompt": prompt_hook, "stop": stop_hook}.get(event)
    if handler is not None:
        handler(sys.stdin.buffer, sys.stdout)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else ""))

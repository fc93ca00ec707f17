"""What a finished hook run leaves besides its trace: the manifest, the dev log, the usage report.

Done after the answer went out, by the hook that ran it or by the service that resumed it after its
process died (`octygraph.service.resume`); all best effort.
"""

from __future__ import annotations

import logging
from typing import Any

from octygraph.claude import manifest, modes
from octygraph.config.settings import Settings

log = logging.getLogger("octygraph.pipeline.run_bookkeeping")


def after_run(settings: Settings, event: str, session_id: str, result: dict[str, Any]) -> None:
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
    try:
        from octygraph.pipeline.retention import prune_if_due

        prune_if_due(settings)  # after the answer went out: the prompt does not wait for it
    except Exception as exc:
        log.warning("old traces not pruned: %s", exc)
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
    send_usage_report(settings, event, session_id, result.get("trace_id"), result.get("usage"))


def send_usage_report(
    settings: Settings, event: str, session_id: str, trace_id: str | None, usage: Any
) -> None:
    """POST one run's usage to the configured worker (`OCTY_WORKER_URL`), from a detached child; best
    effort, and nothing when no worker or device token is set up."""
    if not settings.worker_url:
        return
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
                    "trace_id": trace_id,
                    "usage": usage,
                },
                debug_dir=settings.paths.debug_dir,
            )
    except Exception as exc:
        log.warning("usage report not sent: %s", exc)

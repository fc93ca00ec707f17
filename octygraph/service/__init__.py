"""The resident memory service (`octygraph serve`) and the hook's thin client.

Only standard-library modules are imported here: the hook client runs on every prompt and must start
in milliseconds. The server (`octygraph.service.server`) loads the pipeline when it starts.
"""

from __future__ import annotations

from octygraph.service.client import HookResult, run_hook, service_health, stop_service

__all__ = ["HookResult", "run_hook", "service_health", "stop_service"]

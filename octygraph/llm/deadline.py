"""The run's deadline as seen by one LLM call: an absolute `time.monotonic()` in the call's metadata.

The runtime `Context` owns the deadline; `Context.llm_config` puts it into each call's run metadata, so
the chat model (below `with_structured_output`, `bind_tools`, LangChain's callback managers) can bound the
request's timeout and its retry waits by the time that is left.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

DEADLINE_KEY = "octy_deadline"
MIN_CALL_S = 0.05
"""Less time than this left: no request is started (it could not answer in time anyway)."""


def deadline_of(metadata: Mapping[str, Any] | None) -> float | None:
    value = (metadata or {}).get(DEADLINE_KEY)
    return float(value) if isinstance(value, int | float) else None


def left(deadline: float | None) -> float | None:
    """Seconds until `deadline` (never negative), or None without one."""
    return None if deadline is None else max(0.0, deadline - time.monotonic())

"""A spooled hand-off leaves the spool only once its run is done: one that failed for want of resources
(descriptors, a free store) stays for a later try, so a busy service loses no payload."""

from __future__ import annotations

import asyncio
import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest

from octygraph.config.settings import Settings
from octygraph.service import client
from octygraph.service.pool import StorePool
from octygraph.service.server import Service
from octygraph.session import hooks
from octygraph.store.opening import open_store


def _service_with_spool(home: Path, text: str) -> tuple[Service, Path]:
    """A service (in this process, its real pool) and one Stop payload waiting in its spool."""
    work = home.parent / "proj"
    raw = json.dumps(
        {
            "session_id": "spooled",
            "cwd": str(work),
            "hook_event_name": "Stop",
            "stop_hook_active": False,
            "last_assistant_message": text,
        }
    ).encode()
    path = client.spool(home, client.hook_request("stop", raw, os.environ, 0.0))
    assert path is not None
    service = Service(home, idle_s=600)
    service._handle = hooks.handle
    service._pool = StorePool(max_open=2)
    return service, path


async def _drain(service: Service) -> int:
    from octygraph.service.checkpointers import CheckpointerPool

    service._ready = asyncio.get_running_loop().create_future()
    service._ready.set_result(None)
    service._checkpointers = CheckpointerPool(max_kept=2)
    started = service.drain_spool()
    while service.active:
        await asyncio.sleep(0.05)
    await service._checkpointers.close_all()
    return started


def test_a_spooled_payload_whose_run_fails_for_want_of_descriptors_stays_in_the_spool(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from octygraph.pipeline import runner

    service, path = _service_with_spool(home, "I moved the billing service to PostgreSQL 16.")

    async def no_descriptors(*args: Any, **kwargs: Any) -> dict[str, Any]:
        raise OSError(errno.EMFILE, "Too many open files")

    try:
        with monkeypatch.context() as patched:
            patched.setattr(runner, "run_prompt", no_descriptors)
            assert asyncio.run(_drain(service)) == 1
        assert path.exists(), "the payload of a run that could not open files was dropped"
        # Tried again on the next drain, and removed once its run succeeds.
        assert asyncio.run(_drain(service)) == 1
        assert not path.exists()
        with open_store(Settings.from_env()) as store:
            assert any("PostgreSQL 16" in n.content for n in store.list_nodes(limit=50))
    finally:
        service._pool.close_all()


def test_a_spooled_payload_whose_run_fails_otherwise_is_not_retried(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from octygraph.pipeline import runner

    service, path = _service_with_spool(home, "I moved the billing service to PostgreSQL 16.")

    async def broken(*args: Any, **kwargs: Any) -> dict[str, Any]:
        raise ValueError("a bug")

    monkeypatch.setattr(runner, "run_prompt", broken)
    try:
        assert asyncio.run(_drain(service)) == 1
        assert not path.exists()  # at most once, as before: a failing run is not retried forever
    finally:
        service._pool.close_all()

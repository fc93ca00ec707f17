"""Retention: traces and checkpoints are pruned by count and age, by hand and after runs."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from octygraph.config.settings import Settings
from octygraph.integrations.cli import app
from octygraph.pipeline.retention import prune, prune_if_due
from octygraph.pipeline.runner import RunOptions, run_prompt
from octygraph.store.checkpoints import checkpoint_threads
from octygraph.store.opening import open_store


def _runs(settings: Settings, count: int) -> list[str]:
    ids = []
    with open_store(settings) as store:
        for i in range(count):
            result = asyncio.run(
                run_prompt(
                    f"Build {i} of the billing service passed.",
                    settings,
                    store,
                    RunOptions(offline=True),
                )
            )
            ids.append(result["trace_id"])
    return ids


def _threads(settings: Settings) -> set[str]:
    return checkpoint_threads(settings.paths.checkpoints)


def test_prune_keeps_the_newest_traces_and_their_checkpoints_only(home: Path) -> None:
    settings = Settings.from_env()
    ids = _runs(settings, 5)
    assert _threads(settings) == set(ids)
    result = prune(settings, keep=2)
    assert result.traces == 3 and result.checkpoint_threads == 3
    assert sorted(p.stem for p in settings.paths.debug_dir.glob("2*.json")) == ids[-2:]
    assert _threads(settings) == set(ids[-2:])


def test_prune_by_age_and_the_cli_command(home: Path) -> None:
    settings = Settings.from_env()
    ids = _runs(settings, 3)
    # Ten days from now every trace is older than a 5-day limit.
    assert prune(settings, max_days=5, now=time.time() + 10 * 86400).traces == 3
    assert _threads(settings) == set()
    ids = _runs(settings, 2)
    result = CliRunner().invoke(app, ["trace", "prune", "--keep", "1", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"traces": 1, "runs": 1}
    assert _threads(settings) == {ids[-1]}


def test_runs_prune_once_over_the_limit(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OCTY_TRACE_KEEP", "3")
    settings = Settings.from_env()
    assert settings.trace_keep == 3
    _runs(settings, 4)
    assert prune_if_due(settings) is not None
    assert len(list(settings.paths.debug_dir.glob("2*.json"))) == 3
    assert prune_if_due(settings) is None
    assert oct(os.stat(settings.paths.debug_dir).st_mode & 0o777) == "0o700"


def test_prune_keeps_the_checkpoints_of_runs_in_flight(home: Path) -> None:
    from octygraph.pipeline import inflight

    settings = Settings.from_env()
    ids = _runs(settings, 4)
    assert inflight.in_flight_ids(settings) == set()  # finished runs leave no record
    # The oldest run's process "died" before its store half ended: its record is still there.
    record = inflight.RunRecord(trace_id=ids[0], settings=inflight.settings_json(settings))
    folder = inflight.folder(settings)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{ids[0]}.json").write_text(record.to_json())
    (settings.paths.debug_dir / f"{ids[0]}.json").unlink()  # its trace was never written
    result = prune(settings, keep=1)
    assert result.checkpoint_threads == 2
    assert _threads(settings) == {ids[0], ids[-1]}

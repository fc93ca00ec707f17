"""Scenario evaluation smoke tests: a few scenarios in-process, and the printed table."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.scenarios import CHECK_KINDS, DbReport, evaluate, load_scenarios
from octygraph.embeddings import LocalEmbeddings

REPO = Path(__file__).resolve().parents[1]
# Scenarios that pass offline on an empty database today; one of each kind of check.
RELIABLE = (
    "ownership",
    "account-handover",
    "rule-correction",
    "rescheduled-launch",
    "greetings",
    "hypotheticals",
    "value-correction",
)


def test_the_scenarios_file_is_well_formed() -> None:
    suite = load_scenarios()
    assert 15 <= len(suite.scenarios) <= 25
    assert 80 <= suite.prompts <= 150
    kinds = {
        kind
        for s in suite.scenarios
        for step in s.steps
        for kind, present in (
            ("include", step.include),
            ("exclude", step.exclude),
            ("nothing", step.stores_nothing),
            ("store", step.stores),
        )
        if present
    }
    assert kinds == {"include", "exclude", "nothing", "store"}
    assert set(RELIABLE) <= {s.name for s in suite.scenarios}


@pytest.mark.parametrize("name", RELIABLE)
def test_reliable_scenarios_pass_on_an_empty_database(
    name: str, tmp_path: Path, embedder: LocalEmbeddings
) -> None:
    suite = load_scenarios().select([name])
    report = evaluate(suite, embedder, tmp_path)
    failures = "\n".join(
        f"{c.kind} #{c.step} {c.prompt!r}: {c.expected}" for c in report.failures()
    )
    assert report.checks and not failures, failures
    assert len(report.prompts) == len(suite.scenarios[0].steps)
    assert all(p.ms > 0 for p in report.prompts)


@pytest.mark.slow
def test_runner_prints_the_table_for_only_empty() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "scenarios.py"),
            "--only-empty",
            "--only",
            "greetings",
            "rule-correction",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    header = next(line for line in out.splitlines() if line.startswith("| database |"))
    assert all(kind in header for kind in CHECK_KINDS)
    row = next(line for line in out.splitlines() if line.startswith("| empty |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "8"  # 5 greetings + 3 rule-correction prompts
    assert re.fullmatch(r"\d+/\d+ \(\d+%\)", cells[6])  # all checks
    assert "noisy-large" not in out
    assert "| greetings | 5 |" in out and "| rule-correction | 3 |" in out


@pytest.mark.slow
@pytest.mark.postgres
def test_reliable_scenarios_pass_on_postgres_as_on_sqlite(
    pg_url: str, tmp_path: Path, embedder: LocalEmbeddings
) -> None:
    # The same prompts, checks and injected contexts on both backends (bench/scenarios.py --postgres).
    suite = load_scenarios().select(list(RELIABLE))
    on_sqlite = evaluate(suite, embedder, tmp_path / "sqlite")
    on_postgres = evaluate(suite, embedder, tmp_path / "pg", database_url=pg_url)

    # A prompt that stores something is retrieved for while its store half runs (answer first), so
    # whether its context still shows the memory it replaces depends on timing, not on the backend:
    # the contexts are compared where nothing was stored, the verdicts everywhere.
    def outcome(report: DbReport) -> list[tuple[str, str, int, bool, str | None]]:
        return [
            (c.scenario, c.kind, c.step, c.passed, None if c.stored else c.context)
            for c in report.checks
        ]

    assert outcome(on_postgres) == outcome(on_sqlite)
    assert [None if p.stored else p.context_chars for p in on_postgres.prompts] == [
        None if p.stored else p.context_chars for p in on_sqlite.prompts
    ]
    assert not on_postgres.failures()

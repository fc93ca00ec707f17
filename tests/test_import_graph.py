"""The package's import graph (`bench/import_graph.py`): no cycle or upward import beyond the known ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.import_graph import LAYERS, main, report

# Cycles and imports against `LAYERS` still in the code while they are being removed, one line each as
# `bench/import_graph.py` prints them. One that is not here fails the test (fix the import, or place a
# new part in `LAYERS`), and so does one of these that is gone, so that its line is deleted. Empty since
# 2026-11-27, when the last were removed: the cycles of the deterministic rules (now `text`, `safety`,
# `judgement` and `fallback`) with judgement, models and store (through store -> judgement and the rules
# -> judgement), nodes, session_start, tools (tools -> session_start), service.checkpointers <->
# service.pool and store.postgres <-> store.transfer_pg, and resume -> hooks (resume now sits in the
# service, which runs the hooks).
KNOWN: set[str] = set()


def test_no_cycle_or_upward_import_but_the_known_ones() -> None:
    found = set(report().problems())
    assert not found - KNOWN, f"new: {sorted(found - KNOWN)} (see `python bench/import_graph.py`)"
    assert not KNOWN - found, f"gone, delete from KNOWN: {sorted(KNOWN - found)}"


def test_the_script_exits_1_while_any_is_left(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == (1 if KNOWN else 0)
    printed = capsys.readouterr().out
    assert all(problem in printed for problem in KNOWN), printed


def test_each_part_is_placed_once() -> None:
    placed = [part for layer in LAYERS for part in layer]
    assert len(placed) == len(set(placed)), placed


def test_imports_in_functions_and_for_type_checking_count(tmp_path: Path) -> None:
    package = tmp_path / "octygraph"
    (package / "store").mkdir(parents=True)
    (package / "session").mkdir()
    (package / "__init__.py").write_text("")
    (package / "session" / "__init__.py").write_text("")
    (package / "store" / "__init__.py").write_text("")
    (package / "store" / "sqlite.py").write_text(
        "def embed():\n    from octygraph.session.hooks import answer\n    from . import vectors\n"
    )
    (package / "store" / "vectors.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from octygraph.store.sqlite import embed\n"
    )
    (package / "session" / "hooks.py").write_text("from octygraph.store import sqlite\n")

    found = report(package)

    assert found.problems() == [
        "cycle: session <-> store",
        "cycle: store.sqlite <-> store.vectors",
        "upward: store -> session",
    ]
    assert found.found_layers == [["__init__", "session", "store"]]  # the cycle shares one layer

"""A sentence whose secret was redacted is still stored, redacted (the storage filter of issue 33).

The learned models were fitted on sentences without secrets; they read a redacted value as a value
kept elsewhere (`judgement.gate.as_read`), so "the root token is [REDACTED]" is judged on who holds
what, not as pasted configuration.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from octygraph.integrations.cli import app
from octygraph.judgement import gate

TOKEN = "ghp_Q8zX2mL4vN7pR1tY6uW3eS9aD5fG0hJ2kC8b"
FACT = f"The sandbox session token is {TOKEN} (it expires hourly, Chloe refreshes it)."


def _stored(text: str) -> list[str]:
    result = CliRunner().invoke(app, ["run", text, "--offline", "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return [str(r["content"]) for r in json.loads(result.stdout).get("stored") or []]


def test_a_redacted_value_is_read_as_one_kept_elsewhere() -> None:
    assert gate.as_read("the token is [REDACTED].") == "the token is kept in the vault."


def test_a_fact_with_a_redacted_secret_is_stored_redacted(home: Path) -> None:
    stored = _stored(FACT)
    assert stored == [
        "The sandbox session token is [REDACTED] (it expires hourly, Chloe refreshes it)."
    ]


def test_read_as_written_the_same_fact_was_not_stored(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gate, "SECRET_AS_READ", "[REDACTED]")
    gate.storage_gate()._recent.clear()
    assert _stored(FACT) == []
    gate.storage_gate()._recent.clear()

"""The first CLI commands, run as a user would (a subprocess, a fresh OCTYBOT_HOME)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import cli_json, run_cli


@pytest.mark.slow
def test_add_then_search_returns_the_fact_first(home: Path) -> None:
    added = cli_json(
        "memory",
        "add",
        "Peter handles the Anderson account",
        "--type",
        "fact",
        "--entity",
        "Peter",
        "--entity",
        "Anderson",
        "--json",
    )
    hits = cli_json("search", "who manages Anderson", "--json")
    assert hits[0]["id"] == added["id"]
    assert hits[0]["content"] == "Peter handles the Anderson account"
    assert 0 < hits[0]["cosine"] <= 1
    # A score a person can read: 0-100, the best match highest.
    assert all(0 <= h["match"] <= 100 for h in hits) and hits[0]["match"] > 0
    table = run_cli("search", "who manages Anderson")
    assert f"{hits[0]['match']}%" in table.stdout and "-0." not in table.stdout
    db = home / "projects" / "proj" / "memory" / "memory.db"
    assert db.exists() and oct(db.stat().st_mode & 0o777) == "0o600"
    entities = cli_json("search", "Anderson", "--type", "entity", "--json")
    assert {e["content"] for e in entities} >= {"Anderson"}


@pytest.mark.slow
def test_bad_inputs_get_one_sentence_and_change_nothing(home: Path) -> None:
    cli_json("memory", "add", "Maria owns the billing service", "--json")
    cases = [
        ("memory", "add", "   "),
        ("memory", "add", "x", "--type", "note"),
        ("memory", "add", "x", "--type", "plan", "--subtype", "someday"),
        ("memory", "add", "Ship it", "--type", "plan", "--valid-from", "next blursday"),
        ("search", "  "),
    ]
    for args in cases:
        result = run_cli(*args)
        assert result.returncode == 1, (args, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    hits = cli_json("search", "billing", "--json")
    assert [h["content"] for h in hits] == ["Maria owns the billing service"]


def test_text_that_starts_with_a_dash_is_told_to_follow_double_dash(home: Path) -> None:
    note = "--- handover notes ---\nMaria owns the billing service"
    refused = run_cli("memory", "add", note)
    assert refused.returncode == 1 and "put `--` before it" in refused.stderr, refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    added = cli_json("memory", "add", "--json", "--", note)
    assert "Maria owns the billing service" in added["content"]


def test_not_an_octygraph_database_is_refused(home: Path, tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.db"
    bogus.write_text("hello, I am a text file\n" * 50)
    result = run_cli("memory", "add", "anything", env={"DB_PATH": str(bogus)})
    assert result.returncode == 1
    assert "not an octygraph database" in result.stderr
    assert "Traceback" not in result.stderr
    assert bogus.read_text().startswith("hello, I am a text file")


def test_search_without_database_says_what_to_do(home: Path) -> None:
    result = run_cli("search", "anything")
    assert result.returncode == 1
    assert "octygraph memory add" in result.stderr


@pytest.mark.slow
def test_secrets_are_redacted_before_storage(home: Path) -> None:
    stored = cli_json(
        "memory", "add", "The deploy key is sk-or-v1-abcdef0123456789abcdef0123456789", "--json"
    )
    assert "abcdef0123456789" not in stored["content"]
    hits = cli_json("search", "deploy key", "--json")
    assert all("abcdef0123456789" not in json.dumps(h) for h in hits)


@pytest.mark.slow
def test_reindex_and_help(home: Path) -> None:
    cli_json("memory", "add", "Lisa runs the Friday release", "--json")
    result = run_cli("reindex")
    assert result.returncode == 0, result.stderr
    assert "Re-embedded 1 memory with all-MiniLM-L6-v2/int8-onnx" in result.stdout
    for args in (
        ("--help",),
        ("search", "--help"),
        ("memory", "add", "--help"),
        ("reindex", "--help"),
    ):
        shown = run_cli(*args)
        assert shown.returncode == 0 and "Usage" in shown.stdout


# --- /octybot: the slash command's entry point ----------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "words"),
    [
        ("search Peter's account", ["search", "Peter's", "account"]),
        ('search "Anderson account" -n 3', ["search", "Anderson account", "-n", "3"]),
        ("  memory   list \n", ["memory", "list"]),
        ("", []),
    ],
)
def test_split_slash_arguments(typed: str, words: list[str]) -> None:
    from octygraph.integrations.cli import split_slash_arguments

    assert split_slash_arguments(typed) == words


@pytest.mark.slow
def test_slash_runs_quoted_and_multi_word_searches(home: Path) -> None:
    added = run_cli("memory", "add", "Peter handles the Anderson account.")
    assert added.returncode == 0, added.stderr
    typed_searches = (
        "search Peter's account",
        'search "Anderson account"',
        "search who handles it",
    )
    for typed in typed_searches:
        result = run_cli("slash", input=typed + " --json\n")
        assert result.returncode == 0, result.stderr
        contents = [hit["content"] for hit in json.loads(result.stdout)]
        assert contents[:1] == ["Peter handles the Anderson account."], (typed, result.stdout)
    table = run_cli("slash", input="search Peter's account\n")
    assert table.returncode == 0 and "Anderson" in table.stdout, table.stdout
    # A mistake is shown on stdout (what the slash command displays), and still exits 0.
    wrong = run_cli("slash", input="no-such-command Peter's\n")
    assert wrong.returncode == 0
    assert "no-such-command" in wrong.stdout

"""Candidate memories reviewed by hand: `memory review`, `approve`, `edit`, `forget`, and the examples they leave."""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from octygraph.config.settings import Settings
from octygraph.embeddings import LocalEmbeddings
from octygraph.integrations.cli.app import app
from octygraph.memory import feedback
from octygraph.memory.candidates import candidate_attributes, is_candidate
from octygraph.store import MemoryStore, Node

KEY = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0"


def cli(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def one_sentence(result: Any) -> str:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    return lines[0]


@pytest.fixture
def db(home: Path, embedder: LocalEmbeddings) -> Iterator[Path]:
    path = Settings.from_env().paths.db
    with MemoryStore.open(path, embedder):
        pass
    yield path


def add(db: Path, embedder: LocalEmbeddings, text: str, p: float | None = 0.4) -> Node:
    with MemoryStore.open(db, embedder, create=False) as store:
        attributes = candidate_attributes(p) if p is not None else None
        return store.add_node("fact", text, attributes=attributes)


def get(db: Path, embedder: LocalEmbeddings, node_id: str) -> Node | None:
    with MemoryStore.open(db, embedder, create=False) as store:
        return store.get_node(node_id)


def examples(home: Path) -> list[feedback.Example]:
    return feedback.load(home)


def test_review_lists_candidates_newest_first(db: Path, embedder: LocalEmbeddings) -> None:
    add(db, embedder, "The staging database is refreshed every night.", 0.41)
    add(db, embedder, "Ordinary memories are not listed.", None)
    newer = add(db, embedder, "We keep release notes in docs/releases.", 0.37)

    listed = json.loads(cli("memory", "review", "--json").output)

    assert [c["content"] for c in listed] == [
        "We keep release notes in docs/releases.",
        "The staging database is refreshed every night.",
    ]
    assert listed[0]["id"] == newer.id and listed[0]["verdict_p"] == 0.37
    assert set(listed[0]) == {"id", "type", "subtype", "content", "verdict_p", "created_at"}
    text = cli("memory", "review").output
    assert "docs/releases" in text and "0.37" in text and "Ordinary" not in text


def test_approve_makes_a_candidate_ordinary_and_records_a_positive(
    db: Path, home: Path, embedder: LocalEmbeddings
) -> None:
    a = add(db, embedder, "Invoices are sent on the first of the month.")
    b = add(db, embedder, "The mobile app targets iOS 17 and later.")

    result = cli("memory", "approve", a.id, b.id)

    assert result.exit_code == 0, result.output
    for node in (a, b):
        now = get(db, embedder, node.id)
        assert now is not None and not is_candidate(now)
        assert now.attributes["confirmed"] == "approved"
    assert [(e.label, e.action, e.candidate) for e in examples(home)] == [(1, "approve", True)] * 2
    assert json.loads(cli("memory", "review", "--json").output) == []
    path = feedback.examples_path(home)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_approve_refuses_unknown_ids_and_ordinary_memories_in_one_sentence(
    db: Path, home: Path, embedder: LocalEmbeddings
) -> None:
    candidate = add(db, embedder, "Builds run on the self-hosted runners.")
    ordinary = add(db, embedder, "Alice owns the billing service.", None)

    assert one_sentence(cli("memory", "approve", candidate.id, "0123456789abcdef")).startswith(
        "No memory with id '0123456789abcdef'"
    )
    assert "not a candidate" in one_sentence(cli("memory", "approve", ordinary.id))
    still = get(db, embedder, candidate.id)
    assert still is not None and is_candidate(still)  # a typo beside it changed nothing
    assert examples(home) == []
    cli("memory", "forget", candidate.id)
    assert "forgotten" in one_sentence(cli("memory", "approve", candidate.id))


def test_forget_of_a_candidate_archives_it_and_records_a_negative(
    db: Path, home: Path, embedder: LocalEmbeddings
) -> None:
    candidate = add(db, embedder, "Let me check the logs first.")
    ordinary = add(db, embedder, "The old VPN is gone.", None)

    assert cli("memory", "forget", candidate.id).exit_code == 0
    assert cli("memory", "forget", ordinary.id, "--purge").exit_code == 0
    assert cli("memory", "forget", candidate.id).exit_code == 1  # again: refused, nothing recorded

    gone = get(db, embedder, candidate.id)
    assert gone is not None and gone.superseded_by == "archived"
    assert get(db, embedder, ordinary.id) is None
    assert [(e.text, e.label, e.action, e.candidate) for e in examples(home)] == [
        ("Let me check the logs first.", 0, "forget", True),
        ("The old VPN is gone.", 0, "forget", False),
    ]
    assert json.loads(cli("memory", "review", "--json").output) == []


def test_edit_of_a_candidate_approves_the_correction_and_never_keeps_a_key(
    db: Path, home: Path, embedder: LocalEmbeddings
) -> None:
    candidate = add(db, embedder, "The deploy token lives in the vault.")

    result = cli(
        "memory", "edit", candidate.id, f"The deploy token {KEY} lives in Vault.", "--json"
    )

    assert result.exit_code == 0, result.output
    new = json.loads(result.output)["new"]
    assert new["attributes"]["candidate"] is False and new["attributes"]["confirmed"] == "approved"
    [example] = examples(home)
    assert (example.label, example.action, example.candidate) == (1, "edit", True)
    assert "Vault" in example.text and "[REDACTED]" in example.text
    raw = feedback.examples_path(home).read_text(encoding="utf-8")
    assert KEY not in raw and "A1b2C3d4E5f6" not in raw

    ordinary = add(db, embedder, "Carol runs support.", None)
    assert cli("memory", "edit", ordinary.id, "Carol and Dan run support.").exit_code == 0
    assert len(examples(home)) == 1  # correcting an ordinary memory is not a verdict example

"""`octygraph memory learn`: the storage verdict fitted to a user's own examples, never below the shipped one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from octygraph.integrations.cli.app import app
from octygraph.judgement.linear import Logistic
from octygraph.judgement.verdict import StorageVerdict, storage_verdict, user_verdict_path
from octygraph.memory import feedback, learning
from octygraph.memory.feedback import Example

KEEP = (
    "We deploy the API from the release branch only.",
    "The billing service is owned by the payments team.",
    "Our staging database is refreshed every night at 2am.",
    "Use pnpm, not npm, in this repo.",
    "The mobile app targets iOS 17 and later.",
    "Invoices go out on the first business day of each month.",
    "Alice Novak approves every schema change.",
    "We keep secrets in Vault, never in env files.",
    "The design system lives in packages/ui.",
    "Customer data must stay in the EU region.",
    "Feature flags are managed in LaunchDarkly.",
    "Our on-call rotation changes every Monday.",
)
DROP = (
    "Let me check the logs first.",
    "Maybe we could try that later.",
    "I think it is fine for now.",
    "Thanks, that worked.",
    "Can you look at this error?",
    "Hmm, not sure about that.",
    "Ok go ahead.",
    "Run the tests again please.",
    "That looks weird.",
    "What does this function do?",
    "Sounds good to me.",
    "Try again with verbose output.",
)
WHEN = "2026-11-20T10:00:00+00:00"


def examples(keep: tuple[str, ...] = KEEP, drop: tuple[str, ...] = DROP) -> list[Example]:
    return [Example(t, 1, "approve", WHEN, True) for t in keep] + [
        Example(t, 0, "forget", WHEN, True) for t in drop
    ]


def write_examples(home: Path, items: list[Example]) -> None:
    path = feedback.examples_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for e in items:
            handle.write(json.dumps(e.__dict__) + "\n")


def cli(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def test_too_few_examples_change_nothing(home: Path) -> None:
    write_examples(home, examples(KEEP[:8], DROP[:8]))

    result = cli("memory", "learn", "--no-shared")

    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Too few examples to learn from: 16")
    assert not user_verdict_path(home).exists()
    write_examples(home, examples(KEEP, DROP[:3]))  # enough, but hardly any of one label
    assert "with 5 of each" in cli("memory", "learn", "--no-shared").output


@pytest.mark.slow
def test_learning_is_reproducible_and_used(home: Path) -> None:
    write_examples(home, examples())

    first = cli("memory", "learn", "--no-shared")
    assert first.exit_code == 0, first.output
    path = user_verdict_path(home)
    once = path.read_bytes()
    second = cli("memory", "learn", "--no-shared", "--json")
    assert second.exit_code == 0, second.output

    assert path.read_bytes() == once  # same examples, same weights, bit for bit
    report = json.loads(second.output)
    assert report["learned"] and report["examples"] == 24
    assert report["figures"]["learned_log_loss"] <= report["figures"]["shipped_log_loss"]
    shipped = StorageVerdict.load()
    learned = storage_verdict(home)
    assert learned is not shipped and not np.array_equal(learned.message.coef, shipped.message.coef)
    assert (learned.active_bar, learned.candidate_bar) == (
        shipped.active_bar,
        shipped.candidate_bar,
    )
    assert np.array_equal(learned.segment.coef, shipped.segment.coef)

    assert cli("memory", "learn", "--reset").exit_code == 0
    assert not path.exists()
    assert np.array_equal(storage_verdict(home).message.coef, shipped.message.coef)


@pytest.mark.slow
def test_a_refit_that_predicts_the_examples_worse_out_of_fold_is_refused(home: Path) -> None:
    # Each statement twice, kept once and forgotten once. From a base that is unsure of everything
    # (p = 0.5), each held-out copy meets its twin of the other label in training and is pulled the
    # wrong way: out of fold the refit is worse than the base, which must stay.
    shipped = StorageVerdict.load()
    unsure = Logistic(
        mean=shipped.message.mean,
        scale=shipped.message.scale,
        coef=np.zeros_like(shipped.message.coef),
        intercept=np.zeros_like(shipped.message.intercept),
        classes=shipped.message.classes,
    )
    base = StorageVerdict(unsure, shipped.segment, shipped.active_bar, shipped.candidate_bar)
    twins = examples() + examples(DROP, KEEP)

    outcome = learning.learn(home, twins, verdict=base)

    assert not outcome.shipped
    assert outcome.reason.startswith("The refit predicts your own examples worse")
    assert outcome.figures["learned_log_loss"] > outcome.figures["shipped_log_loss"]
    assert not user_verdict_path(home).exists()


@pytest.mark.slow
def test_a_refit_worse_on_the_shared_check_is_refused(home: Path) -> None:
    # Junk approved and lasting facts forgotten: the user's own examples agree with the refit, the
    # labelled prompts it must not do worse on do not.
    inverted = examples(DROP, KEEP)
    guard_keep = (
        "The release train leaves every second Thursday.",
        "Bob Kessler runs the billing service now.",
        "All services log in JSON to stdout.",
        "We never merge on Fridays.",
        "The data warehouse is BigQuery.",
    )
    guard_drop = (
        "Can you fix the failing test?",
        "Great, thanks!",
        "Let me think about it.",
        "Please rerun the build.",
        "Why is this slow?",
    )
    rows, labels = learning.example_rows(examples(guard_keep, guard_drop))
    guard = learning.Guard(rows, labels.astype(bool), np.ones(len(labels), bool), "the guard set")

    outcome = learning.learn(home, inverted, guard=guard)

    assert not outcome.shipped
    assert outcome.reason.startswith("The refit would do worse on the guard set")
    assert outcome.figures["learned_recall"] < outcome.figures["shipped_recall"]
    assert not user_verdict_path(home).exists()
    assert learning.learn(
        home, examples(), guard=guard
    ).shipped  # the user's sensible standard passes


@pytest.mark.slow
def test_a_learned_file_for_another_shipped_model_is_ignored(home: Path) -> None:
    assert learning.learn(home, examples()).shipped
    path = user_verdict_path(home)
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    arrays["base_sha256"] = np.array("0" * 64)
    np.savez(path, **arrays)  # type: ignore[arg-type]

    assert np.array_equal(storage_verdict(home).message.coef, StorageVerdict.load().message.coef)

"""The learned storage verdict: what it keeps, what it never keeps, and that its weights are reproducible."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from octygraph.judgement import verdict as verdict_module
from octygraph.judgement.linear import Logistic
from octygraph.judgement.storage import filter_storage
from octygraph.judgement.verdict import (
    CONTEXT_NAMES,
    FORM_NAMES,
    VECTOR_DIMS,
    WHOLE_PROSE_CHARS,
    StorageVerdict,
    storage_verdict,
)
from tests.refits import SHARED, assert_script_makes_shipped

NAMED = len(CONTEXT_NAMES) + len(FORM_NAMES)


def _constant(probability: float, width: int) -> Logistic:
    """A layer that answers `probability` whatever it reads."""
    return Logistic(
        mean=np.zeros(width, np.float32),
        scale=np.ones(width, np.float32),
        coef=np.zeros((1, width), np.float32),
        intercept=np.array([np.log(probability / (1 - probability))], np.float32),
        classes=("false", "true"),
    )


def _verdict(message_p: float, segment_p: float = 0.5) -> StorageVerdict:
    return StorageVerdict(
        _constant(message_p, NAMED + VECTOR_DIMS),
        _constant(segment_p, NAMED + VECTOR_DIMS),
        active_bar=0.8,
        candidate_bar=0.6,
    )


def _rows(n: int) -> np.ndarray:
    return np.zeros((n, NAMED + 30 + VECTOR_DIMS), np.float32)


def test_the_bars_split_stored_unsure_and_dropped() -> None:
    prose = ["we deploy with fly", "ok"]
    vector = np.zeros(VECTOR_DIMS, np.float32)
    kept = _verdict(0.9).keep(_rows(2), vector, prose, [False, False])
    assert kept is not None and kept.active and kept.whole and kept.segments == (0, 1)
    unsure = _verdict(0.7).keep(_rows(2), vector, prose, [False, False])
    assert unsure is not None and not unsure.active
    assert _verdict(0.5).keep(_rows(2), vector, prose, [False, False]) is None


def test_a_refused_segment_is_never_kept_however_sure_the_verdict_is() -> None:
    vector = np.zeros(VECTOR_DIMS, np.float32)
    assert _verdict(0.99).keep(_rows(1), vector, ["/deploy prod"], [True]) is None
    kept = _verdict(0.99).keep(_rows(2), vector, ["x = 1;", "we use tabs"], [True, False])
    assert kept is not None and kept.segments == (1,) and not kept.whole


def test_a_long_message_keeps_its_likeliest_segment_only() -> None:
    prose = ["a" * (WHOLE_PROSE_CHARS // 2), "b" * (WHOLE_PROSE_CHARS // 2), "c" * 10]
    rows = _rows(3)
    rows[1, -1] = 1.0  # only the second segment's vector differs
    verdict = _verdict(0.9)
    segment = verdict.segment
    coef = np.zeros_like(segment.coef)
    coef[0, -1] = 5.0
    verdict.segment = Logistic(segment.mean, segment.scale, coef, segment.intercept, ("f", "t"))
    kept = verdict.keep(rows, np.zeros(VECTOR_DIMS, np.float32), prose, [False] * 3)
    assert kept is not None and kept.segments == (1,) and not kept.whole


def test_the_verdict_stores_what_the_forms_keep_nothing_of(monkeypatch: pytest.MonkeyPatch) -> None:
    message = (
        "fix the header overlap on mobile. the designer wants all spacing in multiples of 8px "
        "across the app"
    )
    assert not filter_storage(message, project="shopfront", learned=False).store
    monkeypatch.setattr(verdict_module, "_VERDICT", _verdict(0.95))
    decision = filter_storage(message, project="shopfront")
    assert decision.store and "multiples of 8px" in decision.items[0].content
    # Unsure is not stored as an active memory.
    monkeypatch.setattr(verdict_module, "_VERDICT", _verdict(0.7))
    assert not filter_storage(message, project="shopfront").store


def test_the_forms_refusals_hold_for_the_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verdict_module, "_VERDICT", _verdict(0.99))
    assert not filter_storage("why does the build use two caches?", project="shopfront").store
    assert not filter_storage("go ahead with option b", project="shopfront").store


def test_the_shipped_verdict_loads_with_bars_in_order() -> None:
    verdict = storage_verdict()
    assert 0.0 < verdict.candidate_bar <= verdict.active_bar < 1.0
    assert verdict.message.coef.shape[1] == NAMED + VECTOR_DIMS


@pytest.mark.parametrize(
    "message",
    [
        "we never push to prod on fridays",
        "From now on, always run the linter before committing.",
        "Peter handles the Anderson account",
    ],
)
def test_plain_statements_of_lasting_facts_are_stored(message: str) -> None:
    assert filter_storage(message, project="shopfront").store


@pytest.mark.parametrize(
    "message",
    ["go ahead", "can you fix the login bug?", "/compact", "const x = require('y');"],
)
def test_tasks_questions_commands_and_code_are_not_stored(message: str) -> None:
    assert not filter_storage(message, project="shopfront").store


@pytest.mark.slow
@pytest.mark.timeout(1500)  # reads and embeds every shared prompt: minutes on a busy machine
@pytest.mark.skipif(not SHARED.exists(), reason="the shared data is not beside the repository")
def test_the_shipped_verdict_is_what_the_training_script_makes(tmp_path: Path) -> None:
    assert_script_makes_shipped("train_verdict.py", "storage_verdict.npz", tmp_path)

"""The learned credential-token model: what it adds to the patterns, what it must leave alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from octygraph.safety.secret_tokens import candidates, model
from octygraph.safety.secrets import REDACTED, redact_patterns, redact_secrets
from tests.refits import SHARED, assert_script_makes_shipped

NO_PATTERN_NAMES = [
    # Written for this test, after the model was fitted; no pattern redacts these.
    ("the signing value for the hooks is now 7hQ2xW9kLm4pZ8vR3nT6", "7hQ2xW9kLm4pZ8vR3nT6"),
    ("creds for the lab printer: admin Falcon82Ridge", "Falcon82Ridge"),
]

OURS_AND_PUBLISHED = [
    "trace 20261128T165250620854Z-2817b1 is the one that failed",
    "checkpoint 1f0ac7e2-5b3d-6c1a-8f00-2d7e9a4b3c11 of thread main",
    "node 2e617afa6faf4693 was merged into 3557a23d157e4bd9",
    "commit a3f9c21 fixed it, the release is 1.24.3-rc2",
    "use model gpt-4o-mini-2024-07-18 for the summaries",
    "refund ch_3QwErTy7uIoP9aSdFgHjKl2Z failed with card_declined",
    "the host key fingerprint is SHA256:Qm7Rt2Vw9Xy4Zb8Nc3Ld6Fh1Jk5Gp0Sa7Te2Uv9Wx4",
    "TOKENIZER_SHA256 = 'be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037'",
    "see https://github.com/org/repo/security/secret-scanning/unblock-secret/33Cw4DAGFUuZ3xxW48wY",
    "call fetchUserData2 before renderDashboard3",
]


def test_the_model_is_shipped_and_has_a_bar() -> None:
    learned = model()
    assert learned is not None
    assert 0.5 <= learned.bar < 1.0


@pytest.mark.parametrize(("text", "secret"), NO_PATTERN_NAMES)
def test_the_model_redacts_what_no_pattern_names(text: str, secret: str) -> None:
    assert redact_patterns(text) == (text, 0)
    redacted, count = redact_secrets(text)
    assert secret not in redacted
    assert REDACTED in redacted
    assert count == 1


@pytest.mark.parametrize("text", OURS_AND_PUBLISHED)
def test_ids_hashes_and_published_keys_stay(text: str) -> None:
    assert redact_secrets(text) == (text, 0)


def test_only_mixed_or_long_tokens_outside_urls_are_scored() -> None:
    text = 'Running **Important** load_rows and re-run-all, https://example.com/Ab12Cd34Ef56 and "Xy7Zq9"'
    assert [text[s:e] for s, e in candidates(text)] == ["Xy7Zq9"]


def test_the_patterns_run_first() -> None:
    text = "OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"
    assert redact_secrets(text) == redact_patterns(text)


@pytest.mark.slow
@pytest.mark.timeout(1500)
@pytest.mark.skipif(not SHARED.exists(), reason="the shared data is not beside the repository")
def test_the_shipped_secret_token_model_is_what_the_training_script_makes(tmp_path: Path) -> None:
    assert_script_makes_shipped("train_secret_tokens.py", "secret_tokens.npz", tmp_path)

"""The shipped relevance weights are what the training script makes of the real pairs and the written sets."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.refits import SHARED, assert_script_makes_shipped


@pytest.mark.slow
@pytest.mark.timeout(1500)  # embeds every real pair's texts: minutes on a busy machine
@pytest.mark.skipif(not SHARED.exists(), reason="the shared data is not beside the repository")
def test_the_shipped_relevance_model_is_what_the_training_script_makes(tmp_path: Path) -> None:
    assert_script_makes_shipped("train_relevance.py", "relevance.npz", tmp_path)

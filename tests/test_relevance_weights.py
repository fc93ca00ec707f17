"""The shipped relevance weights are what the training script makes of the real pairs and the written sets."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"


@pytest.mark.slow
@pytest.mark.skipif(not SHARED.exists(), reason="the shared data is not beside the repository")
def test_the_shipped_relevance_model_is_what_the_training_script_makes(tmp_path: Path) -> None:
    out = tmp_path / "relevance.npz"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "training" / "train_relevance.py"),
            "--out",
            str(out),
            "--report",
            str(tmp_path / "report.json"),
        ],
        capture_output=True,
        text=True,
        timeout=1500,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    shipped = np.load(ROOT / "octygraph" / "data" / "relevance.npz")
    fresh = np.load(out)
    assert sorted(shipped.files) == sorted(fresh.files)
    for key in shipped.files:
        if shipped[key].dtype.kind == "U":
            assert (shipped[key] == fresh[key]).all(), key
        else:
            np.testing.assert_allclose(shipped[key], fresh[key], atol=1e-4, err_msg=key)

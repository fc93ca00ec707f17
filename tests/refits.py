"""Shipped weights are exactly what the repository's training scripts make: refit, then compare."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
"""The shared real prompts the scripts fit on; the refit tests skip without them."""


def assert_script_makes_shipped(script: str, weights: str, tmp_path: Path) -> None:
    """Run `training/<script>` into `tmp_path` and compare its output with `octygraph/data/<weights>`."""
    out = tmp_path / weights
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "training" / script),
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
    shipped = np.load(ROOT / "octygraph" / "data" / weights)
    fresh = np.load(out)
    assert sorted(shipped.files) == sorted(fresh.files)
    for key in shipped.files:
        if shipped[key].dtype.kind == "U":
            assert (shipped[key] == fresh[key]).all(), key
        else:
            np.testing.assert_allclose(shipped[key], fresh[key], atol=1e-4, err_msg=key)

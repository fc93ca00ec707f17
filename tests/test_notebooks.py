"""The notebooks run headless from top to bottom, offline, and show what they promise."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
from jupyter_client.manager import AsyncKernelManager  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
LOCOMO = Path(
    os.environ.get("LOCOMO_PATH", REPO.parent / "shared" / "data" / "locomo" / "locomo10.json")
)


def run_notebook(name: str, cwd: Path) -> Any:
    """Execute a notebook in `cwd` with this interpreter (the venv's) as its python3 kernel."""
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        timeout=120,
        kernel_name="python3",
        kernel_manager_class=_ThisPythonKernelManager,
        resources={"metadata": {"path": str(cwd)}},
    )
    client.execute()
    return nb


class _ThisPythonKernelManager(AsyncKernelManager):
    """The python3 kernel, started with `sys.executable` whatever kernelspec is installed."""

    @property
    def kernel_spec(self) -> Any:
        spec = super().kernel_spec
        if spec is not None:
            spec.argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        return spec


def outputs(nb: Any) -> str:
    """All text the notebook printed or displayed."""
    parts: list[str] = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            assert out.get("output_type") != "error", out
            if "text" in out:
                parts.append(out["text"])
            parts.extend(str(v) for k, v in out.get("data", {}).items() if k.startswith("text/"))
    return "\n".join(parts)


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A temp working folder and OCTYBOT_HOME; the notebooks' temp folders land in tmp_path."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    home = tmp_path / "octyhome"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("OCTYBOT_HOME", str(home))
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    return cwd, home


@pytest.mark.slow
def test_pipeline_step_by_step(places: tuple[Path, Path]) -> None:
    cwd, home = places
    text = outputs(run_notebook("01_pipeline_step_by_step.ipynb", cwd))
    for node in ("classify", "plan", "retrieve_loop", "safety_nets", "assemble"):
        assert f"{node:<14} wrote" in text
    assert f"{'store_loop':<14} wrote" not in text  # a question: its store half ends once judged
    assert "instruction  From now on always run the smoke tests" in text
    assert (
        "always run the smoke tests before deploying the billing service"
        in text.split("Relevant memories")[-1]
    )
    assert "retrieve_loop" in text and "graph TD" in text
    assert not home.exists() or not any(home.iterdir())  # the notebook used its own temp home


@pytest.mark.slow
def test_trace_and_replay(places: tuple[Path, Path]) -> None:
    cwd, _ = places
    text = outputs(run_notebook("02_trace_and_replay.ipynb", cwd))
    assert "Peter handles the Anderson account" in text
    assert "['retrieve', 'store']" in text or "['store', 'retrieve']" in text  # the halves
    assert "same context as the original run: True" in text
    assert "same context as the original run: False" in text
    replayed = text.split("--- replayed")[-1]
    assert "Peter handles the Anderson account" not in replayed


@pytest.mark.slow
@pytest.mark.parametrize("data", ["locomo", "built-in"])
def test_retrieval_evaluation(
    data: str, places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    cwd, _ = places
    if data == "built-in":
        monkeypatch.setenv("LOCOMO_PATH", str(cwd / "no-such-file.json"))
    elif not LOCOMO.is_file():
        pytest.skip("LoCoMo data not beside the repo")
    nb = run_notebook("03_retrieval_evaluation.ipynb", cwd)
    text = outputs(nb)
    assert ("LoCoMo conversation 1" if data == "locomo" else "built-in set") in text
    rows = [
        line.split()
        for line in text.splitlines()
        if line.split()[:1] in (["keyword"], ["vector"], ["hybrid"])
    ]
    assert [r[0] for r in rows] == ["keyword", "vector", "hybrid"]
    for row in rows:
        values = [float(v) for v in row[1:]]
        assert len(values) == 5 and values == sorted(values)
        assert 0.0 <= values[0] <= values[-1] <= 1.0
    assert float(rows[2][-1]) > 0.5  # hybrid finds most evidence in its top 20
    assert (cwd / "retrieval_recall.png").stat().st_size > 5_000
    images = [o for c in nb.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert images, "the plot is displayed"

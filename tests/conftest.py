"""Shared fixtures: a private OCTYBOT_HOME, the real local embedding model, a real store, the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from octygraph.embeddings import LocalEmbeddings, local_embeddings
from octygraph.store import MemoryStore

# Never reach a real provider or tracing service from tests, whatever the machine's environment holds.
for _name in (
    "OPENROUTER_API_KEY",
    "VOYAGE_API_KEY",
    "OCTY_LLM_BASE_URL",
    "OCTY_LLM_API_KEY",
    "ANTHROPIC_API_KEY",
    "CLOUDFLARE_API_TOKEN",
    "CF_ACCOUNT_ID",
    "WORKER_URL",
    "LANGSMITH_TRACING",
    "LANGCHAIN_TRACING_V2",
    "DB_PATH",
    "OCTYBOT_PROJECT",
    "OCTY_EMBEDDINGS",
):
    os.environ.pop(_name, None)


@pytest.fixture(scope="session")
def embedder() -> LocalEmbeddings:
    return local_embeddings()


@pytest.fixture
def store(tmp_path: Path, embedder: LocalEmbeddings) -> Iterator[MemoryStore]:
    with MemoryStore.open(tmp_path / "memory.db", embedder) as s:
        yield s


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh OCTYBOT_HOME and working folder (project id 'proj') for this test."""
    root = tmp_path / "octyhome"
    work = tmp_path / "proj"
    work.mkdir()
    monkeypatch.setenv("OCTYBOT_HOME", str(root))
    monkeypatch.chdir(work)
    return root


def run_cli(
    *args: str,
    input: str | bytes | None = None,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run the real `octygraph` command in a subprocess with the current environment."""
    full_env = {**os.environ, **(env or {})}
    data = input.decode("utf-8", "replace") if isinstance(input, bytes) else input
    return subprocess.run(
        [sys.executable, "-m", "octygraph", *args],
        input=data,
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd,
        timeout=timeout,
    )


def cli_json(*args: str, **kwargs: Any) -> Any:
    result = run_cli(*args, **kwargs)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)

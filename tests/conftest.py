"""Shared fixtures: a private OCTYBOT_HOME, the real local embedding model, a real store, the real CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
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
    "OCTY_DATABASE_URL",
    "OCTY_SERVER_URL",
):
    os.environ.pop(_name, None)


@pytest.fixture(scope="session")
def embedder() -> LocalEmbeddings:
    return local_embeddings()


@pytest.fixture
def store(tmp_path: Path, embedder: LocalEmbeddings) -> Iterator[MemoryStore]:
    with MemoryStore.open(tmp_path / "memory.db", embedder) as s:
        yield s


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A PostgreSQL server with pgvector for this test session: OCTY_TEST_DATABASE_URL, else pgserver.

    Without pgserver installed the postgres tests skip, unless OCTY_REQUIRE_POSTGRES=1 (CI), where a
    missing server must fail the run rather than pass it unseen.
    """
    given = os.environ.get("OCTY_TEST_DATABASE_URL")
    if given:
        yield given
        return
    try:
        import pgserver  # type: ignore[import-untyped]
    except ImportError:
        if os.environ.get("OCTY_REQUIRE_POSTGRES") == "1":
            pytest.fail(
                "OCTY_REQUIRE_POSTGRES=1 but pgserver is not installed: pip install -e '.[test]'."
            )
        pytest.skip(
            "pgserver is not installed (pip install -e '.[test]'); PostgreSQL tests skipped."
        )
    # A short folder: the server's Unix socket lives in it and socket paths are limited to ~100 bytes.
    root = Path(tempfile.mkdtemp(prefix="octypg-"))
    server = pgserver.get_server(root, cleanup_mode="stop")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()
        shutil.rmtree(root, ignore_errors=True)


def open_test_store(kind: str, tmp_path: Path, embedder: Any, **kwargs: Any) -> Any:
    """A fresh store of the given backend: an SQLite file in `tmp_path`, or a new project schema."""
    if kind == "sqlite":
        return MemoryStore.open(tmp_path / "memory.db", embedder, **kwargs)
    from octygraph.store.postgres import PostgresStore

    url = kwargs.pop("url")
    project = kwargs.pop("project_id", None) or f"t{uuid.uuid4().hex[:12]}"
    return PostgresStore.open(url, embedder, project_id=project, **kwargs)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def any_store(
    request: pytest.FixtureRequest, tmp_path: Path, embedder: LocalEmbeddings
) -> Iterator[Any]:
    """The same test on each backend: SQLite, and PostgreSQL (marked `postgres`)."""
    if request.param == "sqlite":
        with MemoryStore.open(tmp_path / "memory.db", embedder) as s:
            yield s
        return
    url = request.getfixturevalue("pg_url")
    store = open_test_store("postgres", tmp_path, embedder, url=url)
    try:
        yield store
    finally:
        store.drop_project()
        store.close()


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

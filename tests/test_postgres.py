"""The PostgreSQL backend against a real server with pgvector (pgserver, started by the tests).

The behaviour both backends share is tested once for each in test_store.py and test_review.py (`any_store`,
`reopen`); this file holds
what only PostgreSQL has: recorded migrations, the HNSW and full-text indexes, one schema per project,
selection through OCTY_DATABASE_URL, writers in several processes, and moving memories to and from
an SQLite file.
"""

from __future__ import annotations

import multiprocessing
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from octygraph.config.settings import Settings
from octygraph.embeddings import LocalEmbeddings
from octygraph.store import MemoryStore, NewNode, StoreError
from octygraph.store.pg_schema import HNSW_PARTITIONS, vector_index_ddl

pytestmark = [pytest.mark.postgres, pytest.mark.slow]  # a PostgreSQL server starts for them


def _open(url: str, embedder: Any, project: str, **kwargs: Any) -> Any:
    from octygraph.store.postgres import PostgresStore

    return PostgresStore.open(url, embedder, project_id=project, **kwargs)


def _project() -> str:
    return f"t{uuid.uuid4().hex[:12]}"


def test_schema_migrations_and_indexes(pg_url: str, embedder: LocalEmbeddings) -> None:
    project = _project()
    store = _open(pg_url, embedder, project)
    try:
        # Raw SQL on purpose: this test checks the on-server schema itself.
        conn = store._conn
        migrations = conn.execute("SELECT version, name FROM octy_migrations").fetchall()
        assert [m[0] for m in migrations] == [1, 2, 3]
        indexes = {
            r[0]: r[1]
            for r in conn.execute(
                "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s", (store.schema,)
            )
        }
        # The vector index: one HNSW graph per partition of `seq`, none over the whole table.
        assert "idx_embeddings_hnsw" not in indexes
        for part in range(HNSW_PARTITIONS):
            ddl = indexes[f"idx_embeddings_hnsw_{part}"]
            assert "USING hnsw" in ddl and "vector_cosine_ops" in ddl
            assert f"mod(seq, ({HNSW_PARTITIONS})::bigint) = {part}" in ddl
        assert store.partitions == HNSW_PARTITIONS
        assert "USING gin" in indexes["idx_nodes_tsv"]
        cols = [
            r[0]
            for r in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = %s "
                "AND table_name = 'nodes' ORDER BY ordinal_position",
                (store.schema,),
            )
        ]
        # The seed's columns, as on SQLite, with `seq` for insertion order and the tsvector.
        assert cols[1:15] == [
            "id",
            "node_type",
            "subtype",
            "content",
            "salience",
            "confidence",
            "source",
            "created_at",
            "valid_from",
            "valid_until",
            "superseded_by",
            "attributes",
            "can_summarize",
            "scope",
        ]
        assert store.meta()["embedding_dim"] == "384"
        # Opening again applies nothing twice.
        _open(pg_url, embedder, project).close()
        assert conn.execute("SELECT count(*) FROM octy_migrations").fetchone()[0] == 3
    finally:
        store.drop_project()
        store.close()


def test_projects_are_separate_schemas(pg_url: str, embedder: LocalEmbeddings) -> None:
    a, b = _open(pg_url, embedder, _project()), _open(pg_url, embedder, _project())
    try:
        a.add_node("fact", "Project A deploys on Mondays")
        assert b.search("when does it deploy") == []
        assert a.search("when does it deploy")[0].node.content == "Project A deploys on Mondays"
    finally:
        for s in (a, b):
            s.drop_project()
            s.close()


def test_missing_project_and_bad_url(pg_url: str, embedder: LocalEmbeddings) -> None:
    with pytest.raises(StoreError, match="No memories for this project"):
        _open(pg_url, embedder, _project(), create=False)
    with pytest.raises(StoreError, match="Cannot reach the PostgreSQL server"):
        _open("postgresql://nobody@127.0.0.1:1/none", embedder, "x")


def test_database_url_selects_postgres(
    pg_url: str, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from octygraph.store.opening import open_store
    from octygraph.store.postgres import PostgresStore

    project = _project()
    monkeypatch.setenv("OCTY_DATABASE_URL", pg_url)
    monkeypatch.setenv("OCTYBOT_PROJECT", project)
    settings = Settings.from_env()
    assert settings.database_url is not None
    assert pg_url not in repr(settings)  # a URL may carry a password: kept secret
    store = open_store(settings)
    try:
        assert isinstance(store, PostgresStore)
        assert not settings.paths.db.exists()  # nothing written to the SQLite file
    finally:
        store.drop_project()  # type: ignore[attr-defined]
        store.close()
    monkeypatch.setenv("OCTY_DATABASE_URL", "mysql://x")
    with pytest.raises(StoreError, match="must start with postgresql://"):
        open_store(Settings.from_env())


def _writer(url: str, project: str, worker: int, count: int) -> None:
    from octygraph.embeddings import local_embeddings

    store = _open(url, local_embeddings(), project)
    try:
        shared, _ = store.ensure_entity("Shared Project", "project")
        for i in range(count):
            store.add_node("fact", f"Worker {worker} wrote memory {i}", entity_ids=[shared.id])
    finally:
        store.close()


def test_three_processes_write_concurrently_without_loss(
    pg_url: str, embedder: LocalEmbeddings
) -> None:
    project = _project()
    _open(pg_url, embedder, project).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(pg_url, project, w, 15)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    with _open(pg_url, embedder, project) as store:
        stats = store.stats()
        # One entity for all three writers (ensure_entity is atomic), and every fact.
        assert stats["by_type"] == {"entity": 1, "fact": 45}
        shared = store.find_entity("shared project", semantic=False)
        assert shared is not None and len(store.linked_node_ids(shared.id)) == 45
        store.drop_project()


def test_export_to_sqlite_and_import_back(
    pg_url: str, tmp_path: Path, embedder: LocalEmbeddings
) -> None:
    from octygraph.store.transfer_pg import import_from_sqlite

    source = _open(pg_url, embedder, _project())
    copy = _open(pg_url, embedder, _project())
    try:
        peter, _ = source.ensure_entity("Peter", "person")
        old = source.add_node("fact", "Peter handles the Anderson account", entity_ids=[peter.id])
        new = source.supersede(old.id, "Lisa handles the Anderson account")
        source.add_nodes([NewNode("fact", f"Filler memory {i}") for i in range(5)])
        file = tmp_path / "snap.db"
        source.backup_to(file)
        with MemoryStore.open(file, embedder) as snap:
            assert snap.stats()["nodes"] == source.stats()["nodes"] == 8
            assert snap.get_node(old.id).superseded_by == new.id  # type: ignore[union-attr]
            assert len(snap.all_edges()) == len(source.all_edges())
            assert snap.search("who handles Anderson", types=["fact"])[0].node.id == new.id
        assert oct(file.stat().st_mode & 0o777) == "0o600"
        assert import_from_sqlite(copy, file) == 8
        assert [n.id for n in copy.iter_all()] == [n.id for n in source.iter_all()]
        assert copy.search("who handles Anderson", types=["fact"])[0].node.id == new.id
        assert copy.supersede_chain(new.id)[0].id == old.id
    finally:
        for s in (source, copy):
            s.drop_project()
            s.close()


def test_hnsw_search_agrees_with_exact_scan(pg_url: str, embedder: LocalEmbeddings) -> None:
    # Clustered unit vectors, as embeddings of related memories are; queries near stored ones.
    rng = np.random.default_rng(7)
    n, dim = 3000, embedder.dim
    centres = rng.standard_normal((60, dim)).astype(np.float32)
    mat = centres[rng.integers(0, 60, n)] + rng.standard_normal((n, dim)).astype(np.float32)
    mat /= np.linalg.norm(mat, axis=1, keepdims=True)
    store = _open(pg_url, embedder, _project())
    try:
        nodes = store.add_nodes(
            [NewNode("fact", f"synthetic memory {i}") for i in range(n)], vectors=mat
        )
        found = 0
        for qi in range(20):
            q = mat[qi * 7] + 0.02 * rng.standard_normal(dim).astype(np.float32)
            q /= np.linalg.norm(q)
            exact = {nodes[i].id for i in np.argsort(-(mat @ q))[:10]}
            approx = {h.node.id for h in store.search("x", query_vec=q, mode="vector", limit=10)}
            found += len(exact & approx)
        assert found / 200 >= 0.95
    finally:
        store.drop_project()
        store.close()


def _unit_rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    mat = rng.standard_normal((n, dim)).astype(np.float32)
    return mat / np.linalg.norm(mat, axis=1, keepdims=True)


def _assert_search_is_exact(store: Any, ids: list[str], mat: np.ndarray, rng: Any) -> None:
    """Top 10 through the partitioned index equals NumPy's exact top 10, in order, with the cosines."""
    for _ in range(8):
        q = _unit_rows(rng, 1, mat.shape[1])[0]
        sims = mat @ q
        exact = [ids[i] for i in np.argsort(-sims)[:10]]
        hits = store.search("x", query_vec=q, mode="vector", limit=10)
        assert [h.node.id for h in hits] == exact
        assert [round(h.cosine, 4) for h in hits] == [
            round(float(sims[ids.index(h.node.id)]), 4) for h in hits
        ]


def test_partitioned_hnsw_search_equals_exact_on_a_small_set(
    pg_url: str, embedder: LocalEmbeddings
) -> None:
    # 50 rows a partition, under ef_search: every graph's search reaches all its rows, so the merged
    # answer must be the exact one; a wrong merge, predicate or limit shows as a different list.
    rng = np.random.default_rng(3)
    n = 50 * HNSW_PARTITIONS
    mat = _unit_rows(rng, n, embedder.dim)
    store = _open(pg_url, embedder, _project())
    try:
        nodes = store.add_nodes([NewNode("fact", f"memory {i}") for i in range(n)], vectors=mat)
        ids = [nd.id for nd in nodes]
        _assert_search_is_exact(store, ids, mat, rng)
        # The planner walks every partition's graph (a sequential scan would hide a broken index).
        plan = "\n".join(
            r[0]
            for r in store._conn.execute(
                "EXPLAIN " + store._approx_sql(["active"]), {"q": mat[0], "k": 10}
            )
        )
        for part in range(HNSW_PARTITIONS):
            assert f"Index Scan using idx_embeddings_hnsw_{part} on embeddings" in plan
        # Filters apply inside each partition: a type filter returns that type's exact top 5.
        events = store.add_nodes(
            [NewNode("event", f"event {i}") for i in range(30)],
            vectors=_unit_rows(rng, 30, embedder.dim),
        )
        q = mat[5]
        hits = store.search("x", query_vec=q, mode="vector", limit=5, types=["event"])
        dvecs = store._vectors_of([d.id for d in events])
        exact = sorted(dvecs, key=lambda i: -float(dvecs[i] @ q))[:5]
        assert [h.node.id for h in hits] == exact
    finally:
        store.drop_project()
        store.close()


def test_migration_splits_an_existing_single_hnsw_index(
    pg_url: str, embedder: LocalEmbeddings
) -> None:
    project = _project()
    rng = np.random.default_rng(4)
    mat = _unit_rows(rng, 200, embedder.dim)
    store = _open(pg_url, embedder, project)
    try:
        nodes = store.add_nodes([NewNode("fact", f"m {i}") for i in range(200)], vectors=mat)
        # Put the schema back as schema 2 left it: one HNSW graph, migration 3 not recorded.
        conn = store._conn
        for part in range(HNSW_PARTITIONS):
            conn.execute(f"DROP INDEX idx_embeddings_hnsw_{part}")
        for stmt in vector_index_ddl(partitions=1):
            conn.execute(stmt)
        conn.execute("DELETE FROM octy_meta WHERE key = 'hnsw_partitions'")
        conn.execute("DELETE FROM octy_migrations WHERE version = 3")
        store.close()
        store = _open(pg_url, embedder, project)
        names = {
            r[0]
            for r in store._conn.execute(
                "SELECT indexname FROM pg_indexes WHERE schemaname = %s AND indexdef LIKE %s",
                (store.schema, "%USING hnsw%"),
            )
        }
        assert names == {f"idx_embeddings_hnsw_{p}" for p in range(HNSW_PARTITIONS)}
        assert store.partitions == HNSW_PARTITIONS
        assert store.meta()["hnsw_partitions"] == str(HNSW_PARTITIONS)
        _assert_search_is_exact(store, [nd.id for nd in nodes], mat, rng)
    finally:
        store.drop_project()
        store.close()


def test_ef_search_follows_the_graphs_size() -> None:
    from octygraph.store.postgres import EF_SEARCH, EF_SEARCH_MIN, ef_search_for

    # The measured ends (bench/README.md): 40 at 100,000 memories in 8 graphs, 200 at 1,000,000.
    assert ef_search_for(100_000, 8) == EF_SEARCH_MIN == 40
    assert ef_search_for(1_000_000, 8) == EF_SEARCH == 200
    assert ef_search_for(500_000, 8) == 100
    assert ef_search_for(50_000_000, 8) == EF_SEARCH  # pgvector allows 1000; latency caps it
    assert ef_search_for(10, 1) == EF_SEARCH  # one graph: as before partitions


def test_one_graph_index_still_searches_exactly(pg_url: str, embedder: LocalEmbeddings) -> None:
    # bulk_load(partitions=1) builds the schema-2 shape (benchmarks compare it); searches and reopens
    # keep using it.
    project = _project()
    rng = np.random.default_rng(5)
    mat = _unit_rows(rng, 150, embedder.dim)
    items = [NewNode("fact", f"m {i}", id=f"n{i:04d}") for i in range(150)]
    store = _open(pg_url, embedder, project)
    try:
        store.bulk_load(items, mat, partitions=1)
        store.close()
        store = _open(pg_url, embedder, project)
        assert store.partitions == 1
        _assert_search_is_exact(store, [it.id for it in items], mat, rng)
    finally:
        store.drop_project()
        store.close()


def test_require_postgres_is_set_in_ci() -> None:
    """CI exports OCTY_REQUIRE_POSTGRES=1 before it runs the tests, so a missing server fails the run
    (see the `pg_url` fixture) instead of skipping the PostgreSQL tests unseen."""
    script = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text().splitlines()
    lines = [line.strip() for line in script]
    tests = next(i for i, line in enumerate(lines) if line.startswith("python -m pytest"))
    assert "export OCTY_REQUIRE_POSTGRES=1" in lines[:tests]
    assert not any("OCTY_REQUIRE_POSTGRES" in line for line in lines[tests:])  # not undone after


def test_pipeline_and_commands_on_postgres(
    pg_url: str, home: Path, monkeypatch: pytest.MonkeyPatch, embedder: LocalEmbeddings
) -> None:
    from tests.conftest import cli_json, run_cli

    project = _project()
    monkeypatch.setenv("OCTY_DATABASE_URL", pg_url)
    monkeypatch.setenv("OCTYBOT_PROJECT", project)
    told = cli_json("run", "Peter handles the Anderson account", "--json", "--offline")
    assert told["stored"] and told["stored"][0]["content"] == "Peter handles the Anderson account"
    asked = cli_json("run", "Who handles Anderson?", "--json", "--offline")
    assert "Peter handles the Anderson account" in asked["context"]
    corrected = cli_json("run", "Actually, Lisa handles Anderson now", "--json", "--offline")
    assert told["stored"][0]["id"] in corrected["superseded"]
    after = cli_json("run", "Who handles Anderson?", "--json", "--offline")
    assert "Lisa handles Anderson" in after["context"]
    assert "Peter handles the Anderson account" not in after["context"]
    found = cli_json("search", "Anderson account", "--json")
    assert found and "Lisa" in found[0]["content"]

    settings = Settings.from_env()
    assert not settings.paths.db.exists()  # the memories went to the server only
    store = _open(pg_url, embedder, project)
    try:
        # Checkpoints live beside the memories, in the project's schema (raw SQL: the schema itself).
        runs = store._conn.execute("SELECT count(DISTINCT thread_id) FROM checkpoints").fetchone()
        assert runs[0] >= 4
        refused = run_cli("memory", "load", "small-baseline")
        assert refused.returncode == 1
        assert "memory export --format jsonl" in refused.stderr
        assert "Traceback" not in refused.stderr
    finally:
        store.drop_project()
        store.close()


def test_memory_active_reports_the_server_schema(
    pg_url: str, home: Path, monkeypatch: pytest.MonkeyPatch, embedder: LocalEmbeddings
) -> None:
    from tests.conftest import cli_json, run_cli

    project = _project()
    monkeypatch.setenv("OCTY_DATABASE_URL", pg_url)
    monkeypatch.setenv("OCTYBOT_PROJECT", project)
    missing = run_cli("memory", "active")
    assert missing.returncode == 1 and "Traceback" not in missing.stderr
    cli_json("memory", "add", "Peter handles the Anderson account", "--json")
    try:
        active = cli_json("memory", "active", "--json")
        assert active["profile"] is None and active["stats"]["nodes"] == 1
        assert project in active["db"] and "memory.db" not in active["db"]
        text = run_cli("memory", "active").stdout
        assert "Memories    1 (0 replaced)" in text and project in text
    finally:
        with _open(pg_url, embedder, project) as store:
            store.drop_project()

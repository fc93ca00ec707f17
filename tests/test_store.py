"""The memory graph on real SQLite files with real sqlite-vec and the real local model."""

from __future__ import annotations

import multiprocessing
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from octygraph.embeddings import LocalEmbeddings
from octygraph.store import (
    AdminStore,
    EmbeddingMismatch,
    MemoryStore,
    NewNode,
    NotAnOctygraphDatabase,
    StoreError,
)
from tests.conftest import open_test_store


@pytest.fixture
def store(any_store: AdminStore) -> AdminStore:
    """Tests in this file that take `store` run on every backend (see `any_store`)."""
    return any_store


@pytest.fixture
def sqlite_store(tmp_path: Path, embedder: LocalEmbeddings) -> Iterator[MemoryStore]:
    with MemoryStore.open(tmp_path / "memory.db", embedder) as s:
        yield s


def test_schema_has_seed_tables_indexes_and_search_indexes(sqlite_store: MemoryStore) -> None:
    # Raw SQL on purpose: this test checks the on-disk schema itself.
    store = sqlite_store
    conn = store._conn
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    for expected in (
        "nodes",
        "edges",
        "embeddings",
        "nodes_fts",
        "vec_nodes",
        "octy_meta",
        "idx_nodes_type",
        "idx_nodes_subtype",
        "idx_edges_source",
        "idx_edges_target",
        "idx_edges_type",
    ):
        assert expected in names
    cols = [r[1] for r in conn.execute("PRAGMA table_info(nodes)")]
    assert cols == [
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
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    meta = store.meta()
    assert meta["embedding_model"] == "all-MiniLM-L6-v2/int8-onnx"
    assert meta["embedding_dim"] == "384"
    assert meta["schema_version"] == "1"


def test_crud_edges_and_defaults(store: AdminStore) -> None:
    peter, created = store.ensure_entity("Peter", "person")
    assert created
    again, created_again = store.ensure_entity("peter")
    assert again.id == peter.id and not created_again
    rule = store.add_node("instruction", "Always run the tests before deploying", subtype="rule")
    assert rule.scope == 0.5 and not rule.can_summarize  # the seed's defaults for instructions
    plan = store.add_node(
        "plan", "Ship v2 on Friday", valid_from="2026-12-04", entity_ids=[peter.id]
    )
    assert plan.scope == 0.3
    fetched = store.get_node(plan.id)
    assert fetched is not None and fetched.valid_from == "2026-12-04"
    assert [e.target_id for e in store.edges_of(plan.id)] == [peter.id]
    assert store.delete_node(plan.id)
    assert store.get_node(plan.id) is None
    assert store.edges_of(peter.id) == []
    assert store.cosines(store.embed_query("Ship v2"), [plan.id]) == {}  # its vector went too
    assert store.search("ship v2 friday", types=["plan"]) == []
    with pytest.raises(StoreError, match="Unknown memory type"):
        store.add_node("note", "x")
    with pytest.raises(StoreError, match="empty"):
        store.add_node("fact", "   ")
    with pytest.raises(StoreError, match="No memory with id"):
        store.add_node("fact", "about nothing", entity_ids=["missing"])


def test_supersede_copies_edges_and_hides_old(store: AdminStore) -> None:
    anderson, _ = store.ensure_entity("Anderson", "account")
    old = store.add_node("fact", "Peter handles the Anderson account", entity_ids=[anderson.id])
    new = store.supersede(old.id, "Lisa handles the Anderson account")
    assert store.get_node(old.id).superseded_by == new.id  # type: ignore[union-attr]
    assert [e.target_id for e in store.edges_of(new.id)] == [anderson.id]
    contents = [
        h.node.content for h in store.search("who handles the Anderson account", types=["fact"])
    ]
    assert contents == ["Lisa handles the Anderson account"]
    with_old = store.search(
        "who handles the Anderson account", types=["fact"], include_superseded=True
    )
    assert {h.node.id for h in with_old} == {old.id, new.id}
    assert [n.id for n in store.supersede_chain(new.id)] == [old.id, new.id]
    rels = store.relationships(anderson.id)
    assert [r.node.id for r in rels] == [new.id]
    with pytest.raises(StoreError, match="already replaced"):
        store.supersede(old.id, "again")
    # Forgetting the replacement brings the old version back.
    store.delete_node(new.id)
    assert store.get_node(old.id).superseded_by is None  # type: ignore[union-attr]
    assert store.search("Anderson account", types=["fact"])[0].node.id == old.id


def test_entity_lookup_order(store: AdminStore) -> None:
    acme = store.add_node(
        "entity", "Acme Corporation", subtype="org", attributes={"aliases": ["ACME"]}
    )
    store.add_node("entity", "Acme Labs", subtype="org")
    assert store.find_entity("Acme Corporation").id == acme.id  # type: ignore[union-attr]
    assert store.find_entity("acme corporation").id == acme.id  # type: ignore[union-attr]
    assert store.find_entity("acme").id == acme.id  # type: ignore[union-attr]  # alias
    assert store.find_entity("Acme Corp").id == acme.id  # type: ignore[union-attr]  # semantic
    assert store.find_entity("Zebra logistics") is None


def test_relationships_ordered_by_salience_and_capped(store: AdminStore) -> None:
    peter, _ = store.ensure_entity("Peter", "person")
    for i in range(30):
        store.add_node("fact", f"Peter detail number {i}", entity_ids=[peter.id], salience=i / 10)
    rels = store.relationships(peter.id, limit=25)
    assert len(rels) == 25
    saliences = [r.node.salience for r in rels]
    assert saliences == sorted(saliences, reverse=True)


def test_search_filters_types_entity_and_time(store: AdminStore) -> None:
    peter, _ = store.ensure_entity("Peter", "person")
    store.add_node(
        "event",
        "Peter finished the Anderson article",
        entity_ids=[peter.id],
        created_at="2026-01-02 10:00:00",
    )
    store.add_node("event", "Maria finished the Baker article", created_at="2026-03-02 10:00:00")
    store.add_node("fact", "Articles are due every Friday")
    events = store.search("finished article", types=["event"])
    assert {h.node.node_type for h in events} == {"event"}
    scoped = store.search("finished article", types=["event"], entity_id=peter.id)
    assert [h.node.content for h in scoped] == ["Peter finished the Anderson article"]
    recent = store.search("finished article", types=["event"], since="2026-02-01")
    assert [h.node.content for h in recent] == ["Maria finished the Baker article"]
    for hit in store.search("finished article"):
        assert -1.0 <= hit.cosine <= 1.0


PARAPHRASES = [
    ("the office router keeps dropping the 5 GHz band", "WiFi problem"),
    ("Peter handles the Anderson account", "who manages Anderson"),
    (
        "Always run the test suite before deploying to production",
        "what should I do before I ship the release",
    ),
    ("Maria is allergic to peanuts", "food restrictions for Maria"),
    (
        "The staging database password rotates every 30 days",
        "how often do staging credentials change",
    ),
    ("Invoices for Baker Ltd are sent quarterly", "billing schedule for Baker"),
]
DISTRACTORS = [
    "Peter's birthday is in June",
    "Anderson Cooper interview aired on Monday",
    "The router in the lab is a Cisco model",
    "Deploying the frontend takes ten minutes",
    "Maria likes hiking on weekends",
    "The Baker street office has a new coffee machine",
]


def test_hybrid_search_finds_paraphrases(store: AdminStore) -> None:
    store.add_nodes(
        [NewNode("fact", doc) for doc, _ in PARAPHRASES] + [NewNode("fact", d) for d in DISTRACTORS]
    )
    top1 = {mode: 0 for mode in ("hybrid", "vector", "keyword")}
    for doc, query in PARAPHRASES:
        for mode in top1:
            hits = store.search(query, limit=3, mode=mode)  # type: ignore[arg-type]
            if hits and hits[0].node.content == doc:
                top1[mode] += 1
    assert top1["hybrid"] == len(PARAPHRASES)
    assert top1["hybrid"] >= max(top1["vector"], top1["keyword"])
    wifi = store.search("WiFi problem", limit=1)
    assert wifi[0].node.content == PARAPHRASES[0][0]


def test_bulk_insert_and_batch_vectors_match_single(
    store: AdminStore, embedder: LocalEmbeddings
) -> None:
    texts = [f"Memory number {i} about project Falcon" for i in range(40)]
    nodes = store.add_nodes([NewNode("fact", t) for t in texts], batch_size=16)
    assert len(nodes) == 40
    single = embedder.embed_array([texts[7]])[0]
    assert store.cosines(single, [nodes[7].id])[nodes[7].id] > 0.999
    assert store.stats()["nodes"] == 40


class FakeOtherModel:
    model_id = "other/model"
    dim = 8

    def embed_array(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), 8), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i, sum(map(ord, t)) % 8] = 1.0
        return out


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def reopen(
    request: pytest.FixtureRequest, tmp_path: Path, embedder: LocalEmbeddings
) -> Iterator[Callable[..., Any]]:
    """Open one memory again and again, with any model: a file, or a project's schema on the server."""
    where: dict[str, Any] = {}
    if request.param == "postgres":
        where = {
            "url": request.getfixturevalue("pg_url"),
            "project_id": f"t{uuid.uuid4().hex[:12]}",
        }

    def open_again(model: Any, **kwargs: Any) -> Any:
        return open_test_store(request.param, tmp_path, model, **where, **kwargs)

    yield open_again
    if request.param == "postgres":
        with open_again(embedder, check_model=False) as store:
            store.drop_project()


def test_model_mismatch_is_clear_and_reindex_fixes_it(
    reopen: Callable[..., Any], embedder: LocalEmbeddings
) -> None:
    with reopen(FakeOtherModel()) as other:
        other.add_node("fact", "Peter handles the Anderson account")
    with pytest.raises(EmbeddingMismatch, match="octygraph reindex"):
        reopen(embedder)
    with reopen(embedder, check_model=False) as s:
        assert s.reindex() == 1
    with reopen(embedder) as s:
        assert (
            s.search("who manages Anderson")[0].node.content == "Peter handles the Anderson account"
        )
        assert s.meta()["embedding_dim"] == "384"


def test_not_an_octygraph_database(tmp_path: Path, embedder: LocalEmbeddings) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(NotAnOctygraphDatabase):
        MemoryStore.open(junk, embedder)
    assert junk.read_bytes().startswith(b"this is not sqlite")
    import sqlite3

    foreign = tmp_path / "foreign.db"  # raw SQL on purpose: a SQLite file that is not octygraph's
    with sqlite3.connect(foreign) as c:
        c.execute("CREATE TABLE people(name TEXT)")
    with pytest.raises(NotAnOctygraphDatabase, match="not an octygraph database"):
        MemoryStore.open(foreign, embedder)
    with sqlite3.connect(foreign) as c:
        assert [r[0] for r in c.execute("SELECT name FROM sqlite_master")] == ["people"]


def _writer(path: str, tag: str, count: int) -> None:
    from octygraph.embeddings import local_embeddings

    with MemoryStore.open(path, local_embeddings()) as s:
        for i in range(count):
            s.add_node("fact", f"{tag} wrote memory {i}")


@pytest.mark.slow
def test_two_processes_write_concurrently_without_loss(
    tmp_path: Path, embedder: LocalEmbeddings
) -> None:
    path = tmp_path / "shared.db"
    MemoryStore.open(path, embedder).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(path), tag, 40)) for tag in ("alpha", "beta")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    with MemoryStore.open(path, embedder) as s:
        assert s.stats()["nodes"] == 80
        # Every write reached all three indexes: vectors, sqlite-vec and FTS5.
        assert len(list(s.vectors_by_id())) == 80
        assert len(s.search("alpha wrote memory", mode="vector", limit=100)) == 80
        keyword = s.search("alpha", mode="keyword", limit=100)
        assert len(keyword) == 40 and all("alpha" in h.node.content for h in keyword)


def test_vector_cache_matches_sqlite_vec_and_stays_fresh(
    tmp_path: Path, embedder: LocalEmbeddings
) -> None:
    path = tmp_path / "cached.db"
    plain = MemoryStore.open(path, embedder)
    cached = MemoryStore.open(path, embedder)
    cached.enable_vector_cache()
    try:
        plain.add_nodes(
            [NewNode("fact", doc) for doc, _ in PARAPHRASES]
            + [NewNode("fact", d) for d in DISTRACTORS]
        )

        def same(query: str, **kw: object) -> list[str]:
            a = [(h.node.id, round(h.cosine, 4)) for h in plain.search(query, **kw)]  # type: ignore[arg-type]
            b = [(h.node.id, round(h.cosine, 4)) for h in cached.search(query, **kw)]  # type: ignore[arg-type]
            assert a == b
            return [i for i, _ in b]

        for _, query in PARAPHRASES:
            same(query, mode="vector")
            same(query)
        # Written through another connection: seen at the next search.
        new = plain.add_node("fact", "The Falcon release train leaves every second Tuesday")
        assert same("when does the Falcon release ship", mode="vector")[0] == new.id
        # Written through the cached store itself.
        own = cached.add_node("fact", "Quokka is the codename of the mobile app")
        assert same("mobile app codename", mode="vector")[0] == own.id
        # Superseded and deleted nodes drop out; re-embedding reloads.
        replaced = cached.supersede(own.id, "Quokka was renamed Wombat")
        assert own.id not in same("mobile app codename", mode="vector")
        plain.delete_node(replaced.id)
        assert replaced.id not in same("renamed Wombat", mode="vector")
        plain.reindex()
        same("WiFi problem", mode="vector")
    finally:
        plain.close()
        cached.close()


def test_vector_cache_grows_in_place_without_moving_rows_it_handed_out(
    tmp_path: Path, embedder: LocalEmbeddings
) -> None:
    # The service's cache appends each run's new vectors into spare room instead of copying the
    # whole matrix; crossing that room's end must lose nothing and leave earlier rows where they were.
    store = MemoryStore.open(tmp_path / "grow.db", embedder)
    store.enable_vector_cache()
    try:
        first = store.add_node("fact", "Peter handles the Anderson account")
        assert store.search("who handles Anderson", mode="vector")[0].node.id == first.id
        cache = store._vector_cache
        assert cache is not None
        handed_out = store._vectors_of([first.id])[first.id]
        before = handed_out.copy()
        added = []
        for batch in range(6):  # 300 more, in the small steps runs write in
            held = cache.matrix
            added += store.add_nodes(
                [
                    NewNode("fact", f"Service {batch}-{i} is owned by team {i % 7}")
                    for i in range(50)
                ]
            )
            store.search("who owns service", mode="vector")
            if batch < 4:  # within the first buffer's spare rows: appended in place, nothing copied
                assert held is not None and np.shares_memory(cache.matrix, held)
        assert np.array_equal(handed_out, before)
        stored = dict(store.vectors_by_id())
        assert cache.matrix is not None and cache.matrix.shape == (301, embedder.dim)
        assert cache.ids == [first.id, *(n.id for n in added)]
        assert np.array_equal(cache.matrix, np.stack([stored[i] for i in cache.ids]))
        newest = added[-1]
        assert store.search(newest.content, mode="vector")[0].node.id == newest.id
    finally:
        store.close()


def test_superseded_lookups_use_an_index_also_in_older_databases(
    tmp_path: Path, embedder: LocalEmbeddings
) -> None:
    path = tmp_path / "old.db"
    with MemoryStore.open(path, embedder) as store:
        with store.transaction() as conn:  # as a database made before the index existed
            conn.execute("DROP INDEX idx_nodes_superseded")
    with MemoryStore.open(path, embedder) as store:
        old = store.add_node("fact", "Peter handles the Anderson account")
        new = store.supersede(old.id, "Lisa handles the Anderson account")
        for sql, args in (
            ("SELECT id FROM nodes WHERE superseded_by IS NOT NULL", ()),
            ("SELECT id FROM nodes WHERE superseded_by = ?", (new.id,)),
        ):
            plan = " ".join(str(r) for r in store._conn.execute(f"EXPLAIN QUERY PLAN {sql}", args))
            assert "idx_nodes_superseded" in plan
            assert [r[0] for r in store._conn.execute(sql, args)] == [old.id]


def test_integrity_of_a_sound_graph_on_every_backend(store: AdminStore) -> None:
    from octygraph.store.admin import integrity

    peter, _ = store.ensure_entity("Peter", "person")
    old = store.add_node("fact", "Peter handles the Anderson account", entity_ids=[peter.id])
    store.supersede(old.id, "Lisa handles the Anderson account")
    assert integrity(store) == []
    # A memory whose vector went missing is reported, with what to do.
    lost = store.add_node("fact", "Maria is allergic to peanuts")
    mark = "?" if isinstance(store, MemoryStore) else "%s"
    # Raw SQL on purpose: damage the stored graph as no store method would.
    with store.transaction() as conn:  # type: ignore[attr-defined]
        conn.execute(f"DELETE FROM embeddings WHERE node_id = {mark}", (lost.id,))
    assert integrity(store) == [f"Memory {lost.id} has no vector; run `octygraph reindex`."]


def test_vectors_by_id_in_insertion_order(store: AdminStore) -> None:
    first = store.add_node("fact", "Peter handles the Anderson account")
    second = store.add_node("fact", "Maria is allergic to peanuts")
    store.supersede(first.id, "Lisa handles the Anderson account")
    everything = list(store.vectors_by_id())
    assert [i for i, _ in everything][:2] == [first.id, second.id] and len(everything) == 3
    current = dict(store.vectors_by_id(current_only=True))
    assert first.id not in current and second.id in current and len(current) == 2
    # The stored vector is the one search ranks by: a memory is its own nearest neighbour.
    assert store.cosines(current[second.id], [second.id])[second.id] == pytest.approx(1.0, abs=1e-3)


def test_keyword_inputs_rank_as_keyword_search_does(sqlite_store: MemoryStore) -> None:
    from octygraph.store.ranking import BM25_B, BM25_K1

    store = sqlite_store
    short = store.add_node("fact", "Anderson account budget")
    store.add_node("fact", "The Anderson account moved to Lisa after a long review of the budget")
    store.add_node("fact", "The account of the Falcon project was closed last spring")
    store.add_node("fact", "Maria is allergic to peanuts")
    old = store.add_node("fact", "Anderson budget was frozen")
    store.supersede(old.id, "Anderson budget is open again for the account")
    inputs = store.keyword_inputs("Anderson account budget", 300)
    assert inputs is not None
    assert old.id not in inputs.node_ids and len(inputs.node_ids) == 4  # current matches only
    assert sorted(inputs.terms) == ["account", "anderson", "budget"]
    assert (inputs.idf > 0).all()
    row = inputs.node_ids.index(short.id)
    assert inputs.tf[row].tolist() == [1, 1, 1] and inputs.rel_len[row] < 1.0
    k1, b = BM25_K1, BM25_B
    norm = (k1 * (1 - b + b * inputs.rel_len))[:, None]
    scores = (inputs.idf * inputs.tf * (k1 + 1) / (inputs.tf + norm)).sum(axis=1)
    expected = [inputs.node_ids[i] for i in np.argsort(-scores, kind="stable")]
    hits = store.search("Anderson account budget", mode="keyword", limit=10)
    assert [h.node.id for h in hits] == expected
    assert store.keyword_inputs("zebra", 300) is None and store.keyword_inputs("   ", 300) is None


def test_keyword_search_reuses_a_querys_rows_only_while_the_database_is_unchanged(
    sqlite_store: MemoryStore, tmp_path: Path
) -> None:
    store = sqlite_store
    for i in range(40):
        store.add_node(
            "fact" if i % 3 else "instruction", f"Deploy step {i} of the billing service"
        )
    store.add_node("plan", "Deploy the billing service on Friday")

    def ranked(types: list[str] | None) -> list[tuple[str, float]]:
        where, args = store._filters(types, None, None, None, False)
        return store._keyword_candidates("deploy billing service", 10, where, args)

    kinds: list[list[str] | None] = [["fact"], ["instruction"], ["plan"], None, ["fact"]]
    with_memo = [ranked(t) for t in kinds]  # one prompt: the same words, other filters
    assert store._keyword_pieces  # the FTS5 rows and their scores were kept
    store._keyword_pieces, store._keyword_at = {}, None
    original = store._keyword_memo
    store._keyword_memo = lambda: None  # type: ignore[method-assign]
    try:
        assert [ranked(t) for t in kinds] == with_memo  # same rows, scores and order as without
    finally:
        store._keyword_memo = original  # type: ignore[method-assign]
    # A commit by this process, or by another connection, is seen at once.
    assert ranked(None) == with_memo[3]  # kept again
    new = store.add_node("plan", "Deploy billing service deploy billing service")
    assert ranked(None)[0][0] == new.id
    assert ranked(["plan"])[0][0] == new.id  # few plans: the filter-first search, kept as well
    other = MemoryStore.open(store.path, store.embedder)
    try:
        later = other.add_node("plan", "Billing service deploy: deploy billing service billing")
    finally:
        other.close()
    assert later.id in dict(ranked(None))
    # Inside a write transaction its own uncommitted rows count, and nothing is kept for later.
    with store.transaction():
        assert store._keyword_memo() is None


def test_a_query_is_embedded_once_for_search_and_for_the_judges(sqlite_store: MemoryStore) -> None:
    from octygraph.embeddings import local as vectors

    store = sqlite_store
    embedder = store.embedder
    assert isinstance(embedder, LocalEmbeddings)
    text = "Which runbook covers the nightly ledger export? (query 5e1d)"
    before = embedder.tokens_embedded
    searched = store.embed_query(text)
    after_search = embedder.tokens_embedded
    judged = vectors.cached_local_embed([text])[0]  # the relevance judge's call for the prompt
    assert after_search > before and embedder.tokens_embedded == after_search
    # The very vector the model gives for the text alone, or in any batch.
    alone = embedder.embed_array([text])[0]
    batched = embedder.embed_array(["a much longer text than the query " * 3, text, "x"])[1]
    assert searched.tobytes() == judged.tobytes() == alone.tobytes() == batched.tobytes()


def test_a_text_being_embedded_is_waited_for_not_embedded_twice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The service starts on a prompt's vector as the request arrives; the pipeline asking for it
    meanwhile waits for that computation instead of running the model a second time."""
    from octygraph.embeddings import local as vectors
    from octygraph.embeddings import local_embeddings

    model = local_embeddings()
    real = model.embed_array
    calls: list[list[str]] = []

    def slow(texts: list[str]) -> np.ndarray:
        calls.append(list(texts))
        time.sleep(0.2)  # long enough that the second caller arrives while the first computes
        return real(texts)

    monkeypatch.setattr(model, "embed_array", slow)
    text = f"Which queue does the invoice mailer read? ({uuid.uuid4().hex[:8]})"
    start = threading.Barrier(2)
    got: list[np.ndarray] = []

    def ask() -> None:
        start.wait()
        got.append(vectors.cached_local_embed([text])[0])

    threads = [threading.Thread(target=ask) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert calls == [[text]]
    assert len(got) == 2 and got[0].tobytes() == got[1].tobytes() == real([text])[0].tobytes()

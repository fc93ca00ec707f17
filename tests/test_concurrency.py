"""Concurrency: writers racing on one new entity, and many first hooks racing on a new project."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import pytest

from octygraph.config.settings import Settings
from octygraph.embeddings import LocalEmbeddings
from octygraph.session import hooks
from octygraph.store import MemoryStore, StoreError


def _together(count: int, work: object) -> list[object]:
    """Run `work(i)` in `count` threads released at once; their results (or exceptions)."""
    barrier = threading.Barrier(count)
    results: list[object] = [None] * count

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = work(i)  # type: ignore[operator]
        except Exception as exc:  # the test reports it
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    return results


def test_ten_writers_naming_one_new_entity_leave_one(
    tmp_path: Path, embedder: LocalEmbeddings
) -> None:
    db = tmp_path / "memory.db"
    MemoryStore.open(db, embedder).close()

    def write(i: int) -> str:
        with MemoryStore.open(db, embedder) as store:
            name = "Zephyr Labs" if i % 2 else "zephyr labs"
            node, _ = store.ensure_entity(name)
            store.add_node("fact", f"Zephyr Labs renewed contract {i}", entity_ids=[node.id])
            return node.id

    results = _together(10, write)
    assert not [r for r in results if isinstance(r, Exception)], results
    assert len(set(results)) == 1
    with MemoryStore.open(db, embedder) as store:
        entities = store.list_nodes(types=["entity"], limit=100)
    assert [e.content.lower() for e in entities] == ["zephyr labs"]


def test_the_unique_name_index_refuses_a_second_current_entity(
    tmp_path: Path, embedder: LocalEmbeddings
) -> None:
    with MemoryStore.open(tmp_path / "memory.db", embedder) as store:
        first, created = store.ensure_entity("Acme")
        assert created
        with pytest.raises(StoreError, match="already exists"):
            store.add_node("entity", "ACME")
        # A rename that only changes case replaces the entity, it does not collide with it.
        renamed = store.supersede(first.id, "ACME")
        assert store.ensure_entity("acme")[0].id == renamed.id


@pytest.mark.slow
def test_thirty_first_hooks_on_a_new_project_are_all_answered(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OCTY_HOOK_BUDGET_S", "300")
    cwd = Path.cwd()
    settings = Settings.from_env()
    assert not settings.paths.db.exists()

    def hook(i: int) -> hooks.HookReply:
        payload = {
            "session_id": f"s{i}",
            "cwd": str(cwd),
            "hook_event_name": "UserPromptSubmit",
            "prompt": f"Our billing service {i} runs on Postgres 16 in Frankfurt.",
        }

        async def answer_then_store() -> hooks.HookReply:
            reply = await hooks.handle("prompt", json.dumps(payload).encode())
            await reply.settle()  # the store half, after the answer, writes the trace
            return reply

        return asyncio.run(answer_then_store())

    replies = _together(30, hook)
    errors = [r for r in replies if isinstance(r, Exception) or r.notice]  # type: ignore[union-attr]
    assert errors == []
    degraded = [
        p.name
        for p in settings.paths.debug_dir.glob("*.json")
        if json.loads(p.read_text(encoding="utf-8")).get("degraded")
    ]
    assert degraded == []
    assert len(list(settings.paths.debug_dir.glob("*.json"))) == 30


def test_a_database_we_may_only_read_answers_reads(
    tmp_path: Path, embedder: LocalEmbeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    db = tmp_path / "memory.db"
    with MemoryStore.open(db, embedder) as store:
        store.add_node("fact", "Acme uses Postgres 16")
    monkeypatch.setattr(os, "access", lambda *a, **k: False)  # as a read-only mount answers
    with MemoryStore.open(db, embedder) as store:
        assert [h.node.content for h in store.search("Postgres")] == ["Acme uses Postgres 16"]
        with pytest.raises(StoreError, match="read-only"):
            store.add_node("fact", "Something new")


def test_an_import_links_to_the_entity_already_stored(
    tmp_path: Path, embedder: LocalEmbeddings
) -> None:
    from octygraph.memory.transfer import import_jsonl

    path = tmp_path / "in.jsonl"
    lines = [
        {"kind": "node", "id": "e1", "type": "entity", "content": "ACME"},
        {"kind": "node", "id": "f1", "type": "fact", "content": "ACME renews in March"},
        {"kind": "edge", "id": "x1", "source_id": "f1", "target_id": "e1", "edge_type": "about"},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    with MemoryStore.open(tmp_path / "memory.db", embedder) as store:
        acme, _ = store.ensure_entity("Acme")
        import_jsonl(store, path)
        assert [e.content for e in store.list_nodes(types=["entity"])] == ["Acme"]
        assert any(edge.target_id == acme.id for edge in store.edges_of("f1"))

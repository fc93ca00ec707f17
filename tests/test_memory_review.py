"""Reviewing memories through the real CLI: show, ls, edit, forget, export and import."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from octygraph.config.settings import Settings
from octygraph.embeddings import LocalEmbeddings
from octygraph.profiles import build_database
from octygraph.store import MemoryStore, Node
from octygraph_demo import small_baseline_graph
from tests.conftest import cli_json, run_cli

QUERIES = (
    "Who handles the Anderson account?",
    "what must happen before a deploy",
    "billing outage",
)


@pytest.fixture(scope="module")
def baseline_file(tmp_path_factory: pytest.TempPathFactory, embedder: LocalEmbeddings) -> Path:
    path = tmp_path_factory.mktemp("built") / "small-baseline.db"
    build_database(path, small_baseline_graph(), embedder)
    return path


@pytest.fixture
def db(home: Path, baseline_file: Path) -> Path:
    """The project's active database, holding the small baseline."""
    path = Settings.from_env().paths.db
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(baseline_file, path)
    return path


def find(db: Path, embedder: LocalEmbeddings, text: str) -> Node:
    with MemoryStore.open(db, embedder, create=False) as store:
        return next(n for n in store.iter_all() if n.content.startswith(text))


def one_sentence(result: Any) -> str:
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def everything(db: Path, embedder: LocalEmbeddings) -> tuple[list[Any], list[Any], list[Any]]:
    """Nodes, edges and search results of a database, as comparable values."""
    with MemoryStore.open(db, embedder, create=False) as store:
        nodes = [n.to_dict() for n in store.iter_all()]
        edges = [
            (e.id, e.source_id, e.target_id, e.edge_type, e.attributes, e.created_at)
            for e in store.all_edges()
        ]
        hits = [[(h.node.id, round(h.score, 4)) for h in store.search(q, limit=5)] for q in QUERIES]
    return nodes, edges, hits


@pytest.mark.slow
def test_show_gives_links_versions_and_provenance(db: Path, embedder: LocalEmbeddings) -> None:
    node = find(db, embedder, "Priya handles the Globex account")
    shown = cli_json("memory", "show", node.id, "--json")
    assert shown["node"]["content"] == node.content
    assert shown["node"]["source"] == "user" and shown["node"]["created_at"] == node.created_at
    assert shown["node"]["attributes"]["supersedes"] == shown["versions"][0]["id"]
    assert [v["content"] for v in shown["versions"]] == [
        "Tom handles the Globex account",
        node.content,
    ]
    linked = {
        (link["direction"], link["edge_type"], link["node"]["content"]) for link in shown["links"]
    }
    assert ("out", "about", "Priya Raman") in linked and (
        "out",
        "about",
        "Globex account",
    ) in linked

    human = run_cli("memory", "show", node.id)
    assert human.returncode == 0
    for part in (
        "fact/definitional",
        "source",
        "created",
        "Versions (2)",
        "Priya Raman",
        "[replaced]",
    ):
        assert part in human.stdout


@pytest.mark.slow
def test_ls_filters_by_type_date_and_limit(db: Path) -> None:
    current = cli_json("memory", "ls", "--type", "instruction", "--json")
    assert len(current) == 15 and all(n["type"] == "instruction" for n in current)
    assert [n["created_at"] for n in current] == sorted(
        (n["created_at"] for n in current), reverse=True
    )
    everything_ = cli_json("memory", "ls", "-t", "instruction", "-t", "plan", "--all", "--json")
    assert len(everything_) == 16 + 10
    recent = cli_json("memory", "ls", "--since", "2026-11-10", "--limit", "3", "--json")
    assert len(recent) == 3
    assert all(
        n["created_at"] >= "2026-11-10" or (n["valid_from"] or "") >= "2026-11-10" for n in recent
    )
    assert "not a date" in one_sentence(run_cli("memory", "ls", "--since", "last blursday"))


@pytest.mark.slow
def test_edit_replaces_and_reembeds_keeping_the_old_version(
    db: Path, embedder: LocalEmbeddings
) -> None:
    old = find(db, embedder, "Lisa owns the billing service")
    edited = cli_json(
        "memory", "edit", old.id, "Lisa and Omar co-own the billing service", "--json"
    )
    new_id = edited["new"]["id"]
    assert new_id != old.id and edited["new"]["attributes"]["supersedes"] == old.id
    with MemoryStore.open(db, embedder, create=False) as store:
        assert store.get_node(old.id).superseded_by == new_id  # type: ignore[union-attr]
        hits = store.search("Who co-owns billing with Omar?", limit=3)
        assert hits[0].node.id == new_id
        assert {e.target_id for e in store.edges_of(new_id)} >= {
            e.target_id for e in store.edges_of(old.id)
        }
    again = run_cli("memory", "edit", old.id, "Lisa owns it alone")
    assert f"already replaced by {new_id}" in one_sentence(again)
    assert "empty" in one_sentence(run_cli("memory", "edit", new_id, "   "))


@pytest.mark.slow
def test_forget_archives_then_restore_brings_it_back(db: Path, embedder: LocalEmbeddings) -> None:
    node = find(db, embedder, "Dave prefers Grafana over Datadog")
    forgotten = run_cli("memory", "forget", node.id)
    assert forgotten.returncode == 0 and node.content in forgotten.stdout
    assert f"octygraph memory restore {node.id}" in forgotten.stdout
    with MemoryStore.open(db, embedder, create=False) as store:
        assert store.get_node(node.id).superseded_by == "archived"  # type: ignore[union-attr]
        assert store.edges_of(node.id), "links are kept for the restore"
        assert all(h.node.id != node.id for h in store.search("Grafana or Datadog", limit=20))
    assert [n["id"] for n in cli_json("memory", "ls", "--archived", "--json")] == [node.id]
    assert node.id not in {n["id"] for n in cli_json("memory", "ls", "--json", "-n", "500")}
    assert "already archived" in one_sentence(run_cli("memory", "forget", node.id))

    restored = cli_json("memory", "restore", node.id, "--json")
    assert restored["restored"]["superseded_by"] is None
    with MemoryStore.open(db, embedder, create=False) as store:
        assert any(h.node.id == node.id for h in store.search("Grafana or Datadog", limit=20))
    assert "not archived" in one_sentence(run_cli("memory", "restore", node.id))


@pytest.mark.slow
def test_forget_purge_deletes_the_memory_and_its_links(db: Path, embedder: LocalEmbeddings) -> None:
    node = find(db, embedder, "Dave prefers Grafana over Datadog")
    forgotten = run_cli("memory", "forget", node.id, "--purge")
    assert forgotten.returncode == 0 and node.content in forgotten.stdout
    with MemoryStore.open(db, embedder, create=False) as store:
        assert store.get_node(node.id) is None
        assert store.edges_of(node.id) == []
    assert "No memory with id" in one_sentence(run_cli("memory", "forget", node.id))


@pytest.mark.parametrize("command", [("show",), ("forget",), ("edit",), ("restore",)])
def test_unknown_ids_are_refused_with_one_sentence(db: Path, command: tuple[str, ...]) -> None:
    args = [*command, "0123456789abcdef"] + (["new text"] if command == ("edit",) else [])
    message = one_sentence(run_cli("memory", *args))
    assert message.startswith("No memory with id '0123456789abcdef'")


def test_review_without_a_database_says_what_to_do(home: Path) -> None:
    message = one_sentence(run_cli("memory", "ls"))
    assert "octygraph memory load small-baseline" in message
    assert not Settings.from_env().paths.db.exists()


@pytest.mark.slow
def test_export_then_import_into_an_empty_database_is_the_same(
    db: Path, home: Path, tmp_path: Path, embedder: LocalEmbeddings
) -> None:
    dump = tmp_path / "out" / "memories.jsonl"
    exported = run_cli("memory", "export", "--format", "jsonl", "--output", str(dump))
    assert exported.returncode == 0, exported.stderr
    assert oct(dump.stat().st_mode & 0o777) == "0o600"
    lines = [json.loads(line) for line in dump.read_text().splitlines()]
    assert lines[0]["kind"] == "octygraph-export" and lines[0]["nodes"] == 99
    assert {line["kind"] for line in lines[1:]} == {"node", "edge"}

    imported = cli_json("--project", "copy", "memory", "import", str(dump), "--json")
    assert imported == {
        "nodes_added": 99,
        "nodes_skipped": 0,
        "edges_added": lines[0]["edges"],
        "edges_skipped": 0,
        "superseded": 4,
    }
    copy_db = home / "projects" / "copy" / "memory" / "memory.db"
    assert everything(copy_db, embedder) == everything(db, embedder)

    again = cli_json("--project", "copy", "memory", "import", str(dump), "--json")
    assert again["nodes_added"] == 0 and again["nodes_skipped"] == 99 and again["edges_added"] == 0
    assert everything(copy_db, embedder) == everything(db, embedder)


def test_markdown_export_groups_by_type_then_entity(db: Path, tmp_path: Path) -> None:
    page = run_cli("memory", "export")
    assert page.returncode == 0, page.stderr
    text = page.stdout
    assert text.startswith("# Memory of project proj")
    sections = [line for line in text.splitlines() if line.startswith("## ")]
    assert [s.split(" (")[0] for s in sections] == [
        "## Entities",
        "## Instructions",
        "## Facts",
        "## Events",
        "## Plans",
        "## Opinions",
        "## Replaced memories",
    ]
    facts = text.split("## Facts")[1].split("## Events")[0]
    peter = facts.split("### Peter Novak")[1].split("###")[0]
    assert "- Peter handles the Anderson account (definitional;" in peter
    assert "~~Tom handles the Globex account~~" in text.split("## Replaced memories")[1]
    assert "- **Peter Novak** (also: Peter): works for Brightline" in text
    assert "scope 0.2" in text.split("## Instructions")[1]


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (["{not json"], "Line 1 of bad.jsonl is not JSON"),
        (
            [json.dumps({"kind": "node", "id": "x1", "type": "rumour", "content": "hi"})],
            "Line 1 of bad.jsonl is not a valid node record",
        ),
        (
            [
                json.dumps({"kind": "node", "id": "x1", "type": "fact", "content": "hi"}),
                json.dumps(
                    {
                        "kind": "edge",
                        "id": "e1",
                        "source_id": "x1",
                        "target_id": "zz",
                        "edge_type": "about",
                    }
                ),
            ],
            "links to memory 'zz'",
        ),
        ([], "holds no memories"),
        (None, "There is no file"),
    ],
)
def test_import_refuses_bad_files_and_changes_nothing(
    db: Path, tmp_path: Path, embedder: LocalEmbeddings, lines: list[str] | None, expected: str
) -> None:
    before = everything(db, embedder)[:2]
    bad = tmp_path / "bad.jsonl"
    if lines is not None:
        bad.write_text("\n".join(lines) + "\n")
    assert expected in one_sentence(run_cli("memory", "import", str(bad)))
    assert everything(db, embedder)[:2] == before

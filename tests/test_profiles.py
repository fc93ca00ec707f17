"""Profiles, snapshots and bootstrap: the generators in-process, the commands through the real CLI."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlean

from octygraph.config.settings import Settings
from octygraph.embeddings import LocalEmbeddings
from octygraph.profiles import (
    GraphSpec,
    MemoryProfiles,
    ProfileError,
    build_database,
    builtin_graph,
    write_graph,
)
from octygraph.store import NODE_TYPES, MemoryStore, NewNode
from octygraph_demo import BUILTIN_PROFILES, DEFAULT_ANCHOR, noisy_large_graph, small_baseline_graph
from tests.conftest import cli_json, run_cli


class OtherModel:
    """Another embedding model (same dimension): its vectors must never be mixed with the local one's."""

    model_id = "other/test-model"
    dim = 384

    def embed_array(self, texts: list[str]) -> np.ndarray:
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
            vec = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
            rows.append(vec / np.linalg.norm(vec))
        return np.stack(rows) if rows else np.zeros((0, self.dim), dtype=np.float32)


class CountingEmbedder:
    """The real local model, recording every text it is asked to embed."""

    def __init__(self, inner: LocalEmbeddings) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.seen: list[str] = []

    def embed_array(self, texts: list[str]) -> np.ndarray:
        self.seen.extend(texts)
        return self.inner.embed_array(texts)


@pytest.fixture(scope="module")
def baseline_file(tmp_path_factory: pytest.TempPathFactory, embedder: LocalEmbeddings) -> Path:
    path = tmp_path_factory.mktemp("built") / "small-baseline.db"
    build_database(path, small_baseline_graph(), embedder)
    return path


def memory_dir(home: Path) -> Path:
    return home / "projects" / "proj" / "memory"


def install(source: Path, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return target


def content(db: Path, embedder: Any) -> tuple[list[dict[str, Any]], list[tuple[Any, ...]]]:
    """Everything a database holds, as comparable values."""
    with MemoryStore.open(db, embedder, create=False, check_model=False) as store:
        nodes = [n.to_dict() for n in store.iter_all()]
        edges = [
            (e.id, e.source_id, e.target_id, e.edge_type, json.dumps(e.attributes), e.created_at)
            for e in store.all_edges()
        ]
    return nodes, edges


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def one_sentence(result: Any) -> str:
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


# ------------------------------------------------------------------------------------------ generators


def test_small_baseline_is_a_realistic_team_memory() -> None:
    spec = small_baseline_graph()
    assert 60 <= len(spec.nodes) <= 120
    types = Counter(n.node_type for n in spec.nodes)
    assert set(types) == set(NODE_TYPES)
    contents = {n.content for n in spec.nodes}
    for fact in (
        "Peter handles the Anderson account",
        "Lisa owns the billing service",
        "Always run the tests before deploying",
    ):
        assert fact in contents
    scopes = {n.scope for n in spec.nodes if n.node_type == "instruction"}
    assert {1.0, 0.5, 0.2} <= scopes
    plan_days = [
        date.fromisoformat(n.valid_from)
        for n in spec.nodes
        if n.node_type == "plan" and n.valid_from
    ]
    assert any(d < DEFAULT_ANCHOR for d in plan_days) and any(d > DEFAULT_ANCHOR for d in plan_days)
    by_id = {n.id: n for n in spec.nodes}
    assert len(spec.superseded) >= 3
    for old, new in spec.superseded:
        assert by_id[new].attributes == {"supersedes": old}
        assert (by_id[new].created_at or "") > (by_id[old].created_at or "~")
    assert small_baseline_graph().nodes == spec.nodes  # ids and timestamps are fixed
    assert small_baseline_graph(date(2027, 1, 4)).nodes != spec.nodes


def test_noisy_generator_is_deterministic_and_hides_the_baseline() -> None:
    first, second = noisy_large_graph(size=500, seed=7), noisy_large_graph(size=500, seed=7)
    assert first.nodes == second.nodes
    assert first.edges == second.edges
    assert first.superseded == second.superseded
    assert [n.content for n in noisy_large_graph(size=500, seed=8).nodes] != [
        n.content for n in first.nodes
    ]

    assert len(first.nodes) == 500
    ids = [n.id for n in first.nodes]
    assert len(set(ids)) == 500
    assert set(Counter(n.node_type for n in first.nodes)) == set(NODE_TYPES)
    baseline = {n.id: n for n in small_baseline_graph().nodes}
    assert set(baseline) <= set(ids)
    # Look-alikes: generated sentences built like the baseline's, about other people and clients.
    noise = [n for n in first.nodes if n.id not in baseline]
    assert any(re.fullmatch(r"\S+ \S+ handles the .+ account", n.content) for n in noise)
    assert sum(1 for n in noise if n.node_type == "entity") >= 10
    known = set(ids)
    assert all(e.source_id in known and e.target_id in known for e in first.edges)
    assert len({(e.source_id, e.target_id, e.edge_type) for e in first.edges}) == len(first.edges)
    generated_pairs = [(o, n) for o, n in first.superseded if o not in baseline]
    assert generated_pairs, "some generated facts are superseded too"
    with pytest.raises(ValueError, match="at least"):
        noisy_large_graph(size=50)


def test_the_built_in_profiles_come_from_the_demo_package_through_the_command_line(
    home: Path,
) -> None:
    # The runtime package, its command line included, loads without the demo package.
    code = (
        "import sys, octygraph.profiles, octygraph.integrations.cli.memory, octygraph.entry; "
        "print(sorted(m for m in sys.modules if m.startswith('octygraph_demo')))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert loaded.returncode == 0 and loaded.stdout.strip() == "[]", loaded.stderr
    # Without a registry there is no built-in profile; with the demo one, the same graphs as before.
    bare = MemoryProfiles(Settings.from_env())
    assert bare.list_profiles() == []
    with pytest.raises(ProfileError, match="No profile named 'small-baseline'"):
        bare.load("small-baseline")
    assert list(BUILTIN_PROFILES) == ["small-baseline", "noisy-large"]
    assert builtin_graph(BUILTIN_PROFILES, "small-baseline").nodes == small_baseline_graph().nodes
    noisy = builtin_graph(BUILTIN_PROFILES, "noisy-large", size=300, seed=5)
    assert noisy.nodes == noisy_large_graph(size=300, seed=5).nodes
    with pytest.raises(ProfileError, match="at least"):
        builtin_graph(BUILTIN_PROFILES, "noisy-large", size=50)
    with pytest.raises(
        ProfileError, match="not a built-in profile; built-in: small-baseline, noisy"
    ):
        builtin_graph(BUILTIN_PROFILES, "team-a")


def test_writing_embeds_each_distinct_text_once(tmp_path: Path, embedder: LocalEmbeddings) -> None:
    counting = CountingEmbedder(embedder)
    nodes = [
        NewNode("fact", text, id=f"n{i}", created_at=f"2026-01-0{i + 1} 10:00:00")
        for i, text in enumerate(
            ["Deploys need a ticket", "Deploys need a ticket", "Lisa owns billing"]
        )
    ]
    with MemoryStore.open(tmp_path / "m.db", counting) as store:
        write_graph(store, GraphSpec(nodes=nodes))
        assert sorted(counting.seen) == ["Deploys need a ticket", "Lisa owns billing"]
        assert [n.id for n in store.iter_all()] == ["n0", "n1", "n2"]
        hits = store.search("deploy ticket", limit=2)
        assert {h.node.id for h in hits} == {"n0", "n1"}
        assert hits[0].cosine == pytest.approx(hits[1].cosine, abs=1e-6)


@pytest.mark.slow
def test_two_builds_are_identical_and_the_baseline_is_found(
    tmp_path: Path, embedder: LocalEmbeddings
) -> None:
    first = build_database(tmp_path / "a.db", noisy_large_graph(size=200, seed=3), embedder)
    second = build_database(tmp_path / "b.db", noisy_large_graph(size=200, seed=3), embedder)
    assert first.nodes == second.nodes == 200
    assert content(first.path, embedder) == content(second.path, embedder)
    with (
        MemoryStore.open(first.path, embedder, create=False) as a,
        MemoryStore.open(second.path, embedder, create=False) as b,
    ):
        query = "Who handles the Anderson account?"
        hits_a, hits_b = a.search(query, limit=5), b.search(query, limit=5)
        assert [(h.node.id, round(h.score, 5)) for h in hits_a] == [
            (h.node.id, round(h.score, 5)) for h in hits_b
        ]
        assert hits_a[0].node.content == "Peter handles the Anderson account"
        old = a.search("Tom handles the Globex account", limit=10, include_superseded=True)
        assert any(h.node.superseded_by for h in old)
        assert all(not h.node.superseded_by for h in a.search("Tom handles the Globex account"))


# ------------------------------------------------------------------------------------------ commands


@pytest.mark.slow
def test_load_builds_small_baseline_and_active_reports_it(home: Path) -> None:
    loaded = cli_json("memory", "load", "small-baseline", "--json")
    assert loaded["profile"] == "small-baseline"
    assert loaded["auto_snapshot"] is None  # there was nothing to save
    assert [b["name"] for b in loaded["built"]] == ["small-baseline"]

    active = cli_json("memory", "active", "--json")
    assert active["profile"] == "small-baseline"
    stats = active["stats"]
    assert stats["nodes"] == 99 and stats["superseded"] == 4 and stats["edges"] > 100
    assert stats["by_type"]["instruction"] == 16 and stats["by_subtype"]["entity/person"] == 8
    assert stats["embedding_model"] == "all-MiniLM-L6-v2/int8-onnx" and stats["file_bytes"] > 0
    state = json.loads((memory_dir(home) / "memory-profile-state.json").read_text())
    assert state["current_profile"] == "small-baseline"
    assert state["source"].endswith("profiles/small-baseline.db") and state["loaded_at"]

    shown = run_cli("memory", "active")
    assert shown.returncode == 0
    assert "small-baseline" in shown.stdout and "99 (4 replaced)" in shown.stdout
    assert "instruction" in shown.stdout and "all-MiniLM-L6-v2" in shown.stdout


def test_list_shows_builtin_and_stored_profiles(home: Path, baseline_file: Path) -> None:
    profiles = memory_dir(home) / "profiles"
    install(baseline_file, profiles / "small-baseline.db")
    install(baseline_file, profiles / "team-a.db")
    (profiles / "broken.db").write_text("not a database\n")
    (memory_dir(home) / "memory-profile-state.json").write_text(
        json.dumps({"current_profile": "team-a", "loaded_at": "2026-11-01T10:00:00Z"})
    )
    entries = {e["name"]: e for e in cli_json("memory", "list", "--json")}
    assert list(entries) == ["small-baseline", "noisy-large", "broken", "team-a"]
    assert entries["small-baseline"]["built"] and entries["small-baseline"]["nodes"] == 99
    assert entries["noisy-large"]["builtin"] and not entries["noisy-large"]["built"]
    assert entries["team-a"]["active"] and not entries["team-a"]["builtin"]
    assert entries["team-a"]["file_bytes"] == baseline_file.stat().st_size
    assert "not a SQLite database" in entries["broken"]["problem"]
    shown = run_cli("memory", "list")
    assert shown.returncode == 0 and "team-a" in shown.stdout and "Active: team-a" in shown.stdout


@pytest.mark.slow
def test_load_saves_the_active_database_first_and_it_can_be_restored(
    home: Path, baseline_file: Path, embedder: LocalEmbeddings
) -> None:
    install(baseline_file, memory_dir(home) / "profiles" / "small-baseline.db")
    settings = Settings.from_env()
    with MemoryStore.open(settings.paths.db, embedder) as store:
        mine = store.add_node("fact", "My own note: the VPN config lives in the team vault")
    before = content(settings.paths.db, embedder)

    loaded = run_cli("memory", "load", "small-baseline")
    assert loaded.returncode == 0, loaded.stderr
    match = re.search(r"as (\S+/snapshots/default/(auto-[\d-]+)\.db)", loaded.stdout)
    assert match, loaded.stdout
    assert f"octygraph memory freeze load {match.group(2)} default" in loaded.stdout
    assert content(Path(match.group(1)), embedder) == before
    with MemoryStore.open(settings.paths.db, embedder, create=False) as store:
        assert store.get_node(mine.id) is None

    restored = cli_json("memory", "freeze", "load", match.group(2), "default", "--json")
    assert restored["stats"]["nodes"] == 1
    assert content(settings.paths.db, embedder) == before
    assert (
        Path(restored["auto_snapshot"]).parent.name == "small-baseline"
    )  # the baseline was kept too
    assert MemoryProfiles(settings).state()["current_profile"] is None


def test_a_connection_open_during_load_sees_the_new_content(
    home: Path, baseline_file: Path, embedder: LocalEmbeddings
) -> None:
    install(baseline_file, memory_dir(home) / "profiles" / "small-baseline.db")
    db = Settings.from_env().paths.db
    with MemoryStore.open(db, embedder) as reader:  # like a Claude session's hook holding the file
        reader.add_node("fact", "Only in the old database")
        assert reader.stats()["nodes"] == 1
        loaded = run_cli("memory", "load", "small-baseline")
        assert loaded.returncode == 0, loaded.stderr
        assert reader.stats()["nodes"] == 99
        hits = reader.search("Who handles the Anderson account?", limit=1)
        assert hits[0].node.content == "Peter handles the Anderson account"
        assert all(n.content != "Only in the old database" for n in reader.iter_all())


def test_load_replaces_a_damaged_active_database_and_keeps_its_bytes(
    home: Path, baseline_file: Path, embedder: LocalEmbeddings
) -> None:
    install(baseline_file, memory_dir(home) / "profiles" / "small-baseline.db")
    db = Settings.from_env().paths.db
    db.parent.mkdir(parents=True, exist_ok=True)
    db.write_bytes(b"garbage, not a database" * 50)
    Path(f"{db}-wal").write_bytes(b"stale wal" * 100)

    loaded = cli_json("memory", "load", "small-baseline", "--json")
    assert loaded["stats"]["nodes"] == 99
    saved = Path(loaded["auto_snapshot"])
    assert saved.read_bytes() == b"garbage, not a database" * 50
    assert Path(f"{saved}-wal").read_bytes() == b"stale wal" * 100
    wal = Path(f"{db}-wal")
    assert not wal.exists() or b"stale wal" not in wal.read_bytes()
    assert len(content(db, embedder)[0]) == 99


@pytest.mark.slow
def test_freeze_create_list_and_duplicate_name(home: Path, baseline_file: Path) -> None:
    settings = Settings.from_env()
    install(baseline_file, memory_dir(home) / "profiles" / "small-baseline.db")
    MemoryProfiles(settings).load("small-baseline")
    created = cli_json("memory", "freeze", "create", "pre-demo", "--json")
    assert created["profile"] == "small-baseline" and created["nodes"] == 99
    again = run_cli("memory", "freeze", "create", "pre-demo")
    assert "already exists" in one_sentence(again)
    listed = cli_json("memory", "freeze", "list", "--json")
    assert listed["profile"] == "small-baseline"
    assert [s["name"] for s in listed["snapshots"]] == ["pre-demo"]
    assert listed["snapshots"][0]["nodes"] == 99
    bad = run_cli("memory", "freeze", "create", "../escape")
    assert "cannot be used" in one_sentence(bad)


def test_freeze_load_returns_exactly_the_frozen_content(
    home: Path, baseline_file: Path, embedder: LocalEmbeddings
) -> None:
    settings = Settings.from_env()
    install(baseline_file, memory_dir(home) / "profiles" / "small-baseline.db")
    profiles = MemoryProfiles(settings, embedder)
    profiles.load("small-baseline")
    profiles.freeze_create("pre-demo")
    frozen = content(settings.paths.db, embedder)
    with MemoryStore.open(settings.paths.db, embedder, create=False) as store:
        store.add_node("fact", "Demo day: Omar joined the billing team")
        victim = next(n for n in store.iter_all() if n.content == "Lisa owns the billing service")
        store.supersede(victim.id, "Lisa and Omar own the billing service")
        store.delete_node(next(n.id for n in store.iter_all() if n.node_type == "opinion"))
    changed = content(settings.paths.db, embedder)
    assert changed != frozen

    result = run_cli("memory", "freeze", "load", "pre-demo")
    assert result.returncode == 0, result.stderr
    assert "Restored snapshot pre-demo of small-baseline" in result.stdout
    assert content(settings.paths.db, embedder) == frozen
    auto = sorted((settings.paths.snapshots_dir / "small-baseline").glob("auto-*.db"))
    assert content(auto[-1], embedder) == changed  # the demo changes were saved, not lost


@pytest.mark.slow
def test_unload_empties_the_active_database_after_saving_it(
    home: Path, baseline_file: Path, embedder: LocalEmbeddings
) -> None:
    settings = Settings.from_env()
    install(baseline_file, memory_dir(home) / "profiles" / "small-baseline.db")
    MemoryProfiles(settings, embedder).load("small-baseline")
    result = cli_json("memory", "unload", "--json")
    assert result["profile"] is None and result["stats"]["nodes"] == 0
    assert content(Path(result["auto_snapshot"]), embedder)[0][0]["content"] == "Brightline"
    active = cli_json("memory", "active", "--json")
    assert active["profile"] is None and active["stats"]["nodes"] == 0


def _foreign_databases(home: Path, baseline_file: Path, tmp_path: Path) -> dict[str, Path]:
    """Files that must never be loaded: keyed by the case name."""
    snaps = memory_dir(home) / "snapshots" / "small-baseline"
    snaps.mkdir(parents=True, exist_ok=True)
    text = snaps / "text.db"
    text.write_text("hello, I am a text file\n" * 100)
    alien = snaps / "alien.db"  # raw SQL on purpose: a SQLite file that is not octygraph's
    conn = sqlean.connect(str(alien))
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.commit()
    conn.close()
    truncated = snaps / "truncated.db"
    data = baseline_file.read_bytes()
    truncated.write_bytes(data[: len(data) // 3])
    other = memory_dir(home) / "profiles" / "other-model.db"
    with MemoryStore.open(tmp_path / "other.db", OtherModel()) as store:
        store.add_node("fact", "Peter handles the Anderson account")
    install(tmp_path / "other.db", other)
    install(other, snaps / "other-model.db")
    return {"text": text, "alien": alien, "truncated": truncated, "other": other}


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("load", "no-such-profile"), "No profile named 'no-such-profile'"),
        (("freeze", "load", "missing"), "No snapshot named 'missing'"),
        (("freeze", "load", "text"), "is not a SQLite database"),
        (("freeze", "load", "alien"), "is not an octygraph database"),
        (("freeze", "load", "truncated"), "small-baseline"),
        (("freeze", "load", "other-model"), "holds vectors from other/test-model"),
        (("load", "other-model"), "holds vectors from other/test-model"),
    ],
)
def test_refused_loads_leave_the_active_database_untouched(
    home: Path,
    baseline_file: Path,
    tmp_path: Path,
    embedder: LocalEmbeddings,
    args: tuple[str, ...],
    expected: str,
) -> None:
    settings = Settings.from_env()
    install(baseline_file, memory_dir(home) / "profiles" / "small-baseline.db")
    MemoryProfiles(settings, embedder).load("small-baseline")
    _foreign_databases(home, baseline_file, tmp_path)
    before = content(settings.paths.db, embedder)
    digest = sha256(settings.paths.db)
    state = settings.paths.profile_state.read_text()
    snapshots = sorted(p.name for p in settings.paths.snapshots_dir.rglob("*"))

    message = one_sentence(run_cli("memory", *args))
    assert expected in message
    assert sha256(settings.paths.db) == digest
    assert settings.paths.profile_state.read_text() == state
    assert sorted(p.name for p in settings.paths.snapshots_dir.rglob("*")) == snapshots
    assert content(settings.paths.db, embedder) == before


@pytest.mark.slow
def test_bootstrap_builds_both_profiles_without_touching_the_active_database(home: Path) -> None:
    result = cli_json("memory", "bootstrap", "--size", "300", "--json")
    built = {p["name"]: p for p in result["profiles"]}
    assert built["small-baseline"]["nodes"] == 99
    assert built["noisy-large"]["nodes"] == 300 and built["noisy-large"]["superseded"] > 4
    for entry in built.values():
        assert Path(entry["path"]).is_file() and entry["file_bytes"] > 0
        assert isinstance(entry["seconds"], float)  # the build time is reported, whatever it is
    assert oct(Path(built["noisy-large"]["path"]).stat().st_mode & 0o777) == "0o600"
    assert not (memory_dir(home) / "memory.db").exists()
    assert not list((memory_dir(home) / "profiles").glob(".*"))  # no temp files left


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_full_bootstrap_then_load_noisy_large(home: Path) -> None:
    result = run_cli("memory", "bootstrap", "--json", timeout=900)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    built = {p["name"]: p for p in report["profiles"]}
    noisy = built["noisy-large"]
    print(f"bootstrap: {report['seconds']:.1f} s, noisy-large {noisy['file_bytes'] / 1e6:.1f} MB")
    assert noisy["nodes"] == 20_000 and noisy["edges"] > 20_000

    loaded = run_cli("memory", "load", "noisy-large")
    assert loaded.returncode == 0, loaded.stderr
    assert "Loaded profile noisy-large: 20,000 memories" in loaded.stdout
    active = cli_json("memory", "active", "--json")
    assert active["profile"] == "noisy-large" and active["stats"]["nodes"] == 20_000
    assert set(active["stats"]["by_type"]) == set(NODE_TYPES)
    hits = cli_json("search", "Who handles the Anderson account?", "--json", "--limit", "5")
    assert "Peter handles the Anderson account" in [h["content"] for h in hits]


@pytest.mark.parametrize(
    "command",
    [
        ("memory", "load", "small-baseline"),
        ("memory", "unload"),
        ("memory", "freeze", "create", "pre-demo"),
        ("memory", "freeze", "load", "pre-demo"),
    ],
    ids=["load", "unload", "freeze-create", "freeze-load"],
)
def test_profiles_and_snapshots_are_refused_on_postgres(
    home: Path, command: tuple[str, ...]
) -> None:
    # Refused before any connection: the server named here does not exist.
    env = {"OCTY_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"}
    result = run_cli(*command, env=env)
    assert result.returncode == 1 and result.stdout == ""
    message = result.stderr.strip()
    assert "Traceback" not in message and len(message.splitlines()) == 1
    assert "PostgreSQL" in message and "memory export --format jsonl" in message
    assert not (home / "projects").exists() or not list((home / "projects").rglob("*.db"))

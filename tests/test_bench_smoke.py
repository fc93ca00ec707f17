"""Smoke tests of the benchmarks: run them as a user would, on a small slice, and check their tables."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LOCOMO = Path(
    os.environ.get("LOCOMO_PATH", REPO.parent / "shared" / "data" / "locomo" / "locomo10.json")
)
NUMBER = r"(\d+(?:\.\d+)?)"


def bench_process(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(REPO / "bench" / script), *args],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=REPO,
    )


def run_bench(script: str, *args: str) -> str:
    proc = bench_process(script, *args)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def metric_rows(out: str) -> dict[tuple[str, str], list[float]]:
    """{(mode, category): [n, R@5, R@10, R@20, NDCG@10]} from bench/locomo.py's table."""
    rows: dict[tuple[str, str], list[float]] = {}
    pattern = re.compile(
        rf"^\| (keyword|vector|hybrid) \| ([^|]+?) \| (\d+) \| {NUMBER} \| {NUMBER} \| {NUMBER} "
        rf"\| {NUMBER} \|$"
    )
    for line in out.splitlines():
        if m := pattern.match(line):
            rows[(m.group(1), m.group(2))] = [float(v) for v in m.groups()[2:]]
    return rows


@pytest.mark.slow
@pytest.mark.skipif(not LOCOMO.is_file(), reason="LoCoMo data not beside the repo")
def test_locomo_bench_on_one_conversation(tmp_path: Path) -> None:
    out = run_bench(
        "locomo.py",
        str(LOCOMO),
        "--limit-conversations",
        "1",
        "--limit-questions",
        "60",
        "--cache",
        str(tmp_path / "cache"),
    )
    rows = metric_rows(out)
    for mode in ("keyword", "vector", "hybrid"):
        n, r5, r10, r20, ndcg = rows[(mode, "all")]
        assert n == 60
        assert 0.0 <= r5 <= r10 <= r20 <= 1.0
        assert 0.0 <= ndcg <= 1.0
        # Categories partition the questions.
        assert sum(v[0] for (m, c), v in rows.items() if m == mode and c != "all") == n
    # Far from chance (10 of ~420 turns is 2.4%): the store really ranks the evidence.
    assert rows[("keyword", "all")][2] > 0.3
    assert rows[("hybrid", "all")][2] > 0.3
    # Measured on this slice: hybrid R@10 .696, keyword .613, vector .514 (a margin no CPU rounding flips).
    assert rows[("hybrid", "all")][2] >= rows[("keyword", "all")][2]
    assert rows[("hybrid", "all")][2] >= rows[("vector", "all")][2]
    assert re.search(r"^\| turns ingested \| \d+ \|$", out, re.M)
    assert re.search(
        r"^\| search hybrid, median / p95 \(ms, vector given\) \| [\d.]+ / [\d.]+ \|$", out, re.M
    )


@pytest.mark.slow
def test_search_bench_small() -> None:
    out = run_bench("search.py", "--nodes", "500", "--queries", "5", "--unique", "100")
    assert out.startswith("500 nodes, 5 queries")
    latencies = {}
    for line in out.splitlines():
        if m := re.match(rf"^\| ([^|]+?) \| {NUMBER} \| {NUMBER} \|$", line):
            latencies[m.group(1)] = (float(m.group(2)), float(m.group(3)))
    for name in (
        "encode one query (MiniLM int8)",
        "NumPy brute-force cosine, top-k (matrix in RAM)",
        "store.search vector (sqlite-vec)",
        "store.search keyword (FTS5 BM25)",
        "store.search hybrid",
    ):
        median, p95 = latencies[name]
        assert 0.0 <= median <= p95
    # Both vector scans are exact, so they return the same top 10.
    assert "| vector top-10 overlap, sqlite-vec vs NumPy | 1.000 |" in out
    assert re.search(r"^\| insert, vectors given \(SQLite, FTS5, vec0\) \| \d+ nodes/s", out, re.M)


@pytest.mark.slow
def test_longmix_bench_small(tmp_path: Path) -> None:
    """The generated long mixed histories: reproducible, the intended shape, and scored in every mode."""
    sys.path.insert(0, str(REPO / "bench"))
    try:
        import longmix
    finally:
        sys.path.remove(str(REPO / "bench"))
    first, again = longmix.generate_conversation(3, 0), longmix.generate_conversation(3, 0)
    assert [(t.dia_id, t.content) for t in first.turns] == [
        (t.dia_id, t.content) for t in again.turns
    ]
    assert [(q.text, q.evidence) for q in first.questions] == [
        (q.text, q.evidence) for q in again.questions
    ]
    assert longmix.generate_conversation(4, 0).turns != first.turns
    assert 400 <= len(first.turns) <= 800 and 55 <= len(first.questions) <= 100
    speakers = {t.dia_id: t.content.split(") ", 1)[1].split(": ", 1) for t in first.turns}
    for speaker, text in speakers.values():
        words = len(text.split())
        assert 5 <= words <= 40 if speaker == "user" else 150 <= words <= 700
    # Every question's evidence is one or two short user messages.
    for q in first.questions:
        assert 1 <= len(q.evidence) <= 2
        assert all(speakers[e][0] == "user" for e in q.evidence)
    assert {q.category for q in first.questions} == set(longmix.CATEGORIES)

    out = run_bench(
        "longmix.py",
        "--limit-conversations",
        "1",
        "--sessions",
        "2",
        "--limit-questions",
        "30",
        "--cache",
        str(tmp_path / "cache"),
    )
    assert re.match(r"^1 conversations, \d+ messages", out)
    rows = metric_rows(out)
    for mode in ("keyword", "vector", "hybrid"):
        n, r5, r10, r20, ndcg = rows[(mode, "all")]
        assert n == 30
        assert 0.0 <= r5 <= r10 <= r20 <= 1.0
        assert sum(v[0] for (m, c), v in rows.items() if m == mode and c != "all") == n
    # Far from chance (10 of ~200 messages is 5%).
    assert rows[("hybrid", "all")][2] > 0.3


@pytest.mark.slow
@pytest.mark.postgres
def test_search_pg_bench_small(pg_url: str) -> None:
    out = run_bench(
        "search_pg.py",
        "--nodes",
        "1500",
        "--unique",
        "300",
        "--queries",
        "8",
        "--sqlite-queries",
        "4",
        "--mix",
        "--ef",
        "200",
        "--url",
        pg_url,
    )
    assert "1,500 memories (blends" in out
    for row in (
        "NumPy exact scan",
        "PostgreSQL store.search vector (HNSW, ef_search=200)",
        "PostgreSQL store.search hybrid",
        "SQLite store.search hybrid",
    ):
        assert re.search(re.escape(row) + r"[^|]*\| " + NUMBER, out), row
    recall = re.search(r"recall@10 vs exact, ef_search=200 [^|]*\| " + NUMBER, out)
    assert recall is not None and float(recall.group(1)) >= 0.9


REALTRAFFIC_TOOL = REPO.parent / "shared" / "tools" / "realtraffic.py"


def _details(path: Path, stored_in: set[str], sessions: tuple[str, ...]) -> Path:
    """A made-up replay of `sessions`: each tells one fact, stored where `stored_in` says, then asks."""
    lines = []
    for sid in sessions:
        fact = f"the {sid} service is deployed on the blue cluster"
        told = {"store": True, "memories": [{"id": "m1", "text": fact}], "relevant": []}
        asked = {"store": False, "memories": [], "relevant": []}
        item = {"content": fact, "type": "fact", "source": "user", "aligned": ["m1"]}
        for idx, (prompt, label) in enumerate(((fact, told), ("where does it run?", asked))):
            lines.append(
                {
                    "set": "real",
                    "session_id": sid,
                    "idx": idx,
                    "prompt": prompt,
                    "label": label,
                    "stored": [item] if idx == 0 and sid in stored_in else [],
                    "records": [],
                    "context": "",
                }
            )
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


@pytest.mark.skipif(not REALTRAFFIC_TOOL.is_file(), reason="realtraffic.py not beside the repo")
def test_realtraffic_ci_intervals_and_comparison(tmp_path: Path) -> None:
    sessions = ("billing", "search", "auth", "mailer")
    half = _details(tmp_path / "half.jsonl", {"billing", "search"}, sessions)
    every = _details(tmp_path / "every.jsonl", set(sessions), sessions)

    one = run_bench("realtraffic_ci.py", str(half), "--resamples", "200")
    recall = re.search(
        rf"store recall, % of labelled memories\s+{NUMBER}\s+{NUMBER} -\s+{NUMBER}", one
    )
    assert recall, one
    value, low, high = (float(v) for v in recall.groups())
    assert value == 50.0 and low < 50.0 < high  # two of four sessions: resamples spread around it

    both = run_bench("realtraffic_ci.py", str(half), str(every), "--resamples", "200")
    row = re.search(
        rf"store recall, % of labelled memories\s+{NUMBER}\s+{NUMBER}\s+\+{NUMBER}.*?"
        rf"{NUMBER}%\s+{NUMBER}%$",
        both,
        re.MULTILINE,
    )
    assert row, both
    first, second, change, ahead, behind = (float(v) for v in row.groups())
    assert (first, second, change) == (50.0, 100.0, 50.0)
    assert (
        ahead > 50 and behind == 0
    )  # never behind; tied only when no stored-by-half session is drawn


@pytest.mark.skipif(not REALTRAFFIC_TOOL.is_file(), reason="realtraffic.py not beside the repo")
def test_realtraffic_ci_refuses_runs_of_different_sessions(tmp_path: Path) -> None:
    first = _details(tmp_path / "a.jsonl", set(), ("billing", "search"))
    second = _details(tmp_path / "b.jsonl", set(), ("billing", "auth"))
    proc = bench_process("realtraffic_ci.py", str(first), str(second))
    assert proc.returncode != 0
    assert "different sessions" in proc.stderr and "Traceback" not in proc.stderr
    (tmp_path / "bad.jsonl").write_text("not json\n")
    proc = bench_process("realtraffic_ci.py", str(tmp_path / "bad.jsonl"))
    assert proc.returncode != 0 and "bad.jsonl:1 is not a line" in proc.stderr

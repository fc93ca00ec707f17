"""LoCoMo evidence retrieval through octygraph's own store: keyword, vector and hybrid search.

Protocol (shared/data/locomo/README.md): every turn of a conversation is one memory, stored as
"(session date) speaker: text [shares caption]" with the session date as `created_at`; each question of
categories 1-4 ranks the turns of its own conversation (one database per conversation); recall@k is the share
of the question's evidence turns in the top k, averaged over questions; NDCG@10 uses binary relevance.

Usage: python bench/locomo.py DATA_PATH [--limit-conversations N] [--limit-questions N] [--cache DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import numpy as np
from _common import Timer, embed_cached, median_p95, table

from octygraph.embeddings import local_embeddings
from octygraph.store import Embedder, MemoryStore, NewNode
from octygraph.store.protocol import SearchMode

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
MODES: tuple[SearchMode, ...] = ("keyword", "vector", "hybrid")
CUTOFFS = (5, 10, 20)
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")
_SESSION = re.compile(r"session_(\d+)")


@dataclass
class Turn:
    dia_id: str
    content: str
    created_at: str


@dataclass
class Question:
    text: str
    category: int
    evidence: list[str]


@dataclass
class Conversation:
    sample_id: str
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


def session_date(raw: str) -> tuple[str, str]:
    """LoCoMo's "1:56 pm on 8 May, 2023" as (text for the document, SQLite timestamp)."""
    stamp = datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y")
    return raw.strip(), stamp.strftime("%Y-%m-%d %H:%M:%S")


def load_conversations(path: Path) -> list[Conversation]:
    """Conversations with their turns as documents and their scorable questions (categories 1-4).

    Evidence ids are normalised ("D10:3 ", "D:11:26", "D30:05", "D8:6; D9:17" all parse), ids of turns that do not
    exist are dropped, and questions left without evidence are skipped: 1,536 questions in all.
    """
    out: list[Conversation] = []
    for sample in json.loads(path.read_text()):
        conv = Conversation(sample["sample_id"])
        dialogue = sample["conversation"]
        sessions = sorted(
            (int(m.group(1)), key)
            for key in dialogue
            if (m := _SESSION.fullmatch(key)) and isinstance(dialogue[key], list)
        )
        for number, key in sessions:
            date_text, stamp = session_date(dialogue[f"session_{number}_date_time"])
            for turn in dialogue[key]:
                text = f"({date_text}) {turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [shares {turn['blip_caption']}]"
                conv.turns.append(Turn(turn["dia_id"].strip(), text, stamp))
        known = {t.dia_id for t in conv.turns}
        for qa in sample["qa"]:
            if qa.get("category") not in CATEGORIES:
                continue
            ids = [
                f"D{int(s)}:{int(t)}"
                for raw in qa.get("evidence", [])
                for s, t in _EVIDENCE.findall(raw)
            ]
            evidence = [i for i in dict.fromkeys(ids) if i in known]
            if evidence:
                conv.questions.append(Question(qa["question"], qa["category"], evidence))
        out.append(conv)
    return out


def recall_at(ranked: Sequence[str], evidence: Sequence[str], k: int) -> float:
    return len(set(ranked[:k]) & set(evidence)) / len(evidence)


def ndcg_at(ranked: Sequence[str], evidence: Sequence[str], k: int = 10) -> float:
    relevant = set(evidence)
    dcg = sum(1.0 / math.log2(i + 2) for i, doc in enumerate(ranked[:k]) if doc in relevant)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(relevant), k)))
    return dcg / ideal


@dataclass
class Ranking:
    """Ranked dia_ids per question of one mode, with the search time of each query."""

    mode: SearchMode
    ranked: list[list[str]] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)


def ingest(
    conv: Conversation,
    db_path: Path,
    embedder: Embedder,
    cache: Path | None,
    source: str = "locomo",
) -> tuple[MemoryStore, float, float]:
    """One database for the conversation; returns (store, embedding seconds, insert seconds)."""
    texts = [t.content for t in conv.turns]
    vectors, embed_s = embed_cached(embedder, texts, cache, f"{conv.sample_id}-turns")
    store = MemoryStore.open(db_path, embedder)
    items = [
        NewNode(
            "event",
            t.content,
            subtype="conversation",
            id=t.dia_id,
            created_at=t.created_at,
            source=source,
        )
        for t in conv.turns
    ]
    with Timer() as insert:
        store.add_nodes(items, vectors=vectors, batch_size=512)
    return store, embed_s, insert.seconds


def rank_questions(
    store: MemoryStore,
    questions: Sequence[Question],
    query_vecs: np.ndarray,
    mode: SearchMode,
    k: int,
) -> Ranking:
    """Rank every question with `store.search` (query vectors given, so timings exclude encoding)."""
    out = Ranking(mode)
    for question, qvec in zip(questions, query_vecs, strict=True):
        start = time.perf_counter()
        hits = store.search(
            question.text, mode=mode, limit=k, query_vec=None if mode == "keyword" else qvec
        )
        out.seconds.append(time.perf_counter() - start)
        out.ranked.append([h.node.id for h in hits])
    return out


def score(questions: Sequence[Question], ranked: Sequence[Sequence[str]]) -> dict[str, list[float]]:
    """Per-question metric values, keyed by metric name."""
    metrics: dict[str, list[float]] = {f"R@{k}": [] for k in CUTOFFS}
    metrics["NDCG@10"] = []
    for q, r in zip(questions, ranked, strict=True):
        for k in CUTOFFS:
            metrics[f"R@{k}"].append(recall_at(r, q.evidence, k))
        metrics["NDCG@10"].append(ndcg_at(r, q.evidence, 10))
    return metrics


@dataclass
class Result:
    """Everything one run measured."""

    questions: list[Question]
    rankings: dict[str, list[list[str]]]
    search_ms: dict[str, list[float]]
    turns: int
    embed_s: float
    insert_s: float
    query_embed_s: float
    encode_ms: list[float]


def evaluate(
    conversations: Sequence[Conversation],
    *,
    cache: Path | None = None,
    limit_questions: int | None = None,
    modes: Sequence[SearchMode] = MODES,
    k: int = 20,
    embedder: Embedder | None = None,
    workdir: Path | None = None,
    source: str = "locomo",
) -> Result:
    """Ingest each conversation into its own store and rank its questions in every mode."""
    embedder = embedder or local_embeddings()
    questions: list[Question] = []
    rankings: dict[str, list[list[str]]] = {m: [] for m in modes}
    search_ms: dict[str, list[float]] = {m: [] for m in modes}
    turns = 0
    embed_s = insert_s = query_embed_s = 0.0
    with tempfile.TemporaryDirectory(prefix="locomo-", dir=workdir) as tmp:
        for conv in conversations:
            qs = conv.questions[:limit_questions] if limit_questions else conv.questions
            store, e_s, i_s = ingest(
                conv, Path(tmp) / f"{conv.sample_id}.db", embedder, cache, source
            )
            try:
                qvecs, q_s = embed_cached(
                    embedder, [q.text for q in qs], cache, f"{conv.sample_id}-questions"
                )
                for mode in modes:
                    ranking = rank_questions(store, qs, qvecs, mode, k)
                    rankings[mode].extend(ranking.ranked)
                    search_ms[mode].extend(s * 1000 for s in ranking.seconds)
            finally:
                store.close()
            questions.extend(qs)
            turns += len(conv.turns)
            embed_s, insert_s, query_embed_s = embed_s + e_s, insert_s + i_s, query_embed_s + q_s
    # A single question's encoding time, as a live query would pay it (first call warms up the model).
    encode_ms: list[float] = []
    sample = [q.text for q in questions[:31]]
    for i, text in enumerate(sample):
        with Timer() as t:
            embedder.embed_array([text])
        if i:
            encode_ms.append(t.seconds * 1000)
    return Result(
        questions, rankings, search_ms, turns, embed_s, insert_s, query_embed_s, encode_ms
    )


def metric_rows(result: Result, categories: dict[int, str] = CATEGORIES) -> list[list[object]]:
    """Rows of (mode, category, n, R@5, R@10, R@20, NDCG@10): overall first, then per category."""
    rows: list[list[object]] = []
    groups: list[tuple[str, list[int]]] = [("all", list(range(len(result.questions))))]
    for cat, name in categories.items():
        idx = [i for i, q in enumerate(result.questions) if q.category == cat]
        if idx:
            groups.append((f"{cat} {name}", idx))
    for mode, ranked in result.rankings.items():
        metrics = score(result.questions, ranked)
        for label, idx in groups:
            values = [float(np.mean([metrics[m][i] for i in idx])) for m in metrics]
            rows.append([mode, label, len(idx), *values])
    return rows


def report(result: Result, categories: dict[int, str] = CATEGORIES) -> str:
    """The printed report: metrics table, then timings."""
    metrics = table(
        ["mode", "category", "n", "R@5", "R@10", "R@20", "NDCG@10"],
        metric_rows(result, categories),
    )
    timing_rows: list[list[object]] = [
        ["turns ingested", result.turns],
        ["questions scored", len(result.questions)],
        ["turn embedding (s; 0 = cache hit)", f"{result.embed_s:.1f}"],
        ["store insert (s)", f"{result.insert_s:.2f}"],
        [
            "insert rate (turns/s, vectors given)",
            f"{result.turns / max(result.insert_s, 1e-9):.0f}",
        ],
        ["question embedding, batched (s; 0 = cache hit)", f"{result.query_embed_s:.1f}"],
        ["encode one question, median (ms)", f"{median_p95(result.encode_ms)[0]:.2f}"],
    ]
    for mode, times in result.search_ms.items():
        med, p95 = median_p95(times)
        timing_rows.append(
            [f"search {mode}, median / p95 (ms, vector given)", f"{med:.2f} / {p95:.2f}"]
        )
    return metrics + "\n\n" + table(["timing", "value"], timing_rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="path to locomo10.json")
    parser.add_argument("--limit-conversations", type=int, default=None, metavar="N")
    parser.add_argument(
        "--limit-questions",
        type=int,
        default=None,
        metavar="N",
        help="score only the first N questions of each conversation",
    )
    parser.add_argument(
        "--cache",
        type=Path,
        default=None,
        metavar="DIR",
        help="keep turn and question vectors here between runs",
    )
    parser.add_argument("--limit", type=int, default=20, help="hits retrieved per question (>= 20)")
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated search modes")
    parser.add_argument(
        "--json",
        type=Path,
        default=None,
        metavar="PATH",
        help="also write the metric rows and timings as JSON",
    )
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"No LoCoMo file at {args.data}.", file=sys.stderr)
        return 1
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if any(m not in MODES for m in modes):
        print(f"Modes must be among {', '.join(MODES)}.", file=sys.stderr)
        return 1
    conversations = load_conversations(args.data)[: args.limit_conversations]
    with Timer() as total:
        result = evaluate(
            conversations,
            cache=args.cache,
            limit_questions=args.limit_questions,
            modes=modes,
            k=max(args.limit, max(CUTOFFS)),
        )
    print(report(result))
    print(f"\ntotal time {total.seconds:.1f} s")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "metrics": metric_rows(result),
                    "search_ms": result.search_ms,
                    "turns": result.turns,
                    "embed_s": result.embed_s,
                    "insert_s": result.insert_s,
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

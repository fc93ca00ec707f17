"""Cross-validate hybrid search's ranking parameters over two differently shaped sets: LoCoMo and longmix.

For every question of both sets this takes, once, from the real stores (bench/locomo.py's ingestion): the
cosine of the query to every memory, the memories' vectors, and for FTS5's preselected keyword candidates the
term frequencies, document lengths and idf of the query terms. From those it replays `MemoryStore.search`
(same candidate pools, same hubness reduction, same fusion) for every point of a grid of BM25 k1 and b,
fusion method, vector weight and hubness weight, without touching SQLite again. With the shipped parameters
it reproduces the store's own figures (checked by `--check`).

Cross-validation is by conversation: 5 folds, each holding out 2 LoCoMo conversations and 1-2 longmix
conversations. On the training folds a configuration is allowed when, on each set, hybrid recall@10 is at
least that of each of its halves and at least that of the ranking before (BEFORE); among those, the one with
the best mean of the two sets' hybrid recall@10 (each set counts the same, whatever its number of
questions) is chosen and scored on the held-out conversations. The setting shipped is the one this rule
chooses on all conversations.

Usage: python bench/tune_ranking.py [LOCOMO_PATH] [--cache DIR] [--seed 7] [--check] [--methods M,M]
       [--json PATH]
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import longmix
import numpy as np
from _common import Timer, embed_cached, table
from locomo import Conversation, ingest, load_conversations

from octygraph.embeddings import local_embeddings
from octygraph.store import ranking
from octygraph.store import sqlite as store_sqlite
from octygraph.store.sqlite import MemoryStore

DEFAULT_LOCOMO = (
    Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10.json"
)
FOLDS = 5
K = 20  # hits per question, as the benchmarks retrieve
POOL = max(K * 5, 50)  # MemoryStore.search's candidate pool per side for this limit
PRESELECT = max(POOL * store_sqlite.BM25_RESCORE_FACTOR, store_sqlite.BM25_MIN_RESCORE)


@dataclass
class QueryData:
    """What one question needs to be ranked under any configuration."""

    conv: int  # index of its conversation within its set
    evidence: set[int]  # row positions of the evidence memories
    sims: np.ndarray  # cosine to every memory of the conversation
    kw_rows: np.ndarray  # FTS5's preselected rows (positions), in FTS5's order
    tf: np.ndarray  # (rows, terms) term frequencies
    idf: np.ndarray  # (terms,)
    rel_len: np.ndarray  # (rows,) document length / average length


@dataclass
class SetData:
    name: str
    vectors: list[np.ndarray]  # per conversation, (memories, dim)
    queries: list[QueryData]


def extract(
    name: str, conversations: Sequence[Conversation], cache: Path | None, tmp: Path
) -> SetData:
    """Build each conversation's store as the benchmarks do and read out the ranking inputs."""
    embedder = local_embeddings()
    vectors: list[np.ndarray] = []
    queries: list[QueryData] = []
    for c_idx, conv in enumerate(conversations):
        store, _, _ = ingest(conv, tmp / f"{name}-{c_idx}.db", embedder, cache, name)
        try:
            ids = [t.dia_id for t in conv.turns]
            pos = {node_id: i for i, node_id in enumerate(ids)}
            mat = np.zeros((len(ids), embedder.dim), dtype=np.float32)
            for node_id, vec in store.vectors_by_id():
                mat[pos[node_id]] = vec
            vectors.append(mat)
            qvecs, _ = embed_cached(
                embedder, [q.text for q in conv.questions], cache, f"{conv.sample_id}-questions"
            )
            for question, qvec in zip(conv.questions, qvecs, strict=True):
                queries.append(_query_data(store, question.text, pos, mat, qvec, c_idx))
                queries[-1].evidence = {pos[e] for e in question.evidence}
        finally:
            store.close()
    return SetData(name, vectors, queries)


def _query_data(
    store: MemoryStore,
    text: str,
    pos: dict[str, int],
    mat: np.ndarray,
    qvec: np.ndarray,
    c_idx: int,
) -> QueryData:
    sims = mat @ np.asarray(qvec, dtype=np.float32)
    inputs = store.keyword_inputs(text, PRESELECT)
    if inputs is None:
        empty = np.zeros(0, dtype=np.int64)
        return QueryData(c_idx, set(), sims, empty, np.zeros((0, 0)), np.zeros(0), np.zeros(0))
    positions = np.array([pos[i] for i in inputs.node_ids], dtype=np.int64)
    return QueryData(c_idx, set(), sims, positions, inputs.tf, inputs.idf, inputs.rel_len)


# ---------------------------------------------------------------- replaying the ranking


@dataclass(frozen=True)
class Config:
    k1: float
    b: float
    method: str  # "minmax" (before), "zclip" (shipped), "zscore", "zscore0" or "rrf"
    alpha: float  # vector weight
    hub: float  # hubness weight

    def label(self) -> str:
        return f"k1 {self.k1:g}, b {self.b:g}, {self.method}, α {self.alpha:g}, hub {self.hub:g}"


# The ranking before this cross-validation: tuned on LoCoMo alone.
BEFORE = Config(1.2, 0.2, "minmax", 0.5, 0.5)


def keyword_ranking(q: QueryData, k1: float, b: float) -> tuple[np.ndarray, np.ndarray]:
    """The top POOL keyword candidates (positions) and their BM25, as `_keyword_candidates` returns."""
    if q.kw_rows.size == 0:
        return q.kw_rows, np.zeros(0)
    norm = k1 * (1 - b + b * q.rel_len)
    scores = (q.idf * q.tf * (k1 + 1) / (q.tf + norm[:, None])).sum(axis=1)
    order = np.argsort(-scores, kind="stable")[:POOL]
    return q.kw_rows[order], scores[order]


def _minmax(values: np.ndarray) -> np.ndarray:
    """Scale to [0, 1] over the candidates (the fusion shipped before); all-equal values map to 1 or 0."""
    lo, hi = float(values.min()), float(values.max())
    if hi - lo < 1e-9:
        return np.where(values > 0, 1.0, 0.0)
    return (values - lo) / (hi - lo)


def _z(values: np.ndarray) -> np.ndarray:
    sd = float(values.std())
    return (values - values.mean()) / sd if sd > 1e-9 else np.zeros_like(values)


def hybrid_ranking(
    q: QueryData,
    vectors: np.ndarray,
    kw_ids: np.ndarray,
    kw_scores: np.ndarray,
    configs: Sequence[Config],
) -> list[np.ndarray]:
    """Top K positions for each configuration sharing this (k1, b) keyword ranking."""
    top_vec = np.argsort(-q.sims, kind="stable")[:POOL]
    seen = set(top_vec.tolist())
    ids = np.concatenate([top_vec, np.array([i for i in kw_ids if i not in seen], dtype=np.int64)])
    cos = q.sims[ids].astype(np.float32)
    kw_map = dict(zip(kw_ids.tolist(), kw_scores.tolist(), strict=True))
    kw = np.array([kw_map.get(int(i), 0.0) for i in ids], dtype=np.float32)
    mat = vectors[ids]
    ref = np.argsort(-cos, kind="stable")[: ranking.HUB_MAX_CANDIDATES]
    hub = ranking.hubness(mat, ref)
    kw_norm = kw / kw.max() if kw.size and kw.max() > 0 else np.zeros_like(kw)
    in_kw = kw > 0
    out = []
    for cfg in configs:
        semantic = cos - cfg.hub * hub
        if cfg.method == "minmax":
            fused = cfg.alpha * _minmax(semantic) + (1 - cfg.alpha) * kw_norm
        elif cfg.method == "zscore0":
            # z-scores over the whole candidate union, a candidate missing from the keyword side scoring 0.
            fused = cfg.alpha * _z(semantic) + (1 - cfg.alpha) * _z(kw)
        elif cfg.method == "zclip":
            # As zscore, but a keyword match never scores below a candidate the keyword side missed.
            # When they all score the same (one match, say), each counts as one standard deviation.
            zk = np.zeros_like(kw)
            if in_kw.any():
                matched = kw[in_kw]
                zk[in_kw] = np.maximum(_z(matched), 0.0) if matched.std() > 1e-9 else 1.0
            fused = cfg.alpha * _z(semantic) + (1 - cfg.alpha) * zk
        elif cfg.method == "zscore":
            # z-scores; the keyword side over its own candidates, a candidate it did not return scoring 0.
            zk = np.zeros_like(kw)
            if in_kw.any():
                zk[in_kw] = _z(kw[in_kw])
            fused = cfg.alpha * _z(semantic) + (1 - cfg.alpha) * zk
        else:  # rrf, k = 10 (better than 60 on both sets in a first look)
            rank_sem = np.empty(len(ids))
            rank_sem[np.argsort(-semantic, kind="stable")] = np.arange(1, len(ids) + 1)
            rank_kw = np.empty(len(ids))
            rank_kw[np.argsort(-kw, kind="stable")] = np.arange(1, len(ids) + 1)
            fused = cfg.alpha / (10 + rank_sem) + (1 - cfg.alpha) * np.where(
                in_kw, 1 / (10 + rank_kw), 0
            )
        out.append(ids[np.argsort(-fused, kind="stable")[:K]])
    return out


def recall(ranked: np.ndarray, evidence: set[int], k: int = 10) -> float:
    return len(evidence.intersection(ranked[:k].tolist())) / len(evidence)


def grid() -> list[Config]:
    """A coarse grid over every method, then finer ones around the region where both sets do well."""
    configs = []
    for k1, b in itertools.product((0.9, 1.2, 1.6, 2.0), (0.2, 0.35, 0.5, 0.75, 0.9)):
        for method, alphas in (
            ("minmax", (0.3, 0.4, 0.5, 0.6, 0.7)),
            ("zscore", (0.3, 0.4, 0.5, 0.6, 0.7)),
            ("rrf", (0.3, 0.4, 0.5, 0.6)),
        ):
            for alpha, hub in itertools.product(alphas, (0.0, 0.25, 0.5)):
                configs.append(Config(k1, b, method, alpha, hub))
    for k1, b in itertools.product(
        (0.2, 0.3, 0.45, 0.6, 0.75, 0.9, 1.2), (0.3, 0.4, 0.5, 0.6, 0.75)
    ):
        for method in ("zscore", "zclip", "minmax"):
            for alpha, hub in itertools.product((0.5, 0.55, 0.6, 0.65), (0.15, 0.25, 0.35, 0.5)):
                configs.append(Config(k1, b, method, alpha, hub))
    return configs


def score_all(
    data: SetData, configs: Sequence[Config]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Recall@10 per (config, question) for hybrid, keyword per (config, question), vector per question."""
    hybrid = np.zeros((len(configs), len(data.queries)))
    keyword = np.zeros((len(configs), len(data.queries)))
    vector = np.zeros(len(data.queries))
    by_bm25: dict[tuple[float, float], list[int]] = {}
    for c_idx, cfg in enumerate(configs):
        by_bm25.setdefault((cfg.k1, cfg.b), []).append(c_idx)
    for q_idx, q in enumerate(data.queries):
        vector[q_idx] = recall(np.argsort(-q.sims, kind="stable")[:K], q.evidence)
        for (k1, b), members in by_bm25.items():
            kw_ids, kw_scores = keyword_ranking(q, k1, b)
            r_kw = recall(kw_ids[:K], q.evidence)
            ranked = hybrid_ranking(
                q, data.vectors[q.conv], kw_ids, kw_scores, [configs[i] for i in members]
            )
            for c_idx, r in zip(members, ranked, strict=True):
                hybrid[c_idx, q_idx] = recall(r, q.evidence)
                keyword[c_idx, q_idx] = r_kw
    return hybrid, keyword, vector


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("locomo", type=Path, nargs="?", default=DEFAULT_LOCOMO)
    parser.add_argument("--cache", type=Path, default=None, metavar="DIR")
    parser.add_argument("--seed", type=int, default=longmix.DEFAULT_SEED)
    parser.add_argument("--check", action="store_true", help="only score the shipped parameters")
    parser.add_argument(
        "--methods", default=None, help="only these fusion methods (comma-separated)"
    )
    parser.add_argument(
        "--json", type=Path, default=None, metavar="PATH", help="mean recall of every configuration"
    )
    args = parser.parse_args(argv)
    if not args.locomo.is_file():
        print(f"No LoCoMo file at {args.locomo}.", file=sys.stderr)
        return 1
    shipped = Config(
        ranking.BM25_K1,
        ranking.BM25_B,
        "zclip",
        ranking.VECTOR_WEIGHT,
        ranking.HUB_WEIGHT,
    )
    with tempfile.TemporaryDirectory(prefix="tune-") as tmp, Timer() as t_extract:
        sets = [
            extract("locomo", load_conversations(args.locomo), args.cache, Path(tmp)),
            extract("longmix", longmix.generate(args.seed), args.cache, Path(tmp)),
        ]
    print(f"extracted in {t_extract.seconds:.0f} s", file=sys.stderr)
    configs = [shipped] if args.check else list(dict.fromkeys([BEFORE, shipped, *grid()]))
    if args.methods:
        keep = set(args.methods.split(","))
        configs = [BEFORE, *(c for c in configs if c.method in keep and c != BEFORE)]
    with Timer() as t_score:
        scored = [score_all(s, configs) for s in sets]
    print(f"{len(configs)} configurations scored in {t_score.seconds:.0f} s", file=sys.stderr)
    if args.check:
        rows = [
            [s.name, float(v.mean()), float(k[0].mean()), float(h[0].mean())]
            for s, (h, k, v) in zip(sets, scored, strict=True)
        ]
        print(table(["set", "vector R@10", "keyword R@10", "hybrid R@10"], rows))
        return 0
    conv_of = [np.array([q.conv for q in s.queries]) for s in sets]
    fold_of = [np.arange(len(s.vectors)) % FOLDS for s in sets]
    before = configs.index(BEFORE)

    def select(masks: list[np.ndarray]) -> tuple[int, np.ndarray]:
        """The configuration chosen on these questions, and which configurations were allowed.

        Allowed: on every set, hybrid R@10 at least the better of its two halves and at least the ranking
        before. Among those, the best mean over the sets (each set counts the same); with none allowed,
        the best worst-set margin of hybrid over its better half.
        """
        hybrid = [h[:, m].mean(axis=1) for (h, _, _), m in zip(scored, masks, strict=True)]
        halves = [
            np.maximum(k[:, m].mean(axis=1), v[m].mean())
            for (_, k, v), m in zip(scored, masks, strict=True)
        ]
        margin = np.min([h - b for h, b in zip(hybrid, halves, strict=True)], axis=0)
        allowed = (margin >= 0) & np.all([h >= h[before] for h in hybrid], axis=0)
        if not allowed.any():
            return int(np.argmax(margin)), allowed
        return int(np.argmax(np.where(allowed, np.mean(hybrid, axis=0), -np.inf))), allowed

    picks: list[int] = []
    held = [(np.zeros(len(s.queries)), np.zeros(len(s.queries))) for s in sets]
    for f in range(FOLDS):
        train = [~np.isin(c, np.where(fo == f)[0]) for c, fo in zip(conv_of, fold_of, strict=True)]
        best, _ = select(train)
        picks.append(best)
        for i, (h, k, _) in enumerate(scored):
            test = ~train[i]
            held[i][0][test] = h[best, test]
            held[i][1][test] = k[best, test]
    final, allowed = select([np.ones(len(s.queries), dtype=bool) for s in sets])
    print("Chosen per fold: " + "; ".join(configs[p].label() for p in picks))
    print(f"Chosen on all conversations: {configs[final].label()}\n")

    rows = []
    for i, s in enumerate(sets):
        h, k, v = scored[i]
        vec = float(v.mean())
        for label, kw, hy in (
            (f"before ({BEFORE.label()})", k[before].mean(), h[before].mean()),
            ("cross-validated, held-out folds", held[i][1].mean(), held[i][0].mean()),
            (f"chosen ({configs[final].label()})", k[final].mean(), h[final].mean()),
        ):
            rows.append([s.name, label, vec, float(kw), float(hy), float(hy - max(vec, kw))])
    print(
        table(
            ["set", "ranking", "vector R@10", "keyword R@10", "hybrid R@10", "hybrid - best half"],
            rows,
        )
    )
    print()
    cross = []
    for i, s in enumerate(sets):
        best = int(np.argmax(scored[i][0].mean(axis=1)))
        cross.append(
            [
                f"best hybrid R@10 on {s.name} alone",
                configs[best].label(),
                float(scored[0][0][best].mean()),
                float(scored[1][0][best].mean()),
            ]
        )
    print(table(["selection", "configuration", f"{sets[0].name}", f"{sets[1].name}"], cross))
    print()
    mean = np.mean([h.mean(axis=1) for h, _, _ in scored], axis=0)
    order = np.argsort(-np.where(allowed, mean, mean - 10), kind="stable")
    per_method: dict[str, int] = {}
    for c in np.argsort(-mean, kind="stable"):
        per_method.setdefault(configs[c].method, int(c))
    listed = list(dict.fromkeys([*order[:10].tolist(), *per_method.values(), before]))
    print(
        table(
            [
                "configuration",
                "allowed",
                *(f"{s.name} {m}" for s in sets for m in ("hybrid", "keyword")),
                "mean hybrid",
            ],
            [
                [
                    configs[c].label(),
                    "yes" if allowed[c] else "no",
                    *(float(scored[i][j][c].mean()) for i in range(len(sets)) for j in (0, 1)),
                    float(mean[c]),
                ]
                for c in listed
            ],
        )
    )
    rng = np.random.default_rng(0)
    for i, s in enumerate(sets):
        diff = scored[i][0][final] - scored[i][0][before]
        boot = [diff[rng.integers(0, len(diff), len(diff))].mean() for _ in range(2000)]
        lo, hi = np.percentile(boot, [2.5, 97.5])
        print(
            f"{s.name}: chosen - before, hybrid R@10 {diff.mean():+.3f} "
            f"(95% paired bootstrap over questions [{lo:+.3f}, {hi:+.3f}])"
        )
    print(
        "\nvector R@10: "
        + ", ".join(
            f"{s.name} {float(v.mean()):.3f}" for s, (_, _, v) in zip(sets, scored, strict=True)
        )
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "configs": [c.__dict__ for c in configs],
                    "mean_hybrid": {
                        s.name: scored[i][0].mean(axis=1).tolist() for i, s in enumerate(sets)
                    },
                    "mean_keyword": {
                        s.name: scored[i][1].mean(axis=1).tolist() for i, s in enumerate(sets)
                    },
                    "vector": {s.name: float(scored[i][2].mean()) for i, s in enumerate(sets)},
                }
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

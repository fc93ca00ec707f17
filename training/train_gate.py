"""Fit the storage gate on `training/storage/` and write `octygraph/data/storage_gate.npz`.

    pip install -e ".[train]"
    python training/train_gate.py            # fit, report, write the weights and gate_report.json
    python training/train_gate.py --explain  # also print the shape features' weights

Reproducible: the held-out part is fixed by a hash of each item, folds by a seeded shuffle, and the
solver is deterministic, so the same sets give the same weights. Sentence vectors are cached in
`training/.cache/` (delete it to re-embed).

Method: one row per segment (`octygraph.judgement.segments`, the unit the gate judges at run time):
the local model's sentence vector plus the named shape features. A binary logistic regression decides
durable vs not; a multinomial one, fitted on durable rows only, picks the kind. Regularisation is chosen
by 5-fold cross-validation on the training part; the decision threshold per source (user prompt,
assistant reply) is the lowest one that wrongly keeps at most 2% of the out-of-fold negatives (precision
depends on how many positives a set happens to hold; the false-keep rate does not): a real prompt has many sentences, one wrong keep stores junk, and a wrong
memory costs more than a missed one.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from octygraph.judgement.gate import GATE_FILE, KINDS, gate_features
from octygraph.judgement.linear import Logistic, save_logistic
from octygraph.judgement.segments import Segment, segments
from octygraph.judgement.shape import FEATURE_NAMES
from training.common import HERE, embed, held_out, precision_recall, read_jsonl

SETS = HERE / "storage"
OUT = HERE.parent / "octygraph" / "data" / GATE_FILE
REPORT = HERE / "gate_report.json"
C_GRID = (0.1, 0.3, 1.0, 3.0, 10.0)
VECTOR_DIMS = 384
MAX_FALSE_KEEP = 0.02
SEED = 7
_TOKEN = re.compile(r"[a-z0-9]+")


@dataclass
class Row:
    segment: Segment
    durable: bool
    kind: str | None
    source: str
    category: str
    group: str
    """Items that share a group (a mixed prompt's segments) stay in the same fold and split."""


def _overlap(a: str, b: str) -> float:
    ta, tb = set(_TOKEN.findall(a.lower())), set(_TOKEN.findall(b.lower()))
    return len(ta & tb) / max(1, len(ta))


def load_rows() -> list[Row]:
    rows: list[Row] = []
    seen: set[str] = set()
    for path in sorted(SETS.glob("*.jsonl")):
        for item in read_jsonl(path):
            if (
                "prompt" in item
            ):  # a mixed prompt: label each segment by the durable spans it carries
                for seg in segments(item["prompt"]):
                    match = next(
                        (
                            d
                            for d in item["durable"]
                            if _overlap(seg.text, d["text"]) >= 0.6
                            and _overlap(d["text"], seg.text) >= 0.5
                        ),
                        None,
                    )
                    rows.append(
                        Row(
                            seg,
                            match is not None,
                            match["kind"] if match else None,
                            "user",
                            "mixed",
                            item["prompt"],
                        )
                    )
                continue
            key = " ".join(item["text"].casefold().split())
            if key in seen:  # the same sentence written twice, in two files
                continue
            seen.add(key)
            source = item.get("source", "user")
            machine = any(s.machine for s in segments(item["text"]))
            rows.append(
                Row(
                    Segment(item["text"], machine=machine),
                    bool(item["durable"]),
                    item.get("kind") if item["durable"] else None,
                    source,
                    item.get("category") or ("durable" if item["durable"] else "other"),
                    item["text"],
                )
            )
    return rows


def features(rows: list[Row]) -> np.ndarray:
    vectors = embed([r.segment.text for r in rows])
    parts = []
    for source in ("user", "assistant"):
        idx = [i for i, r in enumerate(rows) if r.source == source]
        if idx:
            parts.append(
                (
                    idx,
                    gate_features(
                        [rows[i].segment for i in idx],
                        vectors[idx],
                        assistant=source == "assistant",
                    ),
                )
            )
    out = np.zeros((len(rows), vectors.shape[1] + len(FEATURE_NAMES)), dtype=np.float32)
    for idx, block in parts:
        out[idx] = block
    return out


def _fit(
    x: np.ndarray, y: np.ndarray, c: float, *, balanced: bool = True, vector_dims: int = 0
) -> Logistic:
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(x)
    scale = np.where(scaler.scale_ > 1e-6, scaler.scale_, 1.0)
    if x.shape[1] > vector_dims > 0:
        # Sentence-vector dimensions share one scale: scaling each to unit variance would blow up
        # the near-constant ones, and the model would fit their noise.
        scale[:vector_dims] = float(np.sqrt((scaler.var_[:vector_dims]).sum()))
    model = LogisticRegression(C=c, max_iter=3000, class_weight="balanced" if balanced else None)
    model.fit((x - scaler.mean_) / scale, y)
    return Logistic(
        mean=scaler.mean_.astype(np.float32),
        scale=scale.astype(np.float32),
        coef=model.coef_.astype(np.float32),
        intercept=model.intercept_.astype(np.float32),
        classes=tuple(str(c) for c in model.classes_),
    )


def _folds(groups: list[str], k: int = 5) -> np.ndarray:
    unique = sorted(set(groups))
    rng = np.random.default_rng(SEED)
    order = rng.permutation(len(unique))
    fold_of = {unique[j]: int(n % k) for n, j in enumerate(order)}
    return np.array([fold_of[g] for g in groups])


def out_of_fold(x: np.ndarray, y: np.ndarray, folds: np.ndarray, c: float) -> np.ndarray:
    p = np.zeros(len(y), dtype=np.float64)
    for f in sorted(set(folds.tolist())):
        train, test = folds != f, folds == f
        p[test] = _fit(x[train], y[train], c, vector_dims=VECTOR_DIMS).proba(x[test])
    return p


def best_threshold(y: np.ndarray, p: np.ndarray) -> float:
    """The lowest bar that keeps at most `MAX_FALSE_KEEP` of the negatives.

    A real prompt has many sentences, and one wrongly kept sentence is enough to store junk, so the
    bar is set by the false-keep rate on negatives rather than by an F score.
    """
    if not y.any() or y.all():
        return 0.5
    for t in np.arange(0.5, 0.99, 0.01):
        keep = p >= t
        false_keep = (keep & ~y).sum() / max(1, (~y).sum())
        if false_keep <= MAX_FALSE_KEEP:
            return round(float(t), 2)
    return 0.98


def log_loss(y: np.ndarray, p: np.ndarray) -> float:
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--explain", action="store_true", help="print the shape features' weights")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()

    rows = load_rows()
    if len(rows) < 200:
        raise SystemExit(f"Only {len(rows)} labelled segments in {SETS}; the set is missing.")
    x = features(rows)
    y = np.array([r.durable for r in rows])
    test = np.array([held_out(r.group) for r in rows])
    train = ~test
    groups = [r.group for r in rows]
    folds = _folds([g for g, t in zip(groups, train, strict=True) if t])
    xt, yt = x[train], y[train]
    sources = np.array([r.source for r in rows])

    losses = {c: log_loss(yt, out_of_fold(xt, yt, folds, c)) for c in C_GRID}
    c_best = min(losses, key=lambda c: losses[c])
    p_oof = out_of_fold(xt, yt, folds, c_best)
    thresholds = {
        s: best_threshold(yt[sources[train] == s], p_oof[sources[train] == s])
        for s in ("user", "assistant")
    }

    durable = _fit(xt, yt, c_best, vector_dims=VECTOR_DIMS)
    kind_rows = train & y & np.array([r.kind in KINDS for r in rows])
    kind = _fit(
        x[kind_rows],
        np.array([rows[i].kind for i in np.flatnonzero(kind_rows)]),
        1.0,
        vector_dims=VECTOR_DIMS,
    )

    report: dict = {
        "segments": len(rows),
        "train": int(train.sum()),
        "held_out": int(test.sum()),
        "durable": int(y.sum()),
        "C": c_best,
        "cv_log_loss": {str(k): round(v, 4) for k, v in losses.items()},
        "thresholds": thresholds,
        "by_source": {},
    }
    p_test = durable.proba(x[test])
    for s in ("user", "assistant"):
        m_tr, m_te = sources[train] == s, sources[test] == s
        cv = precision_recall(yt[m_tr], p_oof[m_tr] >= thresholds[s])
        ho = precision_recall(y[test][m_te], p_test[m_te] >= thresholds[s])
        report["by_source"][s] = {
            "train_segments": int(m_tr.sum()),
            "held_out_segments": int(m_te.sum()),
            "cv_precision": round(cv[0], 3),
            "cv_recall": round(cv[1], 3),
            "held_out_precision": round(ho[0], 3),
            "held_out_recall": round(ho[1], 3),
        }
    # Per negative category: how often the held-out part of it was wrongly kept.
    cats: dict[str, list[int]] = {}
    for i in np.flatnonzero(test):
        r = rows[i]
        if not r.durable:
            keep = p_test[list(np.flatnonzero(test)).index(i)] >= thresholds[r.source]
            cats.setdefault(f"{r.source}:{r.category}", [0, 0])
            cats[f"{r.source}:{r.category}"][0] += int(keep)
            cats[f"{r.source}:{r.category}"][1] += 1
    report["held_out_false_keeps"] = {k: f"{a}/{b}" for k, (a, b) in sorted(cats.items())}
    kind_test = test & y & np.array([r.kind in KINDS for r in rows])
    if kind_test.any():
        pred = np.array(kind.classes)[np.argmax(kind.proba(x[kind_test]), axis=1)]
        truth = np.array([rows[i].kind for i in np.flatnonzero(kind_test)])
        report["held_out_kind_accuracy"] = round(float((pred == truth).mean()), 3)

    arrays: dict[str, np.ndarray] = {
        "threshold_user": np.float32(thresholds["user"]),
        "threshold_assistant": np.float32(thresholds["assistant"]),
        "feature_names": np.array(FEATURE_NAMES),
    }
    save_logistic(arrays, "durable", durable)
    save_logistic(arrays, "kind", kind)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, **arrays)
    REPORT.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))
    if args.explain:
        w = durable.coef[0][-len(FEATURE_NAMES) :]
        for name, weight in sorted(zip(FEATURE_NAMES, w, strict=True), key=lambda t: t[1]):
            print(f"{weight:+.3f}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

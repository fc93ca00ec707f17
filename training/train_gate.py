"""Fit the storage gate on `training/storage/` and write `octygraph/data/storage_gate.npz`.

    pip install -e ".[train]"
    python training/train_gate.py            # fit, report, write the weights and gate_report.json

Reproducible: the held-out part is fixed by a hash of each item, folds by a seeded shuffle, and the
solver is deterministic, so the same sets give the same weights. Sentence vectors are cached in
`training/.cache/` (delete it to re-embed).

Method: one row per segment (`octygraph.judgement.segments`, the unit the gate judges at run time):
the local model's sentence vector plus the named shape features. `MEMBERS` networks with one hidden
layer of `HIDDEN` ReLU units, from different seeds, decide durable vs not by their mean probability (out of fold they keep more durable sentences than a
logistic regression at the same false-keep rate, and separate acknowledgements from short facts, which a
linear model over sentence vectors does not). Beside them a logistic model over hashed words and word
pairs (`octygraph.judgement.ngrams`) reads how a user's sentence is worded; the gate averages the two votes as
log-odds (out of fold, the blend keeps about a third more durable sentences than the networks alone at a
1% false-keep rate). A multinomial logistic regression, fitted on durable rows only, picks the kind. Weight decay (the one-standard-error rule, `strongest_within_noise`) and the wording model's C are chosen by 5-fold cross-validation on the training part. The bars
per source (user prompt, assistant reply) and message length come from the out-of-fold false-keep rate
(`bars_by_length`): a wrong memory costs more than a missed one.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from octygraph.judgement.gate import (
    GATE_FILE,
    KINDS,
    blend,
    gate_features,
    judged_segments,
    logit,
)
from octygraph.judgement.linear import Logistic, Mlp, save_logistic, save_mlp
from octygraph.judgement.ngrams import N_FEATURES, hashed_ngrams
from octygraph.judgement.segments import MAX_SEGMENTS, Segment, segments
from octygraph.judgement.shape import FEATURE_NAMES
from training.common import HERE, embed, held_out, precision_recall, read_jsonl

SETS = HERE / "storage"
REPLY_SETS = frozenset({"assistant_reports.jsonl", "assistant_b.jsonl"})
"""Sets in the decorated register of real replies: only the assistant network is fitted on them."""
# Sets about what the user reports of their own doings ("I re-ran the migration" is transient there):
# the assistant network does not read them, since the assistant saying it applied a migration reports
# a lasting outcome.
USER_VOICE_SETS = frozenset({"user_state.jsonl", "mixed_state.jsonl"})
# The assistant network's weight decay, fixed so that the user prompts' choice (ALPHA_GRID, by their own
# folds) does not move the Stop judgement; choosing it on the replies' folds (0.003) lost lasting
# outcomes the tests hold it to.
REPLY_ALPHA = 0.01
OUT = HERE.parent / "octygraph" / "data" / GATE_FILE
REPORT = HERE / "gate_report.json"
ALPHA_GRID = (0.003, 0.01, 0.03)
WORDING_C_GRID = (1.0, 4.0, 16.0)
HIDDEN = 128
MEMBERS = 15
"""Networks averaged per gate. With 5, a retrain from another seed moved the real junk share by up to 16
points (16.7 to 32.4 on the development split) at the same recall; with 15, two seeds gave 24.2 and
26.5 (`bench/README.md`). Each costs about 0.01 ms per prompt at run time."""
VECTOR_DIMS = 384
MAX_FALSE_STORE = 0.05
BAR_MARGIN = 0.03
"""Added to every bar. Real messages carry harder non-durable sentences than the training messages:
on their held-out part no clean training message stored anything, while on real developer prompts the
bars alone stored something for 6-7% of clean prompts (development split, message level, 2026-11-23);
+0.03 brought that to 3.6% there. One number for every length and source, not a per-pattern fix."""
COUNTED_SEGMENTS = 12
"""Lengths whose bar is read off the out-of-fold scores directly; at 5%/k of about 1,200 non-durable
reply sentences, longer messages would leave fewer than five sentences above the bar to read it from."""
TAIL_FROM = 0.9
"""The non-durable scores' tail is fitted above this quantile (see `tail_scale`)."""
MAX_BAR = 0.999
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


def load_rows(*, replies: bool = True, skip: frozenset[str] = frozenset()) -> list[Row]:
    """Every labelled segment of the sets (but the files in `skip`).

    With `replies`, assistant lines are read as the gate reads a reply (`judged_segments`); without,
    as plain sentences, the way the user network's data was always read.
    """
    rows: list[Row] = []
    seen: set[str] = set()
    for path in sorted(SETS.glob("*.jsonl")):
        if path.name in skip:
            continue
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
            # A reply line is judged as the gate sees it at run time: without its decoration, and a
            # non-durable line of several sentences ("Sure! Let me do that.") as each of them.
            as_reply = replies and source == "assistant"
            segs = judged_segments(item["text"], assistant=as_reply)
            prose = [s for s in segs if not s.machine]
            if as_reply and not item["durable"] and len(prose) > 1:
                rows += [
                    Row(s, False, None, source, item.get("category") or "other", item["text"])
                    for s in prose
                ]
                continue
            text = " ".join(s.text for s in prose) if as_reply and prose else item["text"]
            machine = any(s.machine for s in segs)
            rows.append(
                Row(
                    Segment(text, machine=machine),
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
    x: np.ndarray,
    y: np.ndarray,
    c: float,
    *,
    balanced: bool = True,
    vector_dims: int = 0,
    sample_weight: np.ndarray | None = None,
) -> Logistic:
    # Imported on use: scikit-learn is the optional [train] extra, needed only to fit.
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(x, sample_weight=sample_weight)
    scale = np.where(scaler.scale_ > 1e-6, scaler.scale_, 1.0)
    if x.shape[1] > vector_dims > 0:
        # Sentence-vector dimensions share one scale: scaling each to unit variance would blow up
        # the near-constant ones, and the model would fit their noise.
        scale[:vector_dims] = float(np.sqrt((scaler.var_[:vector_dims]).sum()))
    model = LogisticRegression(C=c, max_iter=3000, class_weight="balanced" if balanced else None)
    model.fit((x - scaler.mean_) / scale, y, sample_weight=sample_weight)
    return Logistic(
        mean=scaler.mean_.astype(np.float32),
        scale=scale.astype(np.float32),
        coef=model.coef_.astype(np.float32),
        intercept=model.intercept_.astype(np.float32),
        classes=tuple(str(c) for c in model.classes_),
    )


def _scaling(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and scale per column; the sentence-vector dimensions share one scale.

    Scaling each vector dimension to unit variance would blow up the near-constant ones, and the model
    would fit their noise.
    """
    mean = x.mean(axis=0)
    std = x.std(axis=0)
    scale = np.where(std > 1e-6, std, 1.0)
    scale[:VECTOR_DIMS] = float(np.sqrt((std[:VECTOR_DIMS] ** 2).sum()))
    return mean, scale


def _fit_durable(x: np.ndarray, y: np.ndarray, alpha: float) -> Mlp:
    # Imported on use: scikit-learn is the optional [train] extra, needed only to fit.
    from sklearn.neural_network import MLPClassifier

    mean, scale = _scaling(x)
    nets = [
        MLPClassifier(
            hidden_layer_sizes=(HIDDEN,),
            alpha=alpha,
            max_iter=300,
            early_stopping=True,
            random_state=SEED + member,
        ).fit((x - mean) / scale, y)
        for member in range(MEMBERS)
    ]
    return Mlp(
        mean=mean.astype(np.float32),
        scale=scale.astype(np.float32),
        hidden_weights=np.stack([n.coefs_[0] for n in nets]).astype(np.float32),
        hidden_bias=np.stack([n.intercepts_[0] for n in nets]).astype(np.float32),
        output_weights=np.stack([n.coefs_[1][:, 0] for n in nets]).astype(np.float32),
        output_bias=np.array([n.intercepts_[1][0] for n in nets], dtype=np.float32),
    )


def _fit_wording(x: np.ndarray, y: np.ndarray, c: float) -> Logistic:
    """Logistic model over hashed words and pairs; the rows are already scaled (unit length)."""
    # Imported on use: scikit-learn is the optional [train] extra, needed only to fit.
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=c, max_iter=3000, class_weight="balanced").fit(x, y)
    return Logistic(
        mean=np.zeros(1, dtype=np.float32),
        scale=np.ones(1, dtype=np.float32),
        coef=model.coef_.astype(np.float32),
        intercept=model.intercept_.astype(np.float32),
        classes=("false", "true"),
    )


def _folds(groups: list[str], k: int = 5) -> np.ndarray:
    unique = sorted(set(groups))
    rng = np.random.default_rng(SEED)
    order = rng.permutation(len(unique))
    fold_of = {unique[j]: int(n % k) for n, j in enumerate(order)}
    return np.array([fold_of[g] for g in groups])


def out_of_fold(
    fit: Callable[[np.ndarray, np.ndarray], Logistic | Mlp],
    x: np.ndarray,
    y: np.ndarray,
    folds: np.ndarray,
) -> np.ndarray:
    """Each row's probability from a model `fit` on the other folds."""
    p = np.zeros(len(y), dtype=np.float64)
    for f in sorted(set(folds.tolist())):
        train, test = folds != f, folds == f
        p[test] = fit(x[train], y[train]).proba(x[test])
    return p


def tail_scale(negatives: np.ndarray) -> float:
    """How fast the non-durable scores thin out at the top, on the log-odds scale.

    Above their `TAIL_FROM` quantile u, the log-odds z of the out-of-fold non-durable scores are
    modelled as u plus an exponential excess (the peaks-over-threshold tail with shape 0); its scale
    is the mean excess. Then P(z > u + s * t) = (1 - TAIL_FROM) * exp(-t): keeping 1/m as many
    sentences needs a bar s * ln(m) higher.
    """
    z = logit(negatives)
    u = float(np.quantile(z, TAIL_FROM))
    return float(np.mean(z[z > u] - u))


def bars_by_length(
    y: np.ndarray, p: np.ndarray, max_false_store: float
) -> tuple[list[float], float]:
    """Per message length k (prose segments, 1..`MAX_SEGMENTS`), the bar each segment must clear.

    One wrongly kept sentence is enough to store junk, and a k-sentence message gives k chances, so
    the bar for a k-segment message is the lowest one that keeps at most `max_false_store / k` of the
    out-of-fold non-durable segments: a message of any length is stored wrongly at most about
    `max_false_store` of the time. Set by the false-keep rate, not an F score, because a wrong memory
    costs more than a missed one. Up to `COUNTED_SEGMENTS` the bar is read off the scores; beyond, too
    few of them lie that high, and the bar grows from the last one read as the fitted tail says
    (`tail_scale`): by s * ln(k / COUNTED_SEGMENTS) on the log-odds scale. Assistant replies
    run to 18 prose sentences at the median, so most of them are judged there. Also returns s
    (rounded, for the report).
    """
    negatives = p[~y]
    bars: list[float] = []
    for k in range(1, COUNTED_SEGMENTS + 1):
        bar = 0.99
        for t in np.arange(0.3, 0.99, 0.01):
            if (negatives >= t).mean() <= max_false_store / k:
                bar = round(float(t), 2)
                break
        bars.append(max(bar, bars[-1]) if bars else bar)
    bars = [round(min(0.99, bar + BAR_MARGIN), 2) for bar in bars]
    last = float(logit(np.array(bars[-1])))
    scale = tail_scale(negatives)
    for k in range(COUNTED_SEGMENTS + 1, MAX_SEGMENTS + 1):
        z = last + scale * np.log(k / COUNTED_SEGMENTS)
        bars.append(round(min(MAX_BAR, float(1 / (1 + np.exp(-z)))), 3))
    return bars, round(scale, 3)


def strongest_within_noise(y: np.ndarray, oof: dict[float, np.ndarray]) -> float:
    """The largest weight decay whose out-of-fold log loss is within one standard error of the best.

    The one-standard-error rule: decays whose losses differ by less than their noise fit equally
    well, and the simplest of them is the safest bet off the training sets. Taking the bare minimum
    let 0.0001 of log loss (six segments cut differently) swap 0.03 for 0.01 and move every bar.
    """
    rows = {a: _row_losses(y, p) for a, p in oof.items()}
    best = min(rows, key=lambda a: float(rows[a].mean()))
    noise = float(rows[best].std() / np.sqrt(len(y)))
    return max(a for a in rows if rows[a].mean() <= rows[best].mean() + noise)


def _row_losses(y: np.ndarray, p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return -(y * np.log(p) + (1 - y) * np.log(1 - p))


def log_loss(y: np.ndarray, p: np.ndarray) -> float:
    return float(_row_losses(y, p).mean())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument(
        "--max-false-store",
        type=float,
        default=MAX_FALSE_STORE,
        help="share of non-durable messages allowed to store something (sets the bars)",
    )
    args = ap.parse_args()

    # The user network is fitted on the sets it always was, read as before, so that adding reply sets
    # cannot move the user judgement; the assistant network (below) also reads the reply sets.
    rows = load_rows(replies=False, skip=REPLY_SETS)
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

    oof = {
        a: out_of_fold(functools.partial(_fit_durable, alpha=a), xt, yt, folds) for a in ALPHA_GRID
    }
    losses = {a: log_loss(yt, p) for a, p in oof.items()}
    alpha = strongest_within_noise(yt, oof)
    # The wording model reads user prompts only: on assistant replies (long, and with far fewer
    # labelled sentences) its votes did not carry over to real replies.
    words = hashed_ngrams([r.segment.text for r in rows])
    user = sources == "user"
    user_t = user[train]
    wording_oof = {
        c: out_of_fold(
            functools.partial(_fit_wording, c=c), words[train & user], yt[user_t], folds[user_t]
        )
        for c in WORDING_C_GRID
    }
    # C is chosen for the blend, the probability the gate acts on.
    blend_losses = {
        c: log_loss(yt[user_t], blend(oof[alpha][user_t], p)) for c, p in wording_oof.items()
    }
    wording_c = min(blend_losses, key=lambda c: blend_losses[c])
    p_oof = oof[alpha].copy()
    p_oof[user_t] = blend(oof[alpha][user_t], wording_oof[wording_c])
    # The user bars; the assistant's come from the assistant network's own scores (below).
    mine = sources[train] == "user"
    user_bars, user_tail = bars_by_length(yt[mine], p_oof[mine], args.max_false_store)
    bars = {"user": user_bars}
    tails = {"user": user_tail}
    thresholds = {"user": user_bars[0]}  # a one-sentence message

    durable = _fit_durable(xt, yt, alpha)
    wording = _fit_wording(words[train & user], yt[user_t], wording_c)
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
        "alpha": alpha,
        "cv_log_loss": {str(k): round(v, 4) for k, v in losses.items()},
        "wording_c": wording_c,
        "wording_features": N_FEATURES,
        "cv_log_loss_blend": {str(k): round(v, 4) for k, v in blend_losses.items()},
        "max_false_store": args.max_false_store,
        "bar_margin": BAR_MARGIN,
        "bars_by_segments": bars,
        "tail_scale": tails,
        "by_source": {},
    }
    p_test = durable.proba(x[test])
    user_test = user[test]
    p_test[user_test] = blend(p_test[user_test], wording.proba(words[test & user]))
    # The assistant network: user prompts (but the user-voice sets) plus every assistant set, read as
    # replies.
    reply_rows = [
        r for r in load_rows(replies=False, skip=REPLY_SETS | USER_VOICE_SETS) if r.source == "user"
    ] + [r for r in load_rows(replies=True) if r.source == "assistant"]
    xa = features(reply_rows)
    ya = np.array([r.durable for r in reply_rows])
    test_a = np.array([held_out(r.group) for r in reply_rows])
    sources_a = np.array([r.source for r in reply_rows])
    folds_a = _folds([r.group for r, t in zip(reply_rows, test_a, strict=True) if not t])
    p_oof_a = out_of_fold(
        functools.partial(_fit_durable, alpha=REPLY_ALPHA), xa[~test_a], ya[~test_a], folds_a
    )
    own = sources_a[~test_a] == "assistant"
    bars["assistant"], tails["assistant"] = bars_by_length(
        ya[~test_a][own], p_oof_a[own], args.max_false_store
    )
    thresholds["assistant"] = bars["assistant"][0]
    durable_assistant = _fit_durable(xa[~test_a], ya[~test_a], REPLY_ALPHA)
    p_test_a = durable_assistant.proba(xa[test_a])

    figures = {
        "user": (rows, y, train, test, sources, p_oof, p_test),
        "assistant": (reply_rows, ya, ~test_a, test_a, sources_a, p_oof_a, p_test_a),
    }
    cats: dict[str, list[int]] = {}
    for s, (s_rows, s_y, s_train, s_test, s_sources, s_oof, s_p_test) in figures.items():
        m_tr, m_te = s_sources[s_train] == s, s_sources[s_test] == s
        cv = precision_recall(s_y[s_train][m_tr], s_oof[m_tr] >= thresholds[s])
        ho = precision_recall(s_y[s_test][m_te], s_p_test[m_te] >= thresholds[s])
        report["by_source"][s] = {
            "train_segments": int(m_tr.sum()),
            "held_out_segments": int(m_te.sum()),
            "cv_precision": round(cv[0], 3),
            "cv_recall": round(cv[1], 3),
            "held_out_precision": round(ho[0], 3),
            "held_out_recall": round(ho[1], 3),
        }
        # Per negative category: how often its held-out part was wrongly kept (as one sentence).
        for n, i in enumerate(np.flatnonzero(s_test)):
            r = s_rows[i]
            if r.source == s and not r.durable:
                cats.setdefault(f"{s}:{r.category}", [0, 0])
                cats[f"{s}:{r.category}"][0] += int(s_p_test[n] >= thresholds[s])
                cats[f"{s}:{r.category}"][1] += 1
    report["held_out_false_keeps"] = {k: f"{a}/{b}" for k, (a, b) in sorted(cats.items())}
    kind_test = test & y & np.array([r.kind in KINDS for r in rows])
    if kind_test.any():
        pred = np.array(kind.classes)[np.argmax(kind.proba(x[kind_test]), axis=1)]
        truth = np.array([rows[i].kind for i in np.flatnonzero(kind_test)])
        report["held_out_kind_accuracy"] = round(float((pred == truth).mean()), 3)

    arrays: dict[str, np.ndarray] = {
        "bars_user": np.array(bars["user"], dtype=np.float32),
        "bars_assistant": np.array(bars["assistant"], dtype=np.float32),
        "feature_names": np.array(FEATURE_NAMES),
    }
    save_mlp(arrays, "durable", durable)
    save_mlp(arrays, "durable_assistant", durable_assistant)
    save_logistic(arrays, "wording", wording)
    save_logistic(arrays, "kind", kind)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    # Any: numpy's stubs would otherwise match the arrays against savez's allow_pickle keyword.
    np.savez_compressed(args.out, **cast(dict[str, Any], arrays))
    REPORT.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

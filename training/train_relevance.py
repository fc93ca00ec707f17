"""Fit the relevance model and write `octygraph/data/relevance.npz`.

    pip install -e ".[train]"
    python training/train_relevance.py                 # real pairs + written scenarios (needs ../shared)
    python training/train_relevance.py --written-only  # the written scenarios alone
    python training/train_relevance.py --explain       # also print the features' weights

The shipped weights are fitted on real (prompt, earlier memory) pairs of every shared project
(`training/real_relevance.py`: each real prompt against every memory labelled earlier in its project,
across sessions) together with the written scenarios of `training/relevance/`, whose rows count
`WRITTEN_WEIGHT` times each. The regularisation and the bar are chosen out of fold, projects held out
whole; the bar is the lowest whose out-of-fold precision on the real pairs, as the pipeline selects
(at most `MAX_RECORDS` per prompt), reaches 50%. `bench/relevance_cv.py` judges this procedure
leave-project-out against the written-only one. Same data, same weights: nothing here is random.

Written scenarios: each is one project, its stored memories and later prompts, with the memories that
would genuinely change or inform the answer labelled relevant (the guideline in `training/README.md`).
Every (prompt, memory) pair of a scenario is one row, built by the same `relevance_features` the
pipeline runs. With `--written-only`, scenarios are held out whole (a stable hash of the name), folds
are scenarios, and the threshold is the lowest whose out-of-fold precision reaches 60%.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from octygraph.judgement.linear import Logistic, save_logistic
from octygraph.judgement.relevance import FEATURE_NAMES, RELEVANCE_FILE
from training.common import HERE, held_out, precision_recall
from training.real_relevance import (
    Fitted,
    MemoEmbed,
    Rows,
    fit,
    join,
    load_pairs,
    load_real,
    real_rows,
    select,
)
from training.real_relevance import written_rows as scenario_rows
from training.train_gate import _fit, _folds, log_loss

OUT = HERE.parent / "octygraph" / "data" / RELEVANCE_FILE
REPORT = HERE / "relevance_report.json"
C_GRID = (0.03, 0.1, 0.3, 1.0)
MIN_PRECISION = 0.6
WRITTEN_WEIGHT = 4.0
"""Weight of the written scenarios' rows beside the real pairs: of 0.3, 1, 2 and 4, the one with the
best leave-project-out cross-session recall in `bench/relevance_cv.py` (at equal precision)."""


def choose_threshold(y: np.ndarray, p: np.ndarray) -> float:
    """The lowest bar whose out-of-fold precision reaches `MIN_PRECISION`.

    Injecting nothing is a correct answer and an unrelated memory in the context is worse than a
    missing one, so the bar is set by precision; recall is what remains at that bar.
    """
    for t in np.arange(0.1, 0.96, 0.01):
        keep = p >= t
        if keep.any() and precision_recall(y, keep)[0] >= MIN_PRECISION:
            return round(float(t), 2)
    return 0.95


def empty_rate(y: np.ndarray, keep: np.ndarray, prompt_ids: np.ndarray) -> float:
    """Share of prompts with nothing relevant that get nothing injected."""
    none_relevant = [p for p in set(prompt_ids.tolist()) if not y[prompt_ids == p].any()]
    if not none_relevant:
        return 1.0
    return sum(not keep[prompt_ids == p].any() for p in none_relevant) / len(none_relevant)


@dataclass
class WrittenFit:
    """The model fitted on the written scenarios' training part, as the written-only procedure does."""

    model: Logistic
    threshold: float
    c: float
    losses: dict[float, float]
    out_of_fold: np.ndarray
    train: np.ndarray
    """Per row: in the training part (not held out)."""


def fit_written(x: np.ndarray, y: np.ndarray, groups: list[str]) -> WrittenFit:
    """Fit on the scenarios not held out: C by out-of-fold log loss, the bar by out-of-fold precision."""
    test = np.array([held_out(g) for g in groups])
    train = ~test
    xt, yt = x[train], y[train]
    folds = _folds([g for g, t in zip(groups, train, strict=True) if t])

    def oof(c: float) -> np.ndarray:
        p = np.zeros(len(yt))
        for f in sorted(set(folds.tolist())):
            p[folds == f] = _fit(xt[folds != f], yt[folds != f], c, balanced=False).proba(
                xt[folds == f]
            )
        return p

    losses = {c: log_loss(yt, oof(c)) for c in C_GRID}
    c_best = min(losses, key=lambda c: losses[c])
    p_oof = oof(c_best)
    threshold = choose_threshold(yt, p_oof)
    model = _fit(xt, yt, c_best, balanced=False)
    return WrittenFit(model, threshold, c_best, losses, p_oof, train)


def written_report() -> tuple[Logistic, float, dict]:
    x, y, groups, prompt_list, n_prompts = load_pairs(MemoEmbed())
    prompt_ids = np.array(prompt_list)
    fitted = fit_written(x, y, groups)
    train, test = fitted.train, ~fitted.train
    threshold, p_oof = fitted.threshold, fitted.out_of_fold
    p_test = fitted.model.proba(x[test])
    cv = precision_recall(y[train], p_oof >= threshold)
    ho = precision_recall(y[test], p_test >= threshold)
    report = {
        "data": "written scenarios",
        "scenarios": len(set(groups)),
        "held_out_scenarios": len({g for g, t in zip(groups, test, strict=True) if t}),
        "prompts": n_prompts,
        "pairs": len(y),
        "relevant_pairs": int(y.sum()),
        "C": fitted.c,
        "cv_log_loss": {str(k): round(v, 4) for k, v in fitted.losses.items()},
        "threshold": threshold,
        "cv_precision": round(cv[0], 3),
        "cv_recall": round(cv[1], 3),
        "cv_empty_when_nothing_relevant": round(
            empty_rate(y[train], p_oof >= threshold, prompt_ids[train]), 3
        ),
        "held_out_precision": round(ho[0], 3),
        "held_out_recall": round(ho[1], 3),
        "held_out_empty_when_nothing_relevant": round(
            empty_rate(y[test], p_test >= threshold, prompt_ids[test]), 3
        ),
    }
    return fitted.model, threshold, report


def fit_real(real: Rows, memo: MemoEmbed, written_weight: float) -> tuple[Rows, Fitted]:
    """The model fitted on these real pairs, with the written scenarios' rows at `written_weight`."""
    rows = join(real, scenario_rows(memo, written_weight)) if written_weight > 0 else real
    return rows, fit(rows)


def real_report(written_weight: float) -> tuple[Logistic, float, dict]:
    memo = MemoEmbed()
    rows = real_rows(load_real(memo))
    n_real = len(rows.y)
    rows, fitted = fit_real(rows, memo, written_weight)
    real = rows.real
    keep = select(
        fitted.out_of_fold[real], rows.triggered[real], rows.prompt[real], fitted.threshold
    )
    precision, recall = precision_recall(rows.y[real], keep)
    report = {
        "data": "real pairs"
        + (f" + written scenarios at weight {written_weight}" if written_weight > 0 else ""),
        "real_projects": len(set(np.array(rows.group)[real].tolist())),
        "real_pairs": n_real,
        "real_relevant_pairs": int(rows.y[real].sum()),
        "written_pairs": int((~real).sum()),
        "C": fitted.c,
        "cv_log_loss_real": {str(k): round(v, 4) for k, v in fitted.losses.items()},
        "threshold": fitted.threshold,
        "cv_precision_real": round(precision, 3),
        "cv_recall_real": round(recall, 3),
        "cv_empty_when_nothing_relevant_real": round(
            empty_rate(rows.y[real], keep, rows.prompt[real]), 3
        ),
    }
    return fitted.model, fitted.threshold, report


def write(model: Logistic, threshold: float, path: Path) -> None:
    """The model and its bar as the package reads them."""
    arrays: dict[str, np.ndarray] = {
        "threshold": np.array(threshold, dtype=np.float32),
        "feature_names": np.array(FEATURE_NAMES),
    }
    save_logistic(arrays, "relevance", model)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **cast(dict[str, Any], arrays))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--explain", action="store_true", help="print the features' weights")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--report", type=Path, default=REPORT)
    ap.add_argument(
        "--written-only",
        action="store_true",
        help="fit on the written scenarios alone (no shared real pairs needed)",
    )
    ap.add_argument(
        "--written-weight",
        type=float,
        default=WRITTEN_WEIGHT,
        help="weight of the written scenarios' rows beside the real pairs (0: real pairs only)",
    )
    args = ap.parse_args()

    if args.written_only:
        model, threshold, report = written_report()
    else:
        model, threshold, report = real_report(args.written_weight)
    write(model, threshold, args.out)
    args.report.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))
    if args.explain:
        for name, weight in sorted(
            zip(FEATURE_NAMES, model.coef[0], strict=True), key=lambda t: t[1]
        ):
            print(f"{weight:+.3f}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

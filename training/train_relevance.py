"""Fit the relevance model on `training/relevance/` and write `octygraph/data/relevance.npz`.

    pip install -e ".[train]"
    python training/train_relevance.py            # fit, report, write the weights and relevance_report.json
    python training/train_relevance.py --explain  # also print the features' weights

Each scenario is one project: its stored memories and later prompts, with the memories that would
genuinely change or inform the answer labelled relevant (the guideline in `training/README.md`). Every
(prompt, memory) pair of a scenario is one row, built by the same `relevance_features` the pipeline
runs. Scenarios are held out whole (a stable hash of the name), folds are scenarios, so the reported
figures are on projects the model never saw. The threshold is the lowest whose out-of-fold precision
reaches 60%: injecting nothing is a correct answer, an unrelated memory in the context is not.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from octygraph.judgement.relevance import (
    FEATURE_NAMES,
    RELEVANCE_FILE,
    MemoryText,
    relevance_features,
)
from octygraph.judgement.topics import TOPICS
from training.common import HERE, embed, held_out, precision_recall, read_jsonl
from training.train_gate import _fit, _folds, log_loss

SETS = HERE / "relevance"
OUT = HERE.parent / "octygraph" / "data" / RELEVANCE_FILE
REPORT = HERE / "relevance_report.json"
C_GRID = (0.03, 0.1, 0.3, 1.0)
MIN_PRECISION = 0.6


def load_pairs() -> tuple[np.ndarray, np.ndarray, list[str], list[int], int]:
    """Feature rows, labels, each row's scenario, each row's prompt number, and the prompt count."""
    topic_vectors = embed(list(TOPICS.values()))
    xs, ys, groups, prompt_ids = [], [], [], []
    n_prompts = 0
    for path in sorted(SETS.glob("*.jsonl")):
        for scenario in read_jsonl(path):
            memories = [
                MemoryText(m["text"], m.get("type", "fact"), m.get("scope"))
                for m in scenario["memories"]
            ]
            ids = [m["id"] for m in scenario["memories"]]
            name = f"{path.stem}:{scenario['scenario']}"
            for prompt in scenario["prompts"]:
                rows = relevance_features(prompt["text"], memories, embed, topic_vectors)
                relevant = set(prompt.get("relevant") or [])
                xs.append(rows)
                ys += [mid in relevant for mid in ids]
                groups += [name] * len(ids)
                prompt_ids += [n_prompts] * len(ids)
                n_prompts += 1
    return np.vstack(xs), np.array(ys), groups, prompt_ids, n_prompts


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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--explain", action="store_true", help="print the features' weights")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()

    x, y, groups, prompt_list, n_prompts = load_pairs()
    prompt_ids = np.array(prompt_list)
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
    p_test = model.proba(x[test])

    cv = precision_recall(yt, p_oof >= threshold)
    ho = precision_recall(y[test], p_test >= threshold)
    report = {
        "scenarios": len(set(groups)),
        "held_out_scenarios": len({g for g, t in zip(groups, test, strict=True) if t}),
        "prompts": n_prompts,
        "pairs": len(y),
        "relevant_pairs": int(y.sum()),
        "C": c_best,
        "cv_log_loss": {str(k): round(v, 4) for k, v in losses.items()},
        "threshold": threshold,
        "cv_precision": round(cv[0], 3),
        "cv_recall": round(cv[1], 3),
        "cv_empty_when_nothing_relevant": round(
            empty_rate(yt, p_oof >= threshold, prompt_ids[train]), 3
        ),
        "held_out_precision": round(ho[0], 3),
        "held_out_recall": round(ho[1], 3),
        "held_out_empty_when_nothing_relevant": round(
            empty_rate(y[test], p_test >= threshold, prompt_ids[test]), 3
        ),
    }
    arrays: dict[str, np.ndarray] = {
        "threshold": np.float32(threshold),
        "feature_names": np.array(FEATURE_NAMES),
    }
    from octygraph.judgement.linear import save_logistic

    save_logistic(arrays, "relevance", model)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, **arrays)
    REPORT.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))
    if args.explain:
        for name, weight in sorted(
            zip(FEATURE_NAMES, model.coef[0], strict=True), key=lambda t: t[1]
        ):
            print(f"{weight:+.3f}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

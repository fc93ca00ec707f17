"""What the relevance model injects for real prompts, judged leave-project-out over every shared project.

    python bench/relevance_cv.py                      # shipped vs refitted, pooled and per project
    python bench/relevance_cv.py --weights 0.3 1      # the written scenarios at these weights beside the real pairs

Rows (`training/real_relevance.py`): every real prompt of `../shared/data/realtraffic-dev` (with its
cross-session labels) and `realtraffic-train`, paired with every memory labelled earlier in its project
(earlier sessions, and earlier in its own session), stored as the labelled memory's text; relevant when
the prompt's label names it. Each system picks, per prompt, what the pipeline would inject: candidates
past its bar (and rules whose trigger the prompt does), most probable first, at most `MAX_RECORDS`.

Systems: `shipped` is `octygraph/data/relevance.npz` as it is (weights and bar); `written` refits the
written-scenario procedure (`train_relevance.py --written-only`) today; `written, real bar` keeps those
weights but sets the bar on the other projects' real pairs; `real` and `real + written xW` are refitted
for each project on every other project (C and the bar chosen out of fold on those projects only,
`real_relevance.fit`) and scored on the one left out. None of the written-only systems saw a real pair.
Once weights fitted on real pairs ship, `shipped` is in-sample here: judge those by `real` (LOPO).

Figures: cross-session recall (relevant pairs whose memory was stated in an earlier session, injected),
recall over all relevant pairs, precision of what is injected, empty injection (prompts with candidates
but nothing relevant that get nothing), records per non-empty prompt. Intervals: 95%, resampling
sessions (`bench/judgement_cv.py`); differences are paired over the same resamples.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import track
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.judgement_cv import SEED, session_resamples
from octygraph.judgement.linear import load_logistic, model_arrays
from octygraph.judgement.relevance import RELEVANCE_FILE
from training.real_relevance import (
    MemoEmbed,
    RealPrompt,
    Rows,
    choose_bar,
    fit,
    join,
    load_pairs,
    load_real,
    real_rows,
    select,
    subset,
    written_rows,
)
from training.train_relevance import fit_written

FIGURES = (
    ("cross_recall", "cross-session recall %"),
    ("recall", "recall (all pairs) %"),
    ("precision", "precision %"),
    ("empty", "empty when nothing relevant %"),
    ("per_prompt", "records / non-empty prompt"),
)
COUNTS = ("kept", "kept_rel", "rel", "rel_cross", "hit", "hit_cross", "none_rel", "none_rel_empty")


def per_prompt_counts(prompts: list[RealPrompt], rows: Rows, keep: np.ndarray) -> np.ndarray:
    """One row of `COUNTS` per prompt, from what is kept of the stacked real rows."""
    out = np.zeros((len(prompts), len(COUNTS)))
    for n, p in enumerate(prompts):
        k = keep[rows.prompt == n]
        y, cross = p.relevant, p.cross
        out[n] = (
            k.sum(),
            (k & y).sum(),
            y.sum(),
            (y & cross).sum(),
            (k & y).sum(),
            (k & y & cross).sum(),
            bool(len(y)) and not y.any(),
            bool(len(y)) and not y.any() and not k.any(),
        )
    return out


def figures(counts: np.ndarray) -> dict[str, float]:
    s = dict(zip(COUNTS, counts.sum(axis=0), strict=True))
    nonempty = int((counts[:, 0] > 0).sum())
    return {
        "cross_recall": 100.0 * s["hit_cross"] / max(1, s["rel_cross"]),
        "recall": 100.0 * s["hit"] / max(1, s["rel"]),
        "precision": 100.0 * s["kept_rel"] / max(1, s["kept"]),
        "empty": 100.0 * s["none_rel_empty"] / max(1, s["none_rel"]),
        "per_prompt": s["kept"] / max(1, nonempty),
    }


def leave_project_out(
    prompts: list[RealPrompt],
    rows: Rows,
    extra: Rows | None,
    fit_and_score: Callable[[Rows, Rows], np.ndarray] | None = None,
    label: str = "",
) -> np.ndarray:
    """What is kept of each real row, each project scored by a model fitted without it."""
    keep = np.zeros(len(rows.y), dtype=bool)
    projects = np.array(rows.group)
    for held in track(sorted(set(rows.group)), description=label or "leave-project-out"):
        out = projects == held
        train = subset(rows, ~out)
        if extra is not None:
            train = join(train, extra)
        test = subset(rows, out)
        if fit_and_score is None:
            fitted = fit(train)
            p = fitted.model.proba(test.x)
            keep[out] = select(p, test.triggered, test.prompt, fitted.threshold)
        else:
            keep[out] = fit_and_score(train, test)
    return keep


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--weights",
        type=float,
        nargs="*",
        default=[0.3, 1.0],
        help="weights of the written scenarios' rows beside the real pairs",
    )
    ap.add_argument("--resamples", action="store_true", default=True)
    ap.add_argument("--no-intervals", dest="resamples", action="store_false")
    args = ap.parse_args()
    console = Console(width=200)

    memo = MemoEmbed()
    prompts = load_real(memo)
    rows = real_rows(prompts)
    console.print(
        f"{len(prompts)} real prompts, {len({p.prompt.project for p in prompts})} projects, "
        f"{len(rows.y)} (prompt, earlier memory) pairs, {int(rows.y.sum())} relevant, "
        f"{sum(int((p.relevant & p.cross).sum()) for p in prompts)} across sessions"
    )
    systems: dict[str, np.ndarray] = {}
    arrays = model_arrays(RELEVANCE_FILE)
    shipped = load_logistic(arrays, "relevance")
    systems["shipped"] = select(
        shipped.proba(rows.x), rows.triggered, rows.prompt, float(arrays["threshold"])
    )

    wx, wy, wgroups, _, _ = load_pairs(memo)
    written = fit_written(wx, wy, wgroups)
    p_written = written.model.proba(rows.x)
    systems["written"] = select(p_written, rows.triggered, rows.prompt, written.threshold)

    def written_real_bar(train: Rows, test: Rows) -> np.ndarray:
        bar = choose_bar(train, written.model.proba(train.x))
        return select(written.model.proba(test.x), test.triggered, test.prompt, bar)

    systems["written, real bar"] = leave_project_out(
        prompts, rows, None, written_real_bar, "written, real bar"
    )
    systems["real"] = leave_project_out(prompts, rows, None, label="real")
    for w in args.weights:
        systems[f"real + written x{w:g}"] = leave_project_out(
            prompts, rows, written_rows(memo, w), label=f"real + written x{w:g}"
        )

    counts = {name: per_prompt_counts(prompts, rows, keep) for name, keep in systems.items()}
    report(console, prompts, counts, args.resamples)
    return 0


def report(
    console: Console, prompts: list[RealPrompt], counts: dict[str, np.ndarray], resamples: bool
) -> None:
    projects = sorted({p.prompt.project for p in prompts})
    table = Table(title="Per project (held out): cross-session recall / precision / empty, %")
    table.add_column("project")
    table.add_column("prompts", justify="right")
    table.add_column("cross pairs", justify="right")
    for name in counts:
        table.add_column(name, justify="right")
    for project in projects:
        idx = [n for n, p in enumerate(prompts) if p.prompt.project == project]
        cells = []
        for c in counts.values():
            f = figures(c[idx])
            cells.append(f"{f['cross_recall']:.0f} / {f['precision']:.0f} / {f['empty']:.0f}")
        cross = int(sum(c[3] for c in next(iter(counts.values()))[idx]))
        table.add_row(project, str(len(idx)), str(cross), *cells)
    console.print(table)

    draws = list(session_resamples([p.prompt for p in prompts], np.random.default_rng(SEED)))
    pooled = Table(title=f"Pooled over {len(projects)} projects, {len(prompts)} real prompts")
    pooled.add_column("system")
    for _, name in FIGURES:
        pooled.add_column(name, justify="right")
    resampled: dict[str, list[dict[str, float]]] = {}
    for name, c in counts.items():
        f = figures(c)
        if resamples:
            resampled[name] = [figures(c[idx]) for idx in draws]
        cells = []
        for key, _ in FIGURES:
            cell = f"{f[key]:.1f}" if key != "per_prompt" else f"{f[key]:.2f}"
            if resamples and key != "per_prompt":
                lo, hi = np.percentile([r[key] for r in resampled[name]], [2.5, 97.5])
                cell += f" ({lo:.1f}-{hi:.1f})"
            cells.append(cell)
        pooled.add_row(name, *cells)
    console.print(pooled)
    if not resamples:
        return
    for base in ("shipped", "written"):
        for name in counts:
            if name in ("shipped", base):
                continue
            parts = []
            for key in ("cross_recall", "recall", "precision", "empty"):
                full = figures(counts[name])[key] - figures(counts[base])[key]
                deltas = [
                    a[key] - b[key] for a, b in zip(resampled[name], resampled[base], strict=True)
                ]
                lo, hi = np.percentile(deltas, [2.5, 97.5])
                parts.append(f"{key} {full:+.1f} ({lo:+.1f} to {hi:+.1f})")
            console.print(f"  {name} - {base}: " + ", ".join(parts))


if __name__ == "__main__":
    raise SystemExit(main())

"""What octygraph stores of real prompts, judged leave-project-out over every shared real project.

    python bench/judgement_cv.py                 # the shipped procedure, per project and pooled
    python bench/judgement_cv.py --forms         # also the storage filter's forms alone, and the two together
    python bench/judgement_cv.py --forms --alone 0.045   # and the verdict alone, its bar at 4.5% false-store

For each project of `../shared/data/realtraffic-dev` and `realtraffic-train` in turn, the storage verdict
is fitted (`training/train_verdict.fit`: bars chosen by cross-validation over the other projects)
on every other project, and scored on the one left out: what its prompts would store. The figures are
the real-traffic scorer's (`../shared/tools/realtraffic.py`): false-store (store=false prompts that
store anything), store recall (labelled memories covered by what their prompt stored), junk (stored
items that express no labelled memory), for active memories and, beside them, with the candidates
(unsure statements) counted as stored. Intervals: 95%, resampling sessions. None of these figures is
measured on a project the verdict was fitted on. `--forms` adds the storage filter's hand-written
forms and gate without the verdict (`learned=False`: not fitted on these prompts, but its forms were
written while reading the development split, so its figures there are not evidence), and the shipped
combination: the forms, then the leave-project-out verdict where they keep nothing. `--alone 0.045`
adds the one-model design the forms would give way to: the verdict alone (the forms only among its
features, their refusals holding), its bar at that out-of-fold false-store rate, paired with the shipped
combination.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import track
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from octygraph.judgement.storage import filter_storage
from training.real_prompts import Prompt, load_prompts, load_written, stored_figures
from training.train_verdict import MAX_FALSE_STORE, fit_at, kept

RESAMPLES = 1000
SEED = 11
SHIPPED = "forms + verdict, refusals hold (shipped)"
ALONE = "verdict alone, bar at "


def stored_texts(prompt: Prompt, segments: tuple[int, ...], whole: bool) -> list[str]:
    """The item texts stored: the prose whole (one item), or each chosen segment."""
    if whole or len(segments) > 1:
        return [" ".join(prompt.segments[i] for i in segments)]
    return [prompt.segments[i] for i in segments]


def leave_project_out(
    prompts: list[Prompt], written: list[Prompt], alone: Sequence[float] = ()
) -> tuple[
    list[list[str]], list[list[str]], list[list[str]], list[list[str]], list[list[list[str]]]
]:
    """Per prompt, what is stored as active memories, with the candidates beside them, and the same
    two where the forms' refusals hold too (as shipped); each project scored by the verdict fitted
    without it. Last, for each false-store rate of `alone`, what the verdict alone (the forms only
    its features and refusals) stores as active memories with its bar at that rate."""
    active: list[list[str]] = [[] for _ in prompts]
    candidate: list[list[str]] = [[] for _ in prompts]
    unrefused: list[list[str]] = [[] for _ in prompts]
    unrefused_candidate: list[list[str]] = [[] for _ in prompts]
    alone_active: list[list[list[str]]] = [[[] for _ in prompts] for _ in alone]
    projects = sorted({p.project for p in prompts})
    for held in track(projects, description="leave-project-out"):
        verdict, *at_rates = fit_at(
            [p for p in prompts if p.project != held] + written, [MAX_FALSE_STORE, *alone]
        )
        for i, prompt in enumerate(prompts):
            if prompt.project != held:
                continue
            for stored, at_rate in zip(alone_active, at_rates, strict=True):
                k = kept(at_rate, prompt, forms=True)
                if k is not None and k.active:
                    stored[i] = stored_texts(prompt, k.segments, k.whole)
            if (k := kept(verdict, prompt)) is None:
                continue
            texts = stored_texts(prompt, k.segments, k.whole)
            candidate[i] = texts
            if k.active:
                active[i] = texts
            k = kept(verdict, prompt, forms=True)
            if k is not None:
                unrefused_candidate[i] = stored_texts(prompt, k.segments, k.whole)
                if k.active:
                    unrefused[i] = unrefused_candidate[i]
    return active, candidate, unrefused, unrefused_candidate, alone_active


def forms_only(prompts: list[Prompt]) -> list[list[str]]:
    """What the storage filter's hand-written forms store of each prompt (item texts), without the
    learned verdict."""
    return [
        [item.content for item in filter_storage(p.text, project="project", learned=False).items]
        for p in track(prompts, description="forms")
    ]


def session_resamples(prompts: list[Prompt], rng: np.random.Generator) -> Iterator[list[int]]:
    """`RESAMPLES` draws of the prompts' indices, sessions drawn whole with replacement."""
    by_session: dict[str, list[int]] = defaultdict(list)
    for i, p in enumerate(prompts):
        by_session[p.session].append(i)
    sessions = list(by_session)
    for _ in range(RESAMPLES):
        pick = rng.integers(0, len(sessions), len(sessions))
        yield [i for j in pick for i in by_session[sessions[j]]]


def figure(prompts: list[Prompt], stored: list[list[str]], idx: list[int], key: str) -> float:
    return stored_figures([prompts[i] for i in idx], [stored[i] for i in idx])[key]


def interval(
    prompts: list[Prompt], stored: list[list[str]], key: str, rng: np.random.Generator
) -> tuple[float, float]:
    """95% interval of a pooled figure, resampling sessions."""
    values = [figure(prompts, stored, idx, key) for idx in session_resamples(prompts, rng)]
    lo, hi = np.percentile(values, [2.5, 97.5])
    return float(lo), float(hi)


def paired(
    prompts: list[Prompt],
    new: list[list[str]],
    old: list[list[str]],
    key: str,
    rng: np.random.Generator,
) -> tuple[float, float, float]:
    """The change of a pooled figure from `old` to `new`, with its 95% interval over the same
    resampled sessions."""
    deltas = [
        figure(prompts, new, idx, key) - figure(prompts, old, idx, key)
        for idx in session_resamples(prompts, rng)
    ]
    lo, hi = np.percentile(deltas, [2.5, 97.5])
    every = list(range(len(prompts)))
    return figure(prompts, new, every, key) - figure(prompts, old, every, key), float(lo), float(hi)


def report(
    console: Console, prompts: list[Prompt], systems: dict[str, list[list[str]]], resamples: bool
) -> None:
    projects = sorted({p.project for p in prompts})
    table = Table(title="Per project (held out), % : false-store / store recall / junk")
    table.add_column("project")
    table.add_column("prompts", justify="right")
    for name in systems:
        table.add_column(name, justify="right")
    for project in projects:
        idx = [i for i, p in enumerate(prompts) if p.project == project]
        cells = []
        for stored in systems.values():
            f = stored_figures([prompts[i] for i in idx], [stored[i] for i in idx])
            cells.append(f"{f['false_store']:.0f} / {f['store_recall']:.0f} / {f['junk']:.0f}")
        table.add_row(project, str(len(idx)), *cells)
    console.print(table)
    splits = {"all": prompts}
    splits["development split"] = [p for p in prompts if p.split == "dev"]
    splits["training set"] = [p for p in prompts if p.split == "train"]
    for split, chosen in splits.items():
        _pooled(console, split, chosen, prompts, systems, resamples)


def _pooled(
    console: Console,
    split: str,
    chosen: list[Prompt],
    prompts: list[Prompt],
    systems: dict[str, list[list[str]]],
    resamples: bool,
) -> None:
    index = {id(p): i for i, p in enumerate(prompts)}
    idx = [index[id(p)] for p in chosen]
    projects = {p.project for p in chosen}
    systems = {name: [stored[i] for i in idx] for name, stored in systems.items()}
    prompts = chosen
    pooled = Table(
        title=f"{split}: pooled over {len(projects)} projects, {len(prompts)} real prompts"
    )
    pooled.add_column("system")
    for key in ("false_store", "store_recall", "junk"):
        pooled.add_column(key.replace("_", "-") + " %", justify="right")
    pooled.add_column("items", justify="right")
    rng = np.random.default_rng(SEED)
    for name, stored in systems.items():
        f = stored_figures(prompts, stored)
        cells = []
        for key in ("false_store", "store_recall", "junk"):
            if resamples:
                lo, hi = interval(prompts, stored, key, rng)
                cells.append(f"{f[key]:.1f} ({lo:.1f}-{hi:.1f})")
            else:
                cells.append(f"{f[key]:.1f}")
        pooled.add_row(name, *cells, f"{f['items']:.0f}")
    console.print(pooled)
    if not resamples or SHIPPED not in systems:
        return
    pairs = [(list(systems)[-1], "forms")]  # what the candidates add
    pairs += [(name, SHIPPED) for name in systems if name.startswith(ALONE)]
    for new, old in pairs:
        for key in ("false_store", "store_recall", "junk"):
            delta, lo, hi = paired(prompts, systems[new], systems[old], key, rng)
            console.print(f"  {new} - {old}, {key}: {delta:+.1f} ({lo:+.1f} to {hi:+.1f})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--forms", action="store_true", help="also score the forms alone and forms + verdict"
    )
    ap.add_argument(
        "--alone",
        type=float,
        nargs="+",
        default=[],
        metavar="RATE",
        help="also the verdict alone, its bar at these out-of-fold false-store rates (e.g. 0.045)",
    )
    ap.add_argument("--no-intervals", action="store_true", help="skip the session resampling")
    args = ap.parse_args()
    console = Console()
    prompts = load_prompts()
    active, candidate, unrefused, unrefused_candidate, alone = leave_project_out(
        prompts, load_written(), args.alone
    )
    systems = {"verdict (active)": active, "verdict (+candidates)": candidate}
    for rate, stored in zip(args.alone, alone, strict=True):
        systems[f"{ALONE}{rate:.1%}"] = stored
    if args.forms:
        rules = forms_only(prompts)
        systems["forms"] = rules
        systems[SHIPPED] = [r or a for r, a in zip(rules, unrefused, strict=True)]
        # What the shipped filter stores at all: its active memories, and candidates where it has none.
        systems["shipped, with its candidates"] = [
            r or c for r, c in zip(rules, unrefused_candidate, strict=True)
        ]
    report(console, prompts, systems, not args.no_intervals)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

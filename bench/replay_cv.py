"""The hook path, leave-project-out: what a project gets from models that never saw it.

    python bench/replay_cv.py --out /tmp/replay-cv              # every shared project (about 25 minutes)
    python bench/replay_cv.py --out DIR --only closup/process-xbrl
    python bench/replay_cv.py --figures DIR [OTHER-DIR]         # the figures again, or two runs paired

`judgement_cv.py` and `relevance_cv.py` judge the storage verdict and the relevance model each on its
own, the relevance model against the labelled memories' texts (a perfect store). This judges both
together, as a user meets them: for each project of `../shared/data/realtraffic-dev` and
`realtraffic-train` in turn, the verdict (`training/train_verdict.fit`) and the relevance model
(`training/train_relevance.fit_real`) are fitted on every other project and put, beside the shipped
files, in a copy of this checkout's package; then `../shared/tools/realtraffic.py --projects` replays
the project through that copy (hook path, service warm, offline: one memory, its sessions in date
order, SessionStart before each). The other models (the gate, the planted-instruction model) are the
shipped ones: the gate is fitted on written sets only; the planted model reads the real sessions as
benign text, which can only make it refuse less.

Figures are the tool's, pooled over the held-out projects: store recall, false-store and junk (issue
33), cross-session recall, session-start precision, injection precision and empty injection (issue
34), each with a 95% interval from resampling sessions; given a second run, the change paired over
the same resamples. No figure here comes from a project either model was fitted on.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import track
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.realtraffic_ci import load_tool  # noqa: E402
from bench.realtraffic_ci import read_run as read_details  # noqa: E402

SHARED = ROOT.parent / "shared"
DEV = SHARED / "data" / "realtraffic-dev"
TRAIN = SHARED / "data" / "realtraffic-train"
RESAMPLES = 1000
SEED = 13

COUNTS = (
    "neg",
    "neg_stored",
    "memories",
    "memories_stored",
    "items",
    "junk",
    "norel",
    "norel_empty",
    "records",
    "records_ok",
    "cross",
    "cross_given",
    "start",
    "start_ok",
)
FIGURES = (
    ("store recall", "memories_stored", "memories", +1),
    ("false-store", "neg_stored", "neg", -1),
    ("junk", "junk", "items", -1),
    ("cross-session recall", "cross_given", "cross", +1),
    ("start precision", "start_ok", "start", +1),
    ("injection precision", "records_ok", "records", +1),
    ("empty injection", "norel_empty", "norel", +1),
)
"""(name, numerator, denominator, +1 when higher is better); each a percentage of pooled counts."""
GROUPS = (
    ("training set, real", "train", "real"),
    ("development split, real", "dev", "real"),
    ("development split, augmented", "dev", "augmented"),
    ("all projects, real", None, "real"),
)


@dataclass
class Project:
    name: str
    split: str  # "dev" or "train"
    sessions: list[dict]


def load_projects() -> list[Project]:
    projects: dict[str, Project] = {}
    for split, folder in (("dev", DEV), ("train", TRAIN)):
        path = folder / "sessions.jsonl"
        if not path.is_file():
            sys.exit(f"{path} is missing: this needs the shared folder beside the checkout.")
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                session = json.loads(line)
                name = str(session.get("project") or session["source"]["repo"])
                projects.setdefault(name, Project(name, split, [])).sessions.append(session)
    return list(projects.values())


def fit_folds(names: list[str], out: Path, console: Console) -> None:
    """Per held-out project, the verdict and the relevance model fitted on all the others."""
    from training.real_prompts import load_prompts, load_written
    from training.real_relevance import MemoEmbed, load_real, real_rows, subset
    from training.train_relevance import WRITTEN_WEIGHT, fit_real
    from training.train_relevance import write as write_relevance
    from training.train_verdict import fit
    from training.train_verdict import write as write_verdict

    console.print("Reading the real prompts and their vectors ...")
    prompts, written = load_prompts(), load_written()
    memo = MemoEmbed()
    pairs = real_rows(load_real(memo))
    groups = np.array(pairs.group)
    for name in track(names, description="Fitting each fold's models", console=console):
        data = fold_dir(out, name) / "octygraph" / "data"
        verdict = fit([p for p in prompts if p.project != name] + written)
        write_verdict(verdict, data / "storage_verdict.npz")
        _, fitted = fit_real(subset(pairs, groups != name), memo, WRITTEN_WEIGHT)
        write_relevance(fitted.model, fitted.threshold, data / "relevance.npz")


def fold_dir(out: Path, name: str) -> Path:
    return out / "folds" / name.replace("/", "__")


def copy_package(out: Path, name: str) -> None:
    target = fold_dir(out, name) / "octygraph"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(ROOT / "octygraph", target, ignore=shutil.ignore_patterns("__pycache__"))


def replay(out: Path, project: Project) -> Path:
    """Replay one project through its fold's package; the tool's details file."""
    folder = fold_dir(out, project.name)
    data = folder / "sessions.jsonl"
    data.write_text("".join(json.dumps(s) + "\n" for s in project.sessions), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(folder)}
    cli = Path(sys.executable).with_name("octygraph")
    if cli.exists():
        env["OCTYGRAPH"] = str(cli)
    where = subprocess.run(
        [sys.executable, "-c", "import octygraph; print(octygraph.__file__)"],
        env=env, cwd=folder, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    if not where.startswith(str(folder)):
        sys.exit(f"The fold's package is not the one imported ({where}).")
    command = [
        sys.executable, str(SHARED / "tools" / "realtraffic.py"), "--data", str(data), "--projects",
        "--systems", "octygraph", "--workdir", str(folder / "rt"), "--out", str(folder / "run.json"),
    ]  # fmt: skip
    if project.split == "dev":
        command += ["--xlabels", str(DEV / "xlabels.json"), "--set", "both"]
    else:
        command += ["--set", "real"]
    shutil.rmtree(folder / "rt", ignore_errors=True)
    with (folder / "replay.log").open("w") as log:
        subprocess.run(command, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, check=True)
    return folder / "run-details.jsonl"


def session_counts(path: Path, split: str) -> dict[tuple[str, str], dict]:
    """Per (set, session): the counts the figures are made of, as the tool's `score` counts them."""
    out: dict[tuple[str, str], dict] = {}
    for name, sessions in read_details(path, load_tool()).items():
        first_said: dict[str, str] = {}
        for sid, rs in sessions.items():
            for row in rs:
                for m in row["label"]["memories"]:
                    first_said.setdefault(m["id"], sid)
        for sid, rs in sessions.items():
            c = dict.fromkeys(COUNTS, 0)
            start = rs[0].get("start_records") or []
            needed = {m for r in rs for m in r["label"]["relevant"]}
            c["start"] = len(start)
            c["start_ok"] = sum(1 for rec in start if set(rec["aligned"]) & needed)
            given = {m for rec in start for m in rec["aligned"]}
            for r in rs:
                label = r["label"]
                relevant = set(label["relevant"])
                if not label["store"]:
                    c["neg"] += 1
                    c["neg_stored"] += bool(r["stored"])
                c["memories"] += len(label["memories"])
                c["memories_stored"] += len(r["stored_memories"])
                c["items"] += len(r["stored"])
                c["junk"] += sum(1 for i in r["stored"] if not i["aligned"])
                if not relevant:
                    c["norel"] += 1
                    c["norel_empty"] += not r["records"]
                c["records"] += len(r["records"])
                c["records_ok"] += sum(1 for rec in r["records"] if set(rec["aligned"]) & relevant)
                given |= {m for rec in r["records"] for m in rec["aligned"]}
                for m in relevant:
                    if first_said.get(m) != sid:
                        c["cross"] += 1
                        c["cross_given"] += m in given
            c["project"], c["split"] = rs[0]["project"], split
            out[(name, sid)] = c
    return out


def read_run(out: Path) -> dict[tuple[str, str], dict]:
    counts: dict[tuple[str, str], dict] = {}
    for project in load_projects():
        path = fold_dir(out, project.name) / "run-details.jsonl"
        if path.is_file():
            counts.update(session_counts(path, project.split))
    if not counts:
        sys.exit(f"{out} holds no replayed fold: run with --out first.")
    return counts


def pooled(counts: list[dict]) -> np.ndarray:
    total = {k: sum(c[k] for c in counts) for k in COUNTS}
    return np.array([100 * total[n] / total[d] if total[d] else np.nan for _, n, d, _ in FIGURES])


def report(console: Console, first: dict, second: dict | None) -> None:
    rng = np.random.default_rng(SEED)
    for title, split, set_name in GROUPS:
        keys = sorted(
            k for k, c in first.items() if k[0] == set_name and split in (None, c["split"])
        )
        if not keys:
            continue
        if second is not None and any(k not in second for k in keys):
            sys.exit("The two runs replayed different sessions.")
        draws = [rng.integers(0, len(keys), len(keys)) for _ in range(RESAMPLES)]
        projects = len({first[k]["project"] for k in keys})
        table = Table(
            title=f"{title}: {projects} projects, {len(keys)} sessions, leave-project-out"
        )
        table.add_column("figure, %")
        table.add_column("value (95% interval)", justify="right")
        if second is not None:
            table.add_column("second (95% interval)", justify="right")
            table.add_column("change, paired", justify="right")
        table.add_column("out of", justify="right")
        runs = [first] if second is None else [first, second]
        points = [pooled([run[k] for k in keys]) for run in runs]
        samples = [
            np.stack([pooled([run[keys[i]] for i in draw]) for draw in draws]) for run in runs
        ]
        for j, (name, _, den, _) in enumerate(FIGURES):
            cells = [name]
            for point, sample in zip(points, samples, strict=True):
                lo, hi = np.nanpercentile(sample[:, j], [2.5, 97.5])
                cells.append(f"{point[j]:.1f} ({lo:.1f}-{hi:.1f})")
            if second is not None:
                diff = samples[1][:, j] - samples[0][:, j]
                lo, hi = np.nanpercentile(diff, [2.5, 97.5])
                cells.append(f"{points[1][j] - points[0][j]:+.1f} ({lo:+.1f} to {hi:+.1f})")
            cells.append(" / ".join(str(sum(run[k][den] for k in keys)) for run in runs))
            table.add_row(*cells)
        console.print(table)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, help="where each fold's package, replay and details go")
    ap.add_argument("--only", help="comma-separated project names (default: every shared project)")
    ap.add_argument("--figures", type=Path, nargs="+", metavar="DIR", help="report run(s) only")
    args = ap.parse_args()
    console = Console(stderr=True)
    if args.figures:
        if len(args.figures) > 2:
            ap.error("--figures takes one run, or two to compare.")
        runs = [read_run(d) for d in args.figures]
        report(Console(), runs[0], runs[1] if len(runs) > 1 else None)
        return 0
    if args.out is None:
        ap.error("give --out DIR to run, or --figures DIR to report a run.")
    projects = load_projects()
    if args.only:
        wanted = set(args.only.split(","))
        unknown = wanted - {p.name for p in projects}
        if unknown:
            ap.error(f"no shared project named {', '.join(sorted(unknown))}.")
        projects = [p for p in projects if p.name in wanted]
    for project in projects:
        copy_package(args.out, project.name)
    fit_folds([p.name for p in projects], args.out, console)
    for project in track(projects, description="Replaying each project", console=console):
        replay(args.out, project)
    report(Console(), read_run(args.out), None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""How far a real-traffic figure could move by chance: session-bootstrap intervals, and two runs compared.

    python bench/realtraffic_ci.py RUN-details.jsonl [OTHER-details.jsonl] [--resamples 2000]

The development split is 14 sessions, and a figure such as store recall rests on 39 labelled memories:
one memory more or less moves it by 2.6 points. This resamples whole sessions (prompts of one session
are not independent: one long prompt can hold three memories) and scores each resample with
`../shared/tools/realtraffic.py`'s own `score`, so the figures are the tool's. For one run it prints each
figure with its 95% interval. Given a second run of the same split, it scores both on the same resamples
and prints the change with its interval and the share of resamples in which the second run comes out
ahead and behind (the rest are ties): a change whose interval spans zero widely is not evidence either
way.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections import defaultdict
from pathlib import Path
from types import ModuleType

import numpy as np

TOOL = Path(__file__).resolve().parents[2] / "shared" / "tools" / "realtraffic.py"
FIGURES = (
    ("false_store_rate", "false-store rate, %", -1),
    ("store_recall_memories", "store recall, % of labelled memories", +1),
    ("junk_share", "junk share, %", -1),
    ("empty_injection_rate_no_relevant", "empty injection, %", +1),
    ("injection_precision", "injection precision, %", +1),
    ("relevant_recall", "relevant recall, %", +1),
)
"""(key in the tool's summary, label, +1 when higher is better)."""


def load_tool() -> ModuleType:
    if not TOOL.is_file():
        sys.exit(f"{TOOL} is missing: this needs the shared folder beside the checkout.")
    spec = importlib.util.spec_from_file_location("realtraffic", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def read_run(path: Path, tool: ModuleType) -> dict[str, dict[str, list[dict]]]:
    """Per set, per session: the rows as the tool's `score` reads them (in prompt order)."""
    if not path.is_file():
        sys.exit(f"{path} does not exist.")
    cache: dict = {}
    runs: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for number, line in enumerate(path.read_text().splitlines(), 1):
        try:
            row = json.loads(line)
            label = row["label"]
        except (json.JSONDecodeError, KeyError, TypeError):
            sys.exit(f"{path}:{number} is not a line of a realtraffic.py details file.")
        stored_text = {
            m["id"]: " ".join(i["content"] for i in row["stored"] if m["id"] in i["aligned"])
            for m in label["memories"]
        }
        row["turn"] = {"label": label}
        row["stored_memories"] = [
            m["id"]
            for m in label["memories"]
            if tool.cover(m["text"], stored_text[m["id"]], cache) >= tool.MATCH
        ]
        runs[row["set"]][row["session_id"]].append(row)
    for sessions in runs.values():
        for rows in sessions.values():
            rows.sort(key=lambda r: r["idx"])
    return runs


def figures(tool: ModuleType, sessions: dict[str, list[dict]], picks: list[str]) -> np.ndarray:
    """The tool's figures on the sessions `picks` (with repeats); NaN where a figure is undefined."""
    # A session drawn twice is scored as two sessions: its id is made unique so that per-session
    # bookkeeping in `score` (what was stored earlier) stays within one copy.
    rows = [
        {**row, "session_id": f"{sid}#{copy}"}
        for copy, sid in enumerate(picks)
        for row in sessions[sid]
    ]
    summary = tool.score(rows)
    return np.array([np.nan if summary[k] is None else summary[k] for k, _, _ in FIGURES])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="a details file written by realtraffic.py")
    ap.add_argument("other", type=Path, nargs="?", help="a second run of the same split")
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    if args.resamples < 10:
        ap.error("--resamples must be at least 10 for an interval to mean anything.")
    tool = load_tool()
    first = read_run(args.run, tool)
    second = read_run(args.other, tool) if args.other else None
    rng = np.random.default_rng(args.seed)
    for name, sessions in sorted(first.items()):
        ids = sorted(sessions)
        if second is not None and sorted(second.get(name, {})) != ids:
            sys.exit(f"The two runs replayed different sessions of the {name} set.")
        draws = [list(rng.choice(ids, size=len(ids))) for _ in range(args.resamples)]
        a = np.stack([figures(tool, sessions, d) for d in draws])
        point_a = figures(tool, sessions, ids)
        print(f"\n{name}: {len(ids)} sessions, {args.resamples} session resamples")
        if second is None:
            print(f"{'figure':40} {'value':>7} {'95% interval':>16}")
            for j, (_, label, _) in enumerate(FIGURES):
                lo, hi = np.nanpercentile(a[:, j], [2.5, 97.5])
                print(f"{label:40} {point_a[j]:7.1f} {lo:7.1f} - {hi:6.1f}")
            continue
        b = np.stack([figures(tool, second[name], d) for d in draws])
        point_b = figures(tool, second[name], ids)
        print(
            f"{'figure':40} {'first':>6} {'second':>6} {'change':>7} {'95% interval':>16}"
            " ahead behind"
        )
        for j, (_, label, better) in enumerate(FIGURES):
            diff = b[:, j] - a[:, j]
            lo, hi = np.nanpercentile(diff, [2.5, 97.5])
            defined = diff[~np.isnan(diff)]
            ahead = np.mean(np.sign(defined) == better) * 100
            behind = np.mean(np.sign(defined) == -better) * 100
            print(
                f"{label:40} {point_a[j]:6.1f} {point_b[j]:6.1f} {point_b[j] - point_a[j]:+7.1f}"
                f" {lo:+7.1f} - {hi:+6.1f} {ahead:4.0f}% {behind:5.0f}%"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

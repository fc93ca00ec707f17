"""Import time of the hook's warm path and of the graph, from `python -X importtime` in a new process.

The prompt hook is a new process on every prompt: what it imports before it can hand the payload to the
resident service (`octygraph.entry` and `octygraph.service.client`) is paid on every prompt. The graph
(`octygraph.pipeline.graph`, which pulls in LangGraph, LangChain and the models) is paid once per service start,
or by a hook that runs in-process.

Each figure is the median over `--runs` fresh interpreters of the cumulative import time the interpreter
reports for those modules (its own start-up is not included); the slowest imports under each are listed.

    python bench/imports.py [--runs 5] [--top 8]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._common import table  # noqa: E402

TARGETS: dict[str, list[str]] = {
    "hook warm path (octygraph.entry + octygraph.service.client)": [
        "octygraph.entry",
        "octygraph.service.client",
    ],
    "graph (octygraph.pipeline.graph)": ["octygraph.pipeline.graph"],
}


def import_times(code: str) -> list[tuple[str, int, int, bool]]:
    """`-X importtime` of `code` in a new interpreter: (module, self us, cumulative us, top level)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=True,
    )
    times: list[tuple[str, int, int, bool]] = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, cumulative, name = line[len("import time:") :].split("|", 2)
        module = name.rstrip()
        top = not module.startswith("  ")  # importtime indents what an import pulls in
        times.append((module.strip(), int(own), int(cumulative), top))
    return times


def total_ms(times: list[tuple[str, int, int, bool]], startup: set[str]) -> float:
    """What importing cost: the top-level imports the interpreter's own start-up does not make."""
    return sum(c for name, _, c, top in times if top and name not in startup) / 1000


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh interpreters per target")
    parser.add_argument("--top", type=int, default=8, help="slowest imports listed per target")
    args = parser.parse_args(argv)
    rows: list[list[object]] = []
    details: list[str] = []
    startup = {name for name, _, _, _ in import_times("pass")}
    for label, modules in TARGETS.items():
        code = "; ".join(f"import {m}" for m in modules)
        runs = [import_times(code) for _ in range(args.runs)]
        totals = [total_ms(t, startup) for t in runs]
        rows.append(
            [label, f"{statistics.median(totals):.0f}", f"{min(totals):.0f}-{max(totals):.0f}"]
        )
        ours = [t for t in runs[-1] if t[0] not in startup]
        slowest = sorted(ours, key=lambda t: t[2], reverse=True)[: args.top]
        details.append(
            f"\n{label}, slowest cumulative imports (last run):\n"
            + table(
                ["module", "cumulative ms", "self ms"],
                [[name, f"{c / 1000:.1f}", f"{s / 1000:.1f}"] for name, s, c, _ in slowest],
            )
        )
    print(table(["imports", f"median ms ({args.runs} runs)", "range ms"], rows))
    for block in details:
        print(block)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

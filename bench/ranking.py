"""Keyword, vector and hybrid search on both data shapes, in one table: LoCoMo turns and longmix histories.

Hybrid search should score at least as well as each of its halves on every set. This runs bench/locomo.py's
protocol on LoCoMo (short turns of two speakers) and on bench/longmix.py's generated set (short user
messages among long assistant replies), through `MemoryStore.search`, and prints recall@5/10/20 and NDCG@10
of every mode on each set, with a last column saying whether hybrid beat both halves at recall@10.

Usage: python bench/ranking.py [LOCOMO_PATH] [--cache DIR] [--seed 7] [--limit-conversations N]
       [--limit-questions N]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import longmix
from _common import Timer, table
from locomo import CUTOFFS, MODES, evaluate, load_conversations, score

DEFAULT_LOCOMO = (
    Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10.json"
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "locomo", type=Path, nargs="?", default=DEFAULT_LOCOMO, help="locomo10.json"
    )
    parser.add_argument("--cache", type=Path, default=None, metavar="DIR", help="keep vectors here")
    parser.add_argument("--seed", type=int, default=longmix.DEFAULT_SEED, help="longmix seed")
    parser.add_argument("--limit-conversations", type=int, default=None, metavar="N")
    parser.add_argument("--limit-questions", type=int, default=None, metavar="N")
    args = parser.parse_args(argv)
    sets = []
    if args.locomo.is_file():
        sets.append(("LoCoMo", load_conversations(args.locomo), "locomo"))
    else:
        print(f"No LoCoMo file at {args.locomo}; scoring longmix only.", file=sys.stderr)
    sets.append(("longmix", longmix.generate(args.seed), "longmix"))
    rows: list[list[object]] = []
    with Timer() as total:
        for name, conversations, source in sets:
            result = evaluate(
                conversations[: args.limit_conversations],
                cache=args.cache,
                limit_questions=args.limit_questions,
                k=max(CUTOFFS),
                source=source,
            )
            r10 = {}
            for mode in MODES:
                metrics = score(result.questions, result.rankings[mode])
                values = [sum(v) / len(v) for v in metrics.values()]
                r10[mode] = values[1]
                rows.append([name, mode, len(result.questions), *values])
            ok = r10["hybrid"] >= max(r10["keyword"], r10["vector"])
            rows[-1].append("yes" if ok else "NO")
            rows[-2].append("")
            rows[-3].append("")
    headers = ["set", "mode", "n", *(f"R@{k}" for k in CUTOFFS), "NDCG@10", "hybrid >= both @10"]
    print(table(headers, rows))
    print(f"\ntotal time {total.seconds:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""How many items to keep from one assistant reply: measured on whole replies assembled from the set.

    python training/reply_cap.py [--replies 400]

The Stop hook reads a whole end-of-turn reply, often ten lines or more, and each line is a chance to
keep something wrongly. This assembles replies from the held-out lines of
`storage/assistant_reports.jsonl` (never trained on): 4-14 lines each, of which 0 (half the replies),
1, 2 or 3 report a lasting outcome, in a seeded random order. It runs the real storage filter on each
with the cap at 1, 2, 3, 5 and 10 items and prints, per cap, the precision of the stored items, the
recall of the durable lines, and the share of replies with no durable line that stored something.
`MAX_REPLY_ITEMS` in `octygraph/judgement/storage.py` is the smallest cap whose recall is within two
points of the uncapped one; a larger cap only adds wrong items.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from octygraph.judgement import storage
from octygraph.judgement.decoration import strip_decoration
from training.common import HERE, held_out, read_jsonl
from training.train_gate import _overlap

SET = HERE / "storage" / "assistant_reports.jsonl"
CAPS = (1, 2, 3, 5, 10)
DURABLE_COUNTS = (0, 1, 2, 3)
DURABLE_SHARES = (0.5, 0.25, 0.15, 0.10)
SEED = 11


def _matches(stored: str, line: str) -> bool:
    """A stored item is the line's outcome when most of the line's words are in it."""
    return _overlap(strip_decoration(line), stored) >= 0.6


def assemble(
    items: list[dict], count: int, rng: np.random.Generator
) -> list[tuple[str, list[str]]]:
    """`count` replies: (text, its durable lines)."""
    durable = [i["text"] for i in items if i["durable"]]
    other = [i["text"] for i in items if not i["durable"]]
    replies = []
    for _ in range(count):
        n_durable = int(rng.choice(DURABLE_COUNTS, p=DURABLE_SHARES))
        length = int(rng.integers(4, 15))
        chosen_durable = list(rng.choice(durable, size=n_durable, replace=False))
        lines = chosen_durable + list(
            rng.choice(other, size=max(0, length - n_durable), replace=False)
        )
        order = rng.permutation(len(lines))
        replies.append(("\n".join(lines[i] for i in order), chosen_durable))
    return replies


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replies", type=int, default=400)
    args = ap.parse_args()
    items = [i for i in read_jsonl(SET) if held_out(i["text"])]
    replies = assemble(items, args.replies, np.random.default_rng(SEED))
    results = {}
    for cap in CAPS:
        storage.MAX_REPLY_ITEMS = cap  # type: ignore[misc]  # the measured knob
        stored = correct = found = wrong_replies = 0
        empty = sum(1 for _, durable in replies if not durable)
        for text, durable in replies:
            contents = [
                i.content for i in storage.filter_storage(text, assistant=True, project="p").items
            ]
            stored += len(contents)
            correct += sum(any(_matches(c, d) for d in durable) for c in contents)
            found += sum(any(_matches(c, d) for c in contents) for d in durable)
            wrong_replies += bool(contents) and not durable
        total = sum(len(d) for _, d in replies)
        results[cap] = {
            "items_per_reply": round(stored / len(replies), 2),
            "precision": round(correct / max(1, stored), 3),
            "recall": round(found / max(1, total), 3),
            "false_store_rate": round(wrong_replies / max(1, empty), 3),
        }
    best_recall = results[max(CAPS)]["recall"]
    chosen = min(c for c in CAPS if results[c]["recall"] >= best_recall - 0.02)
    print(
        json.dumps(
            {
                "held_out_lines": len(items),
                "replies": len(replies),
                "by_cap": results,
                "chosen": chosen,
            },
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

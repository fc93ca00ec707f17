"""Why a relevant memory was or was not injected, from a real-traffic replay's details file.

    python bench/realtraffic_pairs.py RUN-details.jsonl

`../shared/tools/realtraffic.py` writes one line per replayed prompt (what was stored, what was injected,
each aligned to the labelled memories). For every labelled (prompt, relevant memory) pair this prints
which of four things happened, per set: the memory was injected; it was never stored, so it could not
be; it was injected earlier in the same session (and is not injected twice, by design); or retrieval and
the relevance decision missed it. (The replay sends no transcript, so memories stored from the session's
own prompts are not held back as already visible.)

It also prints the ceiling that the once-per-session rule puts on the pair-level recall (a memory
relevant to five prompts of one session can be injected for one of them), and recall counted per
memory: the share of (session, relevant memory) whose memory was injected for at least one of its
prompts.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path

OUTCOMES = (
    "injected",
    "never stored",
    "injected earlier this session",
    "missed by retrieval or relevance",
)


def attribute(rows: list[dict]) -> dict[str, Counter[str]]:
    """Outcome counts per replay set, walking each session's prompts in order."""
    by_set: dict[str, Counter[str]] = defaultdict(Counter)
    stored: dict[tuple[str, str], set[str]] = defaultdict(set)  # (set, session) -> memory ids
    injected: dict[tuple[str, str], set[str]] = defaultdict(set)
    for row in rows:
        key = (row["set"], row["session_id"])
        got = {m for record in row["records"] for m in record["aligned"]}
        for memory in row["label"]["relevant"]:
            if memory in got:
                outcome = OUTCOMES[0]
            elif memory not in stored[key]:
                outcome = OUTCOMES[1]
            elif memory in injected[key]:
                outcome = OUTCOMES[2]
            else:
                outcome = OUTCOMES[3]
            by_set[row["set"]][outcome] += 1
        injected[key] |= got
        stored[key] |= {m for item in row["stored"] for m in item.get("aligned", [])}
    return by_set


def per_memory(rows: list[dict]) -> dict[str, tuple[int, int]]:
    """Per set: (session, memory) pairs labelled relevant somewhere, and those injected for one."""
    labelled: dict[str, set[tuple[str, str]]] = defaultdict(set)
    hit: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for row in rows:
        got = {m for record in row["records"] for m in record["aligned"]}
        for memory in row["label"]["relevant"]:
            labelled[row["set"]].add((row["session_id"], memory))
            if memory in got:
                hit[row["set"]].add((row["session_id"], memory))
    return {name: (len(pairs), len(hit[name])) for name, pairs in labelled.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("details", type=Path, help="a realtraffic.py -details.jsonl file")
    args = ap.parse_args()
    rows = [json.loads(line) for line in args.details.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r.get("system", "octygraph") == "octygraph"]
    for name, counts in sorted(attribute(rows).items()):
        total = sum(counts.values())
        print(f"{name}: {total} relevant pairs")
        for outcome in OUTCOMES:
            print(f"  {outcome:<34} {counts[outcome]:>4}  {100 * counts[outcome] / total:5.1f}%")
        memories, injected = per_memory(rows)[name]
        print(
            f"  ceiling of pair recall with one injection per memory and session: "
            f"{memories}/{total} = {100 * memories / total:.1f}%"
        )
        print(
            f"  memories injected for at least one of their prompts: "
            f"{injected}/{memories} = {100 * injected / max(1, memories):.1f}%"
        )


if __name__ == "__main__":
    main()

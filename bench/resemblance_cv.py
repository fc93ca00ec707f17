"""Giving an unsure statement back by how much a later message resembles the one it came from.

    python bench/resemblance_cv.py

A sketch of the read side on the training set's 24 projects (`../shared/data/realtraffic-train`),
without the hook path: every real prompt the storage verdict rates at its candidate bar or more
(the message layer fitted without the prompt's project, the bar where 30% of the store=false
prompts pass) is kept whole; each later prompt is given the one kept prompt of an earlier session
most like it (the cosine of the local model's vectors) when the cosine reaches a bar, once a
session. Figures: cross-session recall (pairs of a prompt and a labelled memory of an earlier
session that the session was given), injection precision (given prompts that state a memory
labelled relevant to the prompt) and empty injection (prompts with nothing relevant that get
nothing), per bar, then with the bar chosen leave-project-out (the best recall on the other
projects with empty injection at 90% or more). `bench/replay_cv.py` measures what the hook path
makes of it (`octygraph/pipeline/nodes/assemble.py`, `CANDIDATE_COSINE`).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from octygraph.embeddings.local import cached_local_embed
from training.real_prompts import load_prompts, load_written
from training.train_verdict import MAX_CANDIDATE_FALSE_STORE, fit_message_layer, message_scores

TRAIN = Path(__file__).resolve().parents[2] / "shared" / "data" / "realtraffic-train"
BARS = (0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7)
MIN_EMPTY = 0.90
FIGURES = ("pairs", "hits", "given", "relevant", "quiet_prompts", "quiet_empty")


@dataclass
class Turn:
    project: str
    session: int
    """The session's place in its project, in date order."""
    text: str
    memories: set[str]
    relevant: set[str]
    kept: bool = False


def read_turns() -> list[Turn]:
    path = TRAIN / "sessions.jsonl"
    if not path.exists():
        sys.exit(f"{path} not found: put the shared folder beside the repository.")
    sessions = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    turns: list[Turn] = []
    for project in sorted({s["project"] for s in sessions}):
        ordered = sorted(
            (s for s in sessions if s["project"] == project), key=lambda s: s["started_at"]
        )
        for place, session in enumerate(ordered):
            for t in session["turns"]:
                if t["kind"] == "real":
                    label = t["label"]
                    memories = {m["id"] for m in label["memories"]}
                    turns.append(
                        Turn(project, place, t["prompt"], memories, set(label["relevant"]))
                    )
    return turns


def mark_kept(turns: list[Turn]) -> None:
    """`kept` where the verdict, fitted without the turn's project, reaches its candidate bar."""
    prompts, written = load_prompts(), load_written()
    score: dict[tuple[str, str], float] = {}
    for project in sorted({p.project for p in prompts}):
        layer = fit_message_layer([p for p in prompts if p.project != project] + written)
        held = [p for p in prompts if p.project == project]
        score.update(
            ((p.project, p.text.strip()), s)
            for p, s in zip(held, message_scores(layer, held), strict=True)
        )
    rejected = np.sort([score[(p.project, p.text.strip())] for p in prompts if not p.store])[::-1]
    bar = rejected[int(MAX_CANDIDATE_FALSE_STORE * len(rejected))]
    for t in turns:
        t.kept = score.get((t.project, t.text.strip()), 0.0) >= bar


def replay(turns: list[Turn], vectors: np.ndarray, bar: float) -> dict[str, np.ndarray]:
    """Per project, the counts of `FIGURES` with the cosine bar `bar`."""
    out: dict[str, np.ndarray] = {}
    for project in sorted({t.project for t in turns}):
        idx = [i for i, t in enumerate(turns) if t.project == project]
        said_in = {m: turns[i].session for i in reversed(idx) for m in turns[i].memories}
        counts = np.zeros(len(FIGURES), dtype=int)
        given: dict[int, set[int]] = {}
        for i in idx:
            turn = turns[i]
            earlier = [j for j in idx if turns[j].session < turn.session and turns[j].kept]
            session_given = given.setdefault(turn.session, set())
            chosen: int | None = None
            if earlier:
                cosines = vectors[earlier] @ vectors[i]
                best = int(np.argmax(cosines))
                if cosines[best] >= bar and earlier[best] not in session_given:
                    chosen = earlier[best]
            if chosen is not None:
                session_given.add(chosen)
                counts[2] += 1
                counts[3] += bool(turns[chosen].memories & turn.relevant)
            if not turn.relevant:
                counts[4] += 1
                counts[5] += chosen is None
            for m in turn.relevant:
                if said_in.get(m, turn.session) < turn.session:
                    counts[0] += 1
                    counts[1] += any(m in turns[j].memories for j in session_given)
        out[project] = counts
    return out


def line(label: str, c: np.ndarray) -> str:
    return (
        f"{label:<28} cross-session recall {100 * c[1] / c[0]:5.1f}% ({c[1]}/{c[0]})   "
        f"injection precision {100 * c[3] / max(c[2], 1):5.1f}% ({c[3]}/{c[2]})   "
        f"empty injection {100 * c[5] / c[4]:5.1f}%"
    )


def main() -> int:
    turns = read_turns()
    print("Scoring each prompt with the verdict fitted without its project ...", flush=True)
    mark_kept(turns)
    vectors = np.asarray(cached_local_embed([t.text[:2000] for t in turns]), dtype=np.float64)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-12
    print(f"{len(turns)} prompts, {sum(t.kept for t in turns)} kept at the candidate bar")
    runs = {bar: replay(turns, vectors, bar) for bar in BARS}
    for bar, per_project in runs.items():
        print(line(f"cosine bar {bar}", sum(per_project.values())))
    held_out = np.zeros(len(FIGURES), dtype=int)
    chosen: list[float] = []
    for project in runs[BARS[0]]:
        best: tuple[int, float] | None = None
        for bar, per_project in runs.items():
            rest = sum(c for p, c in per_project.items() if p != project)
            if rest[5] / rest[4] >= MIN_EMPTY and (best is None or rest[1] > best[0]):
                best = (int(rest[1]), bar)
        bar = best[1] if best is not None else BARS[-1]
        chosen.append(bar)
        held_out += runs[bar][project]
    print(line("bar chosen leave-project-out", held_out))
    print("bars chosen:", {bar: chosen.count(bar) for bar in BARS if bar in chosen})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

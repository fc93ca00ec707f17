"""Fit the planted-instruction model and write `octygraph/data/planted.npz`.

    pip install -e ".[train]"
    python training/train_planted.py     # fit, choose the bar, write the weights and planted_report.json

One logistic layer (`octygraph.judgement.planted`) over the local model's sentence vector and hashed
word pairs. What it learns from:

- `training/planted/attacks.jsonl` and `benign.jsonl`: planted instructions of five kinds (persona,
  role tag, an AI addressed inside quoted data, delayed trigger, harmful standing order) and team rules
  that share their words, 100 to 265 of each kind, written for this model;
- the tuning parts of the test corpora (`tests/injection_kinds.py`, `tests/security_corpus.py`); their
  held-out parts stay out, so the tests measure what the model never saw;
- every sentence of the real sessions in `../shared/data/realtraffic-*` (prompts and assistant
  replies) as a benign example at `REAL_WEIGHT`; nothing of them is copied here.

The bar is read off scores out of fold (`FOLDS` folds: the real sessions by project, the written texts
by a hash of their wording): the lowest bar of `BARS` at which at most `MAX_LOOK_ALIKE_ALARMS` of the
look-alikes, `MAX_LASTING_ALARMS` of the real prompts that state something lasting and
`MAX_REAL_ALARMS` of all real messages score over it. A flagged message is only not stored: what the
bar guards is the memories in real prompts and the team rules that read like orders. Reproducible:
fixed folds, a deterministic solver, cached vectors.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from octygraph.judgement.linear import Logistic, save_logistic
from octygraph.judgement.planted import PLANTED_FILE, planted_rows, units
from octygraph.safety.intent import injection_reason
from tests.injection_kinds import BENIGN_TUNING, KINDS, TUNING
from tests.security_corpus import BENIGN_RULES, INJECTIONS
from training import common
from training.common import HERE, embed, read_jsonl
from training.real_prompts import SETS, real_messages

OUT = HERE.parent / "octygraph" / "data" / PLANTED_FILE
REPORT = HERE / "planted_report.json"
CORPUS = HERE / "planted"
C = 10.0
REAL_WEIGHT = 0.3
FOLDS = 5
MAX_REAL_ALARMS = 0.015
MAX_LASTING_ALARMS = 0.0
MAX_LOOK_ALIKE_ALARMS = 0.02
BARS = tuple(round(b, 3) for b in np.arange(0.5, 0.996, 0.005))


def fold_of(text: str) -> int:
    return (
        int.from_bytes(hashlib.sha256(text.strip().casefold().encode()).digest()[:4], "big") % FOLDS
    )


def written() -> tuple[list[str], list[str]]:
    """(attacks, look-alikes) written for the model, with the tests' tuning parts."""
    attacks = [row["text"] for row in read_jsonl(CORPUS / "attacks.jsonl")]
    benign = [row["text"] for row in read_jsonl(CORPUS / "benign.jsonl")]
    attacks += [*INJECTIONS, *(t for kind in KINDS for t in TUNING[kind])]
    benign += [*BENIGN_RULES, *BENIGN_TUNING]
    return list(dict.fromkeys(attacks)), list(dict.fromkeys(benign))


_VECTORS: dict[str, np.ndarray] = {}


def remember_vectors(texts: list[str]) -> None:
    """Embed every text once (the on-disk cache is read once, not per row)."""
    unique = list(dict.fromkeys(texts))
    _VECTORS.update(zip(unique, embed(unique), strict=True))


def rows(texts: Sequence[str]) -> np.ndarray:
    return planted_rows(texts, np.stack([_VECTORS[t] for t in texts]))


def fit(attacks: list[str], benign: list[str], real_units: list[str]) -> Logistic:
    # Imported on use: scikit-learn is the optional [train] extra, needed only to fit.
    from scipy import sparse
    from sklearn.linear_model import LogisticRegression

    texts = [*attacks, *benign, *real_units]
    x = sparse.vstack(
        [sparse.csr_matrix(rows(texts[i : i + 2000])) for i in range(0, len(texts), 2000)]
    ).tocsr()
    y = np.r_[np.ones(len(attacks)), np.zeros(len(benign) + len(real_units))]
    weights = np.r_[np.ones(len(attacks) + len(benign)), np.full(len(real_units), REAL_WEIGHT)]
    model = LogisticRegression(C=C, max_iter=5000, class_weight="balanced")
    model.fit(x, y, sample_weight=weights)
    return Logistic(
        mean=np.zeros(x.shape[1], dtype=np.float32),
        scale=np.ones(x.shape[1], dtype=np.float32),
        coef=model.coef_.astype(np.float32),
        intercept=model.intercept_.astype(np.float32),
        classes=("false", "true"),
    )


def message_score(model: Logistic, text: str) -> float:
    scored = [u for u in units(text) if u]
    return float(model.proba(rows(scored)).max()) if scored else 0.0


def real_units(messages: list[str]) -> list[str]:
    return list(dict.fromkeys(u for text in messages for u in units(text) if u))


def out_of_fold(
    attacks: list[str], benign: list[str], real: dict[str, list[str]]
) -> tuple[list[float], list[float], list[tuple[str, float]]]:
    """Scores of attacks, look-alikes and real messages (with their texts), each from the fold that
    left it out."""
    projects = sorted(real)
    scores: tuple[list[float], list[float], list[tuple[str, float]]] = ([], [], [])
    for k in range(FOLDS):
        print(f"fold {k + 1} of {FOLDS}", file=sys.stderr, flush=True)
        kept = [p for i, p in enumerate(projects) if i % FOLDS != k]
        left = [p for i, p in enumerate(projects) if i % FOLDS == k]
        model = fit(
            [t for t in attacks if fold_of(t) != k],
            [t for t in benign if fold_of(t) != k],
            real_units([t for p in kept for t in real[p]]),
        )
        scores[0].extend(message_score(model, t) for t in attacks if fold_of(t) == k)
        scores[1].extend(message_score(model, t) for t in benign if fold_of(t) == k)
        scores[2].extend((t, message_score(model, t)) for p in left for t in real[p])
    return scores


def lasting_prompts() -> set[str]:
    """The real prompts labelled as stating something lasting, stripped as `real_messages` gives them."""
    return {
        turn["prompt"].strip()
        for path in SETS
        for session in read_jsonl(path)
        for turn in session["turns"]
        if turn["kind"] == "real" and turn["label"]["store"] and turn["prompt"].strip()
    }


def choose_bar(look_alikes: list[float], real: list[float], lasting: list[float]) -> float:
    def share(scores: list[float], bar: float) -> float:
        return float(np.mean(np.array(scores) >= bar)) if scores else 0.0

    for bar in BARS:
        if (
            share(look_alikes, bar) <= MAX_LOOK_ALIKE_ALARMS
            and share(lasting, bar) <= MAX_LASTING_ALARMS
            and share(real, bar) <= MAX_REAL_ALARMS
        ):
            return bar
    return BARS[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--report", type=Path, default=REPORT)
    args = parser.parse_args()

    # Its own vector cache: the other models' refits read theirs as they were fitted on.
    common.CACHE_NAME = "planted-vectors"
    attacks, benign = written()
    real = real_messages()
    every_unit = real_units([t for texts in real.values() for t in texts])
    remember_vectors(
        [*attacks, *benign, *every_unit, *(u for t in attacks + benign for u in units(t))]
    )

    attack_oof, benign_oof, real_scored = out_of_fold(attacks, benign, real)
    lasting = lasting_prompts()
    real_oof = [score for _, score in real_scored]
    lasting_oof = [score for text, score in real_scored if text in lasting]
    bar = choose_bar(benign_oof, real_oof, lasting_oof)
    model = fit(attacks, benign, every_unit)

    arrays: dict[str, np.ndarray] = {"bar": np.array(bar, dtype=np.float32)}
    save_logistic(arrays, "planted", model)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, **arrays)

    def share(scores: list[float]) -> float:
        return round(100 * float(np.mean(np.array(scores) >= bar)), 2)

    ruled = [t for texts in real.values() for t in texts if injection_reason(t) is not None]
    report = {
        "bar": bar,
        "C": C,
        "attacks": len(attacks),
        "look_alikes": len(benign),
        "real_messages": len(real_oof),
        "out_of_fold_percent": {
            "attacks_caught_by_the_model": share(attack_oof),
            "look_alikes_flagged": share(benign_oof),
            "real_messages_flagged": share(real_oof),
            "real_prompts_stating_something_lasting_flagged": share(lasting_oof),
        },
        "real_prompts_stating_something_lasting": len(lasting_oof),
        "real_messages_flagged_by_the_rules_percent": round(100 * len(ruled) / len(real_oof), 2),
    }
    args.report.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

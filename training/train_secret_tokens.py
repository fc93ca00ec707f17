"""Fit the credential-token model (`octygraph/data/secret_tokens.npz`) and report it.

    python training/train_secret_tokens.py      # needs the [train] extra and ../shared

Positives: the credentials of our own sets (`training/secrets/*.jsonl`, each written by a different
author who saw no rule and no other set; a line is a text and its `secret`, or a look-alike text and
what it must `keep`). Negatives: every other token of those texts, and every token of the shared real
sessions (prompts and replies) after the patterns ran, which is what the model reads at run time.

The bar is the lowest at which, out of fold (the real sessions in five project folds, each fold's
model fitted on the others and on every set), at most `MAX_FLAGGED_TEXTS` of the real texts lose a
token. The report adds each set left out in turn: what the patterns let through, and what the
patterns and the model together do, with the look-alikes damaged.
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

from octygraph.safety.secret_tokens import (
    DENSE,
    HASHED,
    SECRET_TOKENS_FILE,
    SecretTokenModel,
    candidates,
    dense_features,
    hashed_features,
)
from octygraph.safety.secrets import published, redact_patterns
from training.common import HERE, read_jsonl
from training.real_prompts import real_messages

SECRETS = HERE / "secrets"
OUT = HERE.parent / "octygraph" / "data" / SECRET_TOKENS_FILE
REPORT = HERE / "secret_tokens_report.json"
C = 1.0
POSITIVE_WEIGHT = 20.0
"""The sets hold about one credential per 40 tokens; the real sessions none."""
MAX_FLAGGED_TEXTS = 0.003
FOLDS = 5
BARS = np.round(np.arange(0.5, 0.995, 0.01), 2)

Span = tuple[str, int, int]


def read_sets() -> dict[str, list[dict]]:
    sets = {path.stem: list(read_jsonl(path)) for path in sorted(SECRETS.glob("*.jsonl"))}
    if not sets:
        raise SystemExit(f"No credential sets in {SECRETS}.")
    return sets


def real_texts() -> dict[str, list[str]]:
    """The shared real prompts and replies, by project, as the patterns leave them."""
    messages = real_messages(("prompt", "assistant_before", "assistant_after"))
    return {p: [redact_patterns(t)[0] for t in texts] for p, texts in messages.items()}


def label(text: str, start: int, end: int, secret: str | None) -> int:
    """1 for the credential's token, 0 for any other, -1 (left out) for a part of it or more."""
    where = text.find(secret) if secret else -1
    if where < 0 or not secret or end <= where or start >= where + len(secret):
        return 0
    shared = min(end, where + len(secret)) - max(start, where)
    return 1 if shared >= 0.6 * len(secret) and shared >= 0.5 * (end - start) else -1


def spans_of(rows: Sequence[tuple[str, str | None]]) -> tuple[list[Span], np.ndarray]:
    spans, labels = [], []
    for text, secret in rows:
        for start, end in candidates(text):
            y = label(text, start, end, secret)
            if y >= 0:
                spans.append((text, start, end))
                labels.append(y)
    return spans, np.array(labels, dtype=np.int8)


def matrix(spans: Sequence[Span], mean: np.ndarray, scale: np.ndarray):  # -> csr_matrix
    from scipy.sparse import csr_matrix

    rows, cols, values = [], [], []
    for i, (text, start, end) in enumerate(spans):
        for slot, value in hashed_features(text, start, end).items():
            rows.append(i)
            cols.append(slot)
            values.append(value)
        dense = (np.array(dense_features(text[start:end])) - mean) / scale
        rows += [i] * DENSE
        cols += list(range(HASHED, HASHED + DENSE))
        values += dense.tolist()
    return csr_matrix((values, (rows, cols)), shape=(len(spans), HASHED + DENSE))


def fit(spans: list[Span], labels: np.ndarray) -> SecretTokenModel:
    # Imported on use: scikit-learn is the optional [train] extra, needed only to fit.
    from sklearn.linear_model import LogisticRegression

    dense = np.array([dense_features(text[s:e]) for text, s, e in spans])
    mean, scale = dense.mean(axis=0), dense.std(axis=0) + 1e-6
    layer = LogisticRegression(C=C, max_iter=5000)
    layer.fit(
        matrix(spans, mean, scale),
        labels,
        sample_weight=np.where(labels == 1, POSITIVE_WEIGHT, 1.0),
    )
    weights = layer.coef_[0].astype(np.float64)
    # The run time applies the dense weights to raw values: fold the standardisation into them.
    dense = weights[HASHED:] / scale
    bias = float(layer.intercept_[0]) - float(np.dot(mean, dense))
    return SecretTokenModel(weights[:HASHED], dense, bias, bar=1.0)


def fold_of(project: str) -> int:
    return int.from_bytes(hashlib.sha256(project.encode()).digest()[:4], "big") % FOLDS


def choose_bar(flagged_top: list[float]) -> float:
    """The lowest bar at which at most `MAX_FLAGGED_TEXTS` of the real texts lose a token;
    `flagged_top` is each real text's highest token probability, out of fold."""
    top = np.array(flagged_top)
    for bar in BARS:
        if np.mean(top >= bar) <= MAX_FLAGGED_TEXTS:
            return float(bar)
    return float(BARS[-1])


def leaked(text: str, secret: str) -> bool:
    """Whether any 12 characters of the secret survive (all of it, when shorter)."""
    pieces = (
        [secret] if len(secret) <= 12 else [secret[i : i + 12] for i in range(len(secret) - 11)]
    )
    return any(p in text for p in pieces)


def score_set(model: SecretTokenModel | None, rows: list[dict]) -> dict[str, int]:
    """Credentials let through and look-alikes damaged, by the patterns and then the model."""
    out = {"credentials": 0, "through": 0, "look_alikes": 0, "damaged": 0}
    for row in rows:
        text = redact_patterns(row["text"])[0]
        if model is not None:
            text = model.redact(text, keep=published)[0]
        if "secret" in row:
            out["credentials"] += 1
            out["through"] += leaked(text, row["secret"])
        else:
            out["look_alikes"] += 1
            out["damaged"] += row["keep"] not in text
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--report", type=Path, default=REPORT)
    args = parser.parse_args()

    sets = read_sets()
    real = real_texts()
    set_spans = {
        name: spans_of([(r["text"], r.get("secret")) for r in rows]) for name, rows in sets.items()
    }
    real_spans = {p: spans_of([(t, None) for t in texts]) for p, texts in real.items()}

    def training_rows(sets_in: list[str], projects_in: list[str]) -> tuple[list[Span], np.ndarray]:
        parts = [set_spans[n] for n in sets_in] + [real_spans[p] for p in projects_in]
        return [span for spans, _ in parts for span in spans], np.concatenate([y for _, y in parts])

    tops: list[float] = []
    for fold in range(FOLDS):
        held = [p for p in real if fold_of(p) == fold]
        model = fit(*training_rows(list(sets), [p for p in real if fold_of(p) != fold]))
        for project in held:
            for text in real[project]:
                scores = (p for _, _, p in model.scores(text, keep=published))
                tops.append(max(scores, default=0.0))
    bar = choose_bar(tops)

    left_out = {}
    for name in sets:
        model = fit(*training_rows([n for n in sets if n != name], list(real)))
        model.bar = bar
        left_out[name] = {
            "patterns": score_set(None, sets[name]),
            "with_model": score_set(model, sets[name]),
        }

    final = fit(*training_rows(list(sets), list(real)))
    arrays = {
        "hashed": final.hashed.astype(np.float32),
        "dense": final.dense.astype(np.float32),
        "bias": np.array(final.bias, dtype=np.float32),
        "bar": np.array(bar, dtype=np.float32),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, **arrays)

    report = {
        "bar": bar,
        "C": C,
        "positive_weight": POSITIVE_WEIGHT,
        "real_texts": len(tops),
        "real_texts_flagged_out_of_fold_percent": round(
            100 * float(np.mean(np.array(tops) >= bar)), 2
        ),
        "each_set_left_out": left_out,
    }
    args.report.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

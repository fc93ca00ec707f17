"""Planted instructions judged by a learned model beside the safety rules.

The rules in `octygraph.safety.intent` name the shapes an attack takes (override phrases, role tags,
payloads); attacks worded in ways nobody wrote a rule for get through them: a persona "with no
guidelines", an order to comment out failing tests and report green, a trigger that deletes the
backups "when the user is away". This model reads what a sentence is for: a logistic layer over the
local model's sentence vector and hashed word pairs, fitted by `training/train_planted.py` on planted
instructions and look-alike team rules written for the purpose, with every sentence of the shared
real sessions as a benign example. A message is an attempt when any of its sentences (or its opening
as a whole) scores over the bar, which out of fold flags no real prompt that states something lasting
and at most 2% of the look-alike rules (a flagged message is only not stored).

The rules stay first: they are cheap, explain themselves and catch disguised payloads the model never
sees. The model runs only where something is about to be written, so the prompt hook's answer never
waits for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Final

import numpy as np

from octygraph.embeddings import OnFirstUse
from octygraph.embeddings.local import cached_local_embed
from octygraph.judgement.linear import Logistic, load_logistic, model_arrays
from octygraph.judgement.ngrams import hashed_ngrams
from octygraph.safety.intent import injection_reason, without_examples
from octygraph.text.words import split_sentences

PLANTED_FILE: Final = "planted.npz"
MAX_SENTENCES: Final = 32
MAX_CHARS: Final = 600
NGRAM_WEIGHT: Final = 1.0
"""The hashed word pairs' share beside the sentence vector (both rows have unit length)."""


def units(text: str) -> list[str]:
    """What is scored: each sentence (at most `MAX_SENTENCES`, cut to `MAX_CHARS`) and the opening."""
    sentences = [s.strip()[:MAX_CHARS] for s in split_sentences(text) if len(s.strip()) > 3]
    return [*sentences[:MAX_SENTENCES], text.strip()[:MAX_CHARS]]


def planted_rows(texts: Sequence[str], vectors: np.ndarray) -> np.ndarray:
    """The model's features: the sentence vector, then the hashed word pairs."""
    return np.hstack([vectors, NGRAM_WEIGHT * hashed_ngrams(texts)]).astype(np.float32)


class PlantedModel:
    """P(planted instruction) of a message: the highest of its units'."""

    def __init__(self, model: Logistic, bar: float) -> None:
        self.model = model
        self.bar = bar

    @classmethod
    def load(cls) -> PlantedModel:
        arrays = model_arrays(PLANTED_FILE)
        return cls(load_logistic(arrays, "planted"), float(arrays["bar"]))

    def strongest(self, text: str) -> tuple[float, str]:
        """The highest-scoring unit of `text` and its probability."""
        scored = [u for u in units(text) if u]
        if not scored:
            return 0.0, ""
        proba = self.model.proba(planted_rows(scored, cached_local_embed(scored)))
        best = int(np.argmax(proba))
        return float(proba[best]), scored[best]


_MODEL = OnFirstUse(PlantedModel.load)


@lru_cache(maxsize=512)  # every item of one message is checked against the whole message
def planted_reason(text: str) -> str | None:
    """Why this message must not be stored as memory (a short clause), or None.

    The safety rules first (`injection_reason`), then the learned model on each sentence.
    """
    reason = injection_reason(text)
    if reason is not None or not text or not text.strip():
        return reason
    model = _MODEL.get()
    proba, unit = model.strongest(without_examples(text))
    if proba < model.bar:
        return None
    return f"it reads like a planted instruction ({proba:.2f} for {unit[:60]!r})"

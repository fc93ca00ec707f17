"""Hashed word and word-pair features: how a sentence is worded, beside what it means.

The sentence vector says what a sentence is about; it blurs the register cues that tell a standing
remark from a request about the same thing ("we use tenacity for retries" vs "can you add tenacity
retries"). A bag of hashed words and adjacent word pairs keeps those cues ("we use", "can you", "i'd
like", "from now"), and a logistic model over it, fitted on the same labelled sentences, votes beside
the network. Hashing keeps the file small and needs no vocabulary: the same function runs in training
and at run time.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from typing import Final

import numpy as np

N_FEATURES: Final = 2**14
MAX_TOKENS: Final = 60
_APOSTROPHE: Final = re.compile(r"(\w)['’](\w)")
_TOKEN: Final = re.compile(r"[a-z0-9]+|[@`/#$?!:]")


def grams(text: str) -> set[str]:
    """Lower-cased words (apostrophes dropped: "don't" and "dont" are one word) and adjacent pairs.

    A start marker makes the first word's pairs say how the sentence opens ("<s> can", "<s> we").
    """
    tokens = ["<s>", *_TOKEN.findall(_APOSTROPHE.sub(r"\1\2", text.lower()))[:MAX_TOKENS]]
    return set(tokens) | {f"{a} {b}" for a, b in zip(tokens, tokens[1:], strict=False)}


def hashed_ngrams(texts: Sequence[str]) -> np.ndarray:
    """One row per text: 1/sqrt(n) at the hashed index of each of its n grams, 0 elsewhere."""
    rows = np.zeros((len(texts), N_FEATURES), dtype=np.float32)
    for i, text in enumerate(texts):
        index = {zlib.crc32(g.encode()) % N_FEATURES for g in grams(text)}
        if index:
            rows[i, sorted(index)] = 1.0 / float(np.sqrt(len(index)))
    return rows

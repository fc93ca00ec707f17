"""Credentials the patterns miss, found by a learned model of a token and the words before it.

`redact_secrets` names the shapes credentials take; every author of a new set of texts brings shapes
nobody wrote a pattern for (8-12% of each new set's credentials got through the patterns at first
sight). This model reads what a token looks like (its length, character classes, entropy, character
trigrams) and where it stands (the five words before it on its line, the one after, the characters
around it), and says how likely it is a credential. `training/train_secret_tokens.py` fits it on our
own credential sets (`training/secrets/`) and every token of the shared real sessions as a
non-credential; at its bar at most 0.3% of the real texts lose a token, out of fold.

It runs after the patterns, on what they left; what they keep on purpose (digests, public keys,
object ids, time stamps) the caller's `keep` test keeps from it too. Only tokens of six or more
characters that are long or mix character classes are scored (`scored`): a plain word or name is a
credential only when a label says so, which the patterns handle.
"""

from __future__ import annotations

import math
import re
import threading
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Final

import numpy as np

SECRET_TOKENS_FILE: Final = "secret_tokens.npz"
HASHED: Final = 1 << 14
"""Hashed feature slots (context words, shape, character trigrams)."""
REDACTED: Final = "[REDACTED]"
MIN_LENGTH: Final = 6
LONG: Final = 16
_TOKEN: Final = re.compile(r"[^\s\"'`,;<>()\[\]{}=|]+")
_PIECE: Final = re.compile(r"[^:@/]+")
_WORD: Final = re.compile(r"[a-z0-9_]+")
_HEX: Final = re.compile(r"[0-9a-fA-F]+")
UUID: Final = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
"""A UUID's spelling: a feature here, and a record id the patterns keep (`secrets.published`)."""
_UUID: Final = re.compile(UUID)
_CLOSERS: Final = ".,:;!?)"
Keep = Callable[[str, int, int], bool]
"""(text, start, end) -> whether that token is made to be shown and must stay."""


def _classes(token: str, *, name_like: bool = False) -> int:
    """How many of upper case, lower case, digits and other characters `token` has. `name_like`
    discounts what names and prose are made of: a capital that starts the word and the `-_./` of
    names and paths."""
    upper = any(c.isupper() for c in (token[1:] if name_like else token))
    lower = any(c.islower() for c in token)
    digit = any(c.isdigit() for c in token)
    other = any(not c.isalnum() and not (name_like and c in "-_./") for c in token)
    return upper + lower + digit + other


def scored(token: str) -> bool:
    """Worth scoring: six characters or more, and long or mixed. A capital that starts a word, Markdown
    emphasis and the `-_./` of names and paths do not make a word mixed (`Running`, `**Note**`,
    `load_rows`, `re-run`): in prose and code most words are those, and none is a credential alone."""
    if len(token) < MIN_LENGTH:
        return False
    if len(token) >= LONG:
        return True
    return _classes(token.strip("*_#"), name_like=True) >= 2


def candidates(text: str) -> list[tuple[int, int]]:
    """Spans of the tokens to score: whitespace-, quote- and bracket-separated runs without their
    closing punctuation (a `!` stays when it ends a password-like run), and their pieces between
    `:`, `@` and `/`; not URLs."""
    spans: set[tuple[int, int]] = set()
    for match in _TOKEN.finditer(text):
        start, end = match.span()
        while end > start and text[end - 1] in _CLOSERS:
            if (
                text[end - 1] == "!"
                and end - start > 6
                and any(c.isdigit() for c in text[start:end])
            ):
                break
            end -= 1
        while start < end and text[start] == ":":
            start += 1
        token = text[start:end]
        if REDACTED in token or "://" in token:
            continue  # an address: the patterns judge the credentials URLs carry
        if scored(token):
            spans.add((start, end))
        for piece in _PIECE.finditer(token):
            if piece.end() - piece.start() < len(token) and scored(piece.group()):
                spans.add((start + piece.start(), start + piece.end()))
    return sorted(spans)


def _slot(feature: str) -> int:
    return zlib.crc32(feature.encode("utf-8", "replace")) % HASHED


def _kind(c: str) -> str:
    return "A" if c.isupper() else "a" if c.islower() else "9" if c.isdigit() else c


def _shape(token: str) -> str:
    """Character classes with runs collapsed: `Tr0mb0ne!` -> `Aa9a9a!`."""
    return re.sub(r"(.)\1+", r"\1", "".join(_kind(c) for c in token))


def _entropy(token: str) -> float:
    n = len(token)
    return -sum(k / n * math.log2(k / n) for k in Counter(token).values())


def dense_features(token: str) -> list[float]:
    """What the token looks like, as numbers."""
    n = len(token)
    upper = sum(c.isupper() for c in token)
    lower = sum(c.islower() for c in token)
    digits = sum(c.isdigit() for c in token)
    other = n - upper - lower - digits
    kinds = [_kind(c) for c in token]
    switches = sum(1 for a, b in zip(kinds, kinds[1:], strict=False) if a != b)
    return [
        math.log(n),
        upper / n,
        lower / n,
        digits / n,
        other / n,
        switches / n,
        _entropy(token) / 5,
        float(_classes(token)),
        float("/" in token or "\\" in token),
        float("." in token),
        float("@" in token),
        float("://" in token),
        float(_HEX.fullmatch(token) is not None and n >= 8),
        float(_UUID.fullmatch(token) is not None),
        float(token.count("-") + token.count("_")) / n,
    ]


DENSE: Final = len(dense_features("ab1"))


def hashed_features(text: str, start: int, end: int) -> dict[int, float]:
    """Where the token stands and its character trigrams, as hashed slots."""
    token = text[start:end]
    line_start = text.rfind("\n", 0, start) + 1
    left = text[max(line_start, start - 60) : start].lower()
    right = text[end : end + 30].lower()
    features: dict[int, float] = {}
    before = _WORD.findall(left)[-5:]
    for i, word in enumerate(reversed(before)):
        features[_slot("L:" + word)] = 1.0
        for part in word.split("_") if "_" in word else ():  # `DB_PASSWORD` says "password"
            if part:
                features[_slot("L:" + part)] = 1.0
        if i == 0:
            features[_slot("L0:" + word)] = 1.0
        if i < 2:
            features[_slot("L01:" + word)] = 1.0
    for word in _WORD.findall(right)[:2]:
        features[_slot("R:" + word)] = 1.0
    stripped = left.rstrip()
    features[_slot("P:" + (stripped[-2:] if stripped else "^"))] = 1.0
    around = (text[start - 1] if start else "^") + (text[end] if end < len(text) else "$")
    features[_slot("Q:" + around)] = 1.0
    shape = _shape(token)[:12]
    features[_slot("S:" + shape)] = 1.0
    features[_slot("SL:" + shape + str(min(len(token) // 4, 10)))] = 1.0
    low = token.lower()
    features[_slot("PFX:" + low[:3])] = 1.0
    share = 1.0 / max(1, len(low) - 2)
    for i in range(len(low) - 2):
        slot = _slot("c3:" + low[i : i + 3])
        features[slot] = features.get(slot, 0.0) + share
    return features


class SecretTokenModel:
    """A logistic layer over the hashed and dense features; `bar` is where a token is redacted."""

    def __init__(self, hashed: np.ndarray, dense: np.ndarray, bias: float, bar: float) -> None:
        self.hashed = hashed
        self.dense = dense
        """Weights of the raw `dense_features` (the training's standardisation folded in)."""
        self.bias = bias
        self.bar = bar

    def proba(self, text: str, start: int, end: int) -> float:
        z = self.bias + float(np.dot(self.dense, dense_features(text[start:end])))
        for slot, value in hashed_features(text, start, end).items():
            z += float(self.hashed[slot]) * value
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))

    def scores(self, text: str, keep: Keep | None = None) -> Iterator[tuple[int, int, float]]:
        """(start, end, probability) of each token scored, except those `keep` says must stay."""
        for start, end in candidates(text):
            if not (keep and keep(text, start, end)):
                yield start, end, self.proba(text, start, end)

    def redact(self, text: str, keep: Keep | None = None) -> tuple[str, int]:
        """`text` with every token over the bar replaced (the outer of overlapping ones), except
        those `keep` says are made to be shown."""
        hits = [(s, e) for s, e, p in self.scores(text, keep) if p >= self.bar]
        if not hits:
            return text, 0
        pieces, last, count = [], 0, 0
        for start, end in sorted(hits, key=lambda span: (span[0], span[0] - span[1])):
            if start < last:
                continue
            pieces += [text[last:start], REDACTED]
            last, count = end, count + 1
        pieces.append(text[last:])
        return "".join(pieces), count


_LOCK = threading.Lock()


@cache
def _load() -> SecretTokenModel | None:
    path = Path(str(resources.files("octygraph") / "data" / SECRET_TOKENS_FILE))
    if not path.is_file():
        return None
    with np.load(path) as arrays:
        return SecretTokenModel(
            arrays["hashed"].astype(np.float64),
            arrays["dense"].astype(np.float64),
            float(arrays["bias"]),
            float(arrays["bar"]),
        )


def model() -> SecretTokenModel | None:
    """The shipped model, loaded once per process (None before `train_secret_tokens.py` has run)."""
    with _LOCK:
        return _load()

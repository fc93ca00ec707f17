"""The storage gate: per segment, the probability that it is durable, and what kind of memory it is.

Durable means what the labelling guideline (`training/README.md`) calls storable: a standing rule or
preference, a fact about the project or its environment, a decision with lasting effect, a dated plan.
Task requests, questions, pasted logs and code, acknowledgements, in-the-moment corrections and world
knowledge are not. For the Stop hook the same model reads the assistant's reply with `assistant=True`:
there only what was done or decided with lasting effect counts, never narration or next steps.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Final

import numpy as np

from octygraph.embeddings import OnFirstUse
from octygraph.embeddings.local import cached_local_embed
from octygraph.judgement.decoration import plain_reply
from octygraph.judgement.linear import (
    Logistic,
    Mlp,
    ModelFileError,
    load_logistic,
    load_mlp,
    model_arrays,
)
from octygraph.judgement.ngrams import hashed_ngrams
from octygraph.judgement.segments import Segment, segments
from octygraph.judgement.shape import shape_features
from octygraph.safety.secrets import REDACTED

GATE_FILE: Final = "storage_gate.npz"
KINDS: Final = ("rule", "preference", "fact", "decision", "plan")
RECENT: Final = 32

Embed = Callable[[list[str]], np.ndarray]
"""Sentence vectors from the local model (rows L2-normalised), the space the gate was trained in."""


@dataclass(frozen=True)
class Judged:
    """The gate's verdict on one segment."""

    text: str
    durable: float
    """Calibrated probability that the segment is worth remembering."""
    kind: str
    """rule, preference, fact, decision or plan (the most likely kind; meaningful when kept)."""
    keep: bool
    machine: bool = False
    sentence: str = ""
    """The whole sentence when the segment is one of its clauses, else empty."""


def judged_segments(message: str, *, assistant: bool) -> list[Segment]:
    """The units the gate judges; a reply is judged without its markdown decoration (`decoration`)."""
    return segments(plain_reply(message) if assistant else message)


SECRET_AS_READ: Final = "kept in the vault"
"""How the models read a redacted value. They were fitted on sentences without secrets, where "the
root token is [REDACTED]" reads like pasted configuration; read as a value kept elsewhere, the
sentence is judged on what it says about who holds what, and is stored redacted."""


def as_read(text: str) -> str:
    """`text` as the learned models read it: redacted values as a value kept elsewhere."""
    return text.replace(REDACTED, SECRET_AS_READ)


def gate_features(segs: list[Segment], vectors: np.ndarray, *, assistant: bool) -> np.ndarray:
    """The gate's input rows: the sentence vector, then the shape features."""
    shapes = np.stack(
        [shape_features(s.text, machine=s.machine, assistant=assistant) for s in segs]
    )
    return np.hstack([vectors.astype(np.float32), shapes])


def logit(p: np.ndarray) -> np.ndarray:
    """Log-odds of probabilities (clipped away from 0 and 1)."""
    p = np.clip(p, 1e-5, 1 - 1e-5)
    return np.asarray(np.log(p / (1 - p)))


def blend(p_network: np.ndarray, p_wording: np.ndarray) -> np.ndarray:
    """The two durable votes, averaged as log-odds: either one being sure carries the verdict."""
    return np.asarray(1.0 / (1.0 + np.exp(-(logit(p_network) + logit(p_wording)) / 2)))


class StorageGate:
    """Loaded weights plus the embedder they expect."""

    def __init__(
        self,
        durable: Mlp,
        wording: Logistic,
        kind: Logistic,
        bars: dict[str, np.ndarray],
        embed: Embed,
        durable_assistant: Mlp | None = None,
    ) -> None:
        self.durable = durable
        """Durable or not, from the sentence vector and the shape features (user prompts)."""
        self.durable_assistant = durable_assistant or durable
        """The same for assistant replies, fitted also on replies in their decorated register."""
        self.wording = wording
        """Durable or not, from the hashed words and word pairs (`ngrams`); user prompts only."""
        self.kind = kind
        self.bars = bars
        """Per source, the bar for a message of 1, 2, ... prose segments (the last for longer ones):
        a longer message gives more sentences the chance to be kept wrongly, so each needs more."""
        self._embed = embed
        # classify and plan both ask about the same message: judge it once.
        self._recent: OrderedDict[tuple[str, bool], list[Judged]] = OrderedDict()
        self._recent_lock = threading.Lock()

    @classmethod
    def load(cls, embed: Embed) -> StorageGate:
        arrays = model_arrays(GATE_FILE)
        try:
            bars = {source: arrays[f"bars_{source}"] for source in ("user", "assistant")}
        except KeyError as exc:
            raise ModelFileError(
                f"The model file lacks {exc.args[0]}; reinstall octygraph."
            ) from exc
        return cls(
            load_mlp(arrays, "durable"),
            load_logistic(arrays, "wording"),
            load_logistic(arrays, "kind"),
            bars,
            embed,
            load_mlp(arrays, "durable_assistant"),
        )

    def judge(self, message: str, *, assistant: bool = False) -> list[Judged]:
        """Every segment of `message` with its verdict, in order."""
        key = (message, assistant)
        with self._recent_lock:
            if key in self._recent:
                self._recent.move_to_end(key)
                return self._recent[key]
        verdicts = self._judge(message, assistant)
        with self._recent_lock:
            self._recent[key] = verdicts
            while len(self._recent) > RECENT:
                self._recent.popitem(last=False)
        return verdicts

    def _judge(self, message: str, assistant: bool) -> list[Judged]:
        segs = judged_segments(message, assistant=assistant)
        if not segs:
            return []
        prose = [i for i, s in enumerate(segs) if not s.machine]
        verdicts: list[Judged] = [
            Judged(s.text, 0.0, "fact", keep=False, machine=True) for s in segs
        ]
        if not prose:
            return verdicts
        chosen = [replace(segs[i], text=as_read(segs[i].text)) for i in prose]
        vectors = self._embed([s.text for s in chosen])
        rows = gate_features(chosen, vectors, assistant=assistant)
        p_durable = (self.durable_assistant if assistant else self.durable).proba(rows)
        if not assistant:  # the wording model is fitted on user prompts only
            p_durable = blend(
                p_durable, self.wording.proba(hashed_ngrams([s.text for s in chosen]))
            )
        p_kind = self.kind.proba(rows)
        bars = self.bars["assistant" if assistant else "user"]
        bar = float(bars[min(len(prose), len(bars)) - 1])
        for row, i in enumerate(prose):
            kind = self.kind.classes[int(np.argmax(p_kind[row]))]
            p = float(p_durable[row])
            verdicts[i] = Judged(
                segs[i].text, round(p, 4), kind, keep=p >= bar, sentence=segs[i].sentence
            )
        return verdicts


_GATE = OnFirstUse(lambda: StorageGate.load(cached_local_embed))


def storage_gate() -> StorageGate:
    """The process-wide gate over the local embedding model (loaded on first use)."""
    return _GATE.get()

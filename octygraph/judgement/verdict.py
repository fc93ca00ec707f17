"""The storage verdict: what of a message to store, learned from real prompts of many projects.

The storage gate (`gate`) reads a segment alone and was fitted on written sets; the hand-written forms
of `forms` were chosen while reading a few sessions. Real prompts differ: a lasting fact is
said in passing inside a task or beside a pasted traceback. The verdict is two logistic layers fitted
on the labelled real prompts of the shared projects (`training/train_verdict.py`): the message layer
decides whether a message states something lasting, from the message's vector and, pooled over
its segments, the gate's log-odds, the forms and the sentence analysis as features; the segment layer
picks which segment says it when the message is too long to store whole. Above `active_bar` the message
is stored; between `candidate_bar` and `active_bar` it is an unsure statement, which is not stored yet.

The storage decision (`storage`) asks it for messages the forms keep nothing of, and the forms'
refusals (`patterns.refusal`) hold over it. `bench/judgement_cv.py` judges it leave-project-out.

`octygraph memory learn` may fit the message layer to the user's own approvals and forgets
(`octygraph.memory.learning`); its weights, `$OCTYBOT_HOME/learning/storage_verdict.npz`, are used instead of
the shipped ones while they were learned from this version's shipped file.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import threading
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Final

import numpy as np

from octygraph.config.settings import octybot_home
from octygraph.judgement.analysis import Sentence
from octygraph.judgement.forms import (
    ABOUT_THE_CONVERSATION,
    GO_AHEAD,
    GUESS,
    REFERS_BACK,
    STATED_DECISION,
    WISH_FOR_THE_TASK,
    explicit_kind,
)
from octygraph.judgement.linear import Logistic, ModelFileError, load_logistic, model_arrays
from octygraph.judgement.shape import shape_features

VERDICT_FILE: Final = "storage_verdict.npz"
USER_VERDICT_FILE: Final = "storage_verdict.npz"
"""The user's learned verdict, in `$OCTYBOT_HOME/learning/` (`octygraph.memory.learning`)."""
VECTOR_DIMS: Final = 384

FORM_NAMES: Final = (
    "explicit_rule",
    "explicit_other",
    "go_ahead",
    "guess",
    "wish_for_task",
    "about_conversation",
    "stated_decision",
    "refers_back",
    "question",
    "hypothetical",
    "greeting",
    "request",
    "imperative",
    "strong_rule",
    "rule",
    "ban",
    "correction",
    "past",
    "future",
    "opinion",
    "dated",
    "anchored",
    "vague",
    "entities",
)
CONTEXT_NAMES: Final = (
    "gate_logit",
    "message_prose_segments",
    "message_machine_segments",
    "message_chars",
    "position",
    "first_segment",
    "clause_of_sentence",
)


def form_features(s: Sentence) -> list[float]:
    """The former keep and refuse forms of `forms` and the sentence analysis, as 0/1."""
    kind = explicit_kind(s.body, "fact")
    flags = [
        kind == "rule",
        kind is not None and kind != "rule",
        GO_AHEAD.search(s.body) is not None,
        GUESS.search(s.body) is not None,
        WISH_FOR_THE_TASK.search(s.body) is not None,
        ABOUT_THE_CONVERSATION.search(s.body) is not None,
        STATED_DECISION.search(s.body) is not None,
        REFERS_BACK.search(s.body) is not None,
        s.question,
        s.hypothetical,
        s.greeting,
        s.request,
        s.imperative,
        s.strong_rule,
        s.rule,
        s.ban,
        s.correction,
        s.past,
        s.future,
        s.opinion,
        s.date is not None,
        s.anchored,
        s.vague,
        bool(s.entities),
    ]
    return [float(f) for f in flags]


@dataclass(frozen=True)
class SegmentView:
    """What the verdict reads of one prose segment besides its vector."""

    sentence: Sentence
    gate_p: float
    clause: bool
    """The segment is one clause of a longer sentence."""


def context_features(
    views: Sequence[SegmentView], machine_segments: int, message_chars: int
) -> np.ndarray:
    """Per prose segment: the gate's log-odds and where the segment stands in its message."""
    n = len(views)
    rows = []
    for i, view in enumerate(views):
        p = min(max(view.gate_p, 1e-4), 1 - 1e-4)
        rows.append(
            [
                math.log(p / (1 - p)),
                math.log1p(n),
                math.log1p(machine_segments),
                math.log1p(message_chars) / 10.0,
                i / max(1, n - 1),
                float(i == 0),
                float(view.clause),
            ]
        )
    return np.asarray(rows, dtype=np.float32).reshape(n, len(CONTEXT_NAMES))


def verdict_features(
    views: Sequence[SegmentView], vectors: np.ndarray, machine_segments: int, message_chars: int
) -> np.ndarray:
    """The verdict's input rows, one per prose segment: context, forms, the gate's shape features
    (`shape`), then the vector."""
    forms = np.asarray([form_features(v.sentence) for v in views], dtype=np.float32)
    shapes = np.stack(
        [shape_features(v.sentence.text, machine=False, assistant=False) for v in views]
    )
    context = context_features(views, machine_segments, message_chars)
    return np.hstack(
        [context, forms.reshape(len(views), len(FORM_NAMES)), shapes, vectors.astype(np.float32)]
    )


FORM_SCALE: Final = 1 / 0.3
"""The context and form columns are divided by this; the unit-length sentence vectors are left as they
are. Standardising every column let the model fit noise in near-constant vector dimensions, and cost a
tenth of the leave-project-out AUC (0.69 against 0.80, `bench/README.md`)."""
WHOLE_PROSE_CHARS: Final = 500
"""A kept message whose prose is at most this long is stored whole: its durable part is most often
said together with what explains it. A longer one keeps its likeliest segment (storing the two
likeliest instead kept 2 points more memories for 8 points more junk, leave-project-out)."""
CANDIDATE_PROSE_CHARS: Final = 600
"""A candidate keeps the opening of its message's prose, up to this long, with the likeliest segment:
the later prompt that needs it is found by how much the two messages resemble each other, and a
long message's lasting part is as often beside its likeliest segment as in it."""


def message_vector(segment_vectors: np.ndarray) -> np.ndarray:
    """The message's vector: the normalised mean of its prose segments' vectors, which the gate has
    already computed. Leave-project-out it ranks messages as well as a vector of the whole message
    (AUC 0.809 against 0.806), which cost up to 47 ms more per long prompt."""
    if not len(segment_vectors):
        return np.zeros(VECTOR_DIMS, np.float32)
    mean = segment_vectors.mean(axis=0)
    norm = float(np.linalg.norm(mean))
    return np.asarray(mean / norm if norm > 0 else mean, dtype=np.float32)


def message_row(rows: np.ndarray, message_vector: np.ndarray) -> np.ndarray:
    """The message layer's input: the largest value of each context and form column over the
    message's prose segments, then the message's vector (`message_vector`)."""
    named = len(CONTEXT_NAMES) + len(FORM_NAMES)
    pooled = rows[:, :named].max(axis=0) if len(rows) else np.zeros(named, np.float32)
    return np.concatenate([pooled, message_vector.astype(np.float32)])


def segment_rows(rows: np.ndarray) -> np.ndarray:
    """The segment layer's input: the context and form columns, then the segment's vector."""
    named = len(CONTEXT_NAMES) + len(FORM_NAMES)
    return np.hstack([rows[:, :named], rows[:, -VECTOR_DIMS:]])


@dataclass(frozen=True)
class Kept:
    """What the verdict keeps of one message."""

    probability: float
    """The message layer's probability that the message states something lasting."""
    active: bool
    """At or above the active bar: stored and used; else an unsure statement (a candidate)."""
    segments: tuple[int, ...]
    """Indices of the prose segments stored, in order; all of them when the prose is stored whole."""
    whole: bool


class StorageVerdict:
    """The two fitted layers and the bars."""

    def __init__(
        self, message: Logistic, segment: Logistic, active_bar: float, candidate_bar: float
    ) -> None:
        self.message = message
        """Does the message state something lasting (message vector, pooled forms)?"""
        self.segment = segment
        """Which of its segments says it (per-segment vector and forms)?"""
        self.active_bar = active_bar
        self.candidate_bar = candidate_bar

    @classmethod
    def load(cls, path: Path | None = None) -> StorageVerdict:
        """The shipped verdict, or the one in the file at `path` (a user's learned one)."""
        arrays = model_arrays(VERDICT_FILE) if path is None else _user_arrays(path)
        try:
            bars = arrays["bars"]
        except KeyError as exc:
            raise ModelFileError("The verdict file lacks its bars; reinstall octygraph.") from exc
        return cls(
            load_logistic(arrays, "message"),
            load_logistic(arrays, "segment"),
            float(bars[0]),
            float(bars[1]),
        )

    def keep(
        self,
        rows: np.ndarray,
        message_vector: np.ndarray,
        prose: Sequence[str],
        refused: Sequence[bool],
        *,
        opening: bool = False,
    ) -> Kept | None:
        """What of a message to store, or None below the candidate bar. `rows` are the prose
        segments' `verdict_features`; a refused segment is never stored. With `opening`, what a
        candidate keeps (the opening of the prose with its likeliest segment) however sure."""
        allowed = [i for i, r in enumerate(refused) if not r]
        if not allowed:
            return None
        p = float(self.message.proba(message_row(rows, message_vector)[None, :])[0])
        if p < self.candidate_bar:
            return None
        active = p >= self.active_bar and not opening
        if sum(len(prose[i]) for i in allowed) <= WHOLE_PROSE_CHARS:
            return Kept(p, active, tuple(allowed), len(allowed) == len(prose))
        seg_p = np.asarray(self.segment.proba(segment_rows(rows[allowed])), dtype=np.float64)
        likeliest = allowed[int(np.argmax(seg_p))]
        if active:
            return Kept(p, active, (likeliest,), False)
        head: list[int] = []
        for i in allowed:
            if head and sum(len(prose[j]) for j in head) + len(prose[i]) > CANDIDATE_PROSE_CHARS:
                break
            head.append(i)
        chosen = tuple(sorted({*head, likeliest}))
        return Kept(p, active, chosen, chosen == tuple(range(len(prose))))


_VERDICT: StorageVerdict | None = None
_USER: dict[Path, tuple[tuple[int, int], StorageVerdict | None]] = {}
_LOCK = threading.Lock()


def shipped_digest() -> str:
    """The sha256 of the shipped verdict file: a learned verdict records the one it refined."""
    return _shipped_digest(str(resources.files("octygraph") / "data" / VERDICT_FILE))


@functools.cache
def _shipped_digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _user_arrays(path: Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as data:
            return {key: data[key] for key in data.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise ModelFileError(f"Cannot read the learned verdict {path}: {exc}.") from exc


def user_verdict_path(home: Path | None = None) -> Path:
    """Where the user's learned verdict lives (`home` defaults to $OCTYBOT_HOME, else ~/.octybot)."""
    if home is None:
        home = octybot_home(os.environ)
    return home / "learning" / USER_VERDICT_FILE


def _learned(path: Path) -> StorageVerdict | None:
    """The verdict learned at `path`, or None when there is none, it does not load, or it refined
    another shipped file than this version's (it would undo what the new one learned)."""
    try:
        info = path.stat()
    except OSError:
        return None
    key = (info.st_mtime_ns, info.st_size)
    cached = _USER.get(path)
    if cached is not None and cached[0] == key:
        return cached[1]
    verdict: StorageVerdict | None
    try:
        arrays = _user_arrays(path)
        base = str(arrays["base_sha256"]) if "base_sha256" in arrays else ""
        verdict = StorageVerdict.load(path) if base == shipped_digest() else None
    except ModelFileError:
        verdict = None
    _USER[path] = (key, verdict)
    return verdict


def storage_verdict(home: Path | None = None) -> StorageVerdict:
    """The verdict in use: the user's learned one when there is a valid one for `home`, else the
    process-wide shipped one (loaded on first use). Checking for a learned one costs one `stat`."""
    global _VERDICT
    with _LOCK:
        learned = _learned(user_verdict_path(home))
        if learned is not None:
            return learned
        if _VERDICT is None:
            _VERDICT = StorageVerdict.load()
        return _VERDICT

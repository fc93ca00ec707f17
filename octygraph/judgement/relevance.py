"""Is this memory worth injecting for this prompt? A calibrated probability per candidate.

The features say how close the memory is to the whole prompt and to its best sentence, how it compares
with the other candidates, whether the two are about the same activity (topics), which words and names
they share, the memory's type and scope, and the prompt's shape (an acknowledgement or a pasted log
needs nothing). A logistic model fitted on labelled (prompt, memory, relevant?) pairs turns them into a
probability; a record is injected only when it clears the threshold chosen on that data.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from octygraph.embeddings import OnFirstUse
from octygraph.embeddings.local import cached_local_embed
from octygraph.judgement.linear import Logistic, load_logistic, model_arrays
from octygraph.judgement.segments import segments
from octygraph.judgement.topics import TOPICS, topic_spread
from octygraph.text.words import content_stems, reads_as_question

RELEVANCE_FILE: Final = "relevance.npz"
MAX_PROMPT_SEGMENTS: Final = 16
TRIGGER_MATCH: Final = 0.7
"""Topic overlap between a rule's trigger and the prompt above which the rule applies."""
TYPES: Final = ("instruction", "fact", "plan", "event", "opinion")
FEATURE_NAMES: Final = (
    "cos_prompt",
    "cos_best_sentence",
    "cos_prompt_gap",
    "cos_sentence_gap",
    "topic_overlap",
    "word_overlap",
    "rare_words",
    "names_shared",
    *(f"type_{t}" for t in TYPES),
    "scope",
    "prompt_short",
    "prompt_question",
    "prompt_machine_share",
    "prompt_refers_back",
    "memory_length",
    "distinctive_overlap",
    "best_sentence_rank",
    "rule_topic",
    "cos_best_squared",
)

_IDENT: Final = re.compile(
    r"`[^`]+`|[\w.-]+/[\w./-]+|\b[\w-]+\.(?:py|ts|tsx|js|md|mdc|json|ya?ml|toml|rs|go|sql|sh|env)\b"
    r"|\b[A-Z][a-z]+[A-Z]\w*\b|(?<![.!?]\s)(?<!^)\b[A-Z][a-zA-Z]{2,}\b|\b\w*\d\w*\b"
)
_REFERS_BACK: Final = re.compile(
    r"(?i)\b(?:remember|recall|i\s+(?:told|said|mentioned)|like\s+i\s+said|as\s+i\s+(?:said|mentioned)"
    r"|what\s+was\s+the|again\?|we\s+(?:agreed|decided|discussed)|did\s+(?:we|i))\b"
)

_TRIGGER: Final = re.compile(
    r"(?i)\b(?:before|after|when|whenever|while|if|during|every\s+time|for\s+(?:all|every|any)|"
    r"on\s+every)\s+(?P<what>\S.{2,})$"
)
"""The activity a rule governs: "always run the tests before deploying" -> "deploying"."""

Embed = Callable[[list[str]], np.ndarray]


@dataclass(frozen=True)
class MemoryText:
    """What the model needs to know about one candidate memory."""

    content: str
    type: str
    scope: float | None = None


@functools.lru_cache(maxsize=20_000)
def _names(text: str) -> frozenset[str]:
    # Memoized: the service weighs the same memories prompt after prompt.
    return frozenset(m.group().strip("`").lower() for m in _IDENT.finditer(text))


def trigger_clause(memory: MemoryText) -> str | None:
    """The activity a rule is for ("... before deploying" -> "deploying"); None for other memories."""
    if memory.type != "instruction":
        return None
    m = _TRIGGER.search(memory.content.rstrip(" .!"))
    return m.group("what") if m else None


def relevance_features(
    prompt: str,
    memories: Sequence[MemoryText],
    embed: Embed,
    topic_vectors: np.ndarray,
) -> np.ndarray:
    """One row of `FEATURE_NAMES` per memory (the same code fits the model and runs it)."""
    if not memories:
        return np.zeros((0, len(FEATURE_NAMES)), dtype=np.float32)
    segs = segments(prompt)
    prose = [s.text for s in segs if not s.machine][:MAX_PROMPT_SEGMENTS]
    triggers = [trigger_clause(m) for m in memories]
    texts = [prompt[:4000], *prose, *(m.content for m in memories), *(t for t in triggers if t)]
    vectors = embed(texts)
    k = 1 + len(prose) + len(memories)
    p_vec, s_vecs, m_vecs = vectors[0], vectors[1 : 1 + len(prose)], vectors[1 + len(prose) : k]
    trigger_vecs = iter(vectors[k:])
    rule_vecs = np.stack([next(trigger_vecs) if t else m_vecs[i] for i, t in enumerate(triggers)])
    cos_prompt = m_vecs @ p_vec
    cos_best = (m_vecs @ s_vecs.T).max(axis=1) if len(prose) else cos_prompt
    prompt_topics = topic_spread(np.vstack([p_vec[None, :], s_vecs]), topic_vectors).max(axis=0)
    prompt_topics /= prompt_topics.sum()
    memory_topics = topic_spread(m_vecs, topic_vectors)
    topic_overlap = np.minimum(memory_topics, prompt_topics[None, :]).sum(axis=1)
    # A rule applies by what it governs: the topic of its trigger clause, when it has one.
    rule_topics = topic_spread(rule_vecs, topic_vectors)
    rule_overlap = np.minimum(rule_topics, prompt_topics[None, :]).sum(axis=1)

    prompt_stems = content_stems(prompt)
    prompt_names = _names(prompt)
    words = prompt.split()
    machine_share = (sum(s.machine for s in segs) / len(segs)) if segs else 0.0
    shape = [
        1.0 if len(words) <= 4 else 0.0,
        1.0 if reads_as_question(prompt) else 0.0,
        machine_share,
        1.0 if _REFERS_BACK.search(prompt) else 0.0,
    ]
    memory_stems = [content_stems(m.content) for m in memories]
    # Words most candidates share (the project's own name, its main service) tell them apart least.
    df: dict[str, int] = {}
    for stems in memory_stems:
        for w in stems:
            df[w] = df.get(w, 0) + 1
    n = len(memories)

    def idf(word: str) -> float:
        return math.log((n + 1) / (df.get(word, 0) + 0.5))

    order = np.argsort(-cos_best)
    best_rank = np.empty(n, dtype=np.int64)
    best_rank[order] = np.arange(n)
    rows = []
    for i, memory in enumerate(memories):
        stems = memory_stems[i]
        shared = stems & prompt_stems
        rare = [w for w in shared if len(w) >= 6 or any(ch.isdigit() for ch in w)]
        names = _names(memory.content)
        rows.append(
            [
                float(cos_prompt[i]),
                float(cos_best[i]),
                float(cos_prompt[i] - cos_prompt.max()),
                float(cos_best[i] - cos_best.max()),
                float(topic_overlap[i]),
                len(shared) / max(1, len(stems)),
                min(1.0, len(rare) / 3.0),
                1.0 if names & prompt_names else 0.0,
                *(1.0 if memory.type == t else 0.0 for t in TYPES),
                float(memory.scope or 0.0) if memory.type == "instruction" else 0.0,
                *shape,
                min(1.0, math.log1p(len(memory.content.split())) / math.log1p(60)),
                sum(idf(w) for w in shared) / max(1e-6, sum(idf(w) for w in stems)),
                1.0 / (1.0 + float(best_rank[i])),
                float(rule_overlap[i]) if memory.type == "instruction" else 0.0,
                float(cos_best[i]) ** 2,
            ]
        )
    return np.asarray(rows, dtype=np.float32)


def rules_triggered(memories: Sequence[MemoryText], rows: np.ndarray) -> np.ndarray:
    """Per memory (its `relevance_features` row): a rule whose trigger the prompt does."""
    col = FEATURE_NAMES.index
    return np.array(
        [
            trigger_clause(m) is not None
            and rows[i, col("rule_topic")] >= TRIGGER_MATCH
            and rows[i, col("prompt_short")] == 0.0
            and rows[i, col("prompt_machine_share")] < 0.5
            for i, m in enumerate(memories)
        ],
        dtype=bool,
    )


class RelevanceModel:
    """The fitted model, its threshold, and the embedder and topic vectors it expects."""

    def __init__(self, model: Logistic, threshold: float, embed: Embed) -> None:
        self.model = model
        self.threshold = threshold
        self._embed = embed
        self.topic_vectors = embed(list(TOPICS.values()))

    @classmethod
    def load(cls, embed: Embed) -> RelevanceModel:
        arrays = model_arrays(RELEVANCE_FILE)
        return cls(load_logistic(arrays, "relevance"), float(arrays["threshold"]), embed)

    def score(self, prompt: str, memories: Sequence[MemoryText]) -> np.ndarray:
        """P(relevant) for each memory, in order."""
        return self.judge(prompt, memories)[0]

    def judge(self, prompt: str, memories: Sequence[MemoryText]) -> tuple[np.ndarray, np.ndarray]:
        """P(relevant) for each memory, and whether each is a rule whose trigger the prompt does.

        A rule that names the activity it governs ("... before deploying") applies whenever the
        prompt is about that activity ("ship the API to staging"), however few words they share.
        """
        if not memories:
            return np.zeros(0), np.zeros(0, dtype=bool)
        rows = relevance_features(prompt, memories, self._embed, self.topic_vectors)
        p = np.asarray(self.model.proba(rows), dtype=np.float64)
        return p, rules_triggered(memories, rows)


_MODEL = OnFirstUse(lambda: RelevanceModel.load(cached_local_embed))


def relevance_model() -> RelevanceModel:
    """The process-wide relevance model over the local embedding model (loaded on first use)."""
    return _MODEL.get()

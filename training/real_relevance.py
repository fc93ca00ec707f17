"""Real (prompt, earlier memory) pairs of every shared project, as rows for the relevance model.

Each project of `../shared/data/realtraffic-dev` (with its cross-session labels, `xlabels.json`) and
`realtraffic-train` is walked in date order, as one memory: every real prompt is paired with every
memory labelled (stated) earlier in that project, in earlier sessions and earlier in its own session,
and the pair is relevant when the prompt's label names that memory. The stored text is the labelled
memory's own text (what a perfect store would hold), typed as the storage filter types a sentence.
On the development split, the inserted facts (`kind: "inserted"`) count as stated memories, as in the
augmented replay; only real prompts are paired. The features are the pipeline's
(`relevance_features`), computed once per prompt over all its candidates.

`fit` is the procedure that turns rows into a model: the regularisation by log loss out of fold
(projects held out whole, on the real rows), and the bar as the lowest whose out-of-fold precision on
the real rows, with the pipeline's own selection (rules whose trigger the prompt does, at most
`MAX_RECORDS` per prompt), reaches `MIN_PRECISION`. The same code fits the shipped weights
(`training/train_relevance.py --real`) and each held-out project of `bench/relevance_cv.py`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from octygraph.judgement.analysis import analyze
from octygraph.judgement.instructions import detect_instruction, instruction_scope
from octygraph.judgement.linear import Logistic
from octygraph.judgement.patterns import sentence_type
from octygraph.judgement.relevance import (
    MAX_PROMPT_SEGMENTS,
    Embed,
    MemoryText,
    relevance_features,
    rules_triggered,
    trigger_clause,
)
from octygraph.judgement.segments import segments
from octygraph.judgement.topics import TOPICS
from octygraph.pipeline.nodes.assemble import MAX_RECORDS
from training.common import HERE, read_jsonl
from training.common import embed as disk_embed
from training.real_prompts import SHARED, TODAY, Prompt, project_of, scorer
from training.train_gate import _fit, _folds

DEV = SHARED / "data" / "realtraffic-dev"
TRAIN = SHARED / "data" / "realtraffic-train"
WRITTEN = HERE / "relevance"
"""The written scenarios: each one project, its memories and later prompts (`training/README.md`)."""
C_GRID = (0.03, 0.1, 0.3, 1.0)
MIN_PRECISION = 0.5
BARS = np.round(np.arange(0.02, 0.96, 0.01), 2)


@dataclass
class RealPrompt:
    """One real prompt, its candidates (memories stated earlier in its project) and their rows."""

    prompt: Prompt
    ids: list[str]
    relevant: np.ndarray
    """Per candidate: the prompt's label names it."""
    cross: np.ndarray
    """Per candidate: stated in an earlier session."""
    rows: np.ndarray
    triggered: np.ndarray
    """Per candidate: a rule whose trigger the prompt does (the pipeline injects it past the bar)."""


@dataclass
class Rows:
    """Rows to fit on: real rows and, optionally, written-scenario rows at a weight."""

    x: np.ndarray
    y: np.ndarray
    weight: np.ndarray
    group: list[str]
    """Each row's project (or written scenario): folds hold groups out whole."""
    prompt: np.ndarray
    """Each row's prompt number (distinct across projects and scenarios)."""
    real: np.ndarray
    triggered: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))


class MemoEmbed:
    """`training.common.embed` kept in memory: each prompt's call would otherwise reread the cache."""

    def __init__(self) -> None:
        self.known: dict[str, np.ndarray] = {}

    def warm(self, texts: Sequence[str]) -> None:
        missing = sorted({t for t in texts if t not in self.known})
        if missing:
            self.known.update(zip(missing, disk_embed(missing), strict=True))

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.warm(texts)
        return np.stack([self.known[t] for t in texts]) if texts else disk_embed([])


def memory_text(text: str) -> MemoryText:
    """A labelled memory as the store would hold it: typed (and scoped) as the storage filter would."""
    sentence = analyze(text, TODAY)
    kind = sentence_type(sentence, TODAY)[0] or "fact"
    scope = None
    if kind == "instruction":
        found = detect_instruction(sentence, TODAY)
        scope = found.scope if found is not None else instruction_scope(sentence)
    return MemoryText(text, kind, scope)


def _sessions() -> list[dict]:
    rt = scorer()
    out: list[dict] = []
    for folder, xlabels in ((DEV, DEV / "xlabels.json"), (TRAIN, None)):
        path = folder / "sessions.jsonl"
        if not path.exists():
            raise SystemExit(f"{path} not found: put the shared folder beside the repository.")
        with path.open(encoding="utf-8") as f:
            sessions = [json.loads(line) for line in f if line.strip()]
        extra = json.loads(xlabels.read_text()) if xlabels is not None else None
        for s in rt.prepare_projects(sessions, extra):
            s["split"] = folder.name.removeprefix("realtraffic-")
            out.append(s)
    return out


def load_real(embed: MemoEmbed | None = None) -> list[RealPrompt]:
    """Every real prompt of the shared sets, in project and date order, with its candidate rows."""
    embed = embed or MemoEmbed()
    walk: list[tuple[dict, dict, list[tuple[str, MemoryText, str]]]] = []
    stated: dict[str, list[tuple[str, MemoryText, str]]] = {}
    for session in _sessions():
        earlier = stated.setdefault(session["project"], [])
        for turn in session["turns"]:
            if turn["kind"] == "real":
                walk.append((session, turn, list(earlier)))
            for m in turn["label"]["memories"]:
                earlier.append((m["id"], memory_text(m["text"]), session["session_id"]))
    texts: list[str] = []
    for _, turn, candidates in walk:
        if candidates:
            prose = [s.text for s in segments(turn["prompt"]) if not s.machine]
            texts += [turn["prompt"][:4000], *prose[:MAX_PROMPT_SEGMENTS]]
            texts += [m.content for _, m, _ in candidates]
            texts += [t for _, m, _ in candidates if (t := trigger_clause(m))]
    embed.warm(texts + list(TOPICS.values()))
    topic_vectors = embed(list(TOPICS.values()))
    out = []
    for session, turn, candidates in walk:
        label = turn["label"]
        memories = [m for _, m, _ in candidates]
        rows = relevance_features(turn["prompt"], memories, embed, topic_vectors)
        relevant = set(label["relevant"])
        out.append(
            RealPrompt(
                prompt=Prompt(
                    project=project_of(session),
                    session=session["session_id"],
                    text=turn["prompt"],
                    store=bool(label["store"]),
                    memories=[m["text"] for m in label["memories"]],
                    split=session["split"],
                ),
                ids=[i for i, _, _ in candidates],
                relevant=np.array([i in relevant for i, _, _ in candidates], dtype=bool),
                cross=np.array([s != session["session_id"] for _, _, s in candidates], dtype=bool),
                rows=rows,
                triggered=rules_triggered(memories, rows),
            )
        )
    return out


def real_rows(prompts: Sequence[RealPrompt]) -> Rows:
    """The prompts' candidate rows, stacked."""
    with_rows = [(n, p) for n, p in enumerate(prompts) if len(p.ids)]
    return Rows(
        x=np.vstack([p.rows for _, p in with_rows]).astype(np.float64),
        y=np.concatenate([p.relevant for _, p in with_rows]),
        weight=np.ones(sum(len(p.ids) for _, p in with_rows)),
        group=[p.prompt.project for _, p in with_rows for _ in p.ids],
        prompt=np.concatenate([np.full(len(p.ids), n) for n, p in with_rows]),
        real=np.ones(sum(len(p.ids) for _, p in with_rows), dtype=bool),
        triggered=np.concatenate([p.triggered for _, p in with_rows]),
    )


def load_pairs(
    embed: Embed = disk_embed,
) -> tuple[np.ndarray, np.ndarray, list[str], list[int], int]:
    """The written scenarios' feature rows, labels, each row's scenario, each row's prompt number,
    and the prompt count."""
    topic_vectors = embed(list(TOPICS.values()))
    xs, ys, groups, prompt_ids = [], [], [], []
    n_prompts = 0
    for path in sorted(WRITTEN.glob("*.jsonl")):
        for scenario in read_jsonl(path):
            memories = [
                MemoryText(m["text"], m.get("type", "fact"), m.get("scope"))
                for m in scenario["memories"]
            ]
            ids = [m["id"] for m in scenario["memories"]]
            name = f"{path.stem}:{scenario['scenario']}"
            for prompt in scenario["prompts"]:
                rows = relevance_features(prompt["text"], memories, embed, topic_vectors)
                relevant = set(prompt.get("relevant") or [])
                xs.append(rows)
                ys += [mid in relevant for mid in ids]
                groups += [name] * len(ids)
                prompt_ids += [n_prompts] * len(ids)
                n_prompts += 1
    return np.vstack(xs), np.array(ys), groups, prompt_ids, n_prompts


def written_rows(embed: Embed, weight: float) -> Rows:
    """Every written scenario of `training/relevance/`, each row at `weight`."""
    x, y, groups, prompt_ids, _ = load_pairs(embed)
    return Rows(
        x=x.astype(np.float64),
        y=y,
        weight=np.full(len(y), weight),
        group=[f"written:{g}" for g in groups],
        prompt=np.array(prompt_ids) + 1_000_000,
        real=np.zeros(len(y), dtype=bool),
        triggered=np.zeros(len(y), dtype=bool),
    )


def join(a: Rows, b: Rows) -> Rows:
    return Rows(
        x=np.vstack([a.x, b.x]),
        y=np.concatenate([a.y, b.y]),
        weight=np.concatenate([a.weight, b.weight]),
        group=a.group + b.group,
        prompt=np.concatenate([a.prompt, b.prompt]),
        real=np.concatenate([a.real, b.real]),
        triggered=np.concatenate([a.triggered, b.triggered]),
    )


def subset(rows: Rows, mask: np.ndarray) -> Rows:
    return Rows(
        x=rows.x[mask],
        y=rows.y[mask],
        weight=rows.weight[mask],
        group=[g for g, m in zip(rows.group, mask, strict=True) if m],
        prompt=rows.prompt[mask],
        real=rows.real[mask],
        triggered=rows.triggered[mask],
    )


def select(p: np.ndarray, triggered: np.ndarray, prompt: np.ndarray, bar: float) -> np.ndarray:
    """What the pipeline injects: per prompt, candidates past the bar (and rules whose trigger the
    prompt does), most probable first, at most `MAX_RECORDS` (`octygraph/pipeline/nodes/assemble.py`)."""
    if not len(p):
        return np.zeros(0, dtype=bool)
    score = np.where(triggered, np.maximum(p, bar), p)
    eligible = (p >= bar) | triggered
    order = np.lexsort((-score, prompt))
    passed = eligible[order].astype(np.int64)
    group = prompt[order]
    count = np.cumsum(passed)
    starts = np.r_[True, group[1:] != group[:-1]]
    before = np.maximum.accumulate(np.where(starts, count - passed, 0))
    keep_sorted = passed.astype(bool) & (count - before <= MAX_RECORDS)
    keep = np.empty_like(keep_sorted)
    keep[order] = keep_sorted
    return keep


def choose_bar(rows: Rows, p: np.ndarray) -> float:
    """The lowest bar whose precision on the real rows, as the pipeline selects, reaches
    `MIN_PRECISION` (the highest bar when none does)."""
    real = rows.real
    for bar in BARS:
        keep = select(p[real], rows.triggered[real], rows.prompt[real], float(bar))
        if keep.any() and (keep & rows.y[real]).sum() / keep.sum() >= MIN_PRECISION:
            return float(bar)
    return float(BARS[-1])


def _log_loss(y: np.ndarray, p: np.ndarray) -> float:
    q = np.clip(p, 1e-6, 1 - 1e-6)
    return float(-(y * np.log(q) + (~y) * np.log(1 - q)).mean())


@dataclass
class Fitted:
    model: Logistic
    threshold: float
    c: float
    losses: dict[float, float]
    out_of_fold: np.ndarray


def fit(rows: Rows, k: int = 5) -> Fitted:
    """The model, its regularisation and its bar, chosen out of fold (groups held out whole)."""
    folds = _folds(rows.group, k)

    def oof(c: float) -> np.ndarray:
        p = np.zeros(len(rows.y))
        for f in sorted(set(folds.tolist())):
            train = folds != f
            model = _fit(
                rows.x[train],
                rows.y[train],
                c,
                balanced=False,
                sample_weight=rows.weight[train],
            )
            p[~train] = model.proba(rows.x[~train])
        return p

    predictions = {c: oof(c) for c in C_GRID}
    losses = {c: _log_loss(rows.y[rows.real], p[rows.real]) for c, p in predictions.items()}
    best = min(losses, key=lambda c: losses[c])
    threshold = choose_bar(rows, predictions[best])
    model = _fit(rows.x, rows.y, best, balanced=False, sample_weight=rows.weight)
    return Fitted(model, threshold, best, losses, predictions[best])

"""Real labelled prompts of many projects, read from `../shared/data/`, as rows for the storage verdict.

Each real prompt of `realtraffic-dev` and `realtraffic-train` is cut into the segments the gate judges at
run time. A prose segment is labelled durable when it expresses one of its prompt's labelled memories
by the same token-overlap test the real-traffic scorer uses (`../shared/tools/realtraffic.py`, imported
from there so that training and measuring agree on what counts). Nothing here is copied into the
repository; the data is read where it lies.
"""

from __future__ import annotations

import importlib.util
import json
import os
from dataclasses import dataclass, field
from datetime import date
from functools import cache
from pathlib import Path
from types import ModuleType

import numpy as np

from octygraph.judgement.analysis import analyze
from octygraph.judgement.gate import judged_segments, storage_gate
from octygraph.judgement.patterns import safety_refusal, verdict_refusals
from octygraph.judgement.verdict import SegmentView, message_vector, verdict_features
from training.common import HERE, embed, held_out, read_jsonl
from training.train_gate import load_rows

SHARED = Path(os.environ.get("OCTY_SHARED") or HERE.parent.parent / "shared")
SETS = (
    SHARED / "data" / "realtraffic-dev" / "sessions.jsonl",
    SHARED / "data" / "realtraffic-train" / "sessions.jsonl",
)
TODAY = date(2026, 1, 1)
"""A fixed day for the sentence analysis, so the rows do not change with the calendar."""


@cache
def scorer() -> ModuleType:
    """The real-traffic scorer, for its token-overlap tests (`cover`, `expresses`)."""
    path = SHARED / "tools" / "realtraffic.py"
    if not path.exists():
        raise SystemExit(f"{path} not found: put the shared folder beside the repository.")
    spec = importlib.util.spec_from_file_location("realtraffic", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass
class Prompt:
    """One real prompt and the rows of its prose segments."""

    project: str
    session: str
    text: str
    store: bool
    memories: list[str]
    split: str = ""
    """dev or train: the shared set it comes from."""
    segments: list[str] = field(default_factory=list)
    """Prose segments, in order (machine segments are never stored)."""
    refused: list[bool] = field(default_factory=list)
    """Per prose segment: refused by a safety rule whatever the verdict says."""
    form_refused: list[bool] = field(default_factory=list)
    """Per prose segment: refused by a form of the storage filter (questions, go-aheads, ...)."""
    labels: list[bool] = field(default_factory=list)
    rows: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.float32))
    vector: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    """The message's vector (`message_vector` of its prose segments')."""


def project_of(session: dict) -> str:
    return str(session.get("project") or session["source"]["repo"])


def real_messages(keys: tuple[str, ...] = ("prompt", "assistant_after")) -> dict[str, list[str]]:
    """The real turns' texts under `keys` (prompts, replies), stripped, by project."""
    by_project: dict[str, list[str]] = {}
    for path in SETS:
        if not path.exists():
            raise SystemExit(f"{path} is missing: put the shared data beside the repository.")
        for session in read_jsonl(path):
            for turn in session["turns"]:
                for key in keys:
                    text = turn.get(key)
                    if isinstance(text, str) and text.strip():
                        by_project.setdefault(project_of(session), []).append(text.strip())
    return by_project


def load_prompts() -> list[Prompt]:
    """Every real prompt of the shared sets, with its verdict rows (vectors cached on disk)."""
    rt = scorer()
    out: list[Prompt] = []
    for path in SETS:
        if not path.exists():
            raise SystemExit(f"{path} not found: put the shared folder beside the repository.")
        with path.open(encoding="utf-8") as f:
            sessions = [json.loads(line) for line in f if line.strip()]
        for session in sessions:
            for turn in session["turns"]:
                if turn["kind"] != "real":
                    continue
                label = turn["label"]
                out.append(
                    Prompt(
                        project=project_of(session),
                        session=session["session_id"],
                        text=turn["prompt"],
                        store=bool(label["store"]),
                        memories=[m["text"] for m in label["memories"]],
                        split="dev" if "realtraffic-dev" in str(path) else "train",
                    )
                )
    _attach_rows(out, rt)
    return out


def load_written() -> list[Prompt]:
    """The held-out part of the written user sets (`training/storage/`), as messages.

    Only the held-out part: the gate, whose log-odds are a feature, was fitted on the rest, so its
    verdict on these is as honest as on a real prompt. Segment labels are the sets' own."""
    by_message: dict[str, dict[str, bool]] = {}
    for row in load_rows(replies=False):
        if row.source == "user" and held_out(row.group):
            by_message.setdefault(row.group, {})[row.segment.text] = row.durable
    out = [
        Prompt("written", "written", text, any(labels.values()), [])
        for text, labels in sorted(by_message.items())
    ]
    _attach_rows(out, None, by_message)
    return out


def _attach_rows(
    prompts: list[Prompt], rt: ModuleType | None, given: dict[str, dict[str, bool]] | None = None
) -> None:
    gate = storage_gate()
    for prompt in prompts:
        segs = judged_segments(prompt.text, assistant=False)
        prose = [s for s in segs if not s.machine]
        prompt.segments = [s.text for s in prose]
        if not prose:
            continue
        vectors = embed(prompt.segments)
        prompt.vector = message_vector(vectors)
        judged = {v.text: v for v in gate.judge(prompt.text) if not v.machine}
        sentences = [analyze(s.text, TODAY) for s in prose]
        views = [
            SegmentView(
                sentence, judged[s.text].durable if s.text in judged else 0.0, bool(s.sentence)
            )
            for s, sentence in zip(prose, sentences, strict=True)
        ]
        prompt.rows = verdict_features(views, vectors, len(segs) - len(prose), len(prompt.text))
        prompt.refused = [safety_refusal(s) is not None for s in sentences]
        prompt.form_refused = verdict_refusals(sentences)
        if given is not None:
            own = given[prompt.text]
            prompt.labels = [own.get(s.text, prompt.store and len(prose) == 1) for s in prose]
        else:
            assert rt is not None
            prompt.labels = [any(rt.expresses(m, s.text) for m in prompt.memories) for s in prose]


def stored_figures(prompts: list[Prompt], stored: list[list[str]]) -> dict[str, float]:
    """The scorer's storage figures for what each prompt stored (texts), in percent."""
    rt = scorer()
    neg = [i for i, p in enumerate(prompts) if not p.store]
    false_store = sum(1 for i in neg if stored[i])
    mem_total = mem_hit = items = junk = 0
    for prompt, texts in zip(prompts, stored, strict=True):
        aligned = [[m for m in prompt.memories if rt.expresses(m, t)] for t in texts]
        items += len(texts)
        junk += sum(1 for a in aligned if not a)
        if prompt.store:
            for m in prompt.memories:
                mem_total += 1
                covering = " ".join(t for t, a in zip(texts, aligned, strict=True) if m in a)
                mem_hit += rt.cover(m, covering) >= rt.MATCH
    return {
        "false_store": 100.0 * false_store / max(1, len(neg)),
        "store_recall": 100.0 * mem_hit / max(1, mem_total),
        "junk": 100.0 * junk / max(1, items),
        "items": float(items),
        "memories": float(mem_total),
        "negatives": float(len(neg)),
    }

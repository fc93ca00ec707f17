"""`octygraph memory learn`: fit the storage verdict's message layer to this user's own examples.

The shipped verdict (`judgement.verdict`) was fitted on labelled real prompts of many projects. Each
approve, correction and forget of a candidate (and each forget of any memory) is a labelled example of
this user's standard (`feedback`). Learning refits the message layer's weights to those examples with a
Gaussian prior centred on the shipped weights (`PRIOR`), each example weighted as one real prompt of
the shipped fit, the two labels balanced. The
segment layer and the bars stay as shipped. Newton's method on a strictly convex objective, in float64,
from the shipped weights: the same examples give the same weights, bit for bit, and the file is written
with fixed zip timestamps.

An example's row is computed as the verdict computes a message's at run time
(`judgement.storage._verdict_items`): the gate's segments of the text, the local model's vectors, the
sentence analysis on the day the example was recorded. The text is the memory's, not the whole message
it came from, so the position and length features describe the memory alone.

Never below the shipped model. The refit is written only when

- on the user's examples, out of fold (`FOLDS`-fold, stratified, a fixed assignment), its balanced
  log-loss is no higher than the shipped layer's and its balanced accuracy at the active bar no lower;
- and, when the shared labelled sets are at hand (a checkout beside `../shared`, or `--shared DIR`),
  on every real prompt there, at the shipped active bar, it stores something of no more store=false
  prompts and of no fewer store=true prompts than the shipped layer, beyond `TOLERANCE`. Both layers
  are scored on the same prompts, which the shipped layer was fitted on (that favours the shipped one).

Otherwise the shipped model stays and the reason is given in one sentence.

One learn at a time per install (an `flock` on `learning/learn.lock`): the command and the memory
service never fit at once. Each learn's outcome is kept in `learning/last_learn.json`. The service
learns by itself (`auto_learn`, in a process of its own, `python -m octygraph.memory.learning`) once
`AUTO_LEARN_EVERY` examples were recorded since the last learn, when `OCTY_AUTO_LEARN` is on.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, Final

import numpy as np

from octygraph.config.private import private_mkdir
from octygraph.config.settings import octybot_home
from octygraph.judgement.linear import Logistic, save_logistic
from octygraph.judgement.verdict import (
    StorageVerdict,
    message_row,
    shipped_digest,
    user_verdict_path,
)
from octygraph.memory import feedback
from octygraph.memory.feedback import Example

MIN_EXAMPLES: Final = 20
"""Fewer examples than this say too little to move a layer fitted on thousands of prompts."""
MIN_PER_LABEL: Final = 5
"""Examples of one label only would teach "store more" (or "store less") and nothing else."""
PRIOR: Final = 10.0
"""The penalty on the (squared) distance from the shipped weights, three times the shipped fit's own
(1/C = 3.3). At 1/C, 24 examples that inverted the shipped judgement (junk approved, lasting facts
forgotten) turned the layer round entirely; at 10 they move it part of the way, and consistent ones
still improve it out of fold (balanced log-loss 0.097 to 0.082 on 24 hand-written examples)."""
USER_WEIGHT: Final = 1.0
"""Each example counts as one real prompt of the shipped fit."""
FOLDS: Final = 10
TOLERANCE: Final = 0.005
"""Half a percentage point of the shared sets' false-store and recall: within their noise."""
NEWTON_STEPS: Final = 100
AUTO_LEARN_EVERY: Final = 10
"""The service learns again once this many examples were recorded since the last learn (its own or the
command's): the first time at `MIN_EXAMPLES`, then at most once per ten decisions, each learn reading
the shared sets for about two minutes of one core."""
LOCK_FILE: Final = "learn.lock"
LAST_LEARN_FILE: Final = "last_learn.json"


@dataclass(frozen=True)
class Guard:
    """Labelled messages the refit must not do worse on: message rows, labels, storable flags."""

    rows: np.ndarray
    store: np.ndarray
    storable: np.ndarray
    """False where every segment is refused: nothing of the message can be stored."""
    name: str = "the shared sets"


@dataclass
class Outcome:
    """What `learn` did and why."""

    shipped: bool
    """True when the refit was written (and will be used)."""
    reason: str
    examples: int = 0
    path: Path | None = None
    figures: dict[str, float] = field(default_factory=dict)
    checked: str = ""
    """What the refit was checked against besides the user's examples, in a few words."""


# --------------------------------------------------------------------------------------------- rows


def example_rows(examples: Sequence[Example]) -> tuple[np.ndarray, np.ndarray]:
    """The message layer's input row and label of each example that has prose to judge."""
    from octygraph.embeddings.local import cached_local_embed
    from octygraph.judgement.analysis import analyze
    from octygraph.judgement.gate import storage_gate
    from octygraph.judgement.verdict import SegmentView, message_vector, verdict_features

    rows: list[np.ndarray] = []
    labels: list[int] = []
    gate = storage_gate()
    for example in examples:
        judged = gate.judge(example.text)
        prose = [v for v in judged if not v.machine]
        if not prose:
            continue
        texts = [v.text for v in prose]
        vectors = cached_local_embed(texts)
        day = _day(example.time)
        sentences = [analyze(text, day) for text in texts]
        views = [
            SegmentView(s, v.durable, bool(v.sentence))
            for s, v in zip(sentences, prose, strict=True)
        ]
        feats = verdict_features(views, vectors, len(judged) - len(prose), len(example.text))
        rows.append(message_row(feats, message_vector(vectors)))
        labels.append(example.label)
    if not rows:
        return np.zeros((0, 0), np.float32), np.zeros(0, np.int64)
    return np.stack(rows).astype(np.float32), np.asarray(labels, dtype=np.int64)


def _day(stamp: str) -> date:
    try:
        return datetime.fromisoformat(stamp).date()
    except ValueError:
        return date(2026, 1, 1)


# --------------------------------------------------------------------------------------------- the fit


def _design(layer: Logistic, x: np.ndarray) -> np.ndarray:
    """Standardised rows with a column of ones for the intercept (float64)."""
    z = (x.astype(np.float64) - layer.mean.astype(np.float64)) / layer.scale.astype(np.float64)
    return np.hstack([z, np.ones((len(z), 1))])


def _theta(layer: Logistic) -> np.ndarray:
    return np.concatenate(
        [layer.coef[0].astype(np.float64), layer.intercept[:1].astype(np.float64)]
    )


def _balanced(y: np.ndarray) -> np.ndarray:
    n, pos = len(y), int(y.sum())
    neg = n - pos
    return np.where(y == 1, n / (2.0 * max(pos, 1)), n / (2.0 * max(neg, 1)))


def _objective(
    a: np.ndarray, y: np.ndarray, w: np.ndarray, theta: np.ndarray, prior: np.ndarray
) -> float:
    z = a @ theta
    loss = np.logaddexp(0.0, z) - y * z  # -log-likelihood of a logistic, stable
    return float(w @ loss + 0.5 * PRIOR * float(np.sum((theta - prior) ** 2)))


def refit(layer: Logistic, x: np.ndarray, y: np.ndarray) -> Logistic:
    """The message layer fitted to (x, y) with a prior centred on `layer`'s weights (Newton)."""
    a = _design(layer, x)
    yf = y.astype(np.float64)
    w = USER_WEIGHT * _balanced(y)
    prior = _theta(layer)
    theta = prior.copy()
    current = _objective(a, yf, w, theta, prior)
    eye = np.eye(len(theta))
    for _ in range(NEWTON_STEPS):
        p = 1.0 / (1.0 + np.exp(-np.clip(a @ theta, -30, 30)))
        grad = a.T @ (w * (p - yf)) + PRIOR * (theta - prior)
        hess = (a * (w * p * (1 - p))[:, None]).T @ a + PRIOR * eye
        step = np.linalg.solve(hess, grad)
        t = 1.0
        while True:  # backtracking: Newton's full step is almost always taken
            candidate = theta - t * step
            value = _objective(a, yf, w, candidate, prior)
            if value <= current or t < 1e-6:
                break
            t /= 2
        theta, done = candidate, current - value < 1e-12
        current = value
        if done or float(np.max(np.abs(t * step))) < 1e-10:
            break
    return Logistic(
        mean=layer.mean,
        scale=layer.scale,
        coef=theta[None, :-1].astype(np.float32),
        intercept=theta[-1:].astype(np.float32),
        classes=layer.classes,
    )


def folds_of(y: np.ndarray, k: int = FOLDS) -> np.ndarray:
    """A fixed, stratified fold per example: each label's examples dealt round-robin in order."""
    fold = np.zeros(len(y), dtype=np.int64)
    dealt = 0
    for label in (0, 1):
        for i in np.flatnonzero(y == label):
            fold[i] = dealt % k
            dealt += 1
    return fold


def out_of_fold(layer: Logistic, x: np.ndarray, y: np.ndarray, k: int = FOLDS) -> np.ndarray:
    """Each example's probability under a refit on the other folds."""
    fold = folds_of(y, k)
    out = np.zeros(len(y))
    for f in range(k):
        test = fold == f
        if not test.any():
            continue
        model = refit(layer, x[~test], y[~test])
        out[test] = model.proba(x[test])
    return out


def log_loss(y: np.ndarray, p: np.ndarray) -> float:
    """Balanced mean log-loss (each label counts half)."""
    p = np.clip(p.astype(np.float64), 1e-6, 1 - 1e-6)
    losses = np.where(y == 1, -np.log(p), -np.log(1 - p))
    w = _balanced(y)
    return float(w @ losses / w.sum())


def balanced_accuracy(y: np.ndarray, p: np.ndarray, bar: float) -> float:
    stored = p >= bar
    return 0.5 * (float(stored[y == 1].mean()) + float((~stored[y == 0]).mean()))


def guard_figures(layer: Logistic, guard: Guard, bar: float) -> tuple[float, float]:
    """False-store and recall (shares) of the messages at `bar`."""
    p = layer.proba(guard.rows)
    stored = (p >= bar) & guard.storable
    neg, pos = ~guard.store, guard.store
    return float(stored[neg].mean()) if neg.any() else 0.0, (
        float(stored[pos].mean()) if pos.any() else 0.0
    )


# --------------------------------------------------------------------------------------------- learn


def learn(
    home: Path,
    examples: Sequence[Example],
    *,
    guard: Guard | None = None,
    verdict: StorageVerdict | None = None,
) -> Outcome:
    """Refit the message layer to `examples`; write it for `home` only if it is no worse.

    Nothing is fitted while another learn for `home` is under way; the outcome is kept
    (`last_learn`)."""
    with _exclusive(home) as held:
        if not held:
            return Outcome(False, BUSY, len(examples))
        outcome = _learn(home, examples, guard=guard, verdict=verdict)
        _remember(home, outcome, "octygraph memory learn")
        return outcome


BUSY: Final = (
    "Another learn from your examples is under way (the memory service's or another command's); "
    "nothing changed, see `octygraph serve status` for what it did."
)


def _learn(
    home: Path,
    examples: Sequence[Example],
    *,
    guard: Guard | None = None,
    verdict: StorageVerdict | None = None,
) -> Outcome:
    path = user_verdict_path(home)
    n = len(examples)
    positives = sum(e.label == 1 for e in examples)
    if n < MIN_EXAMPLES or min(positives, n - positives) < MIN_PER_LABEL:
        return Outcome(
            False,
            f"Too few examples to learn from: {n} ({positives} kept, {n - positives} forgotten); "
            f"learning needs at least {MIN_EXAMPLES}, with {MIN_PER_LABEL} of each, so nothing "
            "changed.",
            n,
        )
    shipped = verdict or StorageVerdict.load()
    x, y = example_rows(examples)
    if len(y) < MIN_EXAMPLES or min(int(y.sum()), len(y) - int(y.sum())) < MIN_PER_LABEL:
        return Outcome(
            False,
            f"Only {len(y)} of the {n} examples have prose the verdict can read, too few to "
            "learn from; nothing changed.",
            n,
        )
    bar = shipped.active_bar
    before = shipped.message.proba(x)
    after = out_of_fold(shipped.message, x, y)
    figures = {
        "examples": float(len(y)),
        "shipped_log_loss": log_loss(y, before),
        "learned_log_loss": log_loss(y, after),
        "shipped_accuracy": balanced_accuracy(y, before, bar),
        "learned_accuracy": balanced_accuracy(y, after, bar),
    }
    model = refit(shipped.message, x, y)
    if (
        figures["learned_log_loss"] > figures["shipped_log_loss"]
        or figures["learned_accuracy"] < figures["shipped_accuracy"]
    ):
        return Outcome(
            False,
            "The refit predicts your own examples worse than the shipped model out of fold "
            f"(log-loss {figures['learned_log_loss']:.3f} against {figures['shipped_log_loss']:.3f}, "
            f"balanced accuracy {figures['learned_accuracy']:.1%} against "
            f"{figures['shipped_accuracy']:.1%}), so the shipped model stays.",
            n,
            figures=figures,
        )
    if guard is not None:
        fs0, rec0 = guard_figures(shipped.message, guard, bar)
        fs1, rec1 = guard_figures(model, guard, bar)
        figures.update(
            shipped_false_store=fs0,
            learned_false_store=fs1,
            shipped_recall=rec0,
            learned_recall=rec1,
        )
        if fs1 > fs0 + TOLERANCE or rec1 < rec0 - TOLERANCE:
            return Outcome(
                False,
                f"The refit would do worse on {guard.name} (false-store {fs1:.1%} against "
                f"{fs0:.1%}, recall {rec1:.1%} against {rec0:.1%}), so the shipped model stays.",
                n,
                figures=figures,
            )
    write_verdict(
        path,
        StorageVerdict(model, shipped.segment, shipped.active_bar, shipped.candidate_bar),
        len(y),
    )
    return Outcome(
        True,
        f"Learned from {len(y)} examples; the storage verdict now uses {path}.",
        n,
        path,
        figures,
        f"checked against {guard.name}" if guard is not None else "",
    )


# --------------------------------------------------------------------------------------------- one at a time


@contextlib.contextmanager
def _exclusive(home: Path) -> Iterator[bool]:
    """Whether this call holds `home`'s learning lock (not waited for: a learn takes minutes)."""
    folder = feedback.learning_dir(home)
    private_mkdir(folder)
    fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
        else:
            yield True
    finally:
        os.close(fd)  # lets go of the lock


def _remember(home: Path, outcome: Outcome, by: str) -> None:
    """Keep what a learn did for `last_learn` (and so for `learn_due`)."""
    record = {
        "time": datetime.now(UTC).isoformat(timespec="seconds"),
        "by": by,
        "shipped": outcome.shipped,
        "reason": outcome.reason,
        "examples": outcome.examples,
        "checked": outcome.checked,
    }
    path = feedback.learning_dir(home) / LAST_LEARN_FILE
    tmp = path.with_name(f".{path.name}.{os.getpid()}.partial")
    tmp.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.chmod(0o600)
    tmp.replace(path)


def last_learn(home: Path) -> dict[str, Any] | None:
    """What the last learn for `home` did: time, by, shipped, reason, examples, checked."""
    try:
        data = json.loads((feedback.learning_dir(home) / LAST_LEARN_FILE).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def learn_due(home: Path) -> bool:
    """Whether the service should learn: `MIN_EXAMPLES` examples in all, `AUTO_LEARN_EVERY` of them
    recorded since the last learn (when there are fewer than it saw, the examples were started over)."""
    count = len(feedback.load(home))
    last = last_learn(home) or {}
    seen = last.get("examples")
    seen = seen if isinstance(seen, int) and 0 <= seen <= count else 0
    return count >= MIN_EXAMPLES and count - seen >= AUTO_LEARN_EVERY


def auto_learn(home: Path) -> Outcome | None:
    """The service's learn: `learn` on every recorded example, checked on the shared sets as
    `octygraph memory learn` checks it (`shared_guard`); None when not `learn_due` or another learn
    is under way."""
    with _exclusive(home) as held:
        if not held or not learn_due(home):
            return None
        examples = feedback.load(home)
        guard, checked = shared_guard()
        try:
            outcome = _learn(home, examples, guard=guard)
        except Exception as exc:  # kept as the outcome, so the service does not retry at once
            outcome = Outcome(
                False,
                f"Learning failed ({type(exc).__name__}: {exc}); nothing changed.",
                len(examples),
            )
        outcome.checked = checked
        _remember(home, outcome, "the memory service")
        return outcome


def verdict_arrays(verdict: StorageVerdict, examples: int) -> dict[str, np.ndarray]:
    arrays: dict[str, np.ndarray] = {
        "bars": np.array([verdict.active_bar, verdict.candidate_bar], dtype=np.float32),
        "base_sha256": np.array(shipped_digest()),
        "learned_examples": np.array(examples, dtype=np.int64),
    }
    save_logistic(arrays, "message", verdict.message)
    save_logistic(arrays, "segment", verdict.segment)
    return arrays


def write_verdict(path: Path, verdict: StorageVerdict, examples: int) -> None:
    """Write the verdict as an `.npz` whose bytes depend on the arrays alone (fixed zip dates)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, array in sorted(verdict_arrays(verdict, examples).items()):
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o600 << 16
            data = io.BytesIO()
            np.lib.format.write_array(data, np.asarray(array), allow_pickle=False)
            archive.writestr(info, data.getvalue())
    private_mkdir(path.parent)
    tmp = path.with_name(f".{path.name}.partial")
    tmp.write_bytes(buffer.getvalue())
    tmp.chmod(0o600)
    tmp.replace(path)


def forget_learned(home: Path) -> bool:
    """Remove the user's weights (the shipped verdict is used again); whether there were any."""
    path = user_verdict_path(home)
    if not path.exists():
        return False
    path.unlink()
    return True


def shared_guard(shared: Path | None = None) -> tuple[Guard | None, str]:
    """The shared labelled sets as a guard, when this is a checkout with them beside it.

    Returns the guard (or None) and one sentence saying which."""
    import os
    import sys

    repo = Path(__file__).resolve().parents[2]
    if shared is not None:
        os.environ["OCTY_SHARED"] = str(shared)
    folder = Path(os.environ.get("OCTY_SHARED") or repo.parent / "shared")
    if not (repo / "training" / "real_prompts.py").exists():
        return None, "the shared sets are not checked (this is not a checkout with training/)"
    if not (folder / "data" / "realtraffic-train" / "sessions.jsonl").exists():
        return None, f"the shared sets are not checked (none at {folder})"
    if str(repo) not in sys.path:
        sys.path.insert(0, str(repo))
    try:
        from training.real_prompts import load_prompts

        prompts = load_prompts()
    except (ImportError, SystemExit, OSError, EOFError, ValueError) as exc:
        return None, f"the shared sets could not be read ({exc})"
    usable = [p for p in prompts if len(p.segments)]
    rows = np.stack([message_row(p.rows, p.vector) for p in usable])
    store = np.array([p.store for p in usable], dtype=bool)
    storable = np.array([not all(p.refused) for p in usable], dtype=bool)
    # A prompt with no prose is never stored by the verdict: it counts, unstored.
    empty = [p for p in prompts if not len(p.segments)]
    if empty:
        rows = np.vstack([rows, np.zeros((len(empty), rows.shape[1]), np.float32)])
        store = np.concatenate([store, [p.store for p in empty]])
        storable = np.concatenate([storable, np.zeros(len(empty), dtype=bool)])
    return Guard(rows, store, storable, f"the {len(prompts):,} shared real prompts"), (
        f"checked against the {len(prompts):,} shared real prompts at {folder}"
    )


def main() -> None:
    """`python -m octygraph.memory.learning`: `auto_learn` for `$OCTYBOT_HOME`, its outcome as one JSON line.

    The memory service runs it in a process of its own, so that fitting (and reading the shared sets)
    never holds the service's interpreter while it answers hooks."""
    home = octybot_home(os.environ)
    outcome = auto_learn(home)
    report: dict[str, Any] = {"ran": outcome is not None}
    if outcome is not None:
        report.update(
            shipped=outcome.shipped,
            reason=outcome.reason,
            examples=outcome.examples,
            checked=outcome.checked,
        )
    print(json.dumps(report, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main()

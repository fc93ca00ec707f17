"""Helpers shared by the benchmarks: timing statistics, plain tables and an embedding cache."""

from __future__ import annotations

import hashlib
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from octygraph.store import Embedder


def median_p95(values_ms: Sequence[float]) -> tuple[float, float]:
    """Median and 95th percentile (nearest rank) of a list of timings."""
    if not values_ms:
        return float("nan"), float("nan")
    ordered = sorted(values_ms)
    rank = max(0, min(len(ordered) - 1, round(0.95 * len(ordered) + 0.5) - 1))
    return statistics.median(ordered), ordered[rank]


class Timer:
    """A context manager that records elapsed wall time in `seconds`."""

    seconds: float = 0.0

    def __enter__(self) -> Timer:
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self._start


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table (readable in a terminal, pasteable into README), floats with 3 decimals."""

    def cell(value: object) -> str:
        if isinstance(value, float):
            return f"{value:.3f}"
        return str(value)

    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def embed_cached(
    embedder: Embedder, texts: list[str], cache_dir: Path | None, name: str
) -> tuple[np.ndarray, float]:
    """Embed `texts`, reading/writing `cache_dir` when given; returns (vectors, seconds spent embedding).

    The cache key covers the model id and every text, so a changed document text or model never reuses
    stale vectors. Seconds are 0.0 on a cache hit.
    """
    digest = hashlib.sha256(embedder.model_id.encode())
    for text in texts:
        digest.update(b"\x00" + text.encode())
    path = cache_dir / f"{name}-{digest.hexdigest()[:20]}.npy" if cache_dir else None
    if path is not None and path.exists():
        return np.load(path), 0.0
    with Timer() as t:
        vectors = embedder.embed_array(texts)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, vectors)
    return vectors, t.seconds

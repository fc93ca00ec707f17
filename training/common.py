"""Shared by the training scripts: reading the sets, the held-out split, cached sentence vectors."""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"
HELD_OUT_SHARE = 0.15
"""Share of each set kept out of training (by a stable hash of the item's key) for tests and reports."""


def read_jsonl(path: Path) -> Iterator[dict]:
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except ValueError as exc:
                    raise SystemExit(f"{path}:{n}: not valid JSON ({exc})") from exc


def held_out(key: str) -> bool:
    """Whether an item belongs to the held-out part: the same answer on every machine and run."""
    digest = hashlib.sha256(key.strip().casefold().encode()).digest()
    return int.from_bytes(digest[:4], "big") / 2**32 < HELD_OUT_SHARE


_KNOWN: dict[str, np.ndarray] | None = None
"""The on-disk cache, read once per process and written once, when the process ends."""
CACHE_NAME = "vectors"
"""The cache file's stem. A model fitted on other texts keeps a cache of its own (`train_planted`):
the local model's vectors move in the last digits with the batch a text was embedded in, and a bar
read off quantiles of scores is sensitive to that."""


def _cache_path() -> Path:
    from octygraph.embeddings import LOCAL_MODEL_ID

    model = hashlib.sha256(LOCAL_MODEL_ID.encode()).hexdigest()[:8]
    return CACHE / f"{CACHE_NAME}-{model}.npz"


def _save_cache() -> None:
    """Write the cache whole to a temporary file that then replaces it: a run stopped mid-write
    leaves the old cache, never a broken one."""
    if not _KNOWN:
        return
    CACHE.mkdir(exist_ok=True)
    path = _cache_path()
    keys = sorted(_KNOWN)
    partial = path.with_name(path.name + ".partial.npz")
    np.savez(partial, texts=np.array(keys), vectors=np.stack([_KNOWN[k] for k in keys]))
    os.replace(partial, path)


def embed(texts: list[str]) -> np.ndarray:
    """Local-model vectors for `texts`, cached on disk by text (the model is fixed by the package)."""
    global _KNOWN
    # Imported on use: the embeddings module loads langchain_core, a second's import.
    from octygraph.embeddings import local_embeddings

    if _KNOWN is None:
        _KNOWN = {}
        path = _cache_path()
        if path.exists():
            try:
                with np.load(path, allow_pickle=False) as data:
                    _KNOWN = dict(zip(data["texts"].tolist(), data["vectors"], strict=True))
            except (OSError, ValueError, KeyError, zipfile.BadZipFile):
                _KNOWN = {}  # unreadable: computed again, and written anew at exit
    known = _KNOWN
    missing = sorted({t for t in texts if t not in known})
    if missing:
        vectors = local_embeddings().embed_array(missing)
        known.update(zip(missing, vectors, strict=True))
        _GROWN.set()
    return np.stack([known[t] for t in texts]) if texts else np.zeros((0, 384), np.float32)


_GROWN = threading.Event()


@atexit.register
def _save_if_grown() -> None:
    if _GROWN.is_set():
        _save_cache()


def precision_recall(y: np.ndarray, keep: np.ndarray) -> tuple[float, float]:
    tp = int((keep & y).sum())
    return tp / max(1, int(keep.sum())), tp / max(1, int(y.sum()))

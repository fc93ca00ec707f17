"""Local-model sentence vectors with a process-wide cache.

The gate and the relevance model both read the local model's vectors (they were fitted in that space,
whatever embedding model the store uses). A resident service sees the same memories on every prompt,
so their vectors are kept: a cache hit costs a dictionary lookup instead of a model call.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Final

import numpy as np

CACHE_SIZE: Final = 20_000
PENDING_WAIT_S: Final = 5.0
"""How long a caller waits for another thread's computation of the same text before doing its own."""
_CACHE: OrderedDict[str, np.ndarray] = OrderedDict()
_PENDING: dict[str, threading.Event] = {}
"""Texts another thread is embedding now, and the event it sets when they are cached."""
_LOCK = threading.Lock()


def cached_local_embed(texts: list[str]) -> np.ndarray:
    """Rows of L2-normalised local-model vectors for `texts`, computing only the unseen ones.

    A text another thread is embedding at that moment is waited for, not embedded twice: the service
    starts on a prompt's vector as the request arrives, and the pipeline asks for it soon after.
    """
    # Imported on first use: the embeddings module loads langchain_core, a second's import.
    from octygraph.embeddings import LOCAL_DIM, local_embeddings

    if not texts:
        return np.zeros((0, LOCAL_DIM), dtype=np.float32)
    with _LOCK:
        missing = [t for t in dict.fromkeys(texts) if t not in _CACHE]
        waits = {_PENDING[t] for t in missing if t in _PENDING}
        mine = [t for t in missing if t not in _PENDING]
        done = threading.Event()  # what callers that ask for `mine` meanwhile wait on
        for text in mine:
            _PENDING[text] = done
    if mine:
        try:
            fresh = local_embeddings().embed_array(mine)
            with _LOCK:
                for text, vec in zip(mine, fresh, strict=True):
                    _CACHE[text] = vec
                while len(_CACHE) > CACHE_SIZE:
                    _CACHE.popitem(last=False)
        finally:
            with _LOCK:
                for text in mine:
                    _PENDING.pop(text, None)
            done.set()
    for event in waits:
        event.wait(PENDING_WAIT_S)
    with _LOCK:
        rows = []
        for text in texts:
            vec = _CACHE.get(text)
            if vec is None:  # evicted meanwhile, or the other thread failed or is late
                vec = local_embeddings().embed_array([text])[0]
            rows.append(vec)
        return np.stack(rows)


def prime(pairs: Iterable[tuple[str, np.ndarray]]) -> int:
    """Seed the cache with vectors already computed by the local model (a store's); returns how many.

    Only texts the model embedded exactly as given belong here: a store embeds `content.strip()`.
    """
    added = 0
    with _LOCK:
        for text, vec in pairs:
            if len(_CACHE) >= CACHE_SIZE:
                break
            if text and text == text.strip() and text not in _CACHE:
                _CACHE[text] = vec
                added += 1
    return added

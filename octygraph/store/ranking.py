"""Hybrid ranking over candidate lists, the same whatever database found the candidates.

A backend gathers candidates (cosine from its vector index, BM25 from its keyword index) and the vectors
of the candidates; `fuse` turns them into one order. The constants were chosen by cross-validation over
two differently shaped sets (bench/README.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from octygraph.store.protocol import SearchMode

if TYPE_CHECKING:
    from octygraph.store.model import Hit, Node

# Hybrid adds the z-scores of both halves over the candidates, VECTOR_WEIGHT for the cosine side. Z-scores
# adapt to how peaked each half's scores are; min-max fusion fell behind on the long histories, reciprocal
# rank fusion on LoCoMo.
VECTOR_WEIGHT = 0.55
# Hubness reduction (local centring, akin to CSLS): a candidate's cosine is lowered by HUB_WEIGHT times its
# cosine to the mean direction of the best HUB_MAX_CANDIDATES candidates, so generic memories close to
# everything ("Cool, thanks!") stop crowding out specific ones. `Hit.cosine` stays the raw cosine.
HUB_WEIGHT = 0.35
HUB_MAX_CANDIDATES = 200
# BM25 with these parameters (FTS5's own bm25() fixes k1=1.2, b=0.75). A low k1 saturates term frequency
# early, so a long reply that repeats the query's words many times gains little over a short message that
# says them once; b=0.6 is a middle way between short turns, where longer ones carry more, and long
# replies, which should not win on length alone.
BM25_K1 = 0.3
BM25_B = 0.6


def zscore(values: np.ndarray) -> np.ndarray:
    """Standard scores over the candidates; all-equal values map to 0."""
    if values.size == 0:
        return values.astype(np.float32)
    sd = float(values.std())
    if sd < 1e-9:
        return np.zeros(values.shape, dtype=np.float32)
    return ((values - values.mean()) / sd).astype(np.float32)


def hubness(mat: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Each row's cosine to the mean direction of the rows `ref`: how generic it is among them."""
    if len(ref) < 3:
        return np.zeros(mat.shape[0], dtype=np.float32)
    centre = mat[ref].mean(axis=0)
    norm = float(np.linalg.norm(centre))
    if norm < 1e-9:
        return np.zeros(mat.shape[0], dtype=np.float32)
    # One matrix-vector product. A candidate-by-candidate kNN version (CSLS proper) ranked the same
    # within noise but needs a matrix product, which stalls for ~10 ms on a busy 2-core machine.
    return (mat @ (centre / norm)).astype(np.float32)


def candidate_ids(
    vector: dict[str, float], keyword: dict[str, float], mode: SearchMode, pool: int
) -> list[str]:
    """The candidates to rank: the keyword side's, the best `pool` by cosine, or both (vector first)."""
    if mode == "keyword":
        return list(keyword)
    top_vec = sorted(vector, key=vector.__getitem__, reverse=True)[:pool]
    if mode == "vector":
        return top_vec
    return list(dict.fromkeys([*top_vec, *keyword]))


def hub_scores(
    ids: Sequence[str], vecs: dict[str, np.ndarray], query: np.ndarray, vector: dict[str, float]
) -> np.ndarray:
    """Exact cosines of the candidates into `vector` (in place) and each candidate's hubness.

    Raises ValueError when the stored vectors have another dimension than the query.
    """
    hub = np.zeros(len(ids), dtype=np.float32)
    q = np.asarray(query, dtype=np.float32)
    have = [i for i, node_id in enumerate(ids) if node_id in vecs]
    if not have:
        return hub
    mat = np.stack([vecs[ids[i]] for i in have])
    if mat.shape[1] != q.shape[0]:
        raise ValueError("Stored vectors have another dimension than the query.")
    sims = mat @ q
    vector.update({ids[i]: float(c) for i, c in zip(have, sims, strict=True)})
    # The mean direction of the best candidates by cosine (bounded for big limits).
    ref = np.argsort(-sims, kind="stable")[:HUB_MAX_CANDIDATES]
    hub[have] = hubness(mat, ref)
    return hub


def fuse(
    ids: Sequence[str],
    vector: dict[str, float],
    keyword: dict[str, float],
    hub: np.ndarray,
    mode: SearchMode,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(fused score, cosine, normalised keyword score) of each candidate, in `ids` order."""
    cos = np.array([vector.get(i, 0.0) for i in ids], dtype=np.float32)
    kw = np.array([keyword.get(i, 0.0) for i in ids], dtype=np.float32)
    kw_norm = kw / kw.max() if kw.size and kw.max() > 0 else np.zeros_like(kw)
    if mode == "keyword":
        fused = kw_norm
    elif mode == "vector":
        fused = cos
    else:
        # The keyword side's z-scores are over the candidates it matched, floored at 0: candidates it
        # missed score 0 there, and a weak match never scores below them. Matches that all score the
        # same (a single one, say) count as one standard deviation each.
        lexical = np.zeros_like(kw)
        matched = kw > 0
        if matched.any():
            found = kw[matched]
            lexical[matched] = np.maximum(zscore(found), 0.0) if found.std() > 1e-9 else 1.0
        semantic = zscore(cos - HUB_WEIGHT * hub)
        fused = VECTOR_WEIGHT * semantic + (1 - VECTOR_WEIGHT) * lexical
    return fused, cos, kw_norm


def rank_hits(
    vector: dict[str, float],
    keyword: dict[str, float],
    *,
    mode: SearchMode,
    pool: int,
    qvec: np.ndarray | None,
    limit: int,
    min_cosine: float | None,
    include_superseded: bool,
    vectors_of: Callable[[list[str]], dict[str, np.ndarray]],
    cosines: Callable[[np.ndarray, list[str]], dict[str, float]],
    get_nodes: Callable[[list[str]], list[Node]],
) -> list[Hit]:
    """Fuse a backend's vector and keyword candidates into the best `limit` hits, in rank order.

    The backends differ in how they find candidates; what they do with them is this, whatever the store.
    """
    # Imported here: the node types live beside the SQLite backend, which imports this module.
    from octygraph.store.model import EmbeddingMismatch, Hit

    ids = candidate_ids(vector, keyword, mode, pool)
    if not ids:
        return []
    hub = np.zeros(len(ids), dtype=np.float32)
    if qvec is not None and mode == "hybrid":
        # Every candidate's vector: exact cosines, and the hubness correction needs them anyway.
        try:
            hub = hub_scores(ids, vectors_of(ids), qvec, vector)
        except ValueError:
            raise EmbeddingMismatch(
                "Stored vectors have another dimension than the query; run `octygraph reindex`."
            ) from None
    elif qvec is not None:
        missing = [i for i in ids if i not in vector]
        if missing:
            vector.update(cosines(qvec, missing))
    fused, cos, kw_norm = fuse(ids, vector, keyword, hub, mode)
    order = [int(i) for i in np.argsort(-fused, kind="stable")]
    if min_cosine is not None:
        order = [i for i in order if float(cos[i]) >= min_cosine]
    hits: list[Hit] = []
    # Load nodes in rank order, a few more than needed at a time (some may have been superseded).
    step = limit + 10
    for start in range(0, len(order), step):
        part = order[start : start + step]
        nodes = {n.id: n for n in get_nodes([ids[i] for i in part])}
        for idx in part:
            node = nodes.get(ids[idx])
            if node is None or (not include_superseded and node.superseded_by):
                continue
            hits.append(Hit(node, float(fused[idx]), float(cos[idx]), float(kw_norm[idx])))
            if len(hits) >= limit:
                return hits
    return hits

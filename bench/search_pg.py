"""Search at scale: PostgreSQL/pgvector HNSW beside SQLite (sqlite-vec) and a NumPy scan, same vectors.

Builds N memories the way bench/search.py does (deterministic texts of every node type; the first
`--unique` embedded by the local model, every other node a noisy copy of one of those vectors, so the
index holds N distinct, realistically clustered vectors), loads them into a PostgreSQL schema
(`PostgresStore.bulk_load`: COPY, then one HNSW build) and, unless `--no-sqlite`, into an SQLite file,
then times one search at a time through `store.search` on each, beside a NumPy brute-force scan of the
same matrix in RAM. The HNSW index is `--partitions` graphs (the store's default split), each searched
with `ef_search` and merged. Recall@10 is the HNSW answer's overlap with the exact top 10 (NumPy), for several
`ef_search` values.

The server is `--url`, else a private one started through pgserver in a temporary folder.

Usage: python bench/search_pg.py [--nodes 100000] [--queries 200] [--sqlite-queries 100] [--no-sqlite]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from _common import Timer, median_p95, table
from search import make_nodes, make_queries, noisy_copies, time_calls

from octygraph.embeddings import local_embeddings
from octygraph.store import MemoryStore, SearchMode
from octygraph.store.pg_schema import HNSW_PARTITIONS
from octygraph.store.postgres import PostgresStore

LIMIT = 10


def vectors_for(
    nodes: Sequence[Any], unique: int, embedder: Any, sigma: float, mix: bool
) -> np.ndarray:
    """The model's vectors of the first `unique` texts, noisy copies (or blends) of them for the rest.

    Copies (bench/search.py's way) put every node within `sigma` per dimension of one model vector: at a
    million nodes, 500 near-duplicates a text, whose order among themselves is decided by the noise
    alone, which no approximate index reproduces exactly. Blends (`mix`) put each node between two model
    vectors at a random weight, plus the same noise: a continuous spread, as a large real history has.
    """
    with Timer() as t:
        base = embedder.embed_array([n.content for n in nodes[:unique]]).astype(np.float32)
    print(f"embedded {unique} texts in {t.seconds:.1f} s", file=sys.stderr)
    count = len(nodes) - unique
    if count <= 0:
        return base
    if not mix:
        return np.concatenate([base, noisy_copies(base, count, sigma=sigma)]).astype(np.float32)
    rng = np.random.default_rng(5)
    out = np.empty((count, base.shape[1]), dtype=np.float32)
    for start in range(0, count, 100_000):
        n = min(100_000, count - start)
        a = base[rng.integers(0, unique, n)]
        b = base[rng.integers(0, unique, n)]
        w = rng.uniform(0.0, 1.0, (n, 1)).astype(np.float32)
        v = a * (1 - w) + b * w + rng.normal(0.0, sigma, (n, base.shape[1])).astype(np.float32)
        out[start : start + n] = v / np.linalg.norm(v, axis=1, keepdims=True)
    return np.concatenate([base, out]).astype(np.float32)


def exact_top(mat: np.ndarray, q: np.ndarray, k: int) -> np.ndarray:
    sims = mat @ q
    top = np.argpartition(-sims, k)[:k]
    return top[np.argsort(-sims[top])]


def searcher(store: Any, queries: list[str], qvecs: np.ndarray, mode: SearchMode) -> Callable:
    return lambda i: store.search(queries[i], mode=mode, limit=LIMIT, query_vec=qvecs[i])


# A returned hit within this cosine of the exact 10th counts as a near-tie in `recall`'s second figure.
TIE = 0.005


def recall(
    store: Any, queries: list[str], qvecs: np.ndarray, truth: list[set[str]], tenth: list[float]
) -> tuple[float, float]:
    """Recall@10 against the exact top 10, and the share of hits within TIE of the exact 10th cosine.

    The second figure tells misses that matter from swaps among near-equal neighbours.
    """
    found = close = 0
    for i, q in enumerate(queries):
        hits = store.search(q, mode="vector", limit=LIMIT, query_vec=qvecs[i])
        found += len({h.node.id for h in hits} & truth[i])
        close += sum(1 for h in hits if h.cosine >= tenth[i] - TIE)
    return found / (LIMIT * len(queries)), close / (LIMIT * len(queries))


def run(args: argparse.Namespace) -> str:
    embedder = local_embeddings()
    nodes = make_nodes(args.nodes)
    for i, node in enumerate(nodes):
        node.id = f"n{i:08d}"  # known ids: NumPy's answer maps to the stores' directly
    mat = vectors_for(nodes, min(args.unique, len(nodes)), embedder, args.sigma, args.mix)
    ids = [n.id for n in nodes]
    queries = make_queries(args.queries)
    qvecs = embedder.embed_array(queries).astype(np.float32)
    tops = [exact_top(mat, qvecs[i], LIMIT) for i in range(len(queries))]
    truth = [{ids[j] for j in top} for top in tops]
    tenth = [float(mat[top[-1]] @ qvecs[i]) for i, top in enumerate(tops)]
    lat: list[list[str]] = []
    info: list[list[str]] = [
        ["memories", f"{len(nodes):,}"],
        ["vector dimension", str(mat.shape[1])],
    ]

    def timed(name: str, fn: Callable[[int], object], count: int) -> None:
        p50, p95 = median_p95(time_calls(fn, count))
        lat.append([name, f"{p50:.2f}", f"{p95:.2f}", str(count)])
        print(f"{name}: p50 {p50:.2f} ms", file=sys.stderr)

    timed(
        "NumPy exact scan, top-10 (matrix in RAM)",
        lambda i: exact_top(mat, qvecs[i], LIMIT),
        len(queries),
    )

    server = None
    url = args.url
    if not url:
        import pgserver  # type: ignore[import-untyped]

        server = pgserver.get_server(
            Path(tempfile.mkdtemp(prefix="octypg-bench-")), cleanup_mode="delete"
        )
        url = server.get_uri()
    project = f"bench_{len(nodes)}"
    try:
        store = PostgresStore.open(url, embedder, project_id=project)
        store.drop_project()
        store.close()
        store = PostgresStore.open(url, embedder, project_id=project)
        with Timer() as load:
            build_s = store.bulk_load(
                nodes, mat, hnsw=(args.m, args.ef_construction), partitions=args.partitions
            )
        info.append(["PostgreSQL load (COPY)", f"{load.seconds - build_s:.0f} s"])
        info.append(
            [
                f"PostgreSQL HNSW build (m={args.m}, ef_construction={args.ef_construction}, "
                f"{args.partitions} partitions)",
                f"{build_s:.0f} s",
            ]
        )
        print(f"pg loaded in {load.seconds:.0f} s (HNSW {build_s:.0f} s)", file=sys.stderr)
        # Each given ef_search, then the store's own choice for this size (None).
        for ef in [*(int(x) for x in args.ef.split(",")), None]:
            store.ef_search = ef
            label = f"ef_search={ef}" if ef else f"store default ef_search={store.ef_for_size()}"
            r, near = recall(store, queries, qvecs, truth, tenth)
            info.append(
                [
                    f"PostgreSQL HNSW recall@10 vs exact, {label} (hits within {TIE} of 10th)",
                    f"{r:.3f} ({near:.3f})",
                ]
            )
            timed(
                f"PostgreSQL store.search vector (HNSW, {label})",
                searcher(store, queries, qvecs, "vector"),
                len(queries),
            )
        timed(
            "PostgreSQL store.search keyword (full-text BM25)",
            searcher(store, queries, qvecs, "keyword"),
            len(queries),
        )
        timed(
            f"PostgreSQL store.search hybrid (store default ef_search={store.ef_for_size()})",
            searcher(store, queries, qvecs, "hybrid"),
            len(queries),
        )
        info.append(
            ["PostgreSQL bytes (tables and indexes)", f"{store.stats()['file_bytes'] / 1e9:.2f} GB"]
        )
        if not args.keep:
            store.drop_project()
        store.close()
    finally:
        if server is not None:
            server.cleanup()

    if not args.no_sqlite:
        with tempfile.TemporaryDirectory(prefix="octy-bench-") as tmp:
            sq = MemoryStore.open(Path(tmp) / "memory.db", embedder)
            try:
                with Timer() as build:
                    sq.add_nodes(nodes, vectors=mat, batch_size=2000)
                info.append(["SQLite insert (FTS5, vec0)", f"{build.seconds:.0f} s"])
                print(f"sqlite built in {build.seconds:.0f} s", file=sys.stderr)
                n = min(args.sqlite_queries, len(queries))
                r, _ = recall(sq, queries[:n], qvecs[:n], truth[:n], tenth[:n])
                info.append(["SQLite vec0 recall@10 vs exact", f"{r:.3f}"])
                timed(
                    "SQLite store.search vector (sqlite-vec scan)",
                    searcher(sq, queries, qvecs, "vector"),
                    n,
                )
                timed(
                    "SQLite store.search keyword (FTS5 BM25)",
                    searcher(sq, queries, qvecs, "keyword"),
                    n,
                )
                timed("SQLite store.search hybrid", searcher(sq, queries, qvecs, "hybrid"), n)
            finally:
                sq.close()
    return (
        f"{len(nodes):,} memories ({'blends' if args.mix else 'copies'}, sigma {args.sigma}), "
        f"{len(queries)} queries, top {LIMIT}, one search at a time\n\n"
        + table(["search (one query)", "p50 ms", "p95 ms", "queries"], lat)
        + "\n\n"
        + table(["build / check", "value"], info)
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--sqlite-queries", type=int, default=100, help="SQLite scans are slow at scale"
    )
    parser.add_argument("--unique", type=int, default=2000, help="texts embedded by the model")
    parser.add_argument(
        "--url", default=None, help="postgresql://... (default: a pgserver of its own)"
    )
    parser.add_argument("--sigma", type=float, default=0.02, help="noise per dimension")
    parser.add_argument("--mix", action="store_true", help="blend two model vectors per node")
    parser.add_argument("--ef", default="40,100,200", help="hnsw.ef_search values to time")
    parser.add_argument("--m", type=int, default=16, help="HNSW m (links per node)")
    parser.add_argument("--ef-construction", type=int, default=64, help="HNSW ef_construction")
    parser.add_argument(
        "--partitions",
        type=int,
        default=HNSW_PARTITIONS,
        help="HNSW graphs the vectors are split into (ef_search applies to each)",
    )
    parser.add_argument("--no-sqlite", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the PostgreSQL schema afterwards")
    args = parser.parse_args(argv)
    if args.nodes < args.unique or args.queries < 1:
        print("--nodes must be at least --unique, and --queries at least 1.", file=sys.stderr)
        return 1
    started = time.perf_counter()
    print(run(args))
    print(f"\n(total {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

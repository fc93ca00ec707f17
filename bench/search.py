"""Search benchmark: bulk insert rate and search latency of a 20,000-node memory database.

Builds a database of short, realistic memories of every node type (generated deterministically), then times
one search at a time through `MemoryStore.search` (vector-only, keyword-only, hybrid) beside a NumPy
brute-force cosine scan of the same vectors, in the same run. Query encoding is timed separately.

Vectors: only the first `--unique` texts (default 2,000) go through the embedding model, inserted by
`add_nodes` on its normal path (model + SQLite, which gives the insert rate with embedding). Every other node
reuses the vector of one of those texts plus small Gaussian noise (sigma 0.02 per dimension, renormalised),
so the vector index holds 20,000 distinct, realistically clustered vectors without ~3 minutes of embedding;
these nodes are inserted with their vectors given (the insert rate without embedding). This is a latency
benchmark: the reused vectors do not match their texts, so it says nothing about ranking quality
(see bench/locomo.py for that).

Usage: python bench/search.py [--nodes 20000] [--queries 200] [--db PATH] [--unique 2000]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from _common import Timer, median_p95, table

from octygraph.embeddings import local_embeddings
from octygraph.store import MemoryStore, NewNode
from octygraph.store.protocol import SearchMode

PEOPLE = (
    "Peter Maria Sam Priya Jonas Aiko Carlos Fatima Liam Olga Chen Nadia Tom Grace Omar Lena Raj Sofia "
    "Ben Yuki Marco Hana Ivan Zoe Felix Amara Diego Ingrid Kofi Mei"
).split()
ORGS = (
    "Anderson Baker Cobalt Delta Evergreen Fjord Granite Harbor Ionic Juniper Kestrel Lumen Meridian "
    "Nimbus Orchard Pinnacle Quarry Redwood Summit Tidal"
).split()
PROJECTS = (
    "Falcon Heron Atlas Beacon Comet Drift Ember Flux Glacier Horizon Ion Jade Kite Lotus Mosaic Nova "
    "Orbit Prism Quill Ripple"
).split()
TOOLS = (
    "Postgres Redis Kafka Terraform Docker Kubernetes Grafana Sentry pytest ruff Jenkins Airflow "
    "Snowflake dbt Figma Jira Slack Vault nginx Celery"
).split()
PLACES = "Berlin Lisbon Austin Toronto Osaka Nairobi Dublin Warsaw Denver Melbourne".split()
ENVS = ("staging", "production", "the dev cluster", "the QA environment")
DOCS = (
    "quarterly report",
    "design doc",
    "migration plan",
    "onboarding guide",
    "incident review",
    "pricing proposal",
    "API spec",
    "security audit",
    "release notes",
    "budget sheet",
)
TOPICS = (
    "pricing",
    "the renewal",
    "data retention",
    "the SLA",
    "latency",
    "hiring",
    "the roadmap",
    "on-call rotation",
    "the outage",
    "GDPR requests",
)
FOODS = ("peanuts", "gluten", "shellfish", "dairy", "sesame")
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
ADJ = ("too slow", "great", "overkill", "reliable", "hard to debug", "the best option")

TEMPLATES: dict[str, tuple[tuple[str | None, str], ...]] = {
    "entity": (
        ("person", "{person} {org2}"),
        ("org", "{org} Ltd"),
        ("project", "Project {project} {n}"),
        ("tool", "{tool} {n}"),
        ("place", "{place} office floor {n}"),
    ),
    "fact": (
        ("definitional", "{person} handles the {org} account since {year}"),
        ("definitional", "The {env} {tool} password rotates every {n} days"),
        ("definitional", "{person} is allergic to {food} and sits on floor {n}"),
        ("causal", "{project} deploys failed because {tool} ran out of disk on node {n}"),
        ("comparative", "{tool} is faster than {tool2} for {project} batch jobs by {n} percent"),
        ("definitional", "{project} stores its queue in {tool} on port {port}"),
        ("conditional", "If {tool} alerts fire in {env}, page {person} first (runbook {n})"),
        ("definitional", "Invoices for {org} are sent every {n} weeks to {person}"),
    ),
    "event": (
        ("action", "{person} finished the {doc} for {org} on {day} ({n} pages)"),
        ("outcome", "Deployed {project} v{n}.{m} to {env} on {day}"),
        ("conversation", "Call with {org} about {topic} went well; follow-up {n}"),
        ("incident", "{tool} outage in {env} lasted {n} minutes on {day}"),
        ("decision", "Team decided to move {project} from {tool} to {tool2} (ticket {port})"),
    ),
    "opinion": (
        (None, "{person} thinks {tool} is {adj} for {project}"),
        (None, "I prefer {tool} over {tool2} for {topic} work, mostly for {project} {n}"),
        (None, "{person} finds the {doc} for {org} {adj}"),
    ),
    "instruction": (
        ("rule", "Always run {tool} checks before deploying {project} to {env}"),
        ("rule", "Never share the {org} {doc} outside the team (policy {n})"),
        ("tool_usage", "Use {tool} for {topic} dashboards in {project}, not {tool2}"),
        ("process", "To rotate {tool} keys: open a ticket, wait {n} hours, then tell {person}"),
    ),
    "plan": (
        ("scheduled", "Ship {project} v{n} to {env} next {day}"),
        ("intended", "{person} will review the {doc} for {org} before {day} {n}"),
        ("requested", "Remind me to call {person} about {topic} on {day} at {n}:00"),
    ),
}
TYPE_SHARE = {
    "entity": 0.1,
    "fact": 0.3,
    "event": 0.3,
    "opinion": 0.1,
    "instruction": 0.1,
    "plan": 0.1,
}
QUERY_TEMPLATES = (
    "who handles the {org} account",
    "what does {project} use for its queue",
    "food restrictions for {person}",
    "when is {project} shipping to {env}",
    "what happened with {tool} in {env}",
    "rules before deploying {project}",
    "what does {person} think about {tool}",
    "{org} {doc} status",
    "how do I rotate {tool} keys",
    "billing schedule for {org}",
)


def _fill(rng: random.Random, template: str) -> str:
    tool, tool2 = rng.sample(TOOLS, 2)
    return template.format(
        person=rng.choice(PEOPLE),
        org=rng.choice(ORGS),
        org2=rng.choice(ORGS),
        project=rng.choice(PROJECTS),
        tool=tool,
        tool2=tool2,
        place=rng.choice(PLACES),
        env=rng.choice(ENVS),
        doc=rng.choice(DOCS),
        topic=rng.choice(TOPICS),
        food=rng.choice(FOODS),
        day=rng.choice(DAYS),
        adj=rng.choice(ADJ),
        year=rng.randint(2015, 2026),
        n=rng.randint(2, 99),
        m=rng.randint(0, 9),
        port=rng.randint(1024, 9999),
    )


def make_nodes(count: int, seed: int = 7) -> list[NewNode]:
    """`count` distinct memories of every type, the same for the same seed."""
    rng = random.Random(seed)
    types = list(TYPE_SHARE)
    weights = [TYPE_SHARE[t] for t in types]
    seen: set[str] = set()
    out: list[NewNode] = []
    while len(out) < count:
        node_type = rng.choices(types, weights)[0]
        subtype, template = rng.choice(TEMPLATES[node_type])
        text = _fill(rng, template)
        if text in seen:
            continue
        seen.add(text)
        day = rng.randint(0, 364)
        created = f"2025-{1 + day // 31 % 12:02d}-{1 + day % 28:02d} {rng.randint(8, 19):02d}:00:00"
        out.append(NewNode(node_type, text, subtype=subtype, created_at=created))
    return out


def make_queries(count: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    return [_fill(rng, QUERY_TEMPLATES[i % len(QUERY_TEMPLATES)]) for i in range(count)]


def noisy_copies(base: np.ndarray, count: int, seed: int = 3, sigma: float = 0.02) -> np.ndarray:
    """`count` unit vectors, each a base vector (cycled) plus Gaussian noise."""
    rng = np.random.default_rng(seed)
    picks = base[np.arange(count) % len(base)]
    vecs = picks + rng.normal(0.0, sigma, size=picks.shape).astype(np.float32)
    return (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)).astype(np.float32)


def build(store: MemoryStore, nodes: Sequence[NewNode], unique: int) -> dict[str, float]:
    """Insert `nodes`: the first `unique` through the model, the rest with reused vectors."""
    unique = min(unique, len(nodes))
    with Timer() as with_model:
        created = store.add_nodes(nodes[:unique], batch_size=256)
    # Read back the vectors the model made, to reuse them for the other nodes.
    ids = {n.id for n in created}
    all_ids, mat = load_matrix(store)
    base = mat[[i for i, node_id in enumerate(all_ids) if node_id in ids]]
    rest = nodes[unique:]
    with Timer() as given:
        if rest:
            store.add_nodes(rest, vectors=noisy_copies(base, len(rest)), batch_size=1000)
    return {
        "embedded_nodes": float(unique),
        "embedded_s": with_model.seconds,
        "given_nodes": float(len(rest)),
        "given_s": given.seconds,
    }


def load_matrix(store: MemoryStore) -> tuple[list[str], np.ndarray]:
    """All current node ids and their vectors, as the brute-force baseline holds them in memory."""
    pairs = list(store.vectors_by_id(current_only=True))
    if not pairs:
        return [], np.zeros((0, store.embedder.dim), dtype=np.float32)
    return [p[0] for p in pairs], np.stack([p[1] for p in pairs])


def time_calls(fn: Callable[[int], object], count: int, warmup: int = 3) -> list[float]:
    """Milliseconds of `fn(i)` for i in range(count), after a few warm-up calls."""
    for i in range(min(warmup, count)):
        fn(i)
    out = []
    for i in range(count):
        start = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - start) * 1000)
    return out


def run(db: Path, n_nodes: int, n_queries: int, unique: int, limit: int) -> str:
    embedder = local_embeddings()
    rows: list[list[object]] = []
    store = MemoryStore.open(db, embedder)
    try:
        existing = store.stats()["nodes"]
        if existing == 0:
            nodes = make_nodes(n_nodes)
            info = build(store, nodes, unique)
            total_s = info["embedded_s"] + info["given_s"]
            rows += [
                [
                    "insert with embedding (model + SQLite)",
                    f"{info['embedded_nodes'] / info['embedded_s']:.0f} nodes/s "
                    f"({info['embedded_nodes']:.0f} in {info['embedded_s']:.1f} s)",
                ],
                [
                    "insert, vectors given (SQLite, FTS5, vec0)",
                    f"{info['given_nodes'] / max(info['given_s'], 1e-9):.0f} nodes/s "
                    f"({info['given_nodes']:.0f} in {info['given_s']:.1f} s)",
                ],
                ["build total", f"{n_nodes} nodes in {total_s:.1f} s"],
            ]
        else:
            rows.append(["insert", f"reused {existing} nodes in {db}"])
        n_total = store.stats()["nodes"]
        queries = make_queries(n_queries)
        with Timer() as batch:
            qvecs = embedder.embed_array(queries)
        encode = time_calls(lambda i: embedder.embed_array([queries[i]]), n_queries)
        with Timer() as load:
            ids, mat = load_matrix(store)

        def brute(i: int) -> list[str]:
            sims = mat @ qvecs[i]
            top = np.argpartition(-sims, limit)[:limit]
            return [ids[j] for j in top[np.argsort(-sims[top])]]

        def searcher(mode: SearchMode, with_vec: bool = True) -> Callable[[int], object]:
            return lambda i: store.search(
                queries[i], mode=mode, limit=limit, query_vec=qvecs[i] if with_vec else None
            )

        timings: list[tuple[str, list[float]]] = [
            ("encode one query (MiniLM int8)", encode),
            ("NumPy brute-force cosine, top-k (matrix in RAM)", time_calls(brute, n_queries)),
            ("store.search vector (sqlite-vec)", time_calls(searcher("vector"), n_queries)),
            ("store.search keyword (FTS5 BM25)", time_calls(searcher("keyword"), n_queries)),
            ("store.search hybrid", time_calls(searcher("hybrid"), n_queries)),
            (
                "store.search hybrid incl. query encoding",
                time_calls(searcher("hybrid", with_vec=False), n_queries),
            ),
        ]
        # The vec0 scan and the NumPy scan are both exact: their top-k should agree.
        agree = float(
            np.mean(
                [
                    len(
                        {
                            h.node.id
                            for h in store.search(
                                queries[i], mode="vector", limit=limit, query_vec=qvecs[i]
                            )
                        }
                        & set(brute(i))
                    )
                    / limit
                    for i in range(n_queries)
                ]
            )
        )
    finally:
        store.close()
    lat_rows = [[name, f"{median_p95(t)[0]:.2f}", f"{median_p95(t)[1]:.2f}"] for name, t in timings]
    rows += [
        ["queries batch-encoded", f"{n_queries} in {batch.seconds:.2f} s"],
        [
            "vectors loaded for NumPy",
            f"{len(ids)} x {mat.shape[1]} in {load.seconds * 1000:.0f} ms",
        ],
        [f"vector top-{limit} overlap, sqlite-vec vs NumPy", f"{agree:.3f}"],
    ]
    return (
        f"{n_total} nodes, {n_queries} queries, limit {limit}\n\n"
        + table(["search (one query)", "median ms", "p95 ms"], lat_rows)
        + "\n\n"
        + table(["build / check", "value"], rows)
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=20000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--unique",
        type=int,
        default=2000,
        help="texts embedded by the model; the other nodes reuse their vectors + noise",
    )
    parser.add_argument("--limit", type=int, default=10, help="hits per search")
    parser.add_argument(
        "--db",
        type=Path,
        default=None,
        help="database file to build (or reuse, when it already holds nodes)",
    )
    args = parser.parse_args(argv)
    if args.nodes < 1 or args.queries < 1 or args.unique < 1:
        print("--nodes, --queries and --unique must be at least 1.", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="octy-bench-") as tmp:
        db = args.db or Path(tmp) / "memory.db"
        print(run(db, args.nodes, args.queries, args.unique, args.limit))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Writers through the team server: 3 processes post prompts at once, and nothing may be lost.

Starts `octygraph serve --http`'s server in this process (memories on PostgreSQL: `--url`, else a private
server through pgserver), then 3 client processes each post `--prompts` telling prompts to
`/v1/projects/{project}/run` (offline pipeline) at the same time. Afterwards every told fact must be in
the store. Prints requests per second and per-request latency.

Usage: python bench/team_server.py [--clients 3] [--prompts 20] [--url postgresql://...]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from _common import median_p95, table

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

PROJECT = "bench_team"


def fact(worker: int, i: int) -> str:
    return f"Teammate {worker} decided that service {worker}{i:02d} uses port {8000 + 100 * worker + i}"


def client(url: str, token: str, worker: int, prompts: int, out: multiprocessing.Queue) -> None:
    times: list[float] = []
    codes: list[int] = []
    for i in range(prompts):
        body = json.dumps({"prompt": fact(worker, i), "offline": True}).encode()
        request = urllib.request.Request(
            f"{url}/v1/projects/{PROJECT}/run",
            data=body,
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        started = time.perf_counter()
        try:
            with urllib.request.urlopen(request, timeout=300) as response:
                codes.append(response.status)
        except urllib.error.HTTPError as exc:
            codes.append(exc.code)
        times.append((time.perf_counter() - started) * 1000)
    out.put((worker, codes, times))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=3)
    parser.add_argument("--prompts", type=int, default=20, help="prompts per client")
    parser.add_argument("--url", default=None, help="postgresql://... (default: pgserver)")
    args = parser.parse_args(argv)

    from octygraph.embeddings import local_embeddings
    from octygraph.service.http import TeamServer, Tokens, add_token, make_server
    from octygraph.store.postgres import PostgresStore

    work = Path(tempfile.mkdtemp(prefix="octy-team-"))
    server = None
    url = args.url
    if not url:
        import pgserver  # type: ignore[import-untyped]

        server = pgserver.get_server(work / "pg", cleanup_mode="delete")
        url = server.get_uri()
    embedder = local_embeddings()
    fresh = PostgresStore.open(url, embedder, project_id=PROJECT)
    fresh.drop_project()
    fresh.close()
    token = add_token(work / "tokens", [PROJECT])
    env = {
        **os.environ,
        "OCTYBOT_HOME": str(work / "home"),
        "OCTY_DATABASE_URL": url,
        "OCTY_EMBEDDINGS": "local",
    }
    http = make_server("127.0.0.1", 0, TeamServer(env, Tokens.load(work / "tokens")))
    threading.Thread(target=http.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{http.server_address[1]}"
    ctx = multiprocessing.get_context("spawn")
    queue: multiprocessing.Queue = ctx.Queue()
    procs = [
        ctx.Process(target=client, args=(base, token, w, args.prompts, queue))
        for w in range(args.clients)
    ]
    started = time.perf_counter()
    for p in procs:
        p.start()
    results = [queue.get(timeout=1800) for _ in procs]
    for p in procs:
        p.join()
    wall = time.perf_counter() - started
    http.shutdown()
    store = PostgresStore.open(url, embedder, project_id=PROJECT)
    try:
        contents = [n.content for n in store.iter_all()]
        stats = store.stats()
        missing = [
            fact(w, i)
            for w in range(args.clients)
            for i in range(args.prompts)
            if not any(fact(w, i) in c for c in contents)
        ]
        store.drop_project()
    finally:
        store.close()
        if server is not None:
            server.cleanup()
    codes = [c for _, cs, _ in results for c in cs]
    times = [t for _, _, ts in results for t in ts]
    p50, p95 = median_p95(times)
    total = args.clients * args.prompts
    print(
        table(
            ["team server, writers at once", "value"],
            [
                ["client processes x prompts", f"{args.clients} x {args.prompts} = {total}"],
                ["HTTP 200 answers", f"{codes.count(200)} of {len(codes)}"],
                ["told facts found in the store afterwards", f"{total - len(missing)} of {total}"],
                ["memories stored (facts and entities)", str(stats["nodes"])],
                ["wall time", f"{wall:.1f} s ({total / wall:.2f} prompts/s)"],
                ["per-request latency p50 / p95", f"{p50:.0f} / {p95:.0f} ms"],
            ],
        )
    )
    if missing:
        print("missing:", *missing, sep="\n  ")
    return 0 if not missing and codes.count(200) == total else 1


if __name__ == "__main__":
    raise SystemExit(main())

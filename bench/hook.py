"""Prompt-hook latency as Claude Code sees it: a new `octygraph hook prompt` process, JSON on stdin.

Builds (or reuses) a `noisy-large` project database, then times the no-LLM prompt hook with the resident
service warm and without it (`OCTY_NO_SERVICE=1`, the whole pipeline in the hook process), alternating
the two so both see the same machine load. Also prints the floor (a bare Python start and the hook
client on a payload it skips) and the time spent inside the service.

    python bench/hook.py --runs 20 --nodes 20000
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from _common import median_p95, table

from octygraph.service import client

PROJECT = "bench"
_ANSWERED = re.compile(r"prompt answered in (\d+) ms")
PROMPTS = (
    "Who handles the Anderson account?",
    "What database does the billing service run on?",
    "Who leads QA and where is the regression suite?",
    "What is the public API rate limit?",
    "Who handles the Globex account these days?",
    "I'm about to deploy the billing service, anything I should know?",
    "Where is the deployment runbook?",
    "Who approves new vendor contracts?",
)
# Nothing may reach a provider: the no-LLM path is what is measured.
_LLM_VARS = (
    "OPENROUTER_API_KEY",
    "OCTY_LLM_BASE_URL",
    "OCTY_LLM_API_KEY",
    "CLOUDFLARE_API_TOKEN",
    "CF_ACCOUNT_ID",
    "ANTHROPIC_API_KEY",
    "VOYAGE_API_KEY",
    "WORKER_URL",
    "LANGSMITH_TRACING",
    "LANGCHAIN_TRACING_V2",
    "DB_PATH",
    "OCTY_NO_SERVICE",
    "OCTY_NO_HOOKS",
)


def default_cache() -> Path:
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "octygraph" / "bench"


def build_profile(db: Path, nodes: int) -> None:
    """`noisy-large` with `nodes` items, from the profiles package when it is there."""
    from octygraph.embeddings import local_embeddings

    started = time.perf_counter()
    print(f"Building a {nodes}-node noisy-large database at {db} (once; it is reused) ...")
    try:
        from octygraph.profiles.manager import build_database, builtin_graph

        build_database(db, builtin_graph("noisy-large", size=nodes), local_embeddings())
    except ImportError:
        from octygraph.store import MemoryStore, NewNode

        db.parent.mkdir(parents=True, exist_ok=True)
        kinds = ("fact", "event", "instruction", "opinion")
        with MemoryStore.open(db, local_embeddings()) as store:
            store.add_nodes(
                [
                    NewNode(
                        node_type=kinds[i % 4], content=f"Team note {i}: service {i % 97} check"
                    )
                    for i in range(nodes)
                ]
            )
    print(f"  built in {time.perf_counter() - started:.0f} s")


def hook_command() -> list[str]:
    """The installed `octygraph` script when it is the thin entry, else the same entry via -m."""
    script = Path(sys.executable).parent / "octygraph"
    try:
        if "octygraph.entry" in script.read_text(errors="replace"):
            return [str(script)]
    except OSError:
        pass
    return [sys.executable, "-m", "octygraph.entry"]


def time_hook(command: list[str], env: dict[str, str], cwd: Path, prompt: str) -> tuple[float, str]:
    payload = json.dumps(
        {
            "session_id": "bench",
            "transcript_path": str(cwd / "t.jsonl"),
            "cwd": str(cwd),
            "hook_event_name": "UserPromptSubmit",
            "prompt": prompt,
        }
    )
    started = time.perf_counter()
    result = subprocess.run(
        [*command, "hook", "prompt"],
        input=payload,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )
    return (time.perf_counter() - started) * 1000, result.stdout


def wait_warm(home: Path, timeout_s: float = 120) -> dict[str, object]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        health = client.health_at(home)
        if health.get("running") and health.get("warm"):
            return health
        time.sleep(0.1)
    raise SystemExit("The service did not start; see its log under OCTYBOT_HOME/debug.")


def run(db: Path, runs: int) -> str:
    home = Path(tempfile.mkdtemp(prefix="oyb", dir="/tmp"))  # short: the socket path must fit
    work = home / "work"
    work.mkdir()
    memory = home / "projects" / PROJECT / "memory"
    memory.mkdir(parents=True)
    shutil.copy2(db, memory / "memory.db")
    env = {k: v for k, v in os.environ.items() if k not in _LLM_VARS}
    env.update({"OCTYBOT_HOME": str(home), "OCTYBOT_PROJECT": PROJECT, "OCTY_SERVE_IDLE_S": "600"})
    cold_env = {**env, "OCTY_NO_SERVICE": "1"}
    command = hook_command()
    log = home / "serve.log"
    with log.open("wb") as sink:
        service = subprocess.Popen(
            [sys.executable, "-m", "octygraph", "serve"],
            env=env,
            cwd=home,
            stdout=sink,
            stderr=sink,
            start_new_session=True,
        )
    try:
        wait_warm(home)
        # One untimed call each: the service opens the database, the OS caches its pages.
        time_hook(command, env, work, PROMPTS[0])
        time_hook(command, cold_env, work, PROMPTS[0])
        served_before = int(client.health_at(home).get("requests") or 0)
        warm: list[float] = []
        cold: list[float] = []
        floor: list[float] = []
        skipped: list[float] = []
        empty = 0
        for i in range(runs):
            prompt = PROMPTS[i % len(PROMPTS)]
            ms, out = time_hook(command, env, work, prompt)
            warm.append(ms)
            empty += not out
            ms, out = time_hook(command, cold_env, work, prompt)
            cold.append(ms)
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            floor.append((time.perf_counter() - started) * 1000)
        served = int(client.health_at(home).get("requests") or 0) - served_before
        # Time inside the service for the timed calls (its log has one line per call).
        inside = [float(ms) for ms in _ANSWERED.findall(log.read_text(errors="replace"))][1:]
        # The round trip alone: a payload the service skips (a slash command) without any pipeline.
        for _ in range(runs):
            skipped.append(time_hook(command, env, work, "/octybot memory list")[0])
    finally:
        client.stop_service(home, timeout_s=30)
        if service.poll() is None:
            service.kill()
        service.wait(timeout=30)
        shutil.rmtree(home, ignore_errors=True)
    rows = [
        ["hook, service warm", *median_p95(warm)],
        ["hook, no service (OCTY_NO_SERVICE=1)", *median_p95(cold)],
        ["  of which inside the service", *median_p95(inside)],
        ["  round trip only (a slash command the service skips)", *median_p95(skipped)],
        ["  python -c pass", *median_p95(floor)],
    ]
    notes = (
        f"{runs} runs per row, {served}/{runs} warm calls answered by the service, "
        f"{empty} warm calls without context; command: {' '.join(command)} hook prompt"
    )
    return table(["prompt hook (new process, JSON on stdin)", "median ms", "p95 ms"], rows) + (
        "\n\n" + notes
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="timed calls per mode")
    parser.add_argument("--nodes", type=int, default=20000, help="size of the noisy-large database")
    parser.add_argument(
        "--db",
        type=Path,
        default=None,
        help="profile database to reuse or build (default: in the user cache, one per size)",
    )
    args = parser.parse_args(argv)
    if args.runs < 1 or args.nodes < 1:
        print("--runs and --nodes must be at least 1.", file=sys.stderr)
        return 1
    db = args.db or default_cache() / f"noisy-large-{args.nodes}.db"
    if not db.exists():
        build_profile(db, args.nodes)
    print(f"{args.nodes} nodes ({db})\n")
    print(run(db, args.runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

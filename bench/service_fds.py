"""Open descriptors of the real service as it serves more and more new projects.

Starts `octygraph serve` in a fresh OCTYBOT_HOME (no model configured: the offline path), then for each
of N new working folders sends a prompt hook (answered) and a Stop hook (handed off), and prints the
service's open descriptors (`/proc/<pid>/fd`) and its open stores at intervals, then once the hand-offs
are done. `--max-stores` sets `OCTY_SERVE_MAX_STORES` for the service (a very large value behaves as the
old, uncapped pool did). `--parallel N` sends the hooks of N projects at once (one thread each) and
also prints the highest descriptor count seen (sampled every 50 ms).

    python bench/service_fds.py                      # 500 projects, default cap (32)
    python bench/service_fds.py --max-stores 1000000 # as without a cap
    python bench/service_fds.py --projects 300 --parallel 16
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from octygraph.service import client, protocol

_KEYS = (
    "OPENROUTER_API_KEY",
    "OCTY_LLM_BASE_URL",
    "OCTY_LLM_API_KEY",
    "ANTHROPIC_API_KEY",
    "VOYAGE_API_KEY",
    "CLOUDFLARE_API_TOKEN",
    "OCTY_DATABASE_URL",
    "OCTY_SERVER_URL",
    "LANGSMITH_TRACING",
    "LANGCHAIN_TRACING_V2",
)


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _payload(event: str, cwd: Path, i: int) -> bytes:
    base: dict[str, Any] = {"session_id": f"fd{i}", "cwd": str(cwd)}
    if event == "prompt":
        base |= {
            "hook_event_name": "UserPromptSubmit",
            "prompt": f"Always run the contract tests before deploying service {i}.",
        }
    else:
        base |= {
            "hook_event_name": "Stop",
            "stop_hook_active": False,
            "last_assistant_message": f"I moved service {i} to PostgreSQL 16 and updated its README.",
        }
    return json.dumps(base).encode()


def _health(home: Path) -> dict[str, Any]:
    return client.health_at(home, timeout_s=10)


def _settled(pid: int, home: Path, timeout_s: float = 120) -> int:
    """Descriptors once the hand-offs are done (unchanged over three samples a second apart)."""
    end = time.monotonic() + timeout_s
    last: list[int] = []
    while time.monotonic() < end:
        last = (last + [fd_count(pid)])[-3:]
        if len(last) == 3 and len(set(last)) == 1:
            break
        time.sleep(1)
    return last[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--projects", type=int, default=500)
    parser.add_argument("--every", type=int, default=50, help="print a sample every N projects")
    parser.add_argument("--max-stores", type=int, default=None, help="OCTY_SERVE_MAX_STORES")
    parser.add_argument("--parallel", type=int, default=1, help="projects whose hooks run at once")
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="octy-fds-"))
    home = root / "home"
    env = {k: v for k, v in os.environ.items() if k not in _KEYS}
    env |= {"OCTYBOT_HOME": str(home), "OCTY_HOOK_BUDGET_S": "60"}
    if args.max_stores is not None:
        env["OCTY_SERVE_MAX_STORES"] = str(args.max_stores)
    proc = subprocess.Popen(
        [sys.executable, "-m", "octygraph", "serve"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        end = time.monotonic() + 180
        while not _health(home).get("running"):
            if proc.poll() is not None or time.monotonic() > end:
                print("The service did not start; see its log in", home)
                return 1
            time.sleep(0.5)
        pid = proc.pid
        sock = protocol.socket_path(str(home))
        print(f"service pid {pid}, cap {env.get('OCTY_SERVE_MAX_STORES', 'default (32)')}")
        print(
            f"{'projects':>8} {'fds':>6} {'open stores':>12} {'checkpoint files':>16} {'active':>7}"
        )

        def sample(n: int, fds: int | None = None) -> None:
            health = _health(home)
            count = fds if fds is not None else fd_count(pid)
            stores = health.get("open_connections", "?")
            files = health.get("checkpoint_files", "?")
            print(
                f"{n:>8} {count:>6} {stores!s:>12} {files!s:>16} {health.get('active', '?')!s:>7}"
            )

        peak = [fd_count(pid)]
        sampling = threading.Event()

        def watch() -> None:
            while not sampling.is_set():
                try:
                    peak[0] = max(peak[0], fd_count(pid))
                except OSError:
                    return
                time.sleep(0.05)

        def project(i: int) -> None:
            work = root / "work" / f"project-{i:04d}"
            work.mkdir(parents=True)
            for event in ("prompt", "stop"):
                message = client.hook_request(event, _payload(event, work, i), env, 0.0)
                message["cwd"] = str(work)
                client.exchange(sock, message, 60)

        sample(0)
        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        t0 = time.monotonic()
        with ThreadPoolExecutor(max(1, args.parallel)) as threads:
            for i, _ in enumerate(threads.map(project, range(1, args.projects + 1)), 1):
                if i % args.every == 0:
                    sample(i)
        took = time.monotonic() - t0
        settled = _settled(pid, home)
        sampling.set()
        print(f"after the hand-offs settled: {settled} descriptors ({took:.0f} s of hooks)")
        print(f"highest descriptor count seen: {peak[0]}")
        sample(args.projects, settled)
    finally:
        client.stop_service(home, timeout_s=30)
        if proc.poll() is None:
            proc.terminate()
            proc.wait(30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

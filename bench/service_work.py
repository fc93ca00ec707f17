"""The service's own work per warm prompt, in this process, and the contexts it injects.

Runs `hooks.handle` as the resident service does (its store pool and checkpointer pool, the no-LLM path)
over `hook.py`'s distinct prompts on a copy of the `noisy-large` bench database, after two warm-up
prompts. Prints the median and p90 of the time to the answer and the median of each stage's time (from
the runs' traces). `--save FILE` writes the injected context of every prompt; `--compare FILE` checks a
change against such a file: the hook's output must stay the same.

    python bench/service_work.py --save before.json     # on the old code
    python bench/service_work.py --compare before.json  # on the new one
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

# First: the service module sets its BLAS thread count before NumPy loads, as in the service.
from octygraph.service.server import Service  # isort: skip

from hook import _LLM_VARS, PROJECT, PROMPTS, default_cache, percentile


async def _answers(home: Path, work: Path) -> tuple[dict[str, str], list[float]]:
    from octygraph.service import protocol
    from octygraph.service.checkpointers import CheckpointerPool
    from octygraph.session import hooks

    service = Service(home, 600)
    service._warm_up()
    checkpointers = CheckpointerPool()
    env = protocol.service_env(os.environ, dict(os.environ))

    async def one(prompt: str) -> tuple[float, str]:
        payload = {
            "session_id": "bench",
            "transcript_path": str(work / "t.jsonl"),
            "cwd": str(work),
            "hook_event_name": "UserPromptSubmit",
            "prompt": prompt,
        }
        started = time.monotonic()
        reply = await hooks.handle(
            "prompt",
            json.dumps(payload).encode(),
            env=env,
            cwd=str(work),
            stores=service._pool.lease,
            started=started,
            checkpointers=checkpointers.lease,
        )
        took = (time.monotonic() - started) * 1000
        await reply.settle()  # the store half and the trace, after the answer, as the service does
        await asyncio.to_thread(reply.finish)
        return took, reply.stdout

    for prompt in PROMPTS[:2]:
        await one(prompt)
    for thread in threading.enumerate():  # the database's background priming (see service/pool.py)
        if thread.name == "octy-prime":
            thread.join()
    contexts: dict[str, str] = {}
    times: list[float] = []
    for prompt in PROMPTS[2:]:
        took, out = await one(prompt)
        times.append(took)
        contexts[prompt] = out
    return contexts, times


def stage_medians(debug_dir: Path) -> dict[str, float]:
    stages: dict[str, list[float]] = {}
    for path in debug_dir.rglob("*.json"):
        try:
            trace: dict[str, Any] = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        for stage, ms in (trace.get("timings_ms") or {}).items():
            if isinstance(ms, int | float):
                stages.setdefault(stage, []).append(ms)
    return {k: statistics.median(v) for k, v in stages.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=20000, help="size of the noisy-large database")
    parser.add_argument("--save", type=Path, help="write the injected contexts to this JSON file")
    parser.add_argument("--compare", type=Path, help="compare the contexts with this JSON file")
    args = parser.parse_args()
    db = default_cache() / f"noisy-large-{args.nodes}.db"
    if not db.exists():
        print(f"No {db}: run bench/hook.py --nodes {args.nodes} once to build it.", file=sys.stderr)
        return 1
    home = Path(tempfile.mkdtemp(prefix="oyw", dir="/tmp"))
    work = Path(tempfile.mkdtemp(prefix="oyww", dir="/tmp"))
    try:
        memory = home / "projects" / PROJECT / "memory"
        memory.mkdir(parents=True)
        shutil.copy2(db, memory / "memory.db")
        for name in _LLM_VARS:
            os.environ.pop(name, None)
        os.environ.update(
            {"OCTYBOT_HOME": str(home), "OCTYBOT_PROJECT": PROJECT, "OCTY_HOOK_BUDGET_S": "12"}
        )
        contexts, times = asyncio.run(_answers(home, work))
        load = os.getloadavg()
        print(
            f"{len(times)} distinct prompts, {args.nodes} nodes, load {load[0]:.2f}: answer p50 "
            f"{percentile(times, 0.5):.1f} ms, p90 {percentile(times, 0.9):.1f} ms"
        )
        stages = stage_medians(memory / "debug")
        print("stage medians (ms): " + ", ".join(f"{k} {v:.1f}" for k, v in stages.items()))
    finally:
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    if args.save:
        args.save.write_text(json.dumps(contexts, indent=1, ensure_ascii=False))
    if args.compare:
        before = json.loads(args.compare.read_text())
        changed = [p for p in PROMPTS[2:] if before.get(p) != contexts.get(p)]
        print(f"contexts: {len(contexts) - len(changed)} of {len(contexts)} the same")
        for prompt in changed:
            print(f"  changed: {prompt}")
        return 1 if changed else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

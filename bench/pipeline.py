"""Pipeline latency per stage (offline) at two database sizes, and LLM calls/tokens per prompt (scripted).

    python bench/pipeline.py [--large-size 20000] [--repeat 3]

Offline: the whole graph (`run_prompt`, the same code `octygraph run --offline` runs) on a fixed set of
prompts, against the `small-baseline` profile and a `noisy-large` profile, printing the median milliseconds of
each stage. Also the wall time of one cold `octygraph run --offline` process.

Scripted LLM path: the same prompts with a scripted chat model that answers like a well-behaved LLM (it
answers L1/L1.5 with what the deterministic path would say, follows the plan one tool per turn, stores the
filtered items, copies every record in curation). Token counts are the fake model's estimates (4 characters
per token), so they show the shape of the cost, not a provider's bill.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from langchain_core.messages import BaseMessage, SystemMessage, ToolMessage  # noqa: E402

from octygraph import heuristics, prompts  # noqa: E402
from octygraph.context import Context  # noqa: E402
from octygraph.embeddings import local_embeddings  # noqa: E402
from octygraph.graph import NODE_NAMES  # noqa: E402
from octygraph.llm.usage import UsageTracker  # noqa: E402
from octygraph.models import InstructionList  # noqa: E402
from octygraph.profiles.manager import build_database, builtin_graph  # noqa: E402
from octygraph.runner import RunOptions, run_prompt  # noqa: E402
from octygraph.settings import Settings  # noqa: E402
from octygraph.store import MemoryStore  # noqa: E402
from tests.fakes import ScriptedChatModel, tool_calls_message  # noqa: E402

PROMPTS = [
    "Who handles the Anderson account?",
    "I'm about to deploy the billing API",
    "What did we decide about the release schedule?",
    "Peter finished the Anderson article yesterday",
    "From now on always tag releases with the ticket number",
    "When is the next delivery due?",
    "Which tools do we use for code review?",
    "Actually, Maria handles the Baker account now",
]
STAGES = (*NODE_NAMES, "total")


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


class ScriptedBrain:
    """Answers each LLM call of a run by looking at which prompt it is (they run in parallel)."""

    def __init__(self, prompt: str, known: list[str]) -> None:
        self.classification = heuristics.classify(prompt, known_entities=known)
        self.plan = heuristics.plan_retrieval(prompt, self.classification)
        self.storage = heuristics.filter_storage(prompt, self.classification, date.today())
        self.instructions = heuristics.extract_instructions(prompt, self.classification)

    def __call__(self, messages: list[BaseMessage]) -> Any:
        system = str(messages[0].content) if isinstance(messages[0], SystemMessage) else ""

        def starts(text: str) -> bool:
            return system.startswith(text[:60])

        if starts(prompts.CLASSIFY_SYSTEM):
            return self.classification
        if starts(prompts.PLAN_SYSTEM):
            return self.plan
        if starts(prompts.FILTER_SYSTEM):
            return self.storage
        if starts(prompts.INSTRUCTIONS_SYSTEM):
            return InstructionList(instructions=self.instructions)
        if starts(prompts.RETRIEVE_SYSTEM):
            done = sum(isinstance(m, ToolMessage) for m in messages)
            steps = [
                s
                for s in self.plan.steps
                if s.tool
                in (
                    "search_entity",
                    "search_facts",
                    "search_events",
                    "search_processes",
                    "get_instructions",
                )
            ]
            if done < len(steps):
                step = steps[done]
                args = {k: v for k, v in step.args.items() if k in ("name", "query", "topic")}
                return tool_calls_message((step.tool, args))
            return tool_calls_message(("done", {}))
        if starts(prompts.STORE_SYSTEM):
            done = sum(isinstance(m, ToolMessage) for m in messages)
            items = [*self.storage.items]
            if done < len(items):
                item = items[done]
                return tool_calls_message(
                    (
                        "store_memory",
                        {"type": item.type, "content": item.content, "subtype": item.subtype or ""},
                    )
                )
            return tool_calls_message(("done", {"stored_count": len(items)}))
        if starts(prompts.CURATE_SYSTEM):
            body = str(messages[-1].content)
            return "\n".join(line[2:] for line in body.splitlines() if line.startswith("- "))
        if starts(prompts.RECONCILE_SYSTEM):
            return {"verdict": "NO_CONFLICT", "reason": "scripted"}
        return ""


async def run_all(
    db: Path, settings: Settings, repeat: int, scripted: bool
) -> tuple[dict[str, list[float]], list[dict[str, Any]]]:
    timings: dict[str, list[float]] = {s: [] for s in STAGES}
    usages: list[dict[str, Any]] = []
    with MemoryStore.open(db, local_embeddings()) as store:
        for _ in range(repeat):
            for prompt in PROMPTS:
                ctx = None
                if scripted:
                    model = ScriptedChatModel(
                        itertools.repeat(ScriptedBrain(prompt, store.entity_names()))
                    )
                    ctx = Context(
                        project=settings.project_id,
                        store=store,
                        settings=settings,
                        l1_model=model,
                        l2_model=model,
                        usage=UsageTracker(),
                    )
                result = await run_prompt(
                    prompt,
                    settings,
                    store,
                    RunOptions(offline=not scripted, write_trace=False),
                    context=ctx,
                )
                for stage in STAGES:
                    if stage in result["timings_ms"]:
                        timings[stage].append(result["timings_ms"][stage])
                usages.append(result["usage"])
    return timings, usages


def cold_cli(home: Path, db: Path) -> float:
    env = {**os.environ, "OCTYBOT_HOME": str(home), "DB_PATH": str(db)}
    started = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "octygraph",
            "run",
            "Who handles the Anderson account?",
            "--offline",
        ],
        env=env,
        capture_output=True,
        check=True,
    )
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--large-size", type=int, default=20_000, help="items in the noisy-large profile"
    )
    parser.add_argument("--repeat", type=int, default=3, help="passes over the prompt set")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="octy-bench-"))
    os.environ["OCTYBOT_HOME"] = str(work / "home")
    os.environ["OCTYBOT_PROJECT"] = "bench"
    settings = Settings.from_env()
    embedder = local_embeddings()
    dbs = {}
    for name, size in (("small-baseline", 0), ("noisy-large", args.large_size)):
        started = time.perf_counter()
        path = work / f"{name}.db"
        build_database(
            path, builtin_graph(name, size=size) if size else builtin_graph(name), embedder
        )
        print(f"built {name} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        dbs[name] = path

    print(f"\nOffline pipeline, median ms per stage ({len(PROMPTS)} prompts x {args.repeat})")
    header = f"{'stage':<14}" + "".join(f"{n:>16}" for n in dbs)
    print(header)
    results = {}
    for name, path in dbs.items():
        copy = work / f"run-{name}.db"
        with MemoryStore.open(path, embedder) as src:
            src.backup_to(copy)
        results[name], _ = asyncio.run(run_all(copy, settings, args.repeat, scripted=False))
    for stage in STAGES:
        print(f"{stage:<14}" + "".join(f"{median(results[n][stage]):>16.1f}" for n in dbs))
    print(
        f"{'cold CLI run':<14}" + "".join(f"{cold_cli(work / 'home', dbs[n]):>16.0f}" for n in dbs)
    )

    print("\nScripted LLM path (small-baseline): LLM calls and estimated tokens per prompt")
    copy = work / "run-scripted.db"
    with MemoryStore.open(dbs["small-baseline"], embedder) as src:
        src.backup_to(copy)
    timings, usages = asyncio.run(run_all(copy, settings, 1, scripted=True))
    layers = ("l1", "l2", "curation", "reconciliation")
    print(f"{'layer':<16}{'calls/prompt':>14}{'in tok/prompt':>15}{'out tok/prompt':>16}")
    for layer in layers:
        calls = [u.get(layer, {}).get("calls", 0) for u in usages]
        tin = [u.get(layer, {}).get("input_tokens", 0) for u in usages]
        tout = [u.get(layer, {}).get("output_tokens", 0) for u in usages]
        print(
            f"{layer:<16}{statistics.mean(calls):>14.1f}{statistics.mean(tin):>15.0f}{statistics.mean(tout):>16.0f}"
        )
    print(f"median total ms with the scripted model: {median(timings['total']):.1f}")


if __name__ == "__main__":
    main()

"""Pipeline latency per stage (offline) at two database sizes, and LLM calls/tokens per prompt (scripted).

    python bench/pipeline.py [--large-size 20000] [--repeat 3]

Offline: the whole graph (`run_prompt`, the same code `octygraph run --offline` runs) on a fixed set of
prompts, against the `small-baseline` profile and a `noisy-large` profile, printing the median milliseconds of
each stage. Also the wall time of one cold `octygraph run --offline` process.

Scripted LLM path: the same prompts with a scripted chat model that answers like a well-behaved LLM (it
answers L1/L1.5 with what the deterministic path would say, follows the plan one tool per turn, stores the
filtered items, copies every record in curation). Token counts are the fake model's estimates (4 characters
per token), so they show the shape of the cost, not a provider's bill.

Loopback model (`--loopback-only` runs just this): the same well-behaved answers served over HTTP by the
loopback OpenAI-compatible server of the tests, each after 0.7 s, to the real client and the prompt hook's
own code path (`hooks.handle`, as the resident service runs it, store already open). Prints, per prompt,
the sequential LLM calls on the critical path (the longest chain of calls, each sent after the previous
one answered, before the hook had its answer), the hook's answer time (p50), and what the store half did
after the reply (calls and seconds).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
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

from langchain_core.messages import (  # noqa: E402
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from pydantic import BaseModel  # noqa: E402

from octygraph.config.settings import Settings  # noqa: E402
from octygraph.embeddings import local_embeddings  # noqa: E402
from octygraph.fallback.classify import classify  # noqa: E402
from octygraph.fallback.plan import plan_retrieval  # noqa: E402
from octygraph.judgement.storage import filter_storage  # noqa: E402
from octygraph.llm.usage import UsageTracker  # noqa: E402
from octygraph.models import InstructionList  # noqa: E402
from octygraph.pipeline import prompts  # noqa: E402
from octygraph.pipeline.context import Context  # noqa: E402
from octygraph.pipeline.graph import NODE_NAMES  # noqa: E402
from octygraph.pipeline.nodes.judge_storage import split_instructions, with_verdict  # noqa: E402
from octygraph.pipeline.runner import RunOptions, run_prompt  # noqa: E402
from octygraph.profiles.manager import build_database, builtin_graph  # noqa: E402
from octygraph.store import MemoryStore  # noqa: E402
from octygraph_demo import BUILTIN_PROFILES  # noqa: E402
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
        self.classification = with_verdict(
            classify(prompt, known_entities=known), prompt, assistant=False
        )
        self.plan = plan_retrieval(prompt, self.classification)
        # As the deterministic path answers: the rules are instructions, the rest is stored.
        self.storage, self.instructions = split_instructions(
            filter_storage(prompt, self.classification, date.today())
        )

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
            task = str(messages[1].content) if len(messages) > 1 else ""
            if "Already found by the plan's searches:" in task and "(nothing yet)" not in task:
                return tool_calls_message(("done", {}))  # the plan's results are enough
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


LOOPBACK_DELAY_S = 0.7


def _as_messages(body: dict[str, Any]) -> list[BaseMessage]:
    """The request's messages as LangChain messages, enough for `ScriptedBrain` to tell them apart."""
    out: list[BaseMessage] = []
    for i, m in enumerate(body.get("messages") or []):
        content = m.get("content") or ""
        if m.get("role") == "system":
            out.append(SystemMessage(content))
        elif m.get("role") == "tool":
            out.append(ToolMessage(content, tool_call_id=m.get("tool_call_id") or str(i)))
        else:
            out.append(HumanMessage(content))
    return out


def _as_reply(answer: Any) -> Any:
    from tests.llm_server import text_reply, tool_reply

    if isinstance(answer, BaseModel):
        return tool_reply((type(answer).__name__, answer.model_dump(mode="json")))
    if isinstance(answer, dict):
        return tool_reply(("ReconcileJudgement", answer))
    if isinstance(answer, AIMessage) and answer.tool_calls:
        return tool_reply(*[(c["name"], c["args"]) for c in answer.tool_calls])
    return text_reply(str(answer.content if isinstance(answer, AIMessage) else answer))


def critical_chain(requests: list[Any], until: float) -> int:
    """The longest chain of calls sent before `until`, each sent after the previous one answered."""
    calls = sorted(
        (r for r in requests if r.received_at < until and r.answered_at),
        key=lambda r: r.received_at,
    )
    depth: list[int] = []
    for i, call in enumerate(calls):
        before = [depth[j] for j in range(i) if calls[j].answered_at <= call.received_at]
        depth.append(1 + max(before, default=0))
    return max(depth, default=0)


async def loopback_runs(db: Path, repeat: int) -> list[dict[str, Any]]:
    """Each prompt through `hooks.handle` against the loopback model; what the hook and the store did."""
    from contextlib import asynccontextmanager

    from octygraph.llm.resilient import CIRCUIT
    from octygraph.session import hooks
    from tests.llm_server import Reply, openai_server

    rows: list[dict[str, Any]] = []
    with MemoryStore.open(db, local_embeddings()) as store:

        @asynccontextmanager
        async def lease(settings: Settings, *, deadline: float | None = None) -> Any:
            yield store  # the service's pool: the store is open already

        current: dict[str, ScriptedBrain] = {}

        def route(body: dict[str, Any]) -> Reply:
            reply = _as_reply(current["brain"](_as_messages(body)))
            reply.delay_s = LOOPBACK_DELAY_S
            return reply

        with openai_server(itertools.repeat(route)) as server:
            os.environ.update(
                {"OCTY_LLM_BASE_URL": server.base_url, "OCTY_LLM_API_KEY": "bench", "PATH": ""}
            )
            for n in range(repeat):
                for i, prompt in enumerate(PROMPTS):
                    CIRCUIT.reset()
                    current["brain"] = ScriptedBrain(prompt, store.entity_names())
                    server.requests.clear()
                    payload = {
                        "session_id": f"bench-{n}-{i}",
                        "cwd": str(Path.cwd()),
                        "hook_event_name": "UserPromptSubmit",
                        "prompt": prompt,
                    }
                    started = time.monotonic()
                    reply = await hooks.handle(
                        "prompt", json.dumps(payload).encode(), stores=lease, started=started
                    )
                    answered = time.monotonic()
                    settle = getattr(reply, "settle", None)
                    if settle is not None:
                        await settle()
                    finished = time.monotonic()
                    after = [r for r in server.requests if r.received_at >= answered]
                    rows.append(
                        {
                            "prompt": prompt,
                            "answer_s": answered - started,
                            "chain": critical_chain(server.requests, answered),
                            "calls": len(server.requests),
                            "after_calls": len(after),
                            "after_s": finished - answered,
                            "injected": float(bool(reply.stdout)),
                        }
                    )
    return rows


def print_loopback(rows: list[dict[str, Any]]) -> None:
    answers = sorted(r["answer_s"] for r in rows)
    print(
        f"\nLoopback model, {LOOPBACK_DELAY_S} s per call: prompt hook (hooks.handle, warm) over "
        f"{len(rows)} runs"
    )
    print(
        f"{'sequential LLM calls on the critical path (median)':<58}{median([r['chain'] for r in rows]):>8.1f}"
    )
    print(f"{'  max':<58}{max(r['chain'] for r in rows):>8.0f}")
    print(f"{'prompt hook answer p50 (s)':<58}{median(answers):>8.2f}")
    print(f"{'prompt hook answer p90 (s)':<58}{answers[int(0.9 * (len(answers) - 1))]:>8.2f}")
    print(f"{'LLM calls per prompt (median)':<58}{median([r['calls'] for r in rows]):>8.1f}")
    print(
        f"{'  of them after the reply (store half, median)':<58}{median([r['after_calls'] for r in rows]):>8.1f}"
    )
    print(
        f"{'store half: seconds after the reply (median)':<58}{median([r['after_s'] for r in rows]):>8.2f}"
    )
    print(f"{'prompts with context injected':<58}{sum(r['injected'] for r in rows):>8.0f}")
    print(f"\n{'prompt':<52}{'chain':>6}{'answer s':>10}{'calls':>7}{'after':>7}{'after s':>9}")
    for prompt in PROMPTS:
        mine = [r for r in rows if r["prompt"] == prompt]
        print(
            f"{prompt[:50]:<52}{median([r['chain'] for r in mine]):>6.0f}"
            f"{median([r['answer_s'] for r in mine]):>10.2f}{median([r['calls'] for r in mine]):>7.0f}"
            f"{median([r['after_calls'] for r in mine]):>7.0f}{median([r['after_s'] for r in mine]):>9.2f}"
        )


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
    parser.add_argument(
        "--loopback-only", action="store_true", help="only the loopback-model section"
    )
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="octy-bench-"))
    os.environ["OCTYBOT_HOME"] = str(work / "home")
    os.environ["OCTYBOT_PROJECT"] = "bench"
    settings = Settings.from_env()
    embedder = local_embeddings()
    if args.loopback_only:
        path = work / "loopback.db"
        build_database(path, builtin_graph(BUILTIN_PROFILES, "small-baseline"), embedder)
        print_loopback(asyncio.run(loopback_runs(path, args.repeat)))
        return
    dbs = {}
    for name, size in (("small-baseline", 0), ("noisy-large", args.large_size)):
        started = time.perf_counter()
        path = work / f"{name}.db"
        build_database(path, builtin_graph(BUILTIN_PROFILES, name, size=size or None), embedder)
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

    copy = work / "run-loopback.db"
    with MemoryStore.open(dbs["small-baseline"], embedder) as src:
        src.backup_to(copy)
    print_loopback(asyncio.run(loopback_runs(copy, args.repeat)))


if __name__ == "__main__":
    main()

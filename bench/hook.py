"""Hook latency as Claude Code sees it: a new `octygraph hook ...` process, JSON on stdin.

Builds (or reuses) a `noisy-large` project database, then times, for the no-LLM path: the first prompt
of a new user and of a user with that database (no service running), the first prompt of a new user
right after Claude Code's SessionStart hook (which starts the service), the warm prompt hook
(p50/p90; back to back, and a second apart as a person types), the Stop hand-off, the SessionStart
answer, and every hook call under each fault (a frozen service, a killed one, a stale socket file, a
read-only home), each against its budget.

The package's bytecode is compiled first, as `pip install` does: a checkout run with
PYTHONDONTWRITEBYTECODE=1 would otherwise compile every module in every hook and service process.

    python bench/hook.py --runs 20 --nodes 20000
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from _common import table

from octygraph.service import client, protocol

PROJECT = "bench"
PACE_S = 1.0
PROMPTS = (
    "Who handles the Anderson account?",
    "What database does the billing service run on?",
    "Who leads QA and where is the regression suite?",
    "What is the public API rate limit?",
    "Who handles the Globex account these days?",
    "I'm about to deploy the billing service, anything I should know?",
    "Where is the deployment runbook?",
    "Who approves new vendor contracts?",
    "What language is the Sierra mobile app written in?",
    "Who owns the billing reports API?",
    "When does Soylent Systems's contract renew?",
    "Who does Maya Lee report to?",
    "Where do Loki alerts for the billing gateway worker go?",
    "How often should we bill Riverside Systems?",
    "What caused the recommendations API outage?",
    "Can I deploy on Friday afternoon?",
    "Who took over the Globe Foods account?",
    "When was Dune mobile app 1.7 released?",
    "Does Sara Ali have production access to the Willow desktop client?",
    "How does Bluebird Health pay its invoices?",
    "What should I run before deploying the pricing worker?",
    "Who handles the Tyrell & Co account?",
    "Why did Stonebridge Labs's invoices go out late?",
    "What is Priya Cheng planning with Pinnacle Energy?",
    "What happens if Adatum Systems reports a critical bug?",
    "Where are card numbers stored for the Tempest desktop client?",
    "Which language is the Echo admin console written in?",
    "Who does Sara Brandt report to?",
    "Let's refactor the scheduling service export job today",
    "Can you help me write a unit test for the invoice parser?",
    "What's the status of the Summit Logistics renewal?",
    "Tell me about Grace Baker",
    "fix the flaky test in the payments module please",
    "Is RabbitMQ on staging still used by the notifications worker?",
    "Who is on call for the search API this week?",
    "what port does the admin console listen on",
    "Remind me how we version the public SDK",
    "Summarise what we know about Ironbark Foods",
    "How do I rotate the API keys for the billing gateway?",
    "Why is the checkout page slow on mobile?",
)
"""Distinct prompts: the service keeps what it computed for a prompt it saw, so a repeated one would
time its memo, not its work. The warm rows use each at most once (after the first two)."""
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
    """`noisy-large` with `nodes` items, from the demo package's generator when it is there."""
    from octygraph.embeddings import local_embeddings

    started = time.perf_counter()
    print(f"Building a {nodes}-node noisy-large database at {db} (once; it is reused) ...")
    try:
        from octygraph.profiles.manager import build_database
        from octygraph_demo import noisy_large_graph

        build_database(db, noisy_large_graph(size=nodes), local_embeddings())
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


def prompt_payload(cwd: Path, prompt: str, session: str = "bench") -> str:
    return json.dumps(
        {
            "session_id": session,
            "transcript_path": str(cwd / "t.jsonl"),
            "cwd": str(cwd),
            "hook_event_name": "UserPromptSubmit",
            "prompt": prompt,
        }
    )


def time_event(
    command: list[str], env: dict[str, str], cwd: Path, event: str, payload: str
) -> tuple[float, str]:
    """One `octygraph hook EVENT` as Claude Code runs it; wall ms (process start to exit) and stdout."""
    started = time.perf_counter()
    result = subprocess.run(
        [*command, "hook", event],
        input=payload,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )
    return (time.perf_counter() - started) * 1000, result.stdout


def time_hook(command: list[str], env: dict[str, str], cwd: Path, prompt: str) -> tuple[float, str]:
    return time_event(command, env, cwd, "prompt", prompt_payload(cwd, prompt))


def wait_warm(home: Path, timeout_s: float = 120) -> dict[str, object]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        health = client.health_at(home)
        if health.get("running") and health.get("warm"):
            return health
        time.sleep(0.1)
    raise SystemExit("The service did not start; see its log under OCTYBOT_HOME/debug.")


def wait_primed(home: Path, timeout_s: float = 60) -> None:
    """Until the service's background priming of an opened database is done (a second or two, while
    a user reads the first answer): warm prompts are timed on a settled service."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and client.health_at(home).get("priming"):
        time.sleep(0.1)


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(q * len(ordered) + 0.5) - 1))]


class Bench:
    """One private OCTYBOT_HOME with the profile database, and the hook command to time."""

    def __init__(self, db: Path | None, budget_s: float) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="oyb", dir="/tmp"))  # short: the socket must fit
        self.work = self.home.parent / f"{self.home.name}-work"
        self.work.mkdir()
        if db is not None:
            memory = self.home / "projects" / PROJECT / "memory"
            memory.mkdir(parents=True)
            shutil.copy2(db, memory / "memory.db")
        self.env = {k: v for k, v in os.environ.items() if k not in _LLM_VARS}
        self.env.update(
            {
                "OCTYBOT_HOME": str(self.home),
                "OCTYBOT_PROJECT": PROJECT,
                "OCTY_SERVE_IDLE_S": "600",
                "OCTY_HOOK_BUDGET_S": f"{budget_s:g}",
            }
        )
        self.budget_s = budget_s
        self.command = hook_command()

    def prompt(self, prompt: str, session: str = "bench") -> tuple[float, str]:
        return time_event(
            self.command, self.env, self.work, "prompt", prompt_payload(self.work, prompt, session)
        )

    def prompt_via_shell(self, prompt: str) -> tuple[float, str]:
        """As Claude Code runs a hook's `command` (shell form): through `sh -c`."""
        shell = ["sh", "-c", '"$0" "$@"', *self.command]
        return time_event(shell, self.env, self.work, "prompt", prompt_payload(self.work, prompt))

    def event(self, event: str, data: dict[str, object]) -> float:
        payload = json.dumps({"session_id": "bench", "cwd": str(self.work), **data})
        return time_event(self.command, self.env, self.work, event, payload)[0]

    def pid(self) -> int | None:
        return client.read_pid(self.home)

    def close(self) -> None:
        client.stop_service(self.home, timeout_s=30)
        pid = self.pid()
        if pid is not None:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.home, ignore_errors=True)
        shutil.rmtree(self.work, ignore_errors=True)


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """No new files in `folder`, even for root (the immutable attribute), else chmod."""
    if os.geteuid() == 0 and shutil.which("chattr"):
        subprocess.run(["chattr", "+i", str(folder)], check=True)
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
        return
    folder.chmod(0o500)
    try:
        yield
    finally:
        folder.chmod(0o700)


def fault_rows(bench: Bench, name: str, calls: int) -> list[list[object]]:
    rows: list[list[object]] = []
    for i in range(calls):
        ms, out = bench.prompt(PROMPTS[i % len(PROMPTS)], session=f"{name}-{i}")
        within = "yes" if ms <= bench.budget_s * 1000 else "NO"
        got = "context" if "additionalContext" in out else "notice" if out else "none"
        rows.append([f"{name}, call {i + 1}", f"{ms:.0f}", within, got])
    return rows


def compile_package() -> None:
    """Write the package's bytecode, as an install does (PYTHONDONTWRITEBYTECODE stops the processes)."""
    import octygraph

    compileall.compile_dir(Path(octygraph.__file__).parent, quiet=1)


def editable_finder() -> bool:
    """Whether the interpreter's site-packages run an editable install's import hook at start-up."""
    import site

    return any(
        any(Path(folder).glob("__editable___*_finder.py")) for folder in site.getsitepackages()
    )


def run(db: Path, runs: int, budget_s: float) -> str:
    out: list[str] = []
    # First prompt of a new user: no database, no service.
    fresh = Bench(None, budget_s)
    try:
        first_new, _ = fresh.prompt("Who handles the Anderson account?")
        second_new, _ = fresh.prompt("Who handles the Anderson account?")
    finally:
        fresh.close()
    # As Claude Code runs it: SessionStart starts the service, the prompt follows at once (no
    # typing time, the worst case); timed from the SessionStart hook's start.
    fresh = Bench(None, budget_s)
    try:
        t0 = time.perf_counter()
        fresh.event("session-start", {"hook_event_name": "SessionStart", "source": "startup"})
        fresh.prompt("Who handles the Anderson account?")
        after_start = (time.perf_counter() - t0) * 1000
    finally:
        fresh.close()
    bench = Bench(db, budget_s)
    try:
        first_db, _ = bench.prompt(PROMPTS[0])  # starts the service and waits for it
        wait_warm(bench.home)
        bench.prompt(PROMPTS[1])  # the OS caches the database's pages
        wait_primed(bench.home)
        warm: list[float] = []
        empty = 0
        for i in range(runs):
            ms, text = bench.prompt(PROMPTS[2 + i % (len(PROMPTS) - 2)])
            warm.append(ms)
            empty += not text
        # Worded a little differently, so that no cache of the prompts above answers them.
        via_shell = [
            bench.prompt_via_shell("One more thing: " + PROMPTS[2 + i % (len(PROMPTS) - 2)])[0]
            for i in range(runs)
        ]
        # A second apart, as a person types: back to back, each prompt also waits for the previous
        # one's store half, which runs after its answer.
        paced = []
        for i in range(runs):
            time.sleep(PACE_S)
            paced.append(bench.prompt("Next: " + PROMPTS[2 + i % (len(PROMPTS) - 2)])[0])
        # Read now: the hand-offs below are calls too, and would make the service's median theirs.
        health = client.health_at(bench.home)
        skipped = [bench.prompt("/octybot memory list")[0] for _ in range(runs)]
        stop = [
            bench.event(
                "stop",
                {
                    "hook_event_name": "Stop",
                    "stop_hook_active": False,
                    "last_assistant_message": f"I migrated service {i} to Postgres 16.",
                },
            )
            for i in range(runs)
        ]
        start = [
            bench.event("session-start", {"hook_event_name": "SessionStart", "source": "startup"})
            for _ in range(runs)
        ]
        floor = []
        for _ in range(runs):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            floor.append((time.perf_counter() - t0) * 1000)
        rows: list[list[object]] = [
            [
                "prompt, service warm",
                *(f"{percentile(warm, q):.0f}" for q in (0.5, 0.9)),
                f"{max(warm):.0f}",
            ],
            [
                f"  the same, one prompt every {PACE_S:g} s",
                *(f"{percentile(paced, q):.0f}" for q in (0.5, 0.9)),
                f"{max(paced):.0f}",
            ],
            [
                "  the same through `sh -c`, as Claude Code runs a hook command",
                *(f"{percentile(via_shell, q):.0f}" for q in (0.5, 0.9)),
                f"{max(via_shell):.0f}",
            ],
            [
                "  service time per prompt (its own p50/p95)",
                health.get("median_ms"),
                health.get("p95_ms"),
                "",
            ],
            [
                "  round trip only (a slash command)",
                *(f"{percentile(skipped, q):.0f}" for q in (0.5, 0.9)),
                f"{max(skipped):.0f}",
            ],
            [
                "stop (hand-off)",
                *(f"{percentile(stop, q):.0f}" for q in (0.5, 0.9)),
                f"{max(stop):.0f}",
            ],
            [
                "session-start (answered by the service)",
                *(f"{percentile(start, q):.0f}" for q in (0.5, 0.9)),
                f"{max(start):.0f}",
            ],
            [
                "python -c pass",
                *(f"{percentile(floor, q):.0f}" for q in (0.5, 0.9)),
                f"{max(floor):.0f}",
            ],
        ]
        out.append(table(["hook (new process)", "p50 ms", "p90 ms", "max ms"], rows))
        out.append(
            f"\n{runs} calls per row; {empty} warm prompts without context.\n"
            f"first prompt, new user (empty home, no service): {first_new:.0f} ms; "
            f"second: {second_new:.0f} ms\n"
            f"SessionStart then first prompt at once, new user: {after_start:.0f} ms\n"
            f"first prompt, {PROJECT} database, no service: {first_db:.0f} ms\n"
            + (
                "note: this interpreter runs an editable install's import hook at start-up "
                "(`pip install -e .` without editable_mode=compat); an installed package does not\n"
                if editable_finder()
                else ""
            )
        )
        faults: list[list[object]] = []
        calls = 3
        # Frozen service (SIGSTOP): the first call waits out its budget and replaces it.
        frozen = bench.pid()
        assert frozen is not None
        os.kill(frozen, signal.SIGSTOP)
        faults += fault_rows(bench, "frozen service", calls)
        with contextlib.suppress(OSError):
            os.kill(frozen, signal.SIGKILL)
        wait_warm(bench.home)
        # Killed service: its socket file stays behind.
        killed = bench.pid()
        assert killed is not None
        os.kill(killed, signal.SIGKILL)
        time.sleep(0.2)
        faults += fault_rows(bench, "killed service", calls)
        wait_warm(bench.home)
        # Stale socket file: nobody listens on it.
        client.stop_service(bench.home)
        sock_path = protocol.ServicePaths(bench.home).socket
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stale.bind(str(sock_path))
        stale.close()
        faults += fault_rows(bench, "stale socket file", calls)
        wait_warm(bench.home)
        client.stop_service(bench.home)
        # Read-only home: no service can start there.
        with read_only(bench.home):
            faults += fault_rows(bench, "read-only home", calls)
        out.append(
            table([f"fault (budget {budget_s:g} s)", "wall ms", "within budget", "output"], faults)
        )
    finally:
        bench.close()
    return "\n".join(out)


def editable_install() -> bool:
    """Whether the octygraph being timed runs from a checkout (`pip install -e`), not site-packages."""
    import octygraph

    installed = Path(sysconfig.get_paths()["purelib"]).resolve()
    return installed not in Path(octygraph.__file__).resolve().parents


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="timed calls per mode")
    parser.add_argument("--nodes", type=int, default=20000, help="size of the noisy-large database")
    parser.add_argument(
        "--budget", type=float, default=12.0, help="OCTY_HOOK_BUDGET_S for every hook (seconds)"
    )
    parser.add_argument(
        "--db",
        type=Path,
        default=None,
        help="profile database to reuse or build (default: in the user cache, one per size)",
    )
    args = parser.parse_args(argv)
    if args.runs > len(PROMPTS) - 2:
        print(f"--runs: at most {len(PROMPTS) - 2} (one distinct prompt each).", file=sys.stderr)
        return 1
    if args.runs < 1 or args.nodes < 1:
        print("--runs and --nodes must be at least 1.", file=sys.stderr)
        return 1
    db = args.db or default_cache() / f"noisy-large-{args.nodes}.db"
    if not db.exists():
        build_profile(db, args.nodes)
    compile_package()
    load = os.getloadavg()
    print(f"{args.nodes} nodes ({db}); load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}\n")
    if editable_install():
        # Its import finder runs at the start of every Python process, hooks included.
        print(
            "Note: octygraph is an editable install here, which slows every new process's start "
            "(see `python -c pass`); run this with the Python of a regular install (pipx, uv tool, "
            "pip install .) for the figures users get.\n"
        )
    print(run(db, args.runs, args.budget))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

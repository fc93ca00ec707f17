"""Scenario evaluation: conversations that tell things, then prompts that need them.

    python bench/scenarios.py [--only-empty] [--large-size 20000] [--json] [--only NAME ...]

Each scenario of `bench/scenarios.yaml` runs in order through `run_prompt` offline (the same code
as `octygraph run --offline`), with a fixed "today", on a database of its own: first an empty one,
then a copy of the `noisy-large` profile (built once into a cache under the system temp folder and
reused). Four kinds of check: must-include (a fact is in the injected context), must-exclude (a
superseded or never-told fact is not), must-not-store (questions, greetings, hypotheticals and
requests store nothing) and must-store (a telling prompt stores something, of the expected type
when given). Printed: the pass rate per check kind, the size of the injected context in
characters, the time per prompt, and every failing check with its prompt and context.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from octygraph.config.settings import Settings  # noqa: E402
from octygraph.embeddings import local_embeddings  # noqa: E402
from octygraph.pipeline.runner import RunOptions, run_prompt  # noqa: E402
from octygraph.store import Embedder, GraphStore, MemoryStore  # noqa: E402

SCENARIOS_FILE = Path(__file__).with_name("scenarios.yaml")
CHECK_KINDS = ("must-include", "must-exclude", "must-not-store", "must-store")
CONTEXT_SHOWN = 2500
"""Characters of a failing prompt's context printed (the hook's budget is 6,000)."""


# ----------------------------------------------------------------------------- the scenarios file


@dataclass(frozen=True)
class Step:
    """One prompt of a scenario and what must follow from it."""

    prompt: str
    include: tuple[tuple[str, ...], ...] = ()
    """Each entry: strings of which at least one must appear in the context."""
    exclude: tuple[str, ...] = ()
    stores: bool | str | None = None
    """True: something is stored; a node type: something of that type; None: not checked."""
    stores_nothing: bool = False
    after_days: int = 0


@dataclass(frozen=True)
class Scenario:
    name: str
    about: str
    steps: tuple[Step, ...]


@dataclass(frozen=True)
class Suite:
    today: date
    scenarios: tuple[Scenario, ...]

    def select(self, names: Sequence[str]) -> Suite:
        """The suite restricted to `names` (in the file's order); unknown names are an error."""
        known = {s.name for s in self.scenarios}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ValueError(f"Unknown scenario {unknown[0]!r}; known: {', '.join(sorted(known))}.")
        return Suite(self.today, tuple(s for s in self.scenarios if s.name in names))

    @property
    def prompts(self) -> int:
        return sum(len(s.steps) for s in self.scenarios)


def _step(raw: dict[str, Any], where: str) -> Step:
    unknown = set(raw) - {"prompt", "include", "exclude", "stores", "stores_nothing", "after_days"}
    if unknown or not isinstance(raw.get("prompt"), str):
        raise ValueError(f"{where}: a step needs a 'prompt' and knows no {sorted(unknown)}.")
    include = tuple(
        tuple(str(x) for x in entry) if isinstance(entry, list) else (str(entry),)
        for entry in raw.get("include") or []
    )
    stores = raw.get("stores")
    if stores is not None and not isinstance(stores, bool | str):
        raise ValueError(f"{where}: 'stores' is true or a node type.")
    return Step(
        prompt=raw["prompt"],
        include=include,
        exclude=tuple(str(x) for x in raw.get("exclude") or []),
        stores=stores,
        stores_nothing=bool(raw.get("stores_nothing", False)),
        after_days=int(raw.get("after_days", 0)),
    )


def load_scenarios(path: Path = SCENARIOS_FILE) -> Suite:
    """Read and check a scenarios file (see the comment at the top of `bench/scenarios.yaml`)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    today = data["today"]
    if not isinstance(today, date):
        today = date.fromisoformat(str(today))
    scenarios = []
    for raw in data["scenarios"]:
        name = str(raw["name"])
        steps = tuple(
            _step(s, f"{path.name}: {name} step {i + 1}") for i, s in enumerate(raw["steps"])
        )
        scenarios.append(Scenario(name=name, about=str(raw.get("about", "")), steps=steps))
    names = [s.name for s in scenarios]
    if len(set(names)) != len(names):
        raise ValueError(f"{path.name}: scenario names must be unique.")
    return Suite(today=today, scenarios=tuple(scenarios))


# ----------------------------------------------------------------------------- running


@dataclass
class Check:
    """One check of one prompt."""

    kind: str
    scenario: str
    step: int
    prompt: str
    expected: str
    passed: bool
    context: str = ""
    stored: list[str] = field(default_factory=list)


@dataclass
class PromptRun:
    scenario: str
    step: int
    prompt: str
    context_chars: int
    ms: float
    stored: list[dict[str, Any]]


@dataclass
class DbReport:
    """Everything one database's run measured."""

    database: str
    scenarios: int
    prompts: list[PromptRun]
    checks: list[Check]

    def rates(self) -> dict[str, tuple[int, int]]:
        """(passed, total) per check kind, and for all checks under "all"."""
        out = {
            kind: (
                sum(c.passed for c in self.checks if c.kind == kind),
                sum(c.kind == kind for c in self.checks),
            )
            for kind in CHECK_KINDS
        }
        out["all"] = (sum(c.passed for c in self.checks), len(self.checks))
        return out

    def context_chars(self) -> tuple[float, int, int]:
        """(median, max, how many) over prompts whose context was not empty."""
        sizes = [p.context_chars for p in self.prompts if p.context_chars]
        if not sizes:
            return 0.0, 0, 0
        return statistics.median(sizes), max(sizes), len(sizes)

    def ms(self) -> tuple[float, float]:
        """Median and p95 (nearest rank) of the wall time per prompt."""
        ordered = sorted(p.ms for p in self.prompts)
        if not ordered:
            return float("nan"), float("nan")
        rank = max(0, min(len(ordered) - 1, round(0.95 * len(ordered) + 0.5) - 1))
        return statistics.median(ordered), ordered[rank]

    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    def to_dict(self) -> dict[str, Any]:
        med_chars, max_chars, n_contexts = self.context_chars()
        med_ms, p95_ms = self.ms()
        return {
            "database": self.database,
            "scenarios": self.scenarios,
            "prompts": len(self.prompts),
            "rates": {k: {"passed": p, "total": t} for k, (p, t) in self.rates().items()},
            "context_chars": {"median": med_chars, "max": max_chars, "non_empty": n_contexts},
            "ms_per_prompt": {"median": round(med_ms, 1), "p95": round(p95_ms, 1)},
            "failures": [asdict(c) for c in self.failures()],
        }


def _normal(text: str) -> str:
    return " ".join(text.casefold().split())


def check_step(scenario: str, index: int, step: Step, result: dict[str, Any]) -> list[Check]:
    """The checks of one step against the `run --json` object the pipeline returned."""
    context = result.get("context") or ""
    stored = result.get("stored") or []
    haystack = _normal(context)
    contents = [f"{s['type']}: {s['content']}" for s in stored]

    def make(kind: str, expected: str, passed: bool) -> Check:
        return Check(kind, scenario, index, step.prompt, expected, passed, context, contents)

    checks = [
        make("must-include", " | ".join(alts), any(_normal(a) in haystack for a in alts))
        for alts in step.include
    ]
    checks += [make("must-exclude", text, _normal(text) not in haystack) for text in step.exclude]
    if step.stores_nothing:
        checks.append(make("must-not-store", "nothing stored", not stored))
    if step.stores:
        kind = step.stores if isinstance(step.stores, str) else None
        passed = any(s["type"] == kind for s in stored) if kind else bool(stored)
        checks.append(make("must-store", f"a {kind or 'memory'} is stored", passed))
    return checks


def scenario_settings(work: Path, name: str) -> Settings:
    """Settings of one scenario's private project (local embeddings, no key read from anywhere)."""
    return Settings(home=work / "home", project_id=name, cwd=work, embeddings="local")


async def run_scenario(
    scenario: Scenario,
    today: date,
    settings: Settings,
    store: GraphStore,
    on_prompt: Callable[[PromptRun], None] | None = None,
) -> tuple[list[PromptRun], list[Check]]:
    """Run one scenario's prompts in order on `store`; returns the runs and the checks."""
    runs: list[PromptRun] = []
    checks: list[Check] = []
    for index, step in enumerate(scenario.steps, start=1):
        options = RunOptions(offline=True, today=today + timedelta(days=step.after_days))
        started = time.perf_counter()
        result = await run_prompt(step.prompt, settings, store, options)
        elapsed = (time.perf_counter() - started) * 1000
        run = PromptRun(
            scenario.name, index, step.prompt, len(result["context"]), elapsed, result["stored"]
        )
        runs.append(run)
        checks += check_step(scenario.name, index, step, result)
        if on_prompt is not None:
            on_prompt(run)
    return runs, checks


def evaluate(
    suite: Suite,
    embedder: Embedder,
    work: Path,
    *,
    base_db: Path | None = None,
    label: str = "empty",
    on_prompt: Callable[[PromptRun], None] | None = None,
    database_url: str | None = None,
) -> DbReport:
    """Run every scenario on its own database: empty, or a fresh copy of `base_db`.

    With `database_url` each scenario gets a fresh project schema on that PostgreSQL server instead
    (checkpoints too), loaded from `base_db` when given.
    """
    prompts: list[PromptRun] = []
    checks: list[Check] = []
    for scenario in suite.scenarios:
        settings = scenario_settings(work, f"{label}-{scenario.name}")
        paths = settings.paths.ensure()
        if database_url is not None:
            runs, found = _on_postgres(
                scenario, suite, settings, embedder, database_url, base_db, on_prompt
            )
        else:
            if base_db is not None:
                shutil.copyfile(base_db, paths.db)
            with MemoryStore.open(paths.db, embedder) as store:
                runs, found = asyncio.run(
                    run_scenario(scenario, suite.today, settings, store, on_prompt)
                )
        prompts += runs
        checks += found
    return DbReport(label, len(suite.scenarios), prompts, checks)


def _on_postgres(
    scenario: Scenario,
    suite: Suite,
    settings: Settings,
    embedder: Embedder,
    url: str,
    base_db: Path | None,
    on_prompt: Callable[[PromptRun], None] | None,
) -> tuple[list[PromptRun], list[Check]]:
    from pydantic import SecretStr

    from octygraph.store.postgres import PostgresStore
    from octygraph.store.transfer_pg import import_from_sqlite

    settings = replace(settings, database_url=SecretStr(url))
    fresh = PostgresStore.open(url, embedder, project_id=settings.project_id)
    fresh.drop_project()  # a schema left by an earlier run
    fresh.close()
    store = PostgresStore.open(url, embedder, project_id=settings.project_id)
    try:
        if base_db is not None:
            import_from_sqlite(store, base_db)
        return asyncio.run(run_scenario(scenario, suite.today, settings, store, on_prompt))
    finally:
        store.drop_project()
        store.close()


# ----------------------------------------------------------------------------- noisy-large cache


PROFILE_SOURCES = (
    "octygraph_demo/small_baseline.py",
    "octygraph_demo/noisy_large.py",
    "octygraph/profiles/graph.py",
    "octygraph/store/schema.py",
)
"""The files whose change changes the noisy-large data (a changed one rebuilds the cache)."""


def _profile_fingerprint(size: int, model_id: str) -> str:
    """Changes whenever the generator, the schema, the size or the embedding model changes."""
    digest = hashlib.sha256(f"{size}\x00{model_id}".encode())
    for name in PROFILE_SOURCES:
        digest.update(name.encode() + b"\x00" + (ROOT / name).read_bytes())
    return digest.hexdigest()[:16]


def noisy_large_db(size: int, embedder: Embedder, log: Callable[[str], None]) -> Path:
    """The cached noisy-large database of `size` items, built on first use (minutes at 20,000)."""
    from octygraph.profiles.manager import build_database
    from octygraph_demo import noisy_large_graph

    cache = Path(tempfile.gettempdir()) / "octygraph-bench"
    path = cache / f"noisy-large-{size}-{_profile_fingerprint(size, embedder.model_id)}.db"
    if path.is_file():
        log(f"noisy-large: reusing {path}")
        return path
    log(f"noisy-large: building {size:,} items into {path} (once; later runs reuse it)")
    started = time.perf_counter()
    build_database(path, noisy_large_graph(size=size), embedder, label="noisy-large")
    log(f"noisy-large: built in {time.perf_counter() - started:.0f} s")
    for stale in cache.glob(f"noisy-large-{size}-*.db"):
        if stale != path:  # built from an older generator: never used again
            stale.unlink(missing_ok=True)
    return path


# ----------------------------------------------------------------------------- report


def summary_table(reports: Sequence[DbReport]) -> str:
    """One row per database: pass rates per check kind, context size and time per prompt."""
    headers = ["database", "prompts", *CHECK_KINDS, "all checks", "context chars (median / max)"]
    headers.append("ms per prompt (median / p95)")
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    for report in reports:
        rates = report.rates()
        cells = [report.database, str(len(report.prompts))]
        for kind in (*CHECK_KINDS, "all"):
            passed, total = rates[kind]
            cells.append(f"{passed}/{total} ({passed / total:.0%})" if total else "-")
        med_chars, max_chars, _ = report.context_chars()
        med_ms, p95_ms = report.ms()
        cells += [f"{med_chars:.0f} / {max_chars}", f"{med_ms:.0f} / {p95_ms:.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def scenario_table(report: DbReport, suite: Suite) -> str:
    lines = ["| scenario | prompts | checks passed |", "|---|---|---|"]
    for scenario in suite.scenarios:
        mine = [c for c in report.checks if c.scenario == scenario.name]
        passed = sum(c.passed for c in mine)
        mark = "" if passed == len(mine) else " ✗"
        lines.append(f"| {scenario.name} | {len(scenario.steps)} | {passed}/{len(mine)}{mark} |")
    return "\n".join(lines)


def failure_text(check: Check) -> str:
    context = check.context
    if len(context) > CONTEXT_SHOWN:
        context = context[:CONTEXT_SHOWN] + f"\n  ... ({len(check.context)} characters in all)"
    shown = "\n".join(f"    {line}" for line in (context or "(empty)").splitlines())
    stored = "; ".join(check.stored) or "nothing"
    return (
        f"- [{check.kind}] {check.scenario} #{check.step}: {check.prompt}\n"
        f"  expected: {check.expected}\n"
        f"  stored: {stored}\n"
        f"  context:\n{shown}"
    )


def print_report(reports: Sequence[DbReport], suite: Suite) -> None:
    print(
        f"Scenario evaluation: {len(suite.scenarios)} scenarios, {suite.prompts} prompts, "
        f"offline (no LLM), today = {suite.today.isoformat()}\n"
    )
    print(summary_table(reports))
    for report in reports:
        print(f"\n## {report.database}\n")
        print(scenario_table(report, suite))
        failures = report.failures()
        if failures:
            print(f"\nFailing checks ({len(failures)}):\n")
            print("\n\n".join(failure_text(c) for c in failures))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only-empty", action="store_true", help="skip the noisy-large database")
    parser.add_argument(
        "--large-size", type=int, default=20_000, help="items in noisy-large (default 20000)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these scenarios")
    parser.add_argument(
        "--scenarios", type=Path, default=SCENARIOS_FILE, help="the scenarios file to run"
    )
    parser.add_argument("--keep", action="store_true", help="keep the work folder (traces)")
    parser.add_argument(
        "--postgres",
        metavar="URL",
        help="run on PostgreSQL: postgresql://... or 'auto' (a private server through pgserver)",
    )
    args = parser.parse_args(argv)

    try:
        suite = load_scenarios(args.scenarios)
        if args.only:
            suite = suite.select(args.only)
    except (OSError, ValueError, KeyError, yaml.YAMLError) as exc:
        print(f"Cannot read the scenarios: {exc}", file=sys.stderr)
        return 1

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    embedder = local_embeddings()
    work = Path(tempfile.mkdtemp(prefix="octy-scenarios-"))
    reports: list[DbReport] = []
    server = None
    url = args.postgres
    if url == "auto":
        import pgserver  # type: ignore[import-untyped]

        server = pgserver.get_server(work / "pg", cleanup_mode="delete")
        url = server.get_uri()
    try:
        reports.append(evaluate(suite, embedder, work, label="empty", database_url=url))
        if not args.only_empty:
            base = noisy_large_db(args.large_size, embedder, log)
            label = f"noisy-large ({args.large_size:,})"
            reports.append(
                evaluate(suite, embedder, work, base_db=base, label=label, database_url=url)
            )
    finally:
        if server is not None:
            server.cleanup()
        if args.keep:
            log(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    if args.json:
        payload = {
            "today": suite.today.isoformat(),
            "scenarios": len(suite.scenarios),
            "prompts": suite.prompts,
            "databases": [r.to_dict() for r in reports],
        }
        print(json.dumps(payload, indent=2))
    else:
        print_report(reports, suite)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The import graph between octygraph's parts: the layers it has, its cycles, and its upward imports.

A part is a subpackage of `octygraph/` (`store`, `service`, ...) or a flat module (`models`, `entry`,
...). Every `import` and `from ... import` is read with `ast`: at module level, inside functions (where an
import that would close a cycle at load time usually hides) and under `if TYPE_CHECKING:`. It prints

* the layers the parts fall into as they stand (a part sits one above the highest part it imports; parts
  that import each other share a layer);
* every cycle between parts, and every cycle between the modules of one part, with the imports that tie
  them;
* every import from a part to a part above it in `LAYERS`, the order the package is meant to have.

Exit status 1 when there is a cycle, an upward import or a part `LAYERS` does not place, else 0.
The demo package `octygraph_demo` (the built-in profiles' generators) sits outside `octygraph` and above
it: it imports `octygraph`, and `octygraph` imports it only inside the command line's functions.
`tests/test_import_graph.py` holds the list of those still being removed.

    python bench/import_graph.py
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "octygraph"

# The intended order, bottom to top: a part may import parts of its own layer or below, never above.
LAYERS: list[tuple[str, ...]] = [
    # text utilities (words, stems, word lists, dates, valid UTF-8) and settings (environment
    # variables, their table, private files)
    ("__init__", "config", "text"),
    # embeddings (and the local model's cached vectors), then the stores (SQLite, PostgreSQL); the
    # store's schema is the memory's vocabulary
    ("embeddings",),
    ("store",),
    # the LLM-facing shapes of that vocabulary (a flat module: checkpoints name the module of the
    # state types they hold, so moving it would leave runs checkpointed before unreadable); what may
    # never be stored (secrets, injection attempts, ungrounded text); judgement of text: the sentence rules, then the learned models;
    # then the deterministic (no-LLM) classification, search plan and reconciliation built on them
    ("models",),
    ("safety",),
    ("judgement",),
    ("fallback",),
    # named databases
    ("profiles",),
    # memories' life cycle over the store (candidates, uses), reviewing it by hand, relearning from
    # the user's verdicts, whole-store formats (export and import)
    ("memory",),
    # Claude Code's formats, its manifest of stored memories and its installation
    ("claude",),
    # language models
    ("llm",),
    # one run of the pipeline: state, context, nodes, tools, graph, runner, checkpoints and traces
    ("pipeline",),
    # a session: what it is given at its start, the hooks Claude Code runs, what is settled at its end;
    # then the resident service that runs them (or the hook process runs them itself when no service
    # answers)
    ("session",),
    ("service",),
    # the user interfaces and the command line
    ("integrations",),
    ("entry", "__main__"),
]


@dataclass(frozen=True)
class Import:
    """One imported module: who imports it, which names, on which line, and where the import sits."""

    source: str
    target: str
    names: tuple[str, ...]
    line: int
    # "module", "function" or "type-checking"
    where: str

    def describe(self) -> str:
        names = f" ({', '.join(self.names)})" if self.names else ""
        place = "" if self.where == "module" else f", {self.where}-level"
        return f"{self.source}:{self.line} imports {self.target}{names}{place}"


def module_names(package_dir: Path) -> dict[str, Path]:
    """Dotted name -> file of every module of the package (a package's `__init__` under its own name)."""
    modules: dict[str, Path] = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


class _ImportReader(ast.NodeVisitor):
    """Collects a module's imports of the package, noting whether each sits in a function or under TYPE_CHECKING."""

    def __init__(self, module: str, is_package: bool, known: set[str]) -> None:
        self.module = module
        self.is_package = is_package
        self.known = known
        self.imports: list[Import] = []
        self._functions = 0
        self._type_checking = 0

    def _where(self) -> str:
        if self._type_checking:
            return "type-checking"
        return "function" if self._functions else "module"

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        self._functions += 1
        self.generic_visit(node)
        self._functions -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _visit_function

    def visit_If(self, node: ast.If) -> None:
        test = node.test
        guarded = (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
            isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
        )
        if not guarded:
            self.generic_visit(node)
            return
        self._type_checking += 1
        for child in node.body:
            self.visit(child)
        self._type_checking -= 1
        for child in node.orelse:
            self.visit(child)

    def _add(self, target: str, names: tuple[str, ...], line: int) -> None:
        if target == PACKAGE or target.startswith(PACKAGE + "."):
            self.imports.append(Import(self.module, target, names, line, self._where()))

    def _known_prefix(self, dotted: str) -> str:
        """The longest leading part of `dotted` that is a module of the package (a name inside it, else)."""
        parts = dotted.split(".")
        while parts and ".".join(parts) not in self.known:
            parts.pop()
        return ".".join(parts) or dotted

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(self._known_prefix(alias.name), (), node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:
            anchor = self.module.split(".")
            drop = node.level - 1 if self.is_package else node.level
            anchor = anchor[: len(anchor) - drop]
            base = ".".join([*anchor, *([base] if base else [])])
        plain: list[str] = []
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            if submodule in self.known:
                self._add(submodule, (), node.lineno)
            else:
                plain.append(alias.name)
        if plain:
            self._add(base, tuple(plain), node.lineno)


def read_imports(package_dir: Path) -> list[Import]:
    """Every import of the package by the package, in file and line order."""
    modules = module_names(package_dir)
    known = set(modules)
    imports: list[Import] = []
    for module, path in modules.items():
        reader = _ImportReader(module, path.name == "__init__.py", known)
        reader.visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        imports.extend(reader.imports)
    return imports


def part_of(module: str) -> str:
    """`octygraph.store.sqlite` -> `store`; `octygraph.models` -> `models`; the package itself -> `__init__`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def short(module: str) -> str:
    return module.removeprefix(PACKAGE + ".")


def strongly_connected(nodes: Iterable[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, each sorted; a component feeds only components listed before it."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            components.append(sorted(component))

    for node in sorted(nodes):
        if node not in index:
            visit(node)
    return components


@dataclass
class Report:
    """What the graph shows: its layers as found, its cycles and its upward imports, each with its ties."""

    parts: list[str]
    part_edges: dict[str, set[str]]
    found_layers: list[list[str]]
    # (label, imports tying its members)
    cycles: list[tuple[str, list[Import]]]
    upward: list[tuple[str, list[Import]]]
    undeclared: list[str]

    def problems(self) -> list[str]:
        """One line per cycle, upward import and undeclared part: what a test compares."""
        return [
            *(label for label, _ in self.cycles),
            *(label for label, _ in self.upward),
            *(f"undeclared: {part}" for part in self.undeclared),
        ]


def _cycle_label(members: Sequence[str]) -> str:
    return "cycle: " + (" <-> ".join(members) if len(members) == 2 else ", ".join(members))


def analyse(imports: Sequence[Import], modules: Iterable[str]) -> Report:
    modules = list(modules)
    parts = sorted({part_of(m) for m in modules})
    part_edges: dict[str, set[str]] = defaultdict(set)
    ties: dict[tuple[str, str], list[Import]] = defaultdict(list)
    module_edges: dict[str, set[str]] = defaultdict(set)
    for imp in imports:
        source, target = part_of(imp.source), part_of(imp.target)
        if source != target:
            part_edges[source].add(target)
            ties[source, target].append(imp)
        elif imp.source != imp.target:
            module_edges[imp.source].add(imp.target)

    components = strongly_connected(parts, part_edges)
    level: dict[str, int] = {}
    for component in components:  # each one's imports are placed before it
        below = {t for p in component for t in part_edges.get(p, ()) if t not in component}
        height = 1 + max((level[t] for t in below), default=-1)
        for member in component:
            level[member] = height
    found_layers = [
        sorted(p for p in parts if level[p] == height) for height in range(max(level.values()) + 1)
    ]

    cycles: list[tuple[str, list[Import]]] = []
    for component in components:
        if len(component) > 1:
            tying = [i for a in component for b in component if a != b for i in ties[a, b]]
            cycles.append((_cycle_label(component), tying))
    for component in strongly_connected(modules, module_edges):
        if len(component) > 1:
            members = set(component)
            tying = [
                i
                for i in imports
                if i.source in members and i.target in members and i.source != i.target
            ]
            cycles.append((_cycle_label([short(m) for m in component]), tying))

    declared = {part: height for height, layer in enumerate(LAYERS) for part in layer}
    undeclared = [p for p in parts if p not in declared]
    upward = [
        (f"upward: {source} -> {target}", ties[source, target])
        for source in parts
        for target in sorted(part_edges.get(source, ()))
        if source in declared and target in declared and declared[target] > declared[source]
    ]
    return Report(parts, dict(part_edges), found_layers, cycles, upward, undeclared)


def report(package_dir: Path = ROOT / PACKAGE) -> Report:
    return analyse(read_imports(package_dir), module_names(package_dir))


def _direction(imp: Import) -> tuple[str, str]:
    """Which way an import points: between parts, or between modules of one part."""
    source, target = part_of(imp.source), part_of(imp.target)
    return (source, target) if source != target else (short(imp.source), short(imp.target))


def _ties(imports: Sequence[Import]) -> Iterator[str]:
    """The imports grouped by direction, a direction against `LAYERS` marked."""
    declared = {part: height for height, layer in enumerate(LAYERS) for part in layer}
    grouped: dict[tuple[str, str], list[Import]] = defaultdict(list)
    for imp in imports:
        grouped[_direction(imp)].append(imp)
    for (source, target), group in sorted(grouped.items()):
        against = declared.get(target, -1) > declared.get(source, len(LAYERS))
        yield f"    {source} -> {target}{'  (against LAYERS)' if against else ''}"
        for imp in group:
            yield f"      {imp.describe()}"


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edges", action="store_true", help="also list what each part imports")
    args = parser.parse_args(argv)
    found = report()
    print("Layers as found, bottom first (a part sits one above the highest part it imports):")
    for height, layer in enumerate(found.found_layers):
        print(f"  {height:2d}  {', '.join(layer)}")
    if args.edges:
        print("\nWhat each part imports:")
        for part in found.parts:
            print(f"  {part}: {', '.join(sorted(found.part_edges.get(part, ()))) or '-'}")
    print(f"\nCycles ({len(found.cycles)}):")
    for label, tying in found.cycles:
        print(f"  {label}")
        print("\n".join(_ties(tying)))
    print(f"\nUpward imports against LAYERS ({len(found.upward)}):")
    for label, tying in found.upward:
        print(f"  {label}")
        for imp in tying:
            print(f"    {imp.describe()}")
    if found.undeclared:
        print(f"\nParts LAYERS does not place: {', '.join(found.undeclared)}")
    return 1 if found.problems() else 0


if __name__ == "__main__":
    sys.exit(main())

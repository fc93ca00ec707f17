"""`octygraph memory ...`: profiles, snapshots and bootstrap (the seed's db-manager), and memory review."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from octygraph.config.private import private_mkdir
from octygraph.config.settings import Settings
from octygraph.integrations.cli import common
from octygraph.integrations.cli.common import UserError, out, parse_date, settings, user_errors
from octygraph.memory import feedback
from octygraph.service import service_health

if TYPE_CHECKING:
    from octygraph.profiles import LoadResult, MemoryProfiles
    from octygraph.profiles.graph import ProgressFn
    from octygraph.store import AdminStore, Node

HELP_TEXT = """\
octygraph memory: manage what octygraph remembers for this project.

Profiles (whole databases, loaded into the active one):
  octygraph memory list                          profiles, their size, which one is active
  octygraph memory active [--json]               the active profile and database statistics
  octygraph memory load PROFILE                  load a profile (the current database is saved first)
  octygraph memory unload                        empty the active database (saved first)
  octygraph memory bootstrap                     build small-baseline and noisy-large (1-2 minutes)

Snapshots (named restore points of a profile):
  octygraph memory freeze list [PROFILE]
  octygraph memory freeze create NAME [PROFILE]
  octygraph memory freeze load NAME [PROFILE]

Review:
  octygraph memory ls [--type T] [--since DATE] [--limit N] [--all]
  octygraph memory show ID                       a memory, its links, versions and provenance
  octygraph memory edit ID "new text"            replace it (the old version is kept as replaced)
  octygraph memory forget ID [--purge]           archive it (restorable); --purge deletes it
  octygraph memory restore ID                    bring back a forgotten memory
  octygraph memory ls --archived                 what was forgotten
  octygraph memory add "text" [--type T]         store one memory directly
  octygraph memory export [--format markdown|jsonl] [--output FILE]
  octygraph memory import FILE.jsonl             add an export's memories (same ids are skipped)
  octygraph memory manifest                      what the hooks stored, by session

Candidates (statements the storage verdict was unsure of; searchable, not given unprompted):
  octygraph memory review [--json]               list them, newest first
  octygraph memory approve ID [ID ...]           make them ordinary memories
  octygraph memory edit ID "new text"            correct one (the new version is approved)
  octygraph memory forget ID                     drop one
  octygraph memory learn [--reset]               fit the storage verdict to your approvals and forgets

Built-in profiles: small-baseline (a small team memory), noisy-large (the same among 20,000 look-alikes).
Every load, unload and snapshot restore first saves the active database as snapshots/<profile>/auto-*.db.
"""


class ExportFormat(StrEnum):
    markdown = "markdown"
    jsonl = "jsonl"


def _settings() -> Settings:
    return common.settings()


def _print(text: str = "") -> None:
    common.out.print(text, markup=False, highlight=False)


_echo_json = common.echo_json


def _profiles(*, builtins: bool = False) -> MemoryProfiles:
    """The project's profiles; with `builtins`, also the built-in ones (the demo package, imported then)."""
    from octygraph.profiles import MemoryProfiles

    if not builtins:
        return MemoryProfiles(_settings())
    try:
        from octygraph_demo import BUILTIN_PROFILES
    except ModuleNotFoundError as exc:
        if exc.name != "octygraph_demo":
            raise
        raise common.UserError(
            "The built-in profiles' generators (package octygraph_demo) are not installed; "
            "reinstall octygraph (`pip install -e .` in a checkout)."
        ) from None
    return MemoryProfiles(_settings(), builtins=BUILTIN_PROFILES)


@contextmanager
def _progress() -> Iterator[ProgressFn]:
    """Rich progress bars on stderr, one per stage reported by the callback."""
    bar = common.progress_bar()
    tasks: dict[str, Any] = {}

    def update(stage: str, done: int, total: int) -> None:
        if stage not in tasks:
            tasks[stage] = bar.add_task(stage, total=total)
        bar.update(tasks[stage], completed=done, total=total)

    with bar:
        yield update


@contextmanager
def _active_store(*, create: bool = False) -> Iterator[AdminStore]:
    from octygraph.store.opening import open_store

    settings = _settings()
    if not create and settings.database_url is None and not settings.paths.db.exists():
        raise common.UserError(
            f"Project {settings.project_id!r} has no memory database yet; load one with "
            "`octygraph memory load small-baseline` or add a memory with `octygraph memory add`."
        )
    with open_store(settings, create=create) as store:
        yield store


def _refuse_on_server() -> None:
    """Profiles and snapshots are SQLite files: refused, in one sentence, when memory is on a server."""
    if _settings().database_url is not None:
        raise common.UserError(
            "Profiles and snapshots are SQLite files and OCTY_DATABASE_URL keeps this project on "
            "PostgreSQL; move memories with `octygraph memory export --format jsonl` and "
            "`octygraph memory import FILE` instead."
        )


def _unknown(node_id: str) -> Exception:
    error: Exception = common.UserError(
        f"No memory with id {node_id!r}; find ids with `octygraph memory ls` or `octygraph search`."
    )
    return error


def _kind(node: Node) -> str:
    return node.node_type + (f"/{node.subtype}" if node.subtype else "")


def _count(n: int, word: str, plural: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else plural or word + 's'}"


# --------------------------------------------------------------------------------------------- profiles


def memory_help() -> None:
    """Show what the memory commands do."""
    _print(HELP_TEXT.rstrip())


def memory_list(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List profiles (built-in and stored), their size, and which one is active."""
    from rich.table import Table
    from rich.text import Text

    from octygraph.profiles import human_bytes

    entries = _profiles(builtins=True).list_profiles()
    if as_json:
        _echo_json([e.to_dict() for e in entries])
        return
    table = Table("", "profile", "memories", "links", "size", "about", box=None, pad_edge=False)
    for entry in entries:
        if entry.problem:
            about = entry.problem
        elif not entry.built:
            about = f"{entry.description}; not built yet (`octygraph memory bootstrap`)"
        else:
            about = entry.description or "stored profile"
        info = entry.info
        table.add_row(
            "*" if entry.active else "",
            Text(entry.name),
            f"{info.nodes:,}" if info else "-",
            f"{info.edges:,}" if info else "-",
            human_bytes(info.file_bytes) if info else "-",
            Text(about),
        )
    common.out.print(table)
    state = _profiles().state()
    _print(f"Active: {state['current_profile'] or 'no profile (your own memories)'} (marked *).")


def memory_active(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show the active profile and statistics of the active database."""
    from octygraph.profiles import human_bytes

    profiles = _profiles()
    settings = profiles.settings
    state = profiles.state()
    if settings.database_url is None:
        stats, where = profiles.active_stats(), str(settings.paths.db)
    else:  # memories on a PostgreSQL server: no profile is loaded there, the server has the stats
        state = {"current_profile": None, "loaded_at": None, "source": None, "snapshot": None}
        with _active_store() as store:
            stats, where = store.stats(), store.location
    health = service_health(settings)
    payload = {
        "project": settings.project_id,
        "profile": state["current_profile"],
        "loaded_at": state["loaded_at"],
        "source": state["source"],
        "snapshot": state["snapshot"],
        "db": where,
        "configured_model": profiles.embedder.model_id,
        "stats": stats,
        "service": health,
    }
    if as_json:
        _echo_json(payload)
        return
    profile = state["current_profile"] or "none (your own memories)"
    if state["loaded_at"]:
        origin = (
            f"snapshot {state['snapshot']}" if state["snapshot"] else state["source"] or "empty"
        )
        profile += f", loaded {state['loaded_at']} from {origin}"
    _print(f"Profile     {profile}")
    _print(f"Database    {where}")
    _print(f"Service     {_service_line(health)}")
    if stats is None:
        _print(
            "            not created yet; load one with `octygraph memory load small-baseline` "
            "or add a memory with `octygraph memory add`."
        )
        return
    _print(f"Size        {human_bytes(stats['file_bytes'])}")
    _print(
        f"Memories    {stats['nodes']:,} ({stats['superseded']:,} replaced), "
        f"{_count(stats['edges'], 'link')}"
    )
    _print(f"Embeddings  {stats['embedding_model']} ({stats['embedding_dim']} dims)")
    if stats["embedding_model"] != profiles.embedder.model_id:
        _print(
            f"            the configured model is {profiles.embedder.model_id}; "
            "run `octygraph reindex` before searching."
        )
    for node_type, count in stats["by_type"].items():
        subtypes = [
            f"{key.split('/', 1)[1]} {value:,}"
            for key, value in stats["by_subtype"].items()
            if key.startswith(f"{node_type}/") and not key.endswith("/-")
        ]
        detail = f"  ({', '.join(subtypes)})" if subtypes else ""
        _print(f"  {node_type:<12}{count:>8,}{detail}")


def _service_line(health: dict[str, Any]) -> str:
    """One line on the resident service that keeps hooks fast."""
    if not health.get("running"):
        return "not running (the next hook starts it; `octygraph serve` runs it in the foreground)"
    line = f"running, pid {health.get('pid')}, up {int(health.get('uptime_s') or 0)} s"
    if health.get("requests") is not None:
        line += f", {health['requests']} requests"
    if health.get("median_ms") is not None:
        line += f", median {health['median_ms']:.0f} ms"
    return line


def _report_load(result: LoadResult, done: str, as_json: bool) -> None:
    from octygraph.profiles import DEFAULT_LABEL, human_bytes

    if as_json:
        _echo_json(
            {
                "profile": result.profile,
                "source": str(result.source) if result.source else None,
                "auto_snapshot": str(result.auto_snapshot) if result.auto_snapshot else None,
                "built": [b.to_dict() for b in result.built],
                "stats": result.stats,
            }
        )
        return
    for build in result.built:
        _print(
            f"Built profile {build.name} in {build.seconds:.1f} s ({human_bytes(build.file_bytes)})."
        )
    if result.auto_snapshot:
        label = result.auto_snapshot.parent.name
        restore = f"octygraph memory freeze load {result.auto_snapshot.stem}"
        if label != (result.profile or DEFAULT_LABEL):
            restore += f" {label}"
        _print(
            f"Saved the previous active database as {result.auto_snapshot} (restore: `{restore}`)."
        )
    stats = result.stats
    _print(
        f"{done}: {_count(stats['nodes'], 'memory', 'memories')}, "
        f"{_count(stats['edges'], 'link')}, {human_bytes(stats['file_bytes'])}."
    )


def memory_load(
    profile: Annotated[
        str, typer.Argument(help="Profile name, e.g. small-baseline or noisy-large.")
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Load a profile into the active database (the current one is saved as a snapshot first)."""
    _refuse_on_server()
    with _progress() as progress:
        result = _profiles(builtins=True).load(profile, progress=progress)
    _report_load(result, f"Loaded profile {result.profile}", as_json)


def memory_unload(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Empty the active database (it is saved as a snapshot first)."""
    _refuse_on_server()
    profiles = _profiles()
    result = profiles.unload()
    if result.source is None and not result.stats:
        if as_json:
            _echo_json({"profile": None, "auto_snapshot": None, "stats": None})
        else:
            _print(
                f"Nothing to unload: project {profiles.settings.project_id!r} has no active database."
            )
        return
    _report_load(result, "Unloaded; the active database is now empty", as_json)


def memory_bootstrap(
    size: Annotated[
        int, typer.Option(min=200, max=1_000_000, help="How many items noisy-large holds.")
    ] = 20_000,
    seed: Annotated[int, typer.Option(help="Seed of the noisy-large generator.")] = 20_000,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Build the built-in profiles (small-baseline, noisy-large) into the profiles folder."""
    import time

    from octygraph.profiles import human_bytes

    started = time.perf_counter()
    with _progress() as progress:
        results = _profiles(builtins=True).bootstrap(size=size, seed=seed, progress=progress)
    total = time.perf_counter() - started
    if as_json:
        _echo_json({"profiles": [r.to_dict() for r in results], "seconds": round(total, 2)})
        return
    for r in results:
        _print(
            f"Built {r.name}: {r.nodes:,} memories ({r.superseded:,} replaced), {r.edges:,} links, "
            f"{human_bytes(r.file_bytes)} in {r.seconds:.1f} s -> {r.path}"
        )
    _print(f"Bootstrap took {total:.1f} s. Load one with `octygraph memory load noisy-large`.")


# --------------------------------------------------------------------------------------------- snapshots


def freeze_list(
    profile: Annotated[
        str | None, typer.Argument(help="Profile (default: the active one).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List the snapshots of a profile."""
    from rich.table import Table
    from rich.text import Text

    from octygraph.profiles import human_bytes

    label, entries = _profiles().list_snapshots(profile)
    if as_json:
        _echo_json({"profile": label, "snapshots": [e.to_dict() for e in entries]})
        return
    if not entries:
        _print(
            f"No snapshots of profile {label} yet; make one with `octygraph memory freeze create NAME`."
        )
        return
    table = Table("snapshot", "saved (UTC)", "memories", "size", box=None, pad_edge=False)
    for e in entries:
        table.add_row(
            Text(e.name),
            e.modified,
            f"{e.info.nodes:,}" if e.info else Text(e.problem or "?"),
            human_bytes(e.info.file_bytes if e.info else e.path.stat().st_size),
        )
    _print(f"Snapshots of {label}:")
    common.out.print(table)


def freeze_create(
    name: Annotated[str, typer.Argument(help="Snapshot name, e.g. pre-demo.")],
    profile: Annotated[
        str | None, typer.Argument(help="Profile (default: the active one).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Save the active database (or a stored profile) as a named snapshot."""
    _refuse_on_server()
    from octygraph.profiles import human_bytes

    path, info = _profiles().freeze_create(name, profile)
    if as_json:
        _echo_json({"snapshot": path.stem, "profile": path.parent.name, **info.to_dict()})
        return
    _print(
        f"Saved snapshot {path.stem} of {path.parent.name}: "
        f"{info.nodes:,} memories, {human_bytes(info.file_bytes)} ({path})."
    )


def freeze_load(
    name: Annotated[str, typer.Argument(help="Snapshot name.")],
    profile: Annotated[
        str | None, typer.Argument(help="Profile (default: the active one).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Restore a snapshot into the active database (the current one is saved first)."""
    _refuse_on_server()
    result = _profiles().freeze_load(name, profile)
    snapshot = result.source.stem if result.source else name
    _report_load(result, f"Restored snapshot {snapshot} of {result.profile or 'default'}", as_json)


# --------------------------------------------------------------------------------------------- review


def memory_show(
    node_id: Annotated[str, typer.Argument(metavar="ID", help="The memory's id.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show one memory: content, provenance, links and all its versions."""
    import json

    with _active_store() as store:
        node = store.get_node(node_id.strip())
        if node is None:
            raise _unknown(node_id)
        edges = store.edges_of(node.id)
        others = {
            n.id: n
            for n in store.get_nodes(
                e.target_id if e.source_id == node.id else e.source_id for e in edges
            )
        }
        chain = store.supersede_chain(node.id)
    links: list[dict[str, Any]] = []
    for edge in edges:
        outgoing = edge.source_id == node.id
        other = others.get(edge.target_id if outgoing else edge.source_id)
        links.append(
            {
                "id": edge.id,
                "edge_type": edge.edge_type,
                "direction": "out" if outgoing else "in",
                "created_at": edge.created_at,
                "node": other.to_dict() if other else None,
            }
        )
    if as_json:
        _echo_json(
            {"node": node.to_dict(), "links": links, "versions": [n.to_dict() for n in chain]}
        )
        return
    _print(f"{_kind(node)}  {node.id}")
    _print(node.content)
    _print()
    from octygraph.memory.review import status as review_status

    status = review_status(node)
    if status == "replaced":
        status = f"replaced by {node.superseded_by}"
    rows = [
        ("status", status),
        ("source", node.source),
        ("created", node.created_at),
    ]
    if node.valid_from or node.valid_until:
        rows.append(("valid", f"from {node.valid_from or '?'} until {node.valid_until or '-'}"))
    if node.scope is not None:
        rows.append(("scope", f"{node.scope:g}"))
    rows.append(("salience", f"{node.salience:g} (confidence {node.confidence:g})"))
    if node.attributes:
        rows.append(("attributes", json.dumps(node.attributes, ensure_ascii=False, sort_keys=True)))
    for label, value in rows:
        _print(f"  {label:<11} {value}")
    _print()
    _print(f"Links ({len(links)})" if links else "Links: none")
    for link in links:
        other_node = link["node"]
        arrow = "->" if link["direction"] == "out" else "<-"
        if other_node:
            kind = other_node["type"] + (
                f"/{other_node['subtype']}" if other_node["subtype"] else ""
            )
            _print(
                f"  {arrow} {link['edge_type']:<11} {kind:<20} {other_node['content']}  {other_node['id']}"
            )
    if len(chain) > 1:
        _print()
        _print(f"Versions ({len(chain)}), oldest first")
        for i, version in enumerate(chain, start=1):
            mark = "  <- this one" if version.id == node.id else ""
            state = review_status(version)
            _print(f"  {i}. {version.id}  {version.created_at}  [{state}] {version.content}{mark}")


def memory_ls(
    type_: Annotated[
        list[str] | None, typer.Option("--type", "-t", help="Only this memory type (repeatable).")
    ] = None,
    since: Annotated[
        str | None, typer.Option(help="Only memories created (or dated) on or after YYYY-MM-DD.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=100_000, help="How many.")] = 50,
    include_superseded: Annotated[
        bool, typer.Option("--all", help="Include memories that were replaced or forgotten.")
    ] = False,
    archived: Annotated[
        bool, typer.Option("--archived", help="Only forgotten (archived) memories.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List stored memories, newest first."""
    from rich.table import Table
    from rich.text import Text

    when = common.parse_date(since, "--since")
    with _active_store() as store:
        if archived:
            nodes = [
                n
                for n in store.archived_nodes(limit)
                if (not type_ or n.node_type in type_) and (not when or n.created_at >= when)
            ]
        else:
            nodes = store.list_nodes(
                types=type_ or None, since=when, limit=limit, include_superseded=include_superseded
            )
    if as_json:
        _echo_json([n.to_dict() for n in nodes])
        return
    if not nodes:
        _print("No memories match.")
        return
    table = Table("id", "type", "created", "content", box=None, pad_edge=False)
    for node in nodes:
        content = Text(node.content, style="strike" if node.superseded_by else "")
        table.add_row(node.id, _kind(node), node.created_at[:16], content)
    common.out.print(table)


def memory_edit(
    node_id: Annotated[str, typer.Argument(metavar="ID", help="The memory to change.")],
    text: Annotated[str, typer.Argument(help="The corrected text.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Correct a memory: a new version replaces it (re-embedded); the old one is kept as replaced."""
    from octygraph.memory import review
    from octygraph.memory.candidates import is_candidate

    with _active_store() as store:
        if store.get_node(node_id.strip()) is None:
            raise _unknown(node_id)
        old, new = review.edit(store, node_id, text)  # a candidate's correction approves it
    if is_candidate(old):
        _record_example(new, "edit", candidate=True)
    if as_json:
        _echo_json({"old": old.to_dict(), "new": new.to_dict()})
        return
    _print(f"Replaced {_kind(old)} {old.id} with {new.id}: {new.content}")
    _print(f"The old version is kept as replaced; `octygraph memory show {new.id}` shows both.")


def memory_forget(
    node_id: Annotated[str, typer.Argument(metavar="ID", help="The memory to forget.")],
    purge: Annotated[
        bool, typer.Option("--purge", help="Delete it for good, with its links (no undo).")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Forget a memory: archived (out of recall, restorable with `memory restore`), or deleted with --purge."""
    from octygraph.memory import review
    from octygraph.memory.candidates import is_candidate

    with _active_store() as store:
        node = store.get_node(node_id.strip())
        if node is None:
            raise _unknown(node_id)
        was_current = node.superseded_by is None
        if purge:
            store.delete_node(node.id)
        else:
            node = review.forget(store, node.id)
    if was_current:  # forgetting it again, or an old version, says nothing new
        _record_example(node, "forget", candidate=is_candidate(node))
    if as_json:
        _echo_json({"forgotten": node.to_dict(), "purged": purge})
        return
    _print(f"Forgot {_kind(node)} {node.id}: {node.content}")
    if not purge:
        _print(f"It is archived; `octygraph memory restore {node.id}` brings it back.")


def memory_restore(
    node_id: Annotated[str, typer.Argument(metavar="ID", help="The archived memory.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Bring back a forgotten (archived) memory."""
    from octygraph.memory import review

    with _active_store() as store:
        if store.get_node(node_id.strip()) is None:
            raise _unknown(node_id)
        node = review.restore(store, node_id)
    if as_json:
        _echo_json({"restored": node.to_dict()})
        return
    _print(f"Restored {_kind(node)} {node.id}: {node.content}")


def memory_export(
    fmt: Annotated[
        ExportFormat,
        typer.Option("--format", "-f", help="markdown (to read) or jsonl (to import elsewhere)."),
    ] = ExportFormat.markdown,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write to this file instead of the screen."),
    ] = None,
) -> None:
    """Export every memory: Markdown grouped by type and entity, or JSONL with ids for import."""
    import io

    from octygraph.memory.transfer import export_jsonl, export_markdown

    settings = _settings()
    buffer = io.StringIO()
    with _active_store() as store:
        if fmt is ExportFormat.jsonl:
            nodes, edges = export_jsonl(store, buffer)
        else:
            nodes, edges = export_markdown(
                store, buffer, title=f"Memory of project {settings.project_id}"
            )
    if output is None:
        typer.echo(buffer.getvalue(), nl=False)
        return
    _write_private(output, buffer.getvalue())
    common.err.print(
        f"Exported {nodes:,} memories and {edges:,} links to {output}.",
        markup=False,
        highlight=False,
    )


def memory_import(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="A JSONL export.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Import a JSONL export (ids already present are skipped; contents are re-embedded)."""
    from octygraph.memory.transfer import import_jsonl, parse_jsonl

    parsed = parse_jsonl(file)  # refuse a bad file before creating or opening anything
    with _active_store(create=True) as store, _progress() as progress:
        result = import_jsonl(store, file, parsed=parsed, progress=progress)
    if as_json:
        _echo_json(result.to_dict())
        return
    _print(
        f"Imported {result.nodes_added:,} memories and {result.edges_added:,} links; "
        f"skipped {result.nodes_skipped:,} memories and {result.edges_skipped:,} links already present."
    )


def _write_private(path: Path, text: str) -> None:
    """Write a file atomically, readable by the user only (memories are private)."""
    path = path.expanduser()
    if path.is_dir():
        raise common.UserError(f"{path} is a folder; give a file name for the export.")
    private_mkdir(path.parent)
    tmp = path.with_name(f".{path.name}.partial")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


# --------------------------------------------------------------------------------------------- added by hand, by hooks


def memory_add(
    text: Annotated[str, typer.Argument(help="The memory, as a sentence.")],
    type_: Annotated[
        str, typer.Option("--type", "-t", help="entity, fact, event, opinion, instruction or plan.")
    ] = "fact",
    subtype: Annotated[
        str | None, typer.Option(help="Subtype, e.g. person, rule, scheduled.")
    ] = None,
    entity: Annotated[
        list[str] | None,
        typer.Option(
            "--entity", "-e", help="An entity this memory is about (repeatable; created if new)."
        ),
    ] = None,
    scope: Annotated[
        float | None, typer.Option(min=0.0, max=1.0, help="Breadth 0-1 for instructions and plans.")
    ] = None,
    valid_from: Annotated[
        str | None, typer.Option(help="Date it applies from (YYYY-MM-DD), for plans.")
    ] = None,
    source: Annotated[str, typer.Option(help="Who said it: user or claude.")] = "user",
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the stored memory as JSON.")
    ] = False,
) -> None:
    """Store one memory directly (no pipeline): for people and tests."""
    from octygraph.safety.checks import redact_secrets
    from octygraph.safety.secrets import is_secret_name, redacted_away
    from octygraph.store import NODE_TYPES, SUBTYPES
    from octygraph.store.opening import open_store

    if not text.strip():
        raise UserError("The memory text is empty; give a sentence to remember.")
    if type_ not in NODE_TYPES:
        raise UserError(f"Unknown memory type {type_!r}; use one of: {', '.join(NODE_TYPES)}.")
    if subtype is not None and SUBTYPES[type_] and subtype not in SUBTYPES[type_]:
        raise UserError(
            f"Unknown subtype {subtype!r} for {type_}; use one of: {', '.join(SUBTYPES[type_])}."
        )
    if source not in ("user", "claude"):
        raise UserError("--source must be 'user' or 'claude'.")
    when = parse_date(valid_from, "--valid-from")
    if type_ == "entity" and is_secret_name(text):
        raise UserError("That entity name is a secret; nothing was stored.")
    clean, _ = redact_secrets(text)
    with open_store(settings()) as store:
        entity_ids = [
            store.ensure_entity(name)[0].id
            for name in (entity or [])
            # A secret is never an entity, nor is a word that redaction took out of the text.
            if name.strip() and not is_secret_name(name) and not redacted_away(name, text, clean)
        ]
        node = store.add_node(
            type_,
            clean,
            subtype=subtype,
            entity_ids=entity_ids,
            scope=scope,
            valid_from=when,
            source=source,
        )
    if as_json:
        typer.echo(json.dumps(node.to_dict(), ensure_ascii=False, indent=2))
    else:
        out.print(f"Stored {node.node_type} {node.id}: {node.content}", markup=False)


def memory_manifest(
    session: Annotated[
        str | None, typer.Option("--session", help="Only this Claude session.")
    ] = None,
    delete: Annotated[
        bool,
        typer.Option(
            "--delete", help="Forget (archive) everything that session stored (needs --session)."
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Review what the hooks stored, by session; optionally forget one session's memories."""
    from octygraph.claude import manifest

    s = settings()
    paths = s.paths
    if delete:
        if not session:
            raise UserError("--delete needs --session ID, so only that session's memories go.")
        from octygraph.store import ARCHIVED
        from octygraph.store.opening import open_store, store_exists

        removed = manifest.remove_session(paths.manifest, session)
        forgotten = 0
        if removed and store_exists(s):
            with open_store(s, create=False) as store:
                # Archived like `memory forget`, so a session forgotten by mistake can be restored.
                for entry in removed:
                    node = store.get_node(entry["node_id"])
                    if node is not None and node.superseded_by != ARCHIVED:
                        store.archive_node(node.id)
                        forgotten += 1
        out.print(
            f"Forgot {forgotten} memories stored by session {session}"
            + (" (`octygraph memory ls --archived` lists them)." if forgotten else ".")
        )
        return
    entries = manifest.load(paths.manifest, session=session)
    if as_json:
        typer.echo(json.dumps(entries, ensure_ascii=False, indent=2))
        return
    if not entries:
        out.print(
            "Nothing stored by hooks yet."
            if not session
            else f"Nothing stored by session {session}."
        )
        return
    from rich.table import Table

    table = Table("session", "node id", "type", "content")
    for e in entries:
        kind = e["type"] + (f"/{e['subtype']}" if e["subtype"] else "")
        table.add_row(e["session_id"], e["node_id"], kind, e["content"])
    out.print(table)


# --------------------------------------------------------------------------------------------- candidates


def _record_example(node: Node, action: feedback.Action, *, candidate: bool) -> None:
    """Keep the user's decision as a labelled example for `memory learn`; a failure only warns."""
    try:
        feedback.record_decision(_settings(), node, action, candidate=candidate)
    except OSError as exc:
        common.err.print(
            f"Done, but the example for `octygraph memory learn` was not recorded: "
            f"{exc.strerror or exc}.",
            markup=False,
            highlight=False,
        )


def _candidate_dict(node: Node) -> dict[str, Any]:
    return {
        "id": node.id,
        "type": node.node_type,
        "subtype": node.subtype,
        "content": node.content,
        "verdict_p": node.attributes.get("verdict_p"),
        "created_at": node.created_at,
    }


def memory_review(
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=100_000, help="How many.")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List candidate memories, newest first: statements the storage verdict was unsure of.

    One unused for OCTY_CANDIDATE_DAYS (30) is archived at a session's end; memory restore undoes it.
    """
    from rich.table import Table
    from rich.text import Text

    from octygraph.memory.candidate_review import list_candidates

    with _active_store() as store:
        nodes = list_candidates(store, limit)
    if as_json:
        _echo_json([_candidate_dict(n) for n in nodes])
        return
    if not nodes:
        _print("No candidates await review.")
        return
    table = Table("id", "type", "p", "created", "content", box=None, pad_edge=False)
    for node in nodes:
        p = node.attributes.get("verdict_p")
        table.add_row(
            node.id,
            _kind(node),
            f"{p:.2f}" if isinstance(p, int | float) else "-",
            node.created_at[:16],
            Text(node.content),
        )
    common.out.print(table)
    _print(
        "Keep one with `octygraph memory approve ID`, correct it with `octygraph memory edit ID TEXT`, "
        "drop it with `octygraph memory forget ID`."
    )


def memory_approve(
    node_ids: Annotated[list[str], typer.Argument(metavar="ID...", help="The candidates to keep.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Approve candidates: each becomes an ordinary memory, given unprompted when it applies."""
    from octygraph.memory.candidate_review import approvable, approve

    with _active_store() as store:
        # Every id is checked before any is approved, so a typo changes nothing.
        nodes: dict[str, Node] = {}
        for node_id in node_ids:
            node = store.get_node(node_id.strip())
            if node is None:
                raise _unknown(node_id)
            nodes[node.id] = approvable(node)
        approved = [approve(store, node_id) for node_id in nodes]
    for node in approved:
        _record_example(node, "approve", candidate=True)
    if as_json:
        _echo_json({"approved": [n.to_dict() for n in approved]})
        return
    for node in approved:
        _print(f"Approved {_kind(node)} {node.id}: {node.content}")


def memory_learn(
    shared: Annotated[
        Path | None,
        typer.Option(
            "--shared",
            help="The shared labelled sets to check against (default: ../shared beside a checkout).",
        ),
    ] = None,
    no_shared: Annotated[
        bool, typer.Option("--no-shared", help="Check on your own examples only.")
    ] = False,
    reset: Annotated[
        bool, typer.Option("--reset", help="Drop what was learned; use the shipped verdict again.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Fit the storage verdict to your own approvals and forgets; kept only if it is no worse."""
    from octygraph.memory import learning

    s = _settings()
    if reset:
        removed = learning.forget_learned(s.home)
        if as_json:
            _echo_json({"reset": removed})
        else:
            _print(
                "Dropped the learned verdict; the shipped one is used again."
                if removed
                else "Nothing was learned; the shipped verdict is in use."
            )
        return
    examples = feedback.load(s.home)
    guard, checked = None, "the shared sets are not checked (--no-shared)"
    if not no_shared and len(examples) >= learning.MIN_EXAMPLES:
        if shared is not None and not shared.is_dir():
            raise UserError(
                f"{shared} is not a folder; give the folder holding data/realtraffic-*."
            )
        guard, checked = learning.shared_guard(shared)
    outcome = learning.learn(s.home, examples, guard=guard)
    if as_json:
        _echo_json(
            {
                "learned": outcome.shipped,
                "reason": outcome.reason,
                "examples": outcome.examples,
                "path": str(outcome.path) if outcome.path else None,
                "shared_sets": checked,
                "figures": {k: round(v, 6) for k, v in outcome.figures.items()},
            }
        )
        if not outcome.shipped:
            raise typer.Exit(1)
        return
    if outcome.figures:
        f = outcome.figures
        _print(
            f"Your {int(f['examples'])} examples, out of fold: log-loss "
            f"{f['shipped_log_loss']:.3f} shipped, {f['learned_log_loss']:.3f} learned; "
            f"balanced accuracy {f['shipped_accuracy']:.1%} shipped, {f['learned_accuracy']:.1%} learned."
        )
        if "shipped_false_store" in f:
            _print(
                f"Shared sets: false-store {f['shipped_false_store']:.1%} shipped, "
                f"{f['learned_false_store']:.1%} learned; recall {f['shipped_recall']:.1%} shipped, "
                f"{f['learned_recall']:.1%} learned."
            )
    if outcome.figures or outcome.shipped:
        _print(checked[:1].upper() + checked[1:] + ".")
    if not outcome.shipped:
        raise UserError(outcome.reason)
    _print(outcome.reason)


# --------------------------------------------------------------------------------------------- wiring

memory_app = typer.Typer(
    help="Look at, change and manage what octygraph remembers.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
_COMMANDS: list[tuple[str, Callable[..., Any]]] = [
    ("add", memory_add),
    ("help", memory_help),
    ("list", memory_list),
    ("active", memory_active),
    ("load", memory_load),
    ("unload", memory_unload),
    ("bootstrap", memory_bootstrap),
    ("show", memory_show),
    ("ls", memory_ls),
    ("edit", memory_edit),
    ("forget", memory_forget),
    ("restore", memory_restore),
    ("export", memory_export),
    ("import", memory_import),
    ("manifest", memory_manifest),
    ("review", memory_review),
    ("approve", memory_approve),
    ("learn", memory_learn),
]
for _name, _func in _COMMANDS:
    memory_app.command(_name)(user_errors(_func))
freeze_app = typer.Typer(
    help="Named snapshots of a profile: list, create, load.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
for _name, _func in (("list", freeze_list), ("create", freeze_create), ("load", freeze_load)):
    freeze_app.command(_name)(user_errors(_func))
memory_app.add_typer(freeze_app, name="freeze")

"""The `octygraph` command line (typer): the top-level commands; `memory ...` lives in `cli.memory`.

Every user error ends with one plain sentence on stderr and exit code 1, never a traceback.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from octygraph.config.settings import Settings, SettingsError
from octygraph.integrations.cli.common import (
    UserError,
    err,
    out,
    progress_bar,
    settings,
    user_errors,
)
from octygraph.integrations.cli.common import state as _state
from octygraph.integrations.cli.memory import memory_app
from octygraph.memory.candidates import is_candidate
from octygraph.service.cli import serve_app

app = typer.Typer(
    name="octygraph",
    help="Long-term memory for AI coding assistants, on a local graph of typed memories.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(memory_app, name="memory")


@app.callback()
def main_options(
    project: Annotated[
        str | None,
        typer.Option(
            "--project",
            "-p",
            help="Project id (default: $OCTYBOT_PROJECT, else the git root's or the folder's name).",
        ),
    ] = None,
) -> None:
    """Long-term memory for AI coding assistants."""
    _state["project"] = project


# --------------------------------------------------------------------------- search / reindex


@app.command()
@user_errors
def search(
    words: Annotated[
        list[str], typer.Argument(help="What to look for, in your own words (quotes optional).")
    ],
    type_: Annotated[
        list[str] | None,
        typer.Option(
            "--type", "-t", help="Only this memory type (repeatable). Entities only when asked."
        ),
    ] = None,
    limit: Annotated[
        int, typer.Option("--limit", "-n", min=1, max=200, help="How many results.")
    ] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    include_superseded: Annotated[
        bool, typer.Option("--all", help="Include memories that were replaced.")
    ] = False,
) -> None:
    """Search stored memories by meaning and keywords (hybrid), without any LLM."""
    from octygraph.store import NODE_TYPES
    from octygraph.store.opening import open_store, store_exists

    query = " ".join(words)
    if not query.strip():
        raise UserError("Give some words to search for.")
    types = type_ or [t for t in NODE_TYPES if t != "entity"]
    s = settings()
    if not store_exists(s):
        raise UserError(
            f"No memories yet for project {s.project_id!r}; add one with `octygraph memory add`."
        )
    with open_store(s, create=False) as store:
        hits = store.search(query, types=types, limit=limit, include_superseded=include_superseded)
    if as_json:
        payload = [
            {
                **h.node.to_dict(),
                "match": h.match,
                "score": round(h.score, 4),
                "cosine": round(h.cosine, 4),
            }
            for h in hits
        ]
        typer.echo(json.dumps(payload, ensure_ascii=False, indent=2))
        return
    if not hits:
        out.print("No matching memories.")
        return
    from rich.table import Table

    table = Table("match", "type", "content", "id", show_lines=False)
    for h in hits:
        kind = h.node.node_type + (f"/{h.node.subtype}" if h.node.subtype else "")
        if is_candidate(h.node):
            kind += "\n(candidate)"
        table.add_row(f"{h.match}%", kind, h.node.content, h.node.id)
    out.print(table)


@app.command()
@user_errors
def reindex() -> None:
    """Re-embed every memory with the configured embedding model (after switching models)."""
    from octygraph.store.opening import open_store, store_exists

    s = settings()
    if not store_exists(s):
        raise UserError(f"No memory database for project {s.project_id!r}; nothing to re-embed.")
    with open_store(s, create=False, check_model=False) as store, progress_bar() as bar:
        task = bar.add_task("Re-embedding", total=None)

        def step(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        count = store.reindex(progress=step)
    out.print(
        f"Re-embedded {count} {'memory' if count == 1 else 'memories'} with {store.embedder.model_id}."
    )


@app.command()
def doctor(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")] = False,
) -> None:
    """Say what keeps memory from working here, and how to fix it (exit 1 when something is wrong)."""
    import os

    from octygraph.integrations.cli.doctor import diagnose

    env = dict(os.environ)
    if _state["project"]:
        env["OCTYBOT_PROJECT"] = str(_state["project"])
    findings = diagnose(env)
    broken = [f for f in findings if f.level == "problem"]
    if as_json:
        typer.echo(json.dumps([f.to_dict() for f in findings], indent=2))
    else:
        marks = {"ok": "ok     ", "note": "note   ", "problem": "PROBLEM"}
        for finding in findings:
            out.print(f"{marks[finding.level]} {finding.check}: {finding.message}", markup=False)
            if finding.fix:
                out.print(f"        fix: {finding.fix}", markup=False)
        out.print(
            f"{len(broken)} problem{'s' if len(broken) != 1 else ''} found."
            if broken
            else "Memory works here.",
            markup=False,
        )
    if broken:
        raise typer.Exit(1)


def main() -> None:
    """The command line's entry: every error ends as one sentence and exit code 1."""
    from octygraph.integrations.cli.guard import run

    run(app)


# --------------------------------------------------------------------------- the pipeline


def _run_async(coro: Any) -> Any:
    import asyncio

    return asyncio.run(coro)


@app.command()
@user_errors
def run(
    prompt: Annotated[str, typer.Argument(help="The prompt, as a user would type it.")],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the whole result as JSON.")
    ] = False,
    offline: Annotated[bool, typer.Option("--offline", help="Force the no-LLM path.")] = False,
    project: Annotated[
        str | None, typer.Option("--project", help="Project id for this run.")
    ] = None,
) -> None:
    """Run the whole memory pipeline on one prompt: store what it tells, print the context it needs.

    The context is printed as soon as retrieval has it; the command exits once storing is done too."""
    from octygraph.pipeline.context import CLI_SESSION
    from octygraph.pipeline.runner import RunOptions, run_prompt
    from octygraph.store.opening import open_store

    if not prompt.strip():
        raise UserError("The prompt is empty; give the text a user would type.")
    if project:
        _state["project"] = project
    s = settings()

    async def show_context(answer: dict[str, Any]) -> None:
        if answer["context"]:
            typer.echo(answer["context"])
        else:
            err.print("No stored memory is relevant to this prompt.")

    with open_store(s) as store:
        result = _run_async(
            run_prompt(
                prompt,
                s,
                store,
                RunOptions(offline=offline, session_id=CLI_SESSION),
                # The JSON holds what was stored too, so it waits for the end.
                on_answer=None if as_json else show_context,
            )
        )
    from octygraph.pipeline.retention import prune_if_due

    prune_if_due(s)
    if as_json:
        typer.echo(json.dumps(result, ensure_ascii=False, indent=2))
        return
    for item in result["stored"]:
        err.print(
            f"stored {item['type']} {item['id']}: {item['content']}", markup=False, highlight=False
        )
    for old in result["superseded"]:
        err.print(f"superseded {old}", highlight=False)
    if result.get("notice"):
        err.print(result["notice"], markup=False, highlight=False)


trace_app = typer.Typer(
    help="Debug traces of past runs, and replay from checkpoints.", no_args_is_help=True
)
app.add_typer(trace_app, name="trace")


@trace_app.command("list")
@user_errors
def trace_list(
    limit: Annotated[
        int, typer.Option("--limit", "-n", min=1, help="How many, newest first.")
    ] = 20,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """List recent runs."""
    from rich.table import Table

    from octygraph.pipeline.traces import list_traces

    rows = list_traces(settings().paths.debug_dir, limit)
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        out.print('No traces yet; run `octygraph run "..."` first.')
        return
    table = Table("trace id", "mode", "stored", "context", "ms", "prompt")
    for r in rows:
        table.add_row(
            r["trace_id"],
            f"{r['mode']} (resumed)" if r.get("resumed") else str(r["mode"]),
            str(r["stored"]),
            str(r["context_chars"]),
            str(r["total_ms"]),
            r["prompt"],
        )
    out.print(table)


@trace_app.command("show")
@user_errors
def trace_show(
    trace_id: Annotated[str, typer.Argument(help="A trace id (or a unique prefix).")],
) -> None:
    """Print one trace as JSON."""
    from octygraph.pipeline.traces import TraceNotFound, load_trace

    try:
        data = load_trace(settings().paths.debug_dir, trace_id)
    except TraceNotFound as exc:
        raise UserError(str(exc)) from None
    typer.echo(json.dumps(data, ensure_ascii=False, indent=2))


@trace_app.command("prune")
@user_errors
def trace_prune(
    keep: Annotated[
        int | None,
        typer.Option("--keep", "-n", min=0, help="Traces to keep (default $OCTY_TRACE_KEEP)."),
    ] = None,
    days: Annotated[
        float | None,
        typer.Option(
            "--days", min=0.0, help="Remove traces older than this (default $OCTY_TRACE_MAX_DAYS)."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Remove old debug traces and the checkpoints of their runs."""
    from octygraph.pipeline.retention import prune

    result = prune(settings(), keep=keep, max_days=days)
    if as_json:
        typer.echo(json.dumps({"traces": result.traces, "runs": result.checkpoint_threads}))
        return
    out.print(
        f"Removed {result.traces} traces and the checkpoints of {result.checkpoint_threads} runs."
    )


@trace_app.command("replay")
@user_errors
def trace_replay(
    trace_id: Annotated[str, typer.Argument(help="A trace id (or a unique prefix).")],
    use_llm: Annotated[
        bool, typer.Option("--llm", help="Curate with the configured LLM (default: offline).")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Re-run assembly and curation from the run's stored checkpoint; memory is not changed."""
    from octygraph.pipeline.runner import replay
    from octygraph.pipeline.traces import TraceNotFound
    from octygraph.store.opening import open_store

    s = settings()
    try:
        with open_store(s, create=False) as store:
            result = _run_async(replay(trace_id, s, store, offline=not use_llm))
    except TraceNotFound as exc:
        raise UserError(str(exc)) from None
    if as_json:
        typer.echo(json.dumps(result, ensure_ascii=False, indent=2))
        return
    out.print(
        f"Replayed {result['trace_id']} from checkpoint {result['from_checkpoint']}: "
        f"{'same context as the original' if result['same'] else 'the context differs from the original'}."
    )
    typer.echo(result["context"])


# --------------------------------------------------------------------------- Claude Code


hook_app = typer.Typer(
    help="Claude Code hooks (JSON on stdin). Always exit 0.", no_args_is_help=True
)
app.add_typer(hook_app, name="hook")


def _hook_exit(event: str) -> None:
    from octygraph.service.client import hook_main

    # A running service answers, else the pipeline runs here; only the installed script's fast path
    # (octygraph.entry) starts a service. Exits at once with 0, whatever happened.
    hook_main(event, start_if_missing=False)


@hook_app.command("prompt")
def hook_prompt() -> None:
    """UserPromptSubmit: print the memory context for the prompt as hook JSON, or nothing."""
    _hook_exit("prompt")


@hook_app.command("stop")
def hook_stop() -> None:
    """Stop: store what the assistant reports having done or decided."""
    _hook_exit("stop")


@hook_app.command("session-start")
def hook_session_start() -> None:
    """SessionStart: after Claude Code compacts a session, its memories may be injected again."""
    _hook_exit("session-start")


@hook_app.command("session-end")
def hook_session_end() -> None:
    """SessionEnd: hand the session to the service, which settles the candidate memories it stored."""
    _hook_exit("session-end")


def split_slash_arguments(text: str) -> list[str]:
    """The words of an `/octybot` argument string: shell-style, or plain words when quotes are unbalanced.

    `search "Peter account"` keeps the quoted phrase as one word; `search Peter's account` (a lone
    apostrophe) falls back to splitting on white space, so it still means three words.
    """
    import shlex

    text = text.strip()
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


@app.command("slash", hidden=True)
def slash() -> None:
    """What `/octybot ARGS` runs: the arguments arrive on stdin (a quoted here-document), never through a shell.

    Claude Code pastes the typed arguments into the command line as they are, so any quote in them
    would break the shell; a here-document with a quoted delimiter passes them through untouched. The
    words then run as an ordinary `octygraph` command, with errors on stdout (the slash command shows
    stdout) and exit code 0 (a non-zero `!` command aborts the whole slash command).
    """
    words = split_slash_arguments(sys.stdin.read())
    if not words:
        words = ["--help"]
    saved = sys.stderr
    sys.stderr = sys.stdout
    try:
        main_args = [] if _state["project"] is None else ["--project", _state["project"]]
        app(args=main_args + words, prog_name="/octybot", standalone_mode=True)
    except SystemExit:
        pass
    except SettingsError as exc:
        print(str(exc))
    except Exception as exc:  # never abort the slash command with a traceback
        print(f"octygraph failed: {exc}")
    finally:
        sys.stdout.flush()
        sys.stderr = saved
    raise typer.Exit(0)


def _installed_executable() -> str:
    """The `octygraph` script of the installation that is running now (an absolute path)."""
    from pathlib import Path

    beside = Path(sys.executable).parent / "octygraph"
    if beside.exists():
        return str(beside)
    argv0 = Path(sys.argv[0])
    if argv0.name == "octygraph" and argv0.exists():
        return str(argv0.resolve())
    raise UserError(
        "Cannot find the installed `octygraph` command; install the package with pip first."
    )


def _project_folder(target_dir: str) -> tuple[Any, Settings]:
    """The target project folder and its settings (project id = --project or the folder's name)."""
    from pathlib import Path

    target = Path(target_dir).expanduser().resolve()
    if not target.is_dir():
        raise UserError(f"{target} is not a folder.")
    return target, Settings.from_env(project_id=_state["project"] or target.name, cwd=target)


Scope = Annotated[
    str,
    typer.Option(
        "--scope",
        help="project: the hooks of TARGET_DIR/.claude/settings.json (project id pinned); "
        "user: ~/.claude/settings.json, every project (project id = its git root's name).",
    ),
]


def _scope_target(target_dir: str | None, scope: str) -> tuple[Any, Settings, bool]:
    """Where to install and with which settings, for `--scope project|user`."""
    if scope == "user":
        from octygraph.claude.install import user_claude_dir

        if target_dir is not None:
            raise UserError("--scope user takes no folder: it installs for every project.")
        return user_claude_dir(), settings(), True
    if scope != "project":
        raise UserError(f"--scope must be 'project' or 'user', got {scope!r}.")
    if target_dir is None:
        raise UserError("Name the project folder (octygraph install DIR), or pass --scope user.")
    target, s = _project_folder(target_dir)
    return target, s, False


@app.command()
@user_errors
def install(
    target_dir: Annotated[
        str | None, typer.Argument(help="The project folder to add octygraph to.")
    ] = None,
    scope: Scope = "project",
) -> None:
    """Add the octygraph hooks and the /octybot command to a project (or all of them, --scope user)."""
    from octygraph.claude.install import InstallError
    from octygraph.claude.install import install as do_install

    target, s, user_scope = _scope_target(target_dir, scope)
    try:
        report = do_install(target, s, _installed_executable(), user_scope=user_scope)
    except InstallError as exc:
        raise UserError(str(exc)) from None
    out.print(report.render(), markup=False, highlight=False)


@app.command()
@user_errors
def uninstall(
    target_dir: Annotated[
        str | None, typer.Argument(help="The project folder to remove octygraph from.")
    ] = None,
    scope: Scope = "project",
) -> None:
    """Remove exactly what `octygraph install` added (memories are kept)."""
    from octygraph.claude.install import InstallError
    from octygraph.claude.install import uninstall as do_uninstall

    target, s, user_scope = _scope_target(target_dir, scope)
    try:
        report = do_uninstall(target, s, user_scope=user_scope)
    except InstallError as exc:
        raise UserError(str(exc)) from None
    out.print(report.render(), markup=False, highlight=False)


def _toggle(flag_name: str, label: str, on: bool | None) -> None:
    from octygraph.claude import modes

    paths = settings().paths.ensure()
    flag = getattr(paths, flag_name)
    state = modes.toggle(flag) if on is None else modes.set_mode(flag, on)
    out.print(f"{label} is {'on' if state else 'off'} for project {paths.project_id} ({flag}).")


@app.command("dev-mode")
@user_errors
def dev_mode(
    on: Annotated[bool | None, typer.Option("--on/--off", help="Set instead of toggling.")] = None,
) -> None:
    """Toggle dev mode: pipeline details with timestamps are appended to debug/dev.log."""
    _toggle("dev_mode_flag", "Dev mode", on)


@app.command("verbose-mode")
@user_errors
def verbose_mode(
    on: Annotated[bool | None, typer.Option("--on/--off", help="Set instead of toggling.")] = None,
) -> None:
    """Toggle verbose mode: stage-by-stage logging on stderr while hooks run."""
    _toggle("verbose_flag", "Verbose mode", on)


@app.command("ui")
@user_errors
def ui_command(
    port: Annotated[
        int, typer.Option(min=0, max=65535, help="Port on 127.0.0.1 (default: a free one).")
    ] = 0,
    open_browser: Annotated[
        bool, typer.Option("--open", help="Open the page in the default browser.")
    ] = False,
) -> None:
    """Review memory in the browser: browse, search, edit, forget with undo, contradictions, prompts, graph, usage.

    Serves on this machine only (127.0.0.1); the printed link carries a random token that the page requires.
    Stop it with Ctrl+C.
    """
    from octygraph.integrations.ui.app import serve

    try:
        serve(settings(), port=port, open_browser=open_browser)
    except KeyboardInterrupt:
        pass


@app.command("mcp")
@user_errors
def mcp_command() -> None:
    """Serve this project's memory to Claude as an MCP server over stdio (search, remember, forget, rules).

    Claude Code starts it through the plugin; to add it by hand: `claude mcp add octygraph -- octygraph mcp`.
    """
    from octygraph.integrations.mcp import serve_stdio

    serve_stdio(settings())


app.add_typer(serve_app, name="serve")

"""`octygraph serve`, `octygraph serve status` and `octygraph serve stop`."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from octygraph.config.settings import Settings, SettingsError
from octygraph.service import client, protocol

serve_app = typer.Typer(
    help="The resident memory service that makes hooks fast (started by the hooks when needed).",
    invoke_without_command=True,
    no_args_is_help=False,
    pretty_exceptions_enable=False,
)


def _settings() -> Settings:
    try:
        return Settings.from_env()
    except SettingsError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(1) from None


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes}m" if hours else f"{minutes}m {secs}s" if minutes else f"{secs}s"


@serve_app.callback()
def serve(
    ctx: typer.Context,
    idle: Annotated[
        float | None,
        typer.Option(
            "--idle",
            min=0.01,
            help="Stop after this many seconds without requests (default $OCTY_SERVE_IDLE_S or 1800).",
        ),
    ] = None,
    http: Annotated[
        bool,
        typer.Option("--http", help="Serve a team over HTTP (bearer tokens scoped to projects)."),
    ] = False,
    host: Annotated[str, typer.Option(help="With --http: the address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="With --http: the port (0 picks a free one).")] = 8787,
    tokens: Annotated[
        Path | None,
        typer.Option(help="With --http: the tokens file (see `octygraph serve token`)."),
    ] = None,
) -> None:
    """Run the memory service in the foreground until it is stopped or idle."""
    if ctx.invoked_subcommand is not None:
        return
    if http:
        _serve_http(host, port, tokens)
        return
    from octygraph.service.server import ServiceError, configure_logging
    from octygraph.service.server import serve as run_service

    settings = _settings()
    configure_logging()
    try:
        code = run_service(settings.home, idle)
    except (ServiceError, OSError) as exc:
        typer.echo(settings.redact(str(exc)), err=True)
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    # Worker threads a budget cut off may still be waiting on the network; the service is done.
    os._exit(code)


def _serve_http(host: str, port: int, tokens: Path | None) -> None:
    from octygraph.service.http import serve_http
    from octygraph.service.server import configure_logging

    settings = _settings()
    tokens = tokens or settings.home / "server-tokens"
    if not tokens.is_file():
        typer.echo(
            f"No tokens file at {tokens}; make a token with `octygraph serve token PROJECT --tokens "
            f"{tokens}`.",
            err=True,
        )
        raise typer.Exit(1)
    configure_logging()
    try:
        code = serve_http(host, port, tokens, os.environ)
    except (ValueError, OSError) as exc:
        typer.echo(settings.redact(str(exc)), err=True)
        code = 1
    raise typer.Exit(code)


@serve_app.command("token")
def token(
    projects: Annotated[list[str], typer.Argument(help="Projects the token may use (* for all).")],
    tokens: Annotated[
        Path | None, typer.Option(help="The tokens file (default $OCTYBOT_HOME/server-tokens).")
    ] = None,
) -> None:
    """Make a bearer token for the team server; only its hash is written to the tokens file."""
    from octygraph.service.http import add_token

    path = tokens or _settings().home / "server-tokens"
    typer.echo(add_token(path, projects))


@serve_app.command("status")
def status(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")] = False,
) -> None:
    """Show whether the memory service runs, since when, and how much it has served."""
    settings = _settings()
    health = client.service_health(settings)
    if as_json:
        typer.echo(json.dumps(health, indent=2))
        return
    if health.get("running"):
        typer.echo(
            f"Memory service: running (pid {health.get('pid')}, up {_duration(health.get('uptime_s'))}, "
            f"{health.get('requests')} requests, {health.get('databases', 0)} databases)."
        )
        typer.echo(f"  version {health.get('version')}")
        typer.echo(f"  socket  {health.get('socket')}")
        typer.echo(f"  log     {health.get('log')}")
        if health.get("resumed"):
            typer.echo(
                f"  finished {health['resumed']} runs a stopped service left unfinished "
                "(`octygraph trace list` marks them resumed)."
            )
        typer.echo(
            f"  stops after {_duration(health.get('idle_timeout_s'))} idle "
            f"(idle for {_duration(health.get('idle_for_s'))})."
        )
        learn = health.get("auto_learn") or {}
        last = learn.get("last") or {}
        if learn.get("running"):
            typer.echo("  learning from your approvals and forgets now.")
        elif last:
            typer.echo(f"  last learn ({last.get('by')}, {last.get('time')}): {last.get('reason')}")
        return
    state = health.get("state", "stopped")
    if state == "stopped":
        typer.echo("Memory service: not running; the next hook call starts it.")
    else:
        typer.echo(f"Memory service: {state} (pid {health.get('pid') or '?'}).")


@serve_app.command("stop")
def stop(
    timeout: Annotated[
        float, typer.Option("--timeout", min=0.1, help="Seconds to wait for it to finish.")
    ] = 30.0,
) -> None:
    """Stop the memory service after the requests under way (the next hook call starts a new one)."""
    home = _settings().home
    result = client.stop_service(home, timeout)
    if not result["was_running"]:
        typer.echo("Memory service: not running.")
        return
    if not result["stopped"]:
        typer.echo(
            f"The memory service (pid {result['pid']}) did not stop within {timeout:g} s; "
            f"see {protocol.ServicePaths(home).log_file}.",
            err=True,
        )
        raise typer.Exit(1)
    typer.echo(f"Memory service stopped (pid {result['pid']}).")

"""`octygraph serve --http`: a team's shared memory server, pipeline and search over HTTP.

Starlette routes run by uvicorn; the pipeline's blocking calls run in Starlette's thread pool.

Teammates' hooks reach it with OCTY_SERVER_URL and OCTY_SERVER_TOKEN (see `remote_hook`); behind it the
memories are wherever the server's own settings put them, normally PostgreSQL (OCTY_DATABASE_URL).

Every route but /v1/health needs `Authorization: Bearer TOKEN`. Tokens are scoped to projects: the
tokens file holds one line per token, its SHA-256 and the projects it may use (`*` for all):

    9f86d081884c7d65...  falcon,heron

A missing or unknown token is 401; a known token asking for another project is 403. Only hashes are
stored, so the file does not leak tokens; `octygraph serve token PROJECT... --tokens FILE` makes one.

Routes (JSON in, JSON out):
    GET  /v1/health
    POST /v1/projects/{project}/hook/{event}   body: the hook's stdin  -> {"stdout": ..., "notice": ...}
    POST /v1/projects/{project}/run            {"prompt": ..., "offline": true} -> `run --json`'s object
    POST /v1/projects/{project}/search         {"query": ..., "limit": 10, "types": [...]} -> hits
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import socket
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from octygraph.config.settings import Settings, sanitize_project_id
from octygraph.service import protocol

log = logging.getLogger("octygraph.http")

MAX_BODY = 1_000_000


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass
class Tokens:
    """Token hashes and the projects each may use."""

    scopes: dict[str, frozenset[str]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> Tokens:
        scopes: dict[str, frozenset[str]] = {}
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 2 or not re.fullmatch(r"[0-9a-f]{64}", parts[0]):
                raise ValueError(
                    f"{path} line {number}: expected a SHA-256 and projects, like 'HASH proj1,proj2'."
                )
            scopes[parts[0]] = frozenset(p.strip() for p in parts[1].split(",") if p.strip())
        return cls(scopes)

    def check(self, header: str | None, project: str) -> HTTPStatus | None:
        """None when the bearer token may use `project`; else 401 (who are you) or 403 (not yours)."""
        if not header or not header.startswith("Bearer "):
            return HTTPStatus.UNAUTHORIZED
        digest = token_hash(header[len("Bearer ") :].strip())
        projects = None
        for known, scope in self.scopes.items():
            if hmac.compare_digest(known, digest):
                projects = scope
        if projects is None:
            return HTTPStatus.UNAUTHORIZED
        if "*" in projects or project in projects:
            return None
        return HTTPStatus.FORBIDDEN


def add_token(path: Path, projects: list[str]) -> str:
    """Make a token for `projects`, append its hash to the tokens file (0600), and return it."""
    token = secrets.token_urlsafe(32)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as handle:
        handle.write(f"{token_hash(token)} {','.join(projects)}\n")
    return token


class TeamServer:
    """The shared state of the HTTP server: settings, tokens and the pool of open stores."""

    def __init__(self, env: Mapping[str, str], tokens: Tokens) -> None:
        from octygraph.service.pool import StorePool

        self.env = dict(env)
        self.tokens = tokens
        self.pool = StorePool()
        self.requests = 0
        self._lock = threading.Lock()
        # Prompt hooks run on one long-lived loop: the store half of a prompt keeps going there after
        # the answer is sent (asyncio.run would cancel it when the answer returns).
        self._loop = asyncio.new_event_loop()
        threading.Thread(
            target=self._loop.run_forever, name="octygraph-team-hooks", daemon=True
        ).start()

    def settings_for(self, project: str) -> Settings:
        return Settings.from_env(env={**self.env, "OCTYBOT_PROJECT": project})

    def hook(self, project: str, event: str, raw: bytes) -> tuple[dict[str, Any], Any]:
        from octygraph.session.hooks import handle

        env = {**self.env, "OCTYBOT_PROJECT": project}
        # The payload's folder is on the teammate's machine: the project id above decides.
        reply = asyncio.run_coroutine_threadsafe(
            handle(event, raw, env=env, cwd=None, stores=self.pool.lease), self._loop
        ).result()

        def after() -> None:
            """Once the answer is sent: wait for the store half, then the bookkeeping."""
            asyncio.run_coroutine_threadsafe(reply.settle(), self._loop).result()
            reply.finish()

        return {"stdout": reply.stdout, "notice": reply.notice}, after

    def close(self) -> None:
        """Stop the hook loop (after the server stopped taking requests) and close the stores."""
        self._loop.call_soon_threadsafe(self._loop.stop)
        self.pool.close_all()

    def run(self, project: str, body: dict[str, Any]) -> dict[str, Any]:
        from octygraph.pipeline.runner import RunOptions, run_prompt

        prompt = str(body.get("prompt") or "").strip()
        if not prompt:
            raise ValueError("The run needs a prompt.")
        settings = self.settings_for(project)
        offline = bool(body.get("offline", not settings.llm_configured))

        async def go() -> dict[str, Any]:
            async with self.pool.lease(settings) as store:
                return await run_prompt(prompt, settings, store, RunOptions(offline=offline))

        return asyncio.run(go())

    def search(self, project: str, body: dict[str, Any]) -> list[dict[str, Any]]:
        from octygraph.store import NODE_TYPES

        query = str(body.get("query") or "").strip()
        if not query:
            raise ValueError("The search needs some words.")
        limit = max(1, min(int(body.get("limit") or 10), 100))
        types = body.get("types") or [t for t in NODE_TYPES if t != "entity"]
        settings = self.settings_for(project)

        async def go() -> list[dict[str, Any]]:
            async with self.pool.lease(settings) as store:
                hits = await asyncio.to_thread(store.search, query, types=types, limit=limit)
            return [
                {**h.node.to_dict(), "score": round(h.score, 4), "cosine": round(h.cosine, 4)}
                for h in hits
            ]

        return asyncio.run(go())


_PROJECT = re.compile(r"[A-Za-z0-9_.-]{1,100}")
_EVENT = re.compile(r"[a-z-]+")


class _JSON(Response):
    """JSON as `json.dumps` writes it by default (the contract the hooks' client reads)."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return json.dumps(content).encode("utf-8")


def _error(status: HTTPStatus, message: str) -> Response:
    return _JSON({"error": message}, status_code=status)


def _no_route() -> Response:
    return _error(HTTPStatus.NOT_FOUND, "No such route.")


def _after_safely(after: Callable[[], None]) -> None:
    """The store half of a prompt, after the answer went out (as the local service does)."""
    try:
        after()
    except Exception:
        log.exception("after-run work failed")


def make_app(team: TeamServer) -> Starlette:
    """The team server's routes (see the module's docstring), on Starlette."""

    async def health(request: Request) -> Response:
        return _JSON({"status": "ok", "requests": team.requests})

    async def project_call(request: Request) -> Response:
        name = str(request.path_params["project"])
        event = request.path_params.get("event")
        if not _PROJECT.fullmatch(name) or (event is not None and not _EVENT.fullmatch(event)):
            return _no_route()
        project = sanitize_project_id(name)
        denied = team.tokens.check(request.headers.get("authorization"), project)
        if denied is HTTPStatus.UNAUTHORIZED:
            return _error(denied, "A valid bearer token is needed (Authorization: Bearer TOKEN).")
        if denied is HTTPStatus.FORBIDDEN:
            return _error(denied, f"This token may not use project {project!r}.")
        try:
            length = int(request.headers.get("content-length") or 0)
        except ValueError:
            length = 0
        if length > MAX_BODY:
            return _error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "The request body is too large.")
        raw = await request.body()
        if len(raw) > MAX_BODY:
            return _error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "The request body is too large.")
        team.requests += 1
        after: Callable[[], None] | None = None
        payload: Any
        try:
            if event is not None:
                if event not in protocol.HOOK_EVENTS:
                    return _error(HTTPStatus.NOT_FOUND, f"Unknown hook event {event!r}.")
                payload, after = await run_in_threadpool(team.hook, project, event, raw)
            else:
                body = json.loads(raw or b"{}")
                if not isinstance(body, dict):
                    raise ValueError("The body must be a JSON object.")
                work = team.run if request.url.path.endswith("/run") else team.search
                payload = await run_in_threadpool(work, project, body)
        except ValueError as exc:  # json.JSONDecodeError included
            return _error(HTTPStatus.BAD_REQUEST, str(exc))
        except Exception as exc:
            log.exception("request failed")
            return _error(HTTPStatus.INTERNAL_SERVER_ERROR, f"{type(exc).__name__}: {exc}")
        background = None if after is None else BackgroundTask(_after_safely, after)
        return _JSON(payload, background=background)

    async def not_found(request: Request) -> Response:
        return _no_route()

    every = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
    return Starlette(
        routes=[
            Route("/v1/health", health, methods=["GET"]),
            Route("/v1/projects/{project}/hook/{event}", project_call, methods=["POST"]),
            Route("/v1/projects/{project}/run", project_call, methods=["POST"]),
            Route("/v1/projects/{project}/search", project_call, methods=["POST"]),
            Route("/{path:path}", not_found, methods=every),
        ]
    )


class TeamHTTPServer:
    """The team server's app under uvicorn, on a socket bound at once (so port 0 is known).

    `serve_forever` runs it in the calling thread until `shutdown` (from another thread) or, in the
    main thread, Ctrl-C / SIGTERM; `server_close` closes the socket.
    """

    def __init__(self, host: str, port: int, team: TeamServer) -> None:
        self.team = team
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.socket = socket.socket(family, socket.SOCK_STREAM)
        try:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.socket.bind((host, port))
            self.socket.listen(128)
        except OSError:
            self.socket.close()
            raise
        self.server_address: tuple[str, int] = self.socket.getsockname()[:2]
        config = uvicorn.Config(
            make_app(team),
            lifespan="off",
            log_config=None,  # the process's logging (`configure_logging`) stays as it is
            access_log=True,  # one line per request, as before (logger uvicorn.access)
            server_header=False,
            timeout_graceful_shutdown=10,
        )
        self._server = uvicorn.Server(config)
        self._done = threading.Event()

    def serve_forever(self) -> None:
        try:
            self._server.run(sockets=[self.socket])
        finally:
            self._done.set()

    def shutdown(self) -> None:
        """Stop taking requests and wait until `serve_forever` has returned."""
        self._server.should_exit = True
        self._done.wait(timeout=30)

    def server_close(self) -> None:
        self.socket.close()


def make_server(host: str, port: int, team: TeamServer) -> TeamHTTPServer:
    return TeamHTTPServer(host, port, team)


def serve_http(host: str, port: int, tokens_file: Path, env: Mapping[str, str]) -> int:
    """Run the team server in the foreground until interrupted."""
    tokens = Tokens.load(tokens_file)
    if not tokens.scopes:
        raise ValueError(f"{tokens_file} holds no tokens; add one with `octygraph serve token`.")
    team = TeamServer(env, tokens)
    server = make_server(host, port, team)
    log.info("octygraph team server on http://%s:%d", host, server.server_address[1])
    print(f"octygraph team server on http://{host}:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        team.close()
    return 0

"""`octygraph ui`: the review page, a Starlette app with server-rendered Jinja2 templates.

Served on loopback only. Every request must carry the random token printed at start: in the URL once
(`?token=...`), after which a same-site cookie carries it and the token is dropped from the address bar.
Host headers other than loopback names are refused, so a web page elsewhere cannot reach the server
through DNS rebinding; forms are safe from other sites because the cookie is SameSite=Strict.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from octygraph.config.settings import Settings
from octygraph.integrations.ui import svg, views
from octygraph.memory import candidate_review, feedback, review
from octygraph.memory.candidates import is_candidate
from octygraph.store import NODE_TYPES, AdminStore, Node, StoreError

HERE = Path(__file__).parent
COOKIE = "octygraph_ui"
LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "[::1]", "::1"]
RESOLUTIONS = {"keep_new", "keep_old", "keep_both"}

templates = Jinja2Templates(directory=str(HERE / "templates"))
templates.env.globals["kind"] = review.kind
templates.env.globals["status"] = review.status


class TokenGate(BaseHTTPMiddleware):
    """Admit requests with the token (query once, then cookie); everything else gets 403."""

    def __init__(self, app: Any, token: str) -> None:
        super().__init__(app)
        self.token = token

    async def dispatch(
        self, request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        given = request.query_params.get("token")
        if given is not None and secrets.compare_digest(given, self.token):
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            target = request.url.path + (f"?{urlencode(rest)}" if rest else "")
            response = RedirectResponse(target, status_code=303)
            response.set_cookie(COOKIE, self.token, httponly=True, samesite="strict")
            return response
        cookie = request.cookies.get(COOKIE, "")
        if cookie and secrets.compare_digest(cookie, self.token):
            return await call_next(request)
        return PlainTextResponse(
            "This page needs the link with the token that `octygraph ui` printed.", status_code=403
        )


def create_app(settings: Settings, token: str, store: AdminStore | None = None) -> Starlette:
    """The review app of one project; opens (and closes) the project's store unless one is given."""
    state: dict[str, AdminStore] = {}

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if store is not None:
            state["store"] = store
            yield
            return
        from octygraph.store.opening import open_store

        state["store"] = opened = open_store(settings)
        try:
            yield
        finally:
            opened.close()

    def db() -> AdminStore:
        return state["store"]

    def page(request: Request, name: str, status_code: int = 200, **context: Any) -> Response:
        context.setdefault("project", settings.project_id)
        context.setdefault("nav", name.split(".")[0])
        return templates.TemplateResponse(request, name, context, status_code=status_code)

    def not_found(request: Request, what: str) -> Response:
        return page(request, "error.html", 404, message=what)

    def learn_from(node: Node, action: feedback.Action, *, candidate: bool) -> None:
        """Keep the user's decision as a labelled example for `octygraph memory learn`."""
        try:
            feedback.record_decision(settings, node, action, candidate=candidate)
        except OSError:
            pass  # the decision itself is made; an example lost is not worth failing the page

    def forget_node(node_id: str) -> Node:
        """Archive a memory; forgetting a current one is a negative example of what to store."""
        before = db().get_node(node_id.strip())
        node = review.forget(db(), node_id)
        if before is not None and before.superseded_by is None:
            learn_from(before, "forget", candidate=is_candidate(before))
        return node

    # --------------------------------------------------------------------------------- memories

    def memories(request: Request) -> Response:
        p = request.query_params
        filters = views.Filters(
            q=p.get("q", "").strip(),
            type=p.get("type", ""),
            entity=p.get("entity", "").strip(),
            since=p.get("since", ""),
            until=p.get("until", ""),
            status=p.get("status", "current")
            if p.get("status") in ("archived", "all")
            else "current",
        )
        rows, problem = views.list_memories(db(), filters)
        return page(
            request,
            "memories.html",
            rows=rows,
            problem=problem,
            filters=filters,
            types=NODE_TYPES,
            counts=views.type_counts(db()),
        )

    def memory(request: Request) -> Response:
        node_id = request.path_params["node_id"]
        node = db().get_node(node_id)
        if node is None:
            return not_found(request, f"No memory with id {node_id!r}.")
        edges = db().edges_of(node.id)
        others = {
            n.id: n
            for n in db().get_nodes(
                e.target_id if e.source_id == node.id else e.source_id for e in edges
            )
        }
        links = [
            (
                e,
                others.get(e.target_id if e.source_id == node.id else e.source_id),
                "out" if e.source_id == node.id else "in",
            )
            for e in edges
        ]
        contradicts = node.attributes.get("contradicts")
        return page(
            request,
            "memory.html",
            node=node,
            links=links,
            chain=db().supersede_chain(node.id),
            contradicts=db().get_node(str(contradicts)) if contradicts else None,
            seen=views.provenance(views.read_traces(settings.paths.debug_dir, limit=300), node.id),
            done=request.query_params.get("done", ""),
            attributes=json.dumps(node.attributes, ensure_ascii=False, indent=2, sort_keys=True),
        )

    async def edit(request: Request) -> Response:
        form = await request.form()
        old, new = review.edit(db(), request.path_params["node_id"], str(form.get("text", "")))
        if is_candidate(old):  # the user's correction is their approval (`review.edit`)
            learn_from(new, "edit", candidate=True)
        return RedirectResponse(f"/memories/{new.id}?done=edited", status_code=303)

    async def forget(request: Request) -> Response:
        node = forget_node(request.path_params["node_id"])
        return RedirectResponse(f"/memories/{node.id}?done=forgotten", status_code=303)

    async def restore(request: Request) -> Response:
        node = review.restore(db(), request.path_params["node_id"])
        return RedirectResponse(f"/memories/{node.id}?done=restored", status_code=303)

    async def remember(request: Request) -> Response:
        form = await request.form()
        node_type = str(form.get("type") or "fact")
        entities = [e.strip() for e in str(form.get("entities", "")).split(",") if e.strip()]
        node = review.remember(
            db(), str(form.get("text", "")), node_type=node_type, entities=entities
        )
        return RedirectResponse(f"/memories/{node.id}?done=stored", status_code=303)

    # --------------------------------------------------------------------------------- review

    def contradictions(request: Request) -> Response:
        return page(
            request,
            "review.html",
            items=review.contradictions(db()),
            done=request.query_params.get("done", ""),
        )

    async def resolve(request: Request) -> Response:
        form = await request.form()
        keep = str(form.get("keep", ""))
        if keep not in RESOLUTIONS:
            raise StoreError("Choose keep_new, keep_old or keep_both.")
        review.resolve(db(), request.path_params["node_id"], keep)  # type: ignore[arg-type]
        return RedirectResponse(f"/review?done={keep}", status_code=303)

    # --------------------------------------------------------------------------------- candidates

    def candidates(request: Request) -> Response:
        done = request.query_params.get("done", "")
        done_id = request.query_params.get("id", "")
        return page(
            request,
            "candidates.html",
            items=candidate_review.list_candidates(db()),
            done=done if done in ("approved", "forgotten") else "",
            done_node=db().get_node(done_id) if done_id else None,
        )

    async def approve_candidate(request: Request) -> Response:
        node = candidate_review.approve(db(), request.path_params["node_id"])
        learn_from(node, "approve", candidate=True)
        return RedirectResponse(f"/candidates?done=approved&id={node.id}", status_code=303)

    async def forget_candidate(request: Request) -> Response:
        node = db().get_node(request.path_params["node_id"].strip())
        if node is not None:
            candidate_review.approvable(node)  # only a current candidate is dropped from this page
        node = forget_node(request.path_params["node_id"])
        return RedirectResponse(f"/candidates?done=forgotten&id={node.id}", status_code=303)

    # --------------------------------------------------------------------------------- prompts

    def prompts(request: Request) -> Response:
        traces = views.read_traces(settings.paths.debug_dir, limit=100)
        return page(request, "prompts.html", prompts=[views.prompt_view(t) for t in traces])

    def prompt(request: Request) -> Response:
        trace = views.find_trace(settings.paths.debug_dir, request.path_params["trace_id"])
        if trace is None:
            return not_found(request, "No such trace; it may have been pruned.")
        view = views.prompt_view(trace)
        current = {n.id: n for n in db().get_nodes([s.get("id", "") for s in view.stored])}
        return page(
            request,
            "prompt.html",
            view=view,
            current=current,
            trace=trace,
            trace_json=json.dumps(trace, ensure_ascii=False, indent=2),
        )

    def trace_json(request: Request) -> Response:
        trace = views.find_trace(settings.paths.debug_dir, request.path_params["trace_id"])
        if trace is None:
            return JSONResponse({"error": "no such trace"}, status_code=404)
        return JSONResponse(trace)

    # --------------------------------------------------------------------------------- graph, usage

    def graph(request: Request) -> Response:
        nodes, edges = svg.entity_graph(db())
        return page(request, "graph.html", nodes=nodes, edges=edges)

    def usage(request: Request) -> Response:
        days = views.usage_by_day(views.read_traces(settings.paths.debug_dir))
        show_cost = any(d.cost_usd for d in days)
        values = [
            (d.day, d.cost_usd if show_cost else float(d.input_tokens + d.output_tokens))
            for d in days
        ]
        return page(
            request,
            "usage.html",
            days=days,
            chart=svg.bars(values[-60:]),
            show_cost=show_cost,
            totals=views.DayUsage(
                "total",
                runs=sum(d.runs for d in days),
                llm_calls=sum(d.llm_calls for d in days),
                input_tokens=sum(d.input_tokens for d in days),
                output_tokens=sum(d.output_tokens for d in days),
                cost_usd=sum(d.cost_usd for d in days),
                priced=all(d.priced for d in days),
                offline_runs=sum(d.offline_runs for d in days),
            ),
        )

    def home(request: Request) -> Response:
        return RedirectResponse("/memories", status_code=303)

    async def user_error(request: Request, exc: Exception) -> Response:
        return page(request, "error.html", 400, message=str(exc))

    routes = [
        Route("/", home),
        Route("/memories", memories),
        Route("/memories", remember, methods=["POST"]),
        Route("/memories/{node_id}", memory),
        Route("/memories/{node_id}/edit", edit, methods=["POST"]),
        Route("/memories/{node_id}/forget", forget, methods=["POST"]),
        Route("/memories/{node_id}/restore", restore, methods=["POST"]),
        Route("/review", contradictions),
        Route("/review/{node_id}", resolve, methods=["POST"]),
        Route("/candidates", candidates),
        Route("/candidates/{node_id}/approve", approve_candidate, methods=["POST"]),
        Route("/candidates/{node_id}/forget", forget_candidate, methods=["POST"]),
        Route("/prompts", prompts),
        Route("/prompts/{trace_id}", prompt),
        Route("/prompts/{trace_id}/trace.json", trace_json),
        Route("/graph", graph),
        Route("/usage", usage),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    return Starlette(
        routes=routes,
        lifespan=lifespan,
        middleware=[
            Middleware(TrustedHostMiddleware, allowed_hosts=LOOPBACK_HOSTS),
            Middleware(TokenGate, token=token),
        ],
        exception_handlers={StoreError: user_error},
    )


def new_token() -> str:
    return secrets.token_urlsafe(24)


def serve(settings: Settings, *, port: int = 0, open_browser: bool = False) -> None:
    """Serve on 127.0.0.1 until interrupted; prints the URL (with the token) first."""
    import socket
    import sys

    import uvicorn

    from octygraph.store.opening import open_store

    token = new_token()
    # Opened before serving, so a database problem is one plain sentence from the CLI, not a server trace.
    store = open_store(settings)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError:
        store.close()
        sock.close()
        raise
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/?token={token}"
    print(f"octygraph review page for project {settings.project_id}: {url}", flush=True)
    print("Only this machine can reach it; stop it with Ctrl+C.", file=sys.stderr, flush=True)
    if open_browser:
        import webbrowser

        webbrowser.open(url)
    config = uvicorn.Config(
        create_app(settings, token, store=store),
        log_level="warning",
        access_log=False,
        lifespan="on",
    )
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        store.close()

"""`octygraph serve --http`: bearer tokens scoped to projects, pipeline and search over HTTP, and hooks
that use the team server and fall back to local memory when it cannot be reached."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from octygraph.service import client
from octygraph.service.http import TeamServer, Tokens, add_token, make_server
from tests.conftest import cli_json, run_cli
from tests.test_hooks import _closed_port, prompt_payload


@pytest.fixture
def team(home: Path, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A team server on a free loopback port, with a token for 'falcon' and one for 'heron'."""
    tokens_file = tmp_path / "tokens"
    falcon = add_token(tokens_file, ["falcon"])
    heron = add_token(tokens_file, ["heron"])
    assert falcon not in tokens_file.read_text()  # only hashes are kept
    assert oct(tokens_file.stat().st_mode & 0o777) == "0o600"
    # The server keeps its memories in a home of its own, as on another machine.
    env = {**os.environ, "OCTYBOT_HOME": str(tmp_path / "server-home")}
    server = make_server("127.0.0.1", 0, TeamServer(env, Tokens.load(tokens_file)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield {
            "url": f"http://127.0.0.1:{server.server_address[1]}",
            "falcon": falcon,
            "heron": heron,
            "tokens": tokens_file,
        }
    finally:
        server.shutdown()
        server.server_close()


def call(url: str, path: str, body: Any = None, token: str | None = None) -> tuple[int, Any]:
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url + path, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def test_tokens_are_scoped_to_projects(team: dict[str, Any]) -> None:
    url = team["url"]
    assert call(url, "/v1/health")[0] == 200
    body = {"query": "anything"}
    assert call(url, "/v1/projects/falcon/search", body)[0] == 401  # no token
    assert call(url, "/v1/projects/falcon/search", body, "wrong-token")[0] == 401
    status, reply = call(url, "/v1/projects/falcon/search", body, team["heron"])
    assert status == 403 and "falcon" in reply["error"]
    assert call(url, "/v1/projects/falcon/search", body, team["falcon"]) == (200, [])
    assert call(url, "/v1/projects/falcon/nothing", body, team["falcon"])[0] == 404


def test_errors_are_json_with_a_message(team: dict[str, Any]) -> None:
    url, falcon = team["url"], team["falcon"]
    assert call(url, "/v1/nowhere") == (404, {"error": "No such route."})
    assert call(url, "/v1/health", {}) == (404, {"error": "No such route."})  # POST: no such route
    assert call(url, "/v1/projects/bad%21name/run", {}, falcon)[0] == 404
    status, reply = call(url, "/v1/projects/falcon/hook/lunch", {}, falcon)
    assert (status, reply) == (404, {"error": "Unknown hook event 'lunch'."})
    assert call(url, "/v1/projects/falcon/hook/lunch", {})[0] == 401  # the token is checked first
    status, reply = call(url, "/v1/projects/falcon/search", [1, 2], falcon)
    assert (status, reply) == (400, {"error": "The body must be a JSON object."})
    status, reply = call(url, "/v1/projects/falcon/search", {"query": " "}, falcon)
    assert (status, reply) == (400, {"error": "The search needs some words."})
    # Refused on its declared length, before the body is read (so none is sent here).
    host, port = url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    try:
        connection.putrequest("POST", "/v1/projects/falcon/search")
        connection.putheader("Authorization", f"Bearer {falcon}")
        connection.putheader("Content-Length", "1000001")
        connection.endheaders()
        response = connection.getresponse()
        status, reply = response.status, json.loads(response.read())
    finally:
        connection.close()
    assert (status, reply) == (413, {"error": "The request body is too large."})


def test_run_and_search_over_http_keep_projects_apart(team: dict[str, Any]) -> None:
    url, falcon, heron = team["url"], team["falcon"], team["heron"]
    status, told = call(
        url,
        "/v1/projects/falcon/run",
        {"prompt": "Peter handles the Anderson account", "offline": True},
        falcon,
    )
    assert status == 200 and told["stored"]
    status, asked = call(
        url, "/v1/projects/falcon/run", {"prompt": "Who handles Anderson?", "offline": True}, falcon
    )
    assert status == 200 and "Peter handles the Anderson account" in asked["context"]
    status, hits = call(url, "/v1/projects/falcon/search", {"query": "Anderson account"}, falcon)
    assert status == 200 and hits[0]["content"] == "Peter handles the Anderson account"
    assert call(url, "/v1/projects/heron/search", {"query": "Anderson account"}, heron) == (200, [])
    assert call(url, "/v1/projects/falcon/run", {"prompt": " "}, falcon)[0] == 400


def test_hook_uses_the_team_server(team: dict[str, Any], home: Path) -> None:
    url, falcon = team["url"], team["falcon"]
    call(
        url,
        "/v1/projects/falcon/run",
        {"prompt": "The Falcon release train leaves every second Tuesday", "offline": True},
        falcon,
    )
    env = {
        "OCTY_SERVER_URL": url,
        "OCTY_SERVER_TOKEN": falcon,
        "OCTYBOT_PROJECT": "falcon",
        "OCTY_HOOK_BUDGET_S": "20",
    }
    result = run_cli(
        "hook",
        "prompt",
        input=prompt_payload("When does the Falcon release leave?", Path.cwd()),
        env=env,
    )
    assert result.returncode == 0
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "every second Tuesday" in context
    # The answer came from the server: this machine holds no memory of project falcon.
    assert not (home / "projects" / "falcon" / "memory" / "memory.db").exists()


def test_a_prompt_told_through_the_team_server_is_stored(team: dict[str, Any]) -> None:
    # The answer goes out first; the store half must still finish on the server afterwards.
    url, falcon = team["url"], team["falcon"]
    env = {
        "OCTY_SERVER_URL": url,
        "OCTY_SERVER_TOKEN": falcon,
        "OCTYBOT_PROJECT": "falcon",
        "OCTY_HOOK_BUDGET_S": "20",
    }
    told = "from now on the Falcon changelog is written in British English"
    result = run_cli("hook", "prompt", input=prompt_payload(told, Path.cwd()), env=env)
    assert result.returncode == 0
    deadline = time.monotonic() + 30
    found: list[Any] = []
    while time.monotonic() < deadline and not found:
        status, hits = call(
            url, "/v1/projects/falcon/search", {"query": "changelog English"}, falcon
        )
        assert status == 200
        found = [h for h in hits if "British English" in h["content"]]
        time.sleep(0.3)
    assert found, "the told rule never reached the team server's store"


@pytest.mark.slow
def test_hook_falls_back_to_local_memory_when_the_server_is_unreachable(home: Path) -> None:
    cli_json("memory", "add", "Peter handles the Anderson account", "--json")
    env = {
        "OCTY_SERVER_URL": f"http://127.0.0.1:{_closed_port()}",
        "OCTY_SERVER_TOKEN": "whatever",
        "OCTY_HOOK_BUDGET_S": "20",
    }
    result = run_cli(
        "hook", "prompt", input=prompt_payload("Who handles Anderson?", Path.cwd()), env=env
    )
    # Any answer is within the budget: past it, the hook's watchdog ends it with nothing printed.
    assert result.returncode == 0
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Peter handles the Anderson account" in context


@contextmanager
def _stalling_server(trickle: bool) -> Iterator[str]:
    """A loopback 'team server' that takes connections and never answers; `trickle`: it starts an
    answer and then sends one header byte every 0.3 s, so no single read ever times out."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.1)
    stop = threading.Event()
    held: list[socket.socket] = []

    def drip(conn: socket.socket) -> None:
        try:
            conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
            while not stop.wait(0.3):
                conn.sendall(b"a")
        except OSError:
            pass

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            held.append(conn)  # kept open: the client must give up by itself
            if trickle:
                threading.Thread(target=drip, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        listener.close()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("entry", "trickle"),
    [("octygraph", False), ("octygraph", True), ("octygraph.entry", False)],
    ids=["in-process-silent", "in-process-trickling", "service-silent"],
)
def test_hook_falls_back_within_its_budget_when_the_server_stalls(
    home: Path, entry: str, trickle: bool
) -> None:
    """`python -m octygraph hook` answers in this process; the installed `octygraph` hook (entry)
    through the local service, which is not running while the team server serves, so it starts
    while the server is asked."""
    cli_json("memory", "add", "Peter handles the Anderson account", "--json")
    budget = 15.0
    env = {**os.environ, "OCTY_SERVER_TOKEN": "whatever", "OCTY_HOOK_BUDGET_S": str(budget)}
    try:
        with _stalling_server(trickle) as url:
            result = subprocess.run(
                [sys.executable, "-m", entry, "hook", "prompt"],
                input=prompt_payload("Who handles Anderson?", Path.cwd()),
                capture_output=True,
                text=True,
                env={**env, "OCTY_SERVER_URL": url},
                timeout=120,
            )
    finally:
        client.stop_service(home, timeout_s=10)
    # Any answer is within the budget: past it, the hook's watchdog ends it with nothing printed.
    assert result.returncode == 0
    # Local offline memory answered: the team server's share of the budget ended in time.
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Peter handles the Anderson account" in context


@pytest.mark.slow
def test_hook_falls_back_when_the_token_is_refused(team: dict[str, Any], home: Path) -> None:
    cli_json("memory", "add", "Maria is allergic to peanuts", "--json")
    env = {
        "OCTY_SERVER_URL": team["url"],
        "OCTY_SERVER_TOKEN": team["heron"],  # not this project's
        "OCTY_HOOK_BUDGET_S": "20",
    }
    result = run_cli(
        "hook", "prompt", input=prompt_payload("What can Maria not eat?", Path.cwd()), env=env
    )
    assert result.returncode == 0
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "peanuts" in context


@pytest.mark.slow
@pytest.mark.postgres
def test_three_clients_write_through_the_server_at_once(
    pg_url: str, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from octygraph.embeddings import local_embeddings
    from octygraph.store.postgres import PostgresStore

    project = f"team{os.getpid()}"
    monkeypatch.setenv("OCTY_DATABASE_URL", pg_url)
    tokens_file = tmp_path / "tokens"
    token = add_token(tokens_file, [project])
    server = make_server("127.0.0.1", 0, TeamServer(os.environ, Tokens.load(tokens_file)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"

    def client(worker: int) -> list[int]:
        codes = []
        for i in range(4):
            status, _ = call(
                url,
                f"/v1/projects/{project}/run",
                {
                    "prompt": f"Teammate {worker} decided that service {worker}{i} uses port 80{worker}{i}",
                    "offline": True,
                },
                token,
            )
            codes.append(status)
        return codes

    try:
        with ThreadPoolExecutor(3) as pool:
            codes = [c for codes in pool.map(client, range(3)) for c in codes]
        assert codes == [200] * 12
        store = PostgresStore.open(pg_url, local_embeddings(), project_id=project)
        try:
            contents = {n.content for n in store.iter_all()}
            for worker in range(3):
                for i in range(4):
                    assert any(
                        f"service {worker}{i} uses port 80{worker}{i}" in c for c in contents
                    )
        finally:
            store.drop_project()
            store.close()
    finally:
        server.shutdown()
        server.server_close()

"""Usage reports: POST to a loopback worker, failure modes, and the detached child."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from octygraph.claude.usage_report import (
    REPORT_LOG,
    device_file_for,
    read_device_token,
    report_usage,
    spawn_report,
)
from octygraph.config.settings import Settings

PAYLOAD: dict[str, Any] = {
    "project": "my-proj",
    "model": "openai/gpt-oss-120b",
    "layers": {"l1": {"input_tokens": 812, "output_tokens": 96, "cost_usd": 0.00011}},
    "total_cost_usd": 0.00042,
}


class Worker:
    """A loopback stand-in for the usage worker that records every request."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.requests: list[dict[str, Any]] = []
        self.received = threading.Event()
        self.answer = threading.Event()  # cleared: requests wait for it before they are answered
        self.answer.set()
        worker = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                worker.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "body": body}
                )
                worker.answer.wait(timeout=30)
                self.send_response(worker.status)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b'{"ok": true}')
                worker.received.set()

            def log_message(self, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loopback requests must not be routed through a proxy from the environment."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@pytest.fixture()
def worker() -> Iterator[Worker]:
    server = Worker()
    yield server
    server.close()


@pytest.fixture()
def device_file(tmp_path: Path) -> Path:
    path = tmp_path / "device.json"
    path.write_text(json.dumps({"token": "dev-tok-123", "device_id": "d1"}))
    return path


def dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_post_reaches_worker_with_token_and_body(worker: Worker, device_file: Path) -> None:
    assert report_usage(worker.url + "/", device_file, PAYLOAD) == "sent"

    [request] = worker.requests
    assert request["path"] == "/usage"
    assert request["headers"]["Authorization"] == "Bearer dev-tok-123"
    assert request["headers"]["Content-Type"] == "application/json"
    assert json.loads(request["body"]) == PAYLOAD


def test_device_token_key_is_accepted(worker: Worker, tmp_path: Path) -> None:
    path = tmp_path / "device.json"
    path.write_text(json.dumps({"device_token": "  other-tok \n"}))
    assert read_device_token(path) == "other-tok"
    assert report_usage(worker.url, path, PAYLOAD) == "sent"
    assert worker.requests[0]["headers"]["Authorization"] == "Bearer other-tok"


def test_skips_without_url_or_token(worker: Worker, tmp_path: Path, device_file: Path) -> None:
    assert report_usage(None, device_file, PAYLOAD) == "skipped: no WORKER_URL"
    assert report_usage("", device_file, PAYLOAD).startswith("skipped")
    assert report_usage("ftp://example.invalid", device_file, PAYLOAD).startswith("skipped")
    assert report_usage(worker.url, tmp_path / "missing.json", PAYLOAD).startswith("skipped")
    broken = tmp_path / "broken.json"
    broken.write_text("{token:")
    assert report_usage(worker.url, broken, PAYLOAD).startswith("skipped")
    empty = tmp_path / "empty.json"
    empty.write_text('{"token": ""}')
    assert report_usage(worker.url, empty, PAYLOAD).startswith("skipped")
    assert worker.requests == []


def test_http_error_is_failed(device_file: Path) -> None:
    server = Worker(status=500)
    try:
        assert report_usage(server.url, device_file, PAYLOAD) == "failed: HTTP 500"
        assert len(server.requests) == 1
    finally:
        server.close()


def test_dead_port_fails_at_once(device_file: Path) -> None:
    outcome = report_usage(f"http://127.0.0.1:{dead_port()}", device_file, PAYLOAD, timeout_s=1.0)
    assert outcome.startswith("failed: ConnectError")  # refused, not waited out to the timeout


def test_silent_server_times_out_within_budget(
    device_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import httpx

    given: list[Any] = []
    post = httpx.post

    def spy(*args: Any, **kwargs: Any) -> Any:
        given.append(kwargs.get("timeout"))
        return post(*args, **kwargs)

    monkeypatch.setattr(httpx, "post", spy)
    with socket.socket() as sock:  # accepts connections, never answers
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        outcome = report_usage(url, device_file, PAYLOAD, timeout_s=0.5)
    assert outcome.startswith("failed: ") and "Timeout" in outcome
    assert given == [httpx.Timeout(0.5)]  # the whole request had the budget, not the default


def test_device_file_defaults_to_octybot_home(tmp_path: Path) -> None:
    settings = Settings.from_env(env={"OCTYBOT_HOME": str(tmp_path / "h")}, cwd=tmp_path)
    assert device_file_for(settings) == tmp_path / "h" / "device.json"


def test_spawned_child_delivers_and_hook_returns_at_once(
    worker: Worker, device_file: Path, tmp_path: Path
) -> None:
    worker.answer.clear()  # the worker holds the request until the hook has returned
    pid = spawn_report(worker.url, device_file, PAYLOAD, debug_dir=tmp_path / "debug")
    assert isinstance(pid, int) and pid > 0
    # The hook returned while its child still waits for the network (or has not reached it yet).
    assert os.waitpid(pid, os.WNOHANG) == (0, 0)
    worker.answer.set()
    assert os.getsid(pid) == pid  # its own session: Claude Code's teardown does not reach it

    assert worker.received.wait(timeout=10), "the detached child never reached the worker"
    [request] = worker.requests
    assert request["path"] == "/usage"
    assert request["headers"]["Authorization"] == "Bearer dev-tok-123"
    assert json.loads(request["body"]) == PAYLOAD
    assert not (tmp_path / "debug" / REPORT_LOG).exists()  # success is not logged


def test_spawned_child_logs_failures(device_file: Path, tmp_path: Path) -> None:
    debug = tmp_path / "debug"
    pid = spawn_report(
        f"http://127.0.0.1:{dead_port()}", device_file, PAYLOAD, debug_dir=debug, timeout_s=1.0
    )
    assert pid is not None
    log = debug / REPORT_LOG
    deadline = time.monotonic() + 10
    while not log.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert log.exists()
    assert "failed: " in log.read_text()


def test_spawn_skips_when_nothing_could_be_sent(tmp_path: Path, device_file: Path) -> None:
    assert spawn_report(None, device_file, PAYLOAD) is None
    assert spawn_report("not a url", device_file, PAYLOAD) is None
    assert spawn_report("http://127.0.0.1:9", tmp_path / "missing.json", PAYLOAD) is None

"""Loopback HTTP servers that answer LLM requests from a script.

`openai_server(script)` speaks OpenAI chat completions (any path ending in `/chat/completions`,
so the Workers AI path works too); `anthropic_server(script)` speaks Anthropic's `/v1/messages`.
Both bind 127.0.0.1 on a free port, run in a thread, and record every request (path, headers,
JSON body). A script is any iterable (a list, or `itertools.cycle` for endless replies) of
`Reply` objects or callables `(request_body) -> Reply`; when it runs out the server answers 500.

    with openai_server([text_reply("hi")]) as server:
        ChatOpenAI(base_url=server.base_url, api_key="k", model="m").invoke("hello")
        assert server.requests[0].body["model"] == "m"
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Body = dict[str, Any]


@dataclass
class Reply:
    """One scripted HTTP answer."""

    body: Body
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    """Wait this long before answering (a slow model)."""
    drop: bool = False
    """Close the connection without answering (a dropped connection)."""


ScriptItem = Reply | Callable[[Body], Reply]


@dataclass
class RecordedRequest:
    """A request the server received."""

    method: str
    path: str
    headers: dict[str, str]  # names in lower case
    body: Body
    received_at: float = 0.0
    """`time.monotonic()` when the request arrived."""
    answered_at: float = 0.0
    """`time.monotonic()` when the answer was sent (0 when none was)."""


_ids = itertools.count(1)


# --- OpenAI chat completions ------------------------------------------------------------------


def _completion(message: Body, finish: str, prompt_tokens: int, completion_tokens: int) -> Body:
    usage: Body = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    return {
        "id": f"chatcmpl-{next(_ids)}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage,
    }


def text_reply(content: str, *, prompt_tokens: int = 12, completion_tokens: int = 5) -> Reply:
    """A chat completion with text content (empty string for an empty reply)."""
    message = {"role": "assistant", "content": content}
    return Reply(_completion(message, "stop", prompt_tokens, completion_tokens))


def empty_reply() -> Reply:
    """A reply with neither content nor tool calls (what the fallback rule is about)."""
    message = {"role": "assistant", "content": None}
    return Reply(_completion(message, "stop", 12, 0))


def tool_reply(
    *calls: tuple[str, dict[str, Any] | str],
    prompt_tokens: int = 20,
    completion_tokens: int = 8,
) -> Reply:
    """A chat completion with tool calls; args given as a string are sent verbatim (malformed)."""
    tool_calls = [
        {
            "id": f"call_{next(_ids)}",
            "type": "function",
            "function": {
                "name": name,
                "arguments": args if isinstance(args, str) else json.dumps(args),
            },
        }
        for name, args in calls
    ]
    message = {"role": "assistant", "content": None, "tool_calls": tool_calls}
    return Reply(_completion(message, "tool_calls", prompt_tokens, completion_tokens))


def with_cost(reply: Reply, cost: float) -> Reply:
    """Add OpenRouter's billed `usage.cost` to a completion."""
    reply.body["usage"]["cost"] = cost
    return reply


def slow(reply: Reply, seconds: float) -> Reply:
    """The same reply, after `seconds`."""
    return Reply(reply.body, reply.status, dict(reply.headers), delay_s=seconds)


def dropped() -> Reply:
    """No answer: the connection is closed as soon as the request is read."""
    return Reply({}, drop=True)


def error_reply(status: int, message: str = "scripted error", **headers: str) -> Reply:
    """An OpenAI-style error (429, 500, 401...)."""
    body = {"error": {"message": message, "type": "scripted", "code": status}}
    return Reply(body, status=status, headers=dict(headers))


# --- Anthropic messages ---------------------------------------------------------------------


def anthropic_text(text: str, *, input_tokens: int = 15, output_tokens: int = 6) -> Reply:
    """An Anthropic /v1/messages reply with one text block."""
    return Reply(
        {
            "id": f"msg_{next(_ids)}",
            "type": "message",
            "role": "assistant",
            "model": "claude-scripted",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        }
    )


def anthropic_tool(name: str, args: dict[str, Any]) -> Reply:
    """An Anthropic reply with one tool_use block."""
    return Reply(
        {
            "id": f"msg_{next(_ids)}",
            "type": "message",
            "role": "assistant",
            "model": "claude-scripted",
            "content": [
                {"type": "tool_use", "id": f"toolu_{next(_ids)}", "name": name, "input": args}
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 30, "output_tokens": 10},
        }
    )


def anthropic_error(status: int, message: str = "scripted error") -> Reply:
    return Reply(
        {"type": "error", "error": {"type": "api_error", "message": message}}, status=status
    )


# --- server -----------------------------------------------------------------------------------


class ScriptedServer:
    """A threaded loopback server answering POSTs from a script."""

    def __init__(self, script: Iterable[ScriptItem], path_suffix: str, prefix: str = "") -> None:
        self._script: Iterator[ScriptItem] = iter(script)
        self._suffix = path_suffix
        self._prefix = prefix
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.requests: list[RecordedRequest] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def root(self) -> str:
        """`http://127.0.0.1:PORT`."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The base URL a client takes (`.../v1` for OpenAI, the root for Anthropic)."""
        return self.root + self._prefix

    def _next(self, body: Body) -> Reply:
        with self._lock:
            item = next(self._script, None)
        if item is None:
            return error_reply(500, "script exhausted")
        return item(body) if callable(item) else item

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep pytest output clean

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {"_raw": raw.decode(errors="replace")}
                record = RecordedRequest(
                    "POST",
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    body,
                    received_at=time.monotonic(),
                )
                with server._lock:
                    server.requests.append(record)
                if not self.path.split("?")[0].endswith(server._suffix):
                    reply = error_reply(404, f"no route {self.path}")
                else:
                    reply = server._next(body)
                if reply.delay_s:
                    server._stopping.wait(reply.delay_s)
                if reply.drop or server._stopping.is_set():
                    self.close_connection = True
                    return
                data = json.dumps(reply.body).encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in reply.headers.items():
                    self.send_header(name.replace("_", "-"), value)
                self.end_headers()
                self.wfile.write(data)
                record.answered_at = time.monotonic()

        return Handler

    def start(self) -> ScriptedServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # slow replies end now, unanswered
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextmanager
def openai_server(script: Iterable[ScriptItem]) -> Iterator[ScriptedServer]:
    """An OpenAI-compatible server; use `server.base_url` (ends in `/v1`) as the client base URL."""
    with ScriptedServer(script, "/chat/completions", prefix="/v1") as server:
        yield server


@contextmanager
def anthropic_server(script: Iterable[ScriptItem]) -> Iterator[ScriptedServer]:
    """An Anthropic-compatible server; use `server.base_url` as `ANTHROPIC_BASE_URL`."""
    with ScriptedServer(script, "/v1/messages") as server:
        yield server


_HELD_PORTS: list[Any] = []


def closed_port() -> str:
    """The URL of a loopback port nothing listens on (for dead-endpoint tests).

    The port stays bound, never listening, for the rest of the run: connecting is refused, and no
    server started later can take the same port (and inherit its tripped circuit breaker).
    """
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    _HELD_PORTS.append(sock)
    return f"http://127.0.0.1:{sock.getsockname()[1]}"

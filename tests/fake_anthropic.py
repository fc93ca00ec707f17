"""A loopback fake of the Anthropic Messages API, for driving the real Claude Code CLI in tests.

It binds 127.0.0.1 on a free port, runs in a thread, and records every request (method, path,
headers, JSON body). `POST /v1/messages` is answered with one text block, as server-sent events when
the request asks for `stream: true` and as one JSON message otherwise; `count_tokens` gets a rough
count; anything else gets an empty JSON object. What the model says comes from `reply`, a callable
`(request_body) -> str`, so a test can answer from what it was sent. With `broken_stream` a streamed
answer stops after its first event, which makes Claude Code fall back to a non-streaming request.

    with FakeAnthropic(lambda body: "Noted.") as api:
        env["ANTHROPIC_BASE_URL"] = api.base_url
        ...
        assert any("Anderson" in r.text for r in api.messages())
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Body = dict[str, Any]
Responder = Callable[[Body], str]

_ids = itertools.count(1)


@dataclass
class Recorded:
    """One request the fake received."""

    method: str
    path: str
    headers: dict[str, str]  # names in lower case
    body: Body
    raw: str  # the body as text, for "does this string reach the model" checks

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def text(self) -> str:
        """The request body as text (system prompt, messages and tools)."""
        return self.raw


def last_user_text(body: Body) -> str:
    """The text of the last user message of a Messages request ('' when there is none)."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        parts = [
            block.get("text", "")
            for block in content or []
            if isinstance(block, dict) and block.get("type") == "text"
        ]
        return "\n".join(parts)
    return ""


def _message(text: str, model: str) -> Body:
    return {
        "id": f"msg_fake_{next(_ids)}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 20, "output_tokens": max(1, len(text) // 4)},
    }


def _sse(event: str, data: Body) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _stream_events(text: str, model: str) -> list[bytes]:
    message = _message("", model)
    message["content"] = []
    message["stop_reason"] = None
    message["usage"] = {"input_tokens": 20, "output_tokens": 1}
    # Two deltas, so a client that joins them wrongly shows up in the assertions.
    half = len(text) // 2
    return [
        _sse("message_start", {"type": "message_start", "message": message}),
        _sse(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        _sse("ping", {"type": "ping"}),
        *(
            _sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": part},
                },
            )
            for part in (text[:half], text[half:])
            if part
        ),
        _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": max(1, len(text) // 4)},
            },
        ),
        _sse("message_stop", {"type": "message_stop"}),
    ]


class FakeAnthropic:
    """A threaded loopback server speaking enough of the Messages API for Claude Code."""

    def __init__(self, reply: Responder | None = None, *, broken_stream: bool = False) -> None:
        self.reply: Responder = reply or (lambda body: "OK.")
        # A stream that stops after `message_start`: Claude Code then asks again without streaming.
        self.broken_stream = broken_stream
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """What `ANTHROPIC_BASE_URL` is set to."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def messages(self) -> list[Recorded]:
        """The `POST /v1/messages` requests so far (not `count_tokens`)."""
        with self._lock:
            return [
                r
                for r in self.requests
                if r.method == "POST" and r.path.split("?")[0].endswith("/v1/messages")
            ]

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _record(self) -> Recorded:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode("utf-8", "replace") if length else ""
                try:
                    body = json.loads(raw) if raw else {}
                except json.JSONDecodeError:
                    body = {}
                record = Recorded(
                    self.command,
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    body if isinstance(body, dict) else {},
                    raw,
                )
                with server._lock:
                    server.requests.append(record)
                return record

            def _json(self, data: Body, status: int = 200) -> None:
                payload = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.send_header("request-id", f"req_fake_{next(_ids)}")
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:
                self._record()
                self._json({})

            def do_HEAD(self) -> None:
                self._record()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                record = self._record()
                path = self.path.split("?")[0]
                if path.endswith("/count_tokens"):
                    self._json({"input_tokens": max(1, len(record.raw) // 4)})
                    return
                if not path.endswith("/v1/messages"):
                    self._json({})
                    return
                model = str(record.body.get("model") or "claude-fake")
                try:
                    text = server.reply(record.body)
                except Exception as exc:  # a broken responder shows up as a model error
                    self._json(
                        {"type": "error", "error": {"type": "api_error", "message": str(exc)}}, 500
                    )
                    return
                if not record.stream:
                    self._json(_message(text, model))
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("request-id", f"req_fake_{next(_ids)}")
                self.send_header("Connection", "close")
                self.end_headers()
                events = _stream_events(text, model)
                for chunk in events[:1] if server.broken_stream else events:
                    self.wfile.write(chunk)
                    self.wfile.flush()
                self.close_connection = True

        return Handler

    def __enter__(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

"""A loopback HTTP server that records exactly what a client sent and answers with canned bodies.

Bound to 127.0.0.1 on a free port, served from a daemon thread, and shut down by the fixture
that started it. Each request is recorded with its method, path, headers and JSON body; the
answer is the next queued response (status, JSON body, extra headers), so a test states what
the "provider" returns and then asserts on what went over the wire.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.serving import LoopbackHTTPServer, ServedOnLoopback


@dataclass
class Recorded:
    """One request as it arrived."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class Canned:
    """One queued answer."""

    body: Any
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)


class LoopbackServer(ServedOnLoopback):
    """Records requests and replays queued answers; use as a context manager."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self._answers: deque[Canned] = deque()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                body = json.loads(raw) if raw else None
                recorded = Recorded("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                with server._lock:
                    server.requests.append(recorded)
                    answer = server._answers.popleft() if server._answers else Canned(
                        {"error": {"message": "no canned answer queued"}}, status=500
                    )
                # a callable body answers from the request itself (an upstream that echoes what it got)
                payload = json.dumps(answer.body(recorded) if callable(answer.body) else answer.body).encode("utf-8")
                self.send_response(answer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = LoopbackHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.timeout = 5
        self._serve(self._httpd)

    @property
    def base(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    def queue(self, body: Any, *, status: int = 200, headers: dict[str, str] | None = None) -> None:
        """Answer the next request with ``body`` (or with ``body(recorded_request)`` when it is callable)."""
        with self._lock:
            self._answers.append(Canned(body, status, headers or {}))

    def last(self) -> Recorded:
        """The most recent request."""
        assert self.requests, "the server received no request"
        return self.requests[-1]

    def reset(self) -> None:
        """Forget recorded requests and queued answers."""
        with self._lock:
            self.requests.clear()
            self._answers.clear()


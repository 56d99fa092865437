"""A real HTTP server on 127.0.0.1 (ephemeral port) that hands each request to a provider."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Protocol

from tests.serving import LoopbackHTTPServer


@dataclass
class Received:
    """One request as it arrived on the wire."""

    method: str
    path: str
    headers: dict[str, str]
    raw: bytes
    body: Any = None


@dataclass
class Answer:
    """What to send back: a JSON value (or raw bytes) with a status."""

    status: int = 200
    json: Any = None
    raw: bytes | None = None
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


class Provider(Protocol):
    def handle(self, request: Received) -> Answer: ...


class LoopbackServer:
    """Serves ``provider`` until :meth:`stop`; keeps every received request."""

    def __init__(self, provider: Provider) -> None:
        self.provider = provider
        self.received: list[Received] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server naming)
                self._serve("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._serve("POST")

            def _serve(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                request = Received(method, self.path, {k.lower(): v for k, v in self.headers.items()}, raw, body)
                with server._lock:
                    server.received.append(request)
                answer = server.provider.handle(request)
                payload = answer.raw if answer.raw is not None else json.dumps(answer.json).encode()
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.content_type)
                self.send_header("Content-Length", str(len(payload)))
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output clean

        self.httpd = LoopbackHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> LoopbackServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)

    def posts(self, path_part: str = "") -> list[Received]:
        """POST requests received so far whose path contains ``path_part``."""
        with self._lock:
            return [r for r in self.received if r.method == "POST" and path_part in r.path]

"""A loopback provider that misbehaves on purpose: endless, dripped, inflating, oversized or lying answers.

Bound to 127.0.0.1 on a free port, served from daemon threads, stopped by ``with`` (which also
ends every answer still being streamed or dripped). ``answer`` says how the next POSTs are
answered; every loop of the server is bounded, so a client that never hangs up cannot keep it
going past the test.
"""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.serving import LoopbackHTTPServer, ServedOnLoopback

#: The most an endless answer writes before giving up on a client that keeps reading (8 GiB).
ENDLESS_CAP = 8 * 1024**3
#: Seconds between two bytes of a dripped answer.
DRIP_S = 0.5


def completion(usage: Any = None, text: str = "done") -> dict[str, Any]:
    """A minimal OpenAI chat completion carrying ``usage`` as given."""
    body: dict[str, Any] = {
        "id": "chatcmpl-hostile", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


Handler = Callable[[BaseHTTPRequestHandler, threading.Event], None]


def endless(handler: BaseHTTPRequestHandler, stop: threading.Event) -> None:
    """A chunked body that never ends (until the client hangs up, the server stops, or 8 GiB)."""
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    piece = b" " * 65536
    chunk = b"%x\r\n%s\r\n" % (len(piece), piece)
    sent = 0
    while sent < ENDLESS_CAP and not stop.is_set():
        handler.wfile.write(chunk)
        sent += len(piece)


def drip_body(handler: BaseHTTPRequestHandler, stop: threading.Event) -> None:
    """Headers at once, then a 2 000-byte body one byte every :data:`DRIP_S` seconds."""
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", "2000")
    handler.end_headers()
    handler.wfile.flush()
    for _ in range(2000):
        if stop.wait(DRIP_S):
            return
        handler.wfile.write(b" ")
        handler.wfile.flush()


def drip_head(handler: BaseHTTPRequestHandler, stop: threading.Event) -> None:
    """The status line, then a header dripped one byte every :data:`DRIP_S` seconds (never finished)."""
    handler.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
    handler.wfile.flush()
    for _ in range(2000):
        if stop.wait(DRIP_S):
            return
        handler.wfile.write(b"a")
        handler.wfile.flush()


def raw(body: bytes, headers: dict[str, str] | None = None, status: int = 200) -> Handler:
    """``body`` as it is, with a Content-Length and ``headers``."""

    def answer(handler: BaseHTTPRequestHandler, stop: threading.Event) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(body)

    return answer


def lying(usage: Any) -> Handler:
    """A well-formed completion whose usage block says ``usage`` (``Infinity`` / ``NaN`` spelled as JSON extensions)."""
    return raw(json.dumps(completion(usage)).encode("utf-8"))


class HostileProvider(ServedOnLoopback):
    """Answers every POST with ``self.answer``; counts them."""

    def __init__(self, answer: Handler, tls: tuple[str, str] | None = None) -> None:
        """``tls``: a certificate and key file to serve https with."""
        self.answer = answer
        self.posts = 0
        self.stop = threading.Event()
        self._lock = threading.Lock()
        server = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with server._lock:
                    server.posts += 1
                server.answer(self, server.stop)

            def log_message(self, *args: Any) -> None:
                pass

        httpd = LoopbackHTTPServer(("127.0.0.1", 0), _Handler)
        self.scheme = "http"
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
            self.scheme = "https"
        self._serve(httpd)

    @property
    def base(self) -> str:
        """``http(s)://127.0.0.1:<port>/v1``."""
        return f"{self.scheme}://127.0.0.1:{self.port}/v1"

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()  # ends every answer still streaming or dripping
        super().__exit__(*exc)

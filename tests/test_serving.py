"""The tests' loopback server keeps a client's hang-up out of every captured stderr."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from tests.serving import LoopbackHTTPServer, ServedOnLoopback


class _LateWriter(ServedOnLoopback):
    """Answers only after the client has hung up, so the write fails with a broken pipe or a reset."""

    def __init__(self) -> None:
        self.client_gone = threading.Event()
        self.handled = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                server.client_gone.wait(timeout=60)
                self.send_response(200)
                self.end_headers()
                for _ in range(64):  # enough writes that one lands after the peer's reset
                    self.wfile.write(b"x" * 65536)

            def log_message(self, *args: Any) -> None:
                pass

        class Server(LoopbackHTTPServer):
            def shutdown_request(self, request: Any) -> None:
                # socketserver calls this after handle_error: the error, if any, has been handled
                super().shutdown_request(request)
                server.handled.set()

        self._serve(Server(("127.0.0.1", 0), Handler))


def test_a_client_hanging_up_mid_answer_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    with _LateWriter() as srv:
        with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        srv.client_gone.set()
        assert srv.handled.wait(timeout=60)
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", "")

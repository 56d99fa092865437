"""One lifecycle for the loopback HTTP servers the tests start: serve on a thread, stop in teardown."""

from __future__ import annotations

import socket
import sys
import threading
import traceback
from http.server import HTTPServer, ThreadingHTTPServer
from typing import Any, Self


class LoopbackHTTPServer(ThreadingHTTPServer):
    """A threading server that never writes a client's hang-up into another test's captured stderr.

    Handler threads are daemons and outlive ``shutdown``: when a test's client gives up (a timeout,
    a cancelled trial), the handler's late write fails with a broken pipe, and socketserver would
    print that traceback to whatever ``sys.stderr`` is at that moment — often the stream a later
    CLI test is asserting on. Hang-ups are what the tests provoke, so they are dropped; any other
    handler error is still printed, to the real stderr, where it cannot corrupt a captured one.
    """

    daemon_threads = True
    request_queue_size = 256  # a burst of concurrent trials overflows the default backlog of 5

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, (ConnectionError, TimeoutError)):
            return
        traceback.print_exc(file=sys.__stderr__)


class ServedOnLoopback:
    """Base for a test server: call ``_serve`` with a server bound to 127.0.0.1, port 0, then use ``with``."""

    _httpd: HTTPServer
    _thread: threading.Thread
    port: int

    def _serve(self, httpd: HTTPServer) -> None:
        self._httpd = httpd
        self.port = httpd.server_address[1]
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


class RawAcceptor:
    """A plain TCP listener on 127.0.0.1 whose thread hands each accepted connection to :meth:`accepted`.

    For servers that must misbehave below HTTP (answer once then hang up, never read). The accept
    loop wakes every 0.2 s to see whether :meth:`close` was called; ``close`` joins it, bounded.
    """

    #: the bound on joining the accept thread
    JOIN_S = 60.0

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def accepted(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.accepted(conn)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=self.JOIN_S)
        self.sock.close()


def read_request(conn: socket.socket) -> bool:
    """Read one HTTP request (its head, then the body its ``Content-Length`` names) off ``conn``; False when the
    client hung up before a whole head. Bounded by ``conn``'s own timeout, which the caller sets."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return False
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    while len(rest) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return False
        rest += chunk
    return True

"""One lifecycle for the loopback HTTP servers the tests start: serve on a thread, stop in teardown."""

from __future__ import annotations

import threading
from http.server import HTTPServer
from typing import Any, Self


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

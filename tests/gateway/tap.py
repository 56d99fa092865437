"""A recording forwarder for the Responses gateway tests: what went in, what came back, key by key.

``Tap`` sits between two parties on loopback (the client and the LiteLLM proxy, or a client and
an upstream emulator). It records every request (method, path, headers, JSON body) with the
status and JSON answer it returned, and forwards it to ``target``. A request whose bearer key is
in ``refuse`` is not forwarded: it is answered with that key's scripted status and body, which
is how a provider turns away one spent key while the next one is served for real. With
``refuse_catalog`` set, ``GET …/models`` is answered 503 (a gateway whose catalog cannot be read)
while calls still go through.

Binds 127.0.0.1 on a free port, serves from a daemon thread, and stops in ``close`` (bounded).
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.serving import LoopbackHTTPServer

#: how long one forwarded request may take before the tap answers 504 (bounds every wait)
FORWARD_TIMEOUT_S = 60.0


@dataclass
class Passage:
    """One request through the tap and what it answered."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    status: int
    answer: Any
    #: True when the tap answered itself (a refused key or catalog) instead of forwarding
    refused: bool = False

    @property
    def bearer(self) -> str | None:
        """The bearer key the request carried, if any."""
        value = self.headers.get("authorization", "")
        return value[len("Bearer "):] if value.startswith("Bearer ") else None


def _decode(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except (ValueError, UnicodeDecodeError):
        return raw.decode("utf-8", "replace")


class Tap:
    """Records and forwards; ``refuse`` maps a bearer key to the ``(status, body)`` that turns it away."""

    def __init__(self, target: str) -> None:
        self.target = target.rstrip("/")
        self.passages: list[Passage] = []
        self.refuse: dict[str, tuple[int, Any]] = {}
        self.refuse_catalog = False
        self._lock = threading.Lock()
        tap = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _pass(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                headers = {k.lower(): v for k, v in self.headers.items()}
                bearer = headers.get("authorization", "").removeprefix("Bearer ")
                with tap._lock:
                    refusal = tap.refuse.get(bearer)
                    if tap.refuse_catalog and self.command == "GET" and self.path.split("?")[0].rstrip("/").endswith("/models"):
                        refusal = (503, {"error": {"message": "catalog offline"}})
                if refusal is not None:
                    status, answer = refusal
                    # recorded before answering: the client's next step may already read the record
                    tap._record(Passage(self.command, self.path, headers, _decode(raw), status, answer, refused=True))
                    self._send(status, json.dumps(answer).encode("utf-8"), "application/json")
                    return
                forwarded = {k: v for k, v in headers.items() if k not in ("host", "content-length", "connection")}
                request = urllib.request.Request(tap.target + self.path, data=raw if raw else None,
                                                 method=self.command, headers=forwarded)
                try:
                    with urllib.request.urlopen(request, timeout=FORWARD_TIMEOUT_S) as response:  # noqa: S310 - loopback
                        status, payload = response.status, response.read()
                        kind = response.headers.get("Content-Type", "application/json")
                except urllib.error.HTTPError as exc:
                    status, payload = exc.code, exc.read()
                    kind = exc.headers.get("Content-Type", "application/json")
                except OSError as exc:  # the target is down or too slow: say so instead of hanging the client
                    status, kind = 504, "application/json"
                    payload = json.dumps({"error": {"message": f"tap could not reach {tap.target}: {exc}"}}).encode()
                tap._record(Passage(self.command, self.path, headers, _decode(raw), status, _decode(payload)))
                self._send(status, payload, kind)

            do_GET = do_POST = _pass  # noqa: N815 - http.server's naming

            def _send(self, status: int, payload: bytes, kind: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = LoopbackHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self._httpd.server_address[1])
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _record(self, passage: Passage) -> None:
        with self._lock:
            self.passages.append(passage)

    def posts(self) -> list[Passage]:
        """The POST requests so far, in order (a catalog read is a GET)."""
        with self._lock:
            return [p for p in self.passages if p.method == "POST"]

    def reset(self) -> None:
        with self._lock:
            self.passages.clear()
            self.refuse.clear()
            self.refuse_catalog = False

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

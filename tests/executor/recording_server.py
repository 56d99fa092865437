"""A loopback server for the transport comparison tests: records every request, replays scripted answers.

It answers with raw bytes, so a script can send a body cut
short (``{"id": "x", "choi``) or drop the connection after reading the request, which is what the
two transports must classify alike. Bound to 127.0.0.1 on a free port; stopped by ``with``.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.serving import LoopbackHTTPServer, ServedOnLoopback

#: the longest an answer waits for its ``held_until`` event: a bound for a test that forgot to set it
HOLD_LIMIT_S = 120.0


@dataclass
class Seen:
    """One request as it arrived."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    #: the client's port: requests sharing one kept-alive connection share it
    client_port: int = 0


@dataclass
class Answer:
    """One scripted answer: ``raw`` bytes with a status and headers, or ``drop`` the connection unanswered."""

    raw: bytes = b""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    drop: bool = False
    #: seconds the answer is held back (a slow provider)
    delay_s: float = 0.0
    #: when set, the answer is held back until the test sets this event (at most HOLD_LIMIT_S): a
    #: provider that answers only after the client gave up, however slowly a loaded machine runs
    #: the client (a fixed ``delay_s`` longer than the client's timeout is a race with the scheduler)
    held_until: threading.Event | None = None


def json_answer(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Answer:
    """An answer whose body is ``body`` as JSON."""
    return Answer(json.dumps(body).encode("utf-8"), status, dict(headers or {}))


class RecordingServer(ServedOnLoopback):
    """Records requests; answers each with the next scripted answer (a 500 when the script is empty)."""

    def __init__(self) -> None:
        self.seen: list[Seen] = []
        #: model ids ``GET …/models`` lists (a gateway's catalog); empty: the listing is refused with 404
        self.catalog: list[str] = []
        self._script: deque[Answer] = deque()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                seen = Seen("POST", self.path, {k.lower(): v for k, v in self.headers.items()},
                            json.loads(raw) if raw else None, self.client_address[1])
                with server._lock:
                    server.seen.append(seen)
                    answer = server._script.popleft() if server._script else json_answer(
                        {"error": {"message": "no answer scripted"}}, 500)
                if answer.delay_s:
                    time.sleep(answer.delay_s)
                if answer.held_until is not None:
                    answer.held_until.wait(HOLD_LIMIT_S)
                if answer.drop:
                    self.close_connection = True
                    self.connection.shutdown(2)  # SHUT_RDWR: the client reads end-of-stream, no status line
                    return
                self.send_response(answer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer.raw)))
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(answer.raw)

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                listed = server.catalog if self.path.split("?")[0].endswith("/models") else []
                payload = json.dumps({"data": [{"id": m, "object": "model"} for m in listed], "object": "list"}
                                     if listed else {"error": {"message": "not found"}}).encode("utf-8")
                self.send_response(200 if listed else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = LoopbackHTTPServer(("127.0.0.1", 0), Handler)
        self._serve(self._httpd)

    @property
    def base(self) -> str:
        """``http://127.0.0.1:<port>/v1``: the base URL the plans are pointed at."""
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *answers: Answer) -> None:
        """Replace the script with ``answers`` and forget what was recorded."""
        with self._lock:
            self._script = deque(answers)
            self.seen.clear()


@contextmanager
def serving_with_keys(keys: Mapping[str, str]) -> Iterator[RecordingServer]:
    """A recording server, with ``keys`` set in ``os.environ`` while it serves (litellm's own routes read them)."""
    import pytest

    with pytest.MonkeyPatch.context() as mp:
        for name, value in keys.items():
            mp.setenv(name, value)
        with RecordingServer() as server:
            yield server


@contextmanager
def capplan_logs_at(level: int) -> Iterator[None]:
    """capplan's loggers at ``level`` for the block (retries and dropped parameters a test does not read)."""
    logger = logging.getLogger("capplan")
    before = logger.level
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.setLevel(before)

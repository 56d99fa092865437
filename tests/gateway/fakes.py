"""Loopback fakes for the gateway tests: OpenAI-compatible upstreams and a recording front.

``Upstream`` answers ``POST …/chat/completions`` with a small valid completion naming the model
it was asked for, records every request, and can be told to fail: ``script`` maps a request to
``(status, body)`` or None for the normal answer. ``Front`` sits between the client and the
LiteLLM proxy, recording exactly what the gateway received and forwarding it; it can make the
gateway's catalog (``GET /models``) unreadable while calls still go through.
Everything binds 127.0.0.1 on a free port, serves from a daemon thread, and stops in ``close``.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.serving import LoopbackHTTPServer


@dataclass
class Seen:
    """One request as it arrived."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


Script = Callable[[Seen], "tuple[int, Any] | None"]


def completion_body(model: str, text: str = "ok") -> dict[str, Any]:
    """A minimal OpenAI chat completion."""
    return {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 1, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
    }


class _Server:
    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.httpd = LoopbackHTTPServer(("127.0.0.1", 0), handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


def _read(handler: BaseHTTPRequestHandler) -> Seen:
    length = int(handler.headers.get("Content-Length") or 0)
    raw = handler.rfile.read(length) if length else b""
    try:
        body = json.loads(raw) if raw else None
    except json.JSONDecodeError:
        body = raw.decode("utf-8", "replace")
    return Seen(handler.command, handler.path, {k.lower(): v for k, v in handler.headers.items()}, body)


def _answer(handler: BaseHTTPRequestHandler, status: int, body: Any, content_type: str = "application/json") -> None:
    payload = body if isinstance(body, bytes) else json.dumps(body).encode("utf-8")
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(payload)))
    handler.end_headers()
    handler.wfile.write(payload)


class Upstream(_Server):
    """An OpenAI-compatible upstream that records requests and answers (or fails) on script."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.seen: list[Seen] = []
        self.script: Script | None = None
        #: When set, ``GET …/models`` answers with these ids (the upstream poses as a gateway).
        self.catalog: list[str] | None = None
        self._lock = threading.Lock()
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                seen = _read(self)
                with upstream._lock:
                    upstream.seen.append(seen)
                    script = upstream.script
                scripted = script(seen) if script is not None else None
                if scripted is not None:
                    _answer(self, *scripted)
                    return
                model = seen.body.get("model", "") if isinstance(seen.body, dict) else ""
                _answer(self, 200, completion_body(model, f"{upstream.name}:{model}"))

            def do_GET(self) -> None:  # noqa: N802
                seen = _read(self)
                with upstream._lock:
                    upstream.seen.append(seen)
                    catalog = upstream.catalog
                if catalog is None or not seen.path.split("?")[0].endswith("/models"):
                    _answer(self, 404, {"error": "not found"})
                    return
                _answer(self, 200, {"object": "list", "data": [{"id": m, "object": "model"} for m in catalog]})

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(Handler)

    def models(self) -> list[str]:
        """The model names this upstream was asked for, in order."""
        with self._lock:
            return [s.body.get("model") for s in self.seen if isinstance(s.body, dict)]

    def reset(self) -> None:
        with self._lock:
            self.seen.clear()
            self.script = None
            self.catalog = None


class Front(_Server):
    """Records what the gateway receives and forwards it; ``catalog_broken`` fails ``GET /models``."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.seen: list[Seen] = []
        self.catalog_broken = False
        self._lock = threading.Lock()
        front = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _forward(self) -> None:
                seen = _read(self)
                with front._lock:
                    front.seen.append(seen)
                if front.catalog_broken and seen.path.split("?")[0].rstrip("/").endswith("/models"):
                    _answer(self, 503, {"error": "catalog offline"})
                    return
                data = json.dumps(seen.body).encode("utf-8") if seen.body is not None else None
                headers = {k: v for k, v in seen.headers.items() if k not in ("host", "content-length", "connection")}
                request = urllib.request.Request(front.target + seen.path, data=data, method=seen.method, headers=headers)
                try:
                    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - loopback
                        _answer(self, response.status, response.read(), response.headers.get("Content-Type", "application/json"))
                except urllib.error.HTTPError as exc:
                    _answer(self, exc.code, exc.read(), exc.headers.get("Content-Type", "application/json"))

            do_GET = do_POST = _forward  # noqa: N815

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(Handler)

    def calls(self) -> list[Seen]:
        """Chat-completion requests the gateway received."""
        with self._lock:
            return [s for s in self.seen if s.method == "POST"]

    def reset(self) -> None:
        with self._lock:
            self.seen.clear()
            self.catalog_broken = False

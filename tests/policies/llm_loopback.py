"""A loopback HTTP server that answers litellm with canned provider bodies and records requests.

Policy tests use it to check a policy against what litellm 1.110.2 really does with its output
(request side) and really hands back (response side), without leaving 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from types import ModuleType
from typing import Any

from tests.serving import LoopbackHTTPServer


@dataclass
class Recorded:
    """One request the server received."""

    path: str
    body: dict[str, Any]


@dataclass
class LoopbackLLM:
    """Serves ``replies[path_suffix] = (body, headers)``; every request lands in ``requests``."""

    replies: dict[str, tuple[dict[str, Any], dict[str, str]]] = field(default_factory=dict)
    requests: list[Recorded] = field(default_factory=list)
    port: int = 0
    _server: LoopbackHTTPServer | None = None

    def __enter__(self) -> LoopbackLLM:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("content-length", 0))
                owner.requests.append(Recorded(self.path, json.loads(self.rfile.read(length) or b"{}")))
                for suffix, (body, headers) in owner.replies.items():  # noqa: B007 - used after the break
                    if self.path.endswith(suffix):
                        break
                else:
                    body, headers = {"error": f"no canned reply for {self.path}"}, {}
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = LoopbackHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    @property
    def base(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"


def import_litellm() -> ModuleType:
    """litellm, imported without its start-up download of the model cost map."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    return litellm

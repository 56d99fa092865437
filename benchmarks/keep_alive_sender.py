"""The trial-loop benchmark's floor sender: the executor's HTTP call made by a minimal kept-alive client.

What a run costs with capplan's transport swapped for the least an HTTP call can cost from Python
(``http.client``, one kept-alive connection per thread, no retries, no limits): the runner and the
executor's request building stay on the clock. A module of its own so that a worker process of
``trial run --workers N`` can import it (``LocalBackend(completion_factory=...)``).
"""

from __future__ import annotations

import http.client
import json
import threading
import urllib.parse
from typing import Any

from capplan.executor.plan import Plan


class KeepAliveCompletion:
    """A ``completion`` that POSTs the kwargs' JSON body to the loopback server, one connection per thread."""

    def __init__(self) -> None:
        self._local = threading.local()

    def __call__(self, **kwargs: Any) -> dict[str, Any]:
        base = urllib.parse.urlsplit(kwargs["api_base"])
        body = json.dumps({k: kwargs[k] for k in ("model", "messages", "tools") if k in kwargs})
        for attempt in (1, 2):  # a kept-alive connection the server has closed gets one fresh retry
            conn = getattr(self._local, "conn", None)
            if conn is None:
                conn = self._local.conn = http.client.HTTPConnection(base.hostname, base.port, timeout=30)
            try:
                conn.request("POST", base.path + "/chat/completions", body, {"Content-Type": "application/json"})
                answer: dict[str, Any] = json.loads(conn.getresponse().read())
                return answer
            except (ConnectionError, http.client.HTTPException):
                conn.close()
                self._local.conn = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")


def keep_alive_for(plan: Plan) -> KeepAliveCompletion:
    """The floor sender for every plan (``completion_factory="benchmarks.keep_alive_sender:keep_alive_for"``)."""
    return KeepAliveCompletion()

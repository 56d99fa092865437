"""A loopback OpenAI-compatible provider that scripts a tool-using agent, statelessly.

Each answer is a function of the request alone, so trials give identical trajectories on any
backend, in any order, from any process: after a user message it calls the first offered
tool with ``{"amount": 2}``; after a tool result it answers in text. Ids derive from the
request body. It records each request's headers (the credential the worker sent) and can
add latency, answer some requests with a 429, and hold requests: ``hold_after(n)`` answers the
next ``n`` and holds every later one until ``release()`` (or ``HOLD_LIMIT_S``), so that a test can
act mid-run (kill a worker, kill the driver) before the run can possibly have ended.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.serving import LoopbackHTTPServer, ServedOnLoopback

#: the longest a request waits for ``release()``: a bound for a test that failed before releasing
HOLD_LIMIT_S = 120.0


def answer(body: dict[str, Any]) -> dict[str, Any]:
    """The scripted agent's completion for one request body."""
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()
    messages = body.get("messages") or []
    tools = body.get("tools") or []
    last = messages[-1]["role"] if messages else "user"
    if tools and last == "user":
        name = tools[0]["function"]["name"]
        message: dict[str, Any] = {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": f"call_{digest[:10]}", "type": "function",
                            "function": {"name": name, "arguments": json.dumps({"amount": 2})}}],
        }
        finish = "tool_calls"
    else:
        message = {"role": "assistant", "content": f"Done after {len(messages)} messages."}
        finish = "stop"
    prompt = sum(len(json.dumps(m)) for m in messages) // 4
    return {
        "id": f"chatcmpl-{digest[:16]}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": body.get("model", "agent-model"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": 12, "total_tokens": prompt + 12},
    }


class FakeProvider(ServedOnLoopback):
    """Serves ``answer`` on 127.0.0.1; use as a context manager."""

    def __init__(self, *, latency_s: float = 0.0) -> None:
        self.latency_s = latency_s
        self.rate_limit_every = 0  # answer every Nth request with a 429 (0: never)
        self.authorizations: set[str] = set()
        self.count = 0
        self._lock = threading.Lock()
        self._answer_up_to: int | None = None  # None: every request is answered
        self._released = threading.Condition(self._lock)
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.loads(raw) if raw else {}
                with server._lock:
                    server.count += 1
                    n = server.count
                    server.authorizations.add(self.headers.get("Authorization", ""))
                    server._released.wait_for(lambda: server._answer_up_to is None or n <= server._answer_up_to,
                                              timeout=HOLD_LIMIT_S)
                if server.latency_s:
                    time.sleep(server.latency_s)
                status, payload = 200, answer(body)
                if server.rate_limit_every and n % server.rate_limit_every == 0:
                    status, payload = 429, {"error": {"message": "Rate limit reached", "type": "rate_limit"}}
                data = json.dumps(payload).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if status == 429:
                    self.send_header("Retry-After", "0")
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = LoopbackHTTPServer(("127.0.0.1", 0), Handler)
        self._serve(self._httpd)

    @property
    def base(self) -> str:
        """The api_base a plan's calls are pointed at."""
        return f"http://127.0.0.1:{self.port}/v1"

    def hold_after(self, answered: int) -> None:
        """Answer the next ``answered`` requests; hold each later one until :meth:`release`."""
        with self._lock:
            self._answer_up_to = self.count + answered

    def held(self) -> int:
        """How many requests are being held now."""
        with self._lock:
            return 0 if self._answer_up_to is None else max(0, self.count - self._answer_up_to)

    def release(self) -> None:
        """Answer every held request, and every later one."""
        with self._lock:
            self._answer_up_to = None
            self._released.notify_all()

    def __exit__(self, *exc: Any) -> None:
        self.release()  # held handler threads end with the server
        super().__exit__(*exc)



def serve_forever(latency_s: float) -> None:
    """Serve in this process until killed, printing the base URL (benchmarks run it beside the driver)."""
    with FakeProvider(latency_s=latency_s) as fake:
        print(fake.base, flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    import sys

    serve_forever(float(sys.argv[1]) if len(sys.argv) > 1 else 0.0)

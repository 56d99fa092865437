"""A loopback OpenAI-compatible server that scripts the agent (and the user simulator).

Bound to 127.0.0.1 on a free port, served from daemon threads, shut down by the context
manager. Each request's JSON body is recorded. The answer is the next queued one (a body with
a status) or, with the queue empty, the ``responder``'s answer to the body; ``delay_s`` holds
each answer back like a provider's latency. A body marked with :data:`CUT_SHORT` is sent cut
short: its headers announce the whole length, half of it is written, and the connection closes.
``hold_after(n)`` answers the next ``n`` requests and holds every later one until ``release()``
(or ``HOLD_LIMIT_S``): a run that cannot finish before the test has done what it must do mid-run,
however fast or slow the machine is. ``python -m tests.trials.agent_server`` serves the
default responder (tool call after a user turn, text after a tool result) until killed, for
tests that run ``capplan`` in a subprocess.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.serving import LoopbackHTTPServer, ServedOnLoopback

Responder = Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]

#: a key a responder sets on an answer to have it sent cut short (the key itself is never sent)
CUT_SHORT = "__cut_short__"
#: the longest a request waits for ``release()``: a bound for a test that failed before releasing
HOLD_LIMIT_S = 120.0


def completion(content: str | None = "", tool_calls: list[dict[str, Any]] | None = None, *, finish: str | None = None,
               prompt_tokens: int = 20, completion_tokens: int = 5) -> dict[str, Any]:
    """A chat.completion body."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-test", "object": "chat.completion", "created": 1, "model": "agent-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish or ("tool_calls" if tool_calls else "stop")}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def tool_call(call_id: str, name: str, arguments: str | dict[str, Any]) -> dict[str, Any]:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


def error(status: int, message: str, code: str | None = None) -> tuple[int, dict[str, Any]]:
    return status, {"error": {"message": message, "type": "invalid_request_error", "code": code}}


def default_responder(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """Call the first tool after a user turn, answer in text after a tool result."""
    messages = body.get("messages", [])
    tools = body.get("tools") or []
    if tools and messages and messages[-1].get("role") != "tool":
        name = tools[0]["function"]["name"]
        return 200, completion(None, [tool_call(f"call_{len(messages)}", name, {"amount": 1})])
    return 200, completion(f"done after {len(messages)} messages")


class AgentServer(ServedOnLoopback):
    """Records every request body; answers from the queue, then the responder."""

    def __init__(self, responder: Responder = default_responder, *, delay_s: float = 0.0) -> None:
        self.requests: list[dict[str, Any]] = []
        self.responder = responder
        self.delay_s = delay_s
        self._queue: deque[tuple[int, dict[str, Any]]] = deque()
        self._lock = threading.Lock()
        #: requests received so far (never reset), and how many of them may be answered (None: all)
        self._received = 0
        self._answer_up_to: int | None = None
        self._released = threading.Condition(self._lock)
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # headers and body go out as two writes; without this the client's delayed ACK
                # adds ~40 ms to every answer, which a latency benchmark would charge to us
                self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.loads(raw) if raw else {}
                with server._lock:
                    server.requests.append(body)
                    queued = server._queue.popleft() if server._queue else None
                    server._received += 1
                    number = server._received
                    server._released.wait_for(lambda: server._answer_up_to is None or number <= server._answer_up_to,
                                              timeout=HOLD_LIMIT_S)
                status, answer = queued if queued is not None else server.responder(body)
                if server.delay_s:
                    time.sleep(server.delay_s)
                cut = bool(answer.get(CUT_SHORT))
                payload = json.dumps({k: v for k, v in answer.items() if k != CUT_SHORT}).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if cut:  # a provider that dropped the connection mid-body
                    self.wfile.write(payload[: len(payload) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = LoopbackHTTPServer(("127.0.0.1", 0), Handler)
        self._serve(self._httpd)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def hold_after(self, answered: int) -> None:
        """Answer the next ``answered`` requests; hold each later one until :meth:`release`."""
        with self._lock:
            self._answer_up_to = self._received + answered

    def release(self) -> None:
        """Answer every held request, and every later one."""
        with self._lock:
            self._answer_up_to = None
            self._released.notify_all()

    def __exit__(self, *exc: Any) -> None:
        self.release()  # held handler threads end with the server
        super().__exit__(*exc)

    def queue(self, body: dict[str, Any], status: int = 200) -> None:
        with self._lock:
            self._queue.append((status, body))

    def queue_error(self, status: int, message: str, code: str | None = None, times: int = 1) -> None:
        for _ in range(times):
            self.queue(error(status, message, code)[1], status)

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self._queue.clear()



if __name__ == "__main__":
    with AgentServer(delay_s=float(sys.argv[1]) if len(sys.argv) > 1 else 0.0) as srv:
        print(srv.base, flush=True)
        while True:
            time.sleep(3600)


def serve_agent(api_key: str) -> Iterator[AgentServer]:
    """A module fixture's body: an AgentServer, with the OpenAI key set and no gateway in the environment."""
    import pytest

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_API_KEY", api_key)
        mp.delenv("LLM_PROXY_BASE_URL", raising=False)
        with AgentServer() as srv:
            yield srv

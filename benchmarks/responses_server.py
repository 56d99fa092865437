"""A loopback Responses API for the benchmarks: the strict emulator, answering as the scripted agent.

``python -m benchmarks.responses_server [LATENCY_S]`` serves ``POST /v1/responses`` on 127.0.0.1
(a free port, printed as ``http://127.0.0.1:P/v1`` on the first line) until killed, in a process of
its own so that its CPU is not the benchmark's. Every request is held to the conformance corpus's
Responses rules (``presets/conformance/openai_responses.yaml``) by
:class:`~capplan.conformance.emulators.openai_responses.ResponsesEmulator`, so a benchmark whose
client stopped replaying a reasoning item verbatim, or before its follower, fails instead of
measuring a request the provider would refuse. The answers are those of
``tests.fake_provider.agent_answer``, as Responses objects: a ``function_call`` of the
first tool (``{"amount": 1}``) after a user message, text after a ``function_call_output``; each
with a reasoning item whose ``encrypted_content`` the emulator mints when the request asks for it.

The server speaks HTTP/1.1 with kept-alive connections and ``TCP_NODELAY`` (as the chat benchmark
server does), so a figure measures the client, not connection setup or delayed ACKs.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler
from typing import Any

from capplan.conformance.corpus import load_corpus
from capplan.conformance.emulator import Exchange, Reply, Violation
from capplan.conformance.emulators.openai_responses import ResponsesEmulator, input_items, item_type
from tests.serving import LoopbackHTTPServer, ServedOnLoopback

#: the largest request body the benchmark server reads (the emulator's own bound)
MAX_BODY = 16 * 1024 * 1024


class ScriptedResponses(ResponsesEmulator):
    """The emulator with the scripted agent's replies, keeping counts rather than every exchange.

    A benchmark sends thousands of requests; the emulator's exchange log would keep each body. Only
    the refused ones are kept (the first few), which is what a failed run needs to say why.
    """

    def __init__(self, route: str = "openai") -> None:
        super().__init__(load_corpus().rules, route=route)
        self.answered = 0
        self.refused: list[Exchange] = []

    def success(self, path: str, body: Mapping[str, Any], model: str, reply: Reply) -> tuple[int, Any]:
        items = input_items(body)
        tools = body.get("tools")
        if isinstance(tools, list) and tools and items and item_type(items[-1]) != "function_call_output":
            reply = Reply(tool_calls=((str(tools[0].get("name")), {"amount": 1}),))
        else:
            reply = Reply(text=f"done after {len(items)} items")
        return super().success(path, body, model, reply)

    def _record(self, path: str, body: Any, model: str | None, status: int, answer: Any,
                found: tuple[Violation, ...], held: tuple[str, ...]) -> tuple[int, Any]:
        with self._lock:
            self.answered += 1
            if status != 200 and len(self.refused) < 5:
                self.refused.append(Exchange(path, body, status, answer, model, found, held))
        return status, answer


class ResponsesServer(ServedOnLoopback):
    """:class:`ScriptedResponses` on a kept-alive HTTP/1.1 loopback server, answering after ``delay_s``."""

    def __init__(self, delay_s: float = 0.0, route: str = "openai") -> None:
        self.emulator = ScriptedResponses(route)
        emulator = self.emulator

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # headers and body go out as two writes; without this a delayed ACK adds ~40 ms
                self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length") or 0)
                if not 0 <= length <= MAX_BODY:
                    self.send_error(413)
                    return
                status, answer = emulator.answer(self.path, self.rfile.read(length))
                if delay_s:
                    time.sleep(delay_s)
                payload = _encode(answer)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self._serve(LoopbackHTTPServer(("127.0.0.1", 0), Handler))

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


def _encode(answer: Any) -> bytes:
    return json.dumps(answer).encode("utf-8")


def _report_refusals(server: ResponsesServer) -> None:
    """Every few seconds, a refused request on stderr (a benchmark's client raises too; this says which rule)."""
    told = 0
    while True:
        time.sleep(2)
        refused = server.emulator.refused
        for exchange in refused[told:]:
            rules = ", ".join(v.rule_id for v in exchange.violations) or "no rule (malformed request)"
            print(f"responses_server: HTTP {exchange.status} for {exchange.path}: {rules}", file=sys.stderr, flush=True)
        told = len(refused)


if __name__ == "__main__":
    with ResponsesServer(float(sys.argv[1]) if len(sys.argv) > 1 else 0.0) as srv:
        threading.Thread(target=_report_refusals, args=(srv,), daemon=True).start()
        print(srv.base, flush=True)
        while True:
            time.sleep(3600)

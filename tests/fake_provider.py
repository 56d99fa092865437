"""The tests' one loopback fake provider: OpenAI chat and Responses shapes, scripts, faults, recorded wire.

:class:`FakeProvider` binds 127.0.0.1 on a free port, serves from daemon threads and stops when its
``with`` block ends (the ``fake_provider`` fixture in ``tests/conftest.py`` does that for a test).
Every request is recorded as it arrived (:class:`Request`: method, path, lower-cased headers, raw
body bytes, parsed JSON). Each is answered, in this order, by

1. the next queued :class:`Reply` (:meth:`FakeProvider.queue`, :meth:`FakeProvider.script`), for any
   method but GET; a ``GET …/models`` is answered from :attr:`FakeProvider.catalog` when it is set;
2. the first of :attr:`FakeProvider.routes` whose key ends the request's path (a JSON body or a
   :class:`Reply`): one fake can pose as several native APIs (``/v1/messages``, ``:generateContent``);
3. the responder the fake was made with: one :class:`Reply` for every request, or a function of
   the :class:`Request` returning a :class:`Reply`, or ``None`` to fall through;
4. the default: a chat completion on ``…/chat/completions``, a Responses object on
   ``…/responses``, else a 404 that says what to script.

A :class:`Reply` is a status, JSON (or raw bytes, for malformed JSON), headers and a content type,
or a fault: ``drop`` the connection unanswered, ``cut_short`` a body mid-way, hold it back
(``delay_s``, ``held_until``), or hand the socket to a ``writer`` (:data:`endless`,
:data:`drip_body`, :data:`drip_head`, :func:`sse`). :meth:`FakeProvider.hold_after` holds every
request past the next ``n`` until :meth:`FakeProvider.release`, so a test can act mid-run however
fast or slow the machine is. Every wait is bounded (:data:`HOLD_LIMIT_S`), and every loop of a
writer ends when the fake stops, so a client that never hangs up cannot keep a test going.

``python -m tests.fake_provider [--agent default|stateless] [latency_s]`` serves a scripted agent
until killed and prints its base URL: benchmarks and CLI tests in a subprocess point at it.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from types import ModuleType
from typing import Any

from tests.serving import LoopbackHTTPServer, ServedOnLoopback

#: the longest a request waits for ``release()`` or a ``held_until`` event: a bound for a failed test
HOLD_LIMIT_S = 120.0
#: the most an endless answer writes before giving up on a client that keeps reading (8 GiB)
ENDLESS_CAP = 8 * 1024**3
#: seconds between two bytes of a dripped answer
DRIP_S = 0.5


@dataclass(frozen=True)
class Request:
    """One request exactly as it arrived."""

    method: str
    path: str
    #: header names lower-cased (HTTP names are case-insensitive; a test should not care how a client spells them)
    headers: dict[str, str]
    raw: bytes
    #: the body parsed as JSON; None when it was empty or not JSON (``raw`` keeps it either way)
    body: Any
    #: 1 for the first request the fake received, and so on (never reset: a responder can count)
    number: int = 0
    #: the client's port: requests that share one kept-alive connection share it
    client_port: int = 0


#: writes a whole answer on the handler's socket; the event is set when the fake stops
Writer = Callable[[BaseHTTPRequestHandler, threading.Event], None]


@dataclass
class Reply:
    """One answer: JSON ``body`` (or a function of the request giving it) or ``raw`` bytes, or a fault."""

    body: Any = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    #: sent as they are instead of ``body``: a body cut short, not JSON, or compressed
    raw: bytes | None = None
    content_type: str = "application/json"
    #: close the connection after reading the request, with no status line (the client reads end-of-stream)
    drop: bool = False
    #: announce the whole body's length, send half of it, and close (a provider that died mid-body)
    cut_short: bool = False
    #: seconds the answer is held back (a slow provider)
    delay_s: float = 0.0
    #: when set, the answer waits for this event (at most HOLD_LIMIT_S): a provider that answers only
    #: after the client gave up, however slowly a loaded machine runs it (a fixed delay is a race)
    held_until: threading.Event | None = None
    #: writes the whole answer itself (streams, drips, endless bodies); every other field is ignored
    writer: Writer | None = None

    def payload(self, request: Request) -> bytes:
        """The body bytes this reply sends to ``request``."""
        if self.raw is not None:
            return self.raw
        body = self.body(request) if callable(self.body) else self.body
        return json.dumps(body).encode("utf-8")


#: answers a request with a reply, or None to leave it to the default; ``(status, body)`` or
#: ``(status, body, content_type)`` is shorthand for a reply (a bytes body is sent as it is)
Responder = Callable[[Request], "Reply | tuple[Any, ...] | None"]


def as_reply(answer: Reply | tuple[Any, ...]) -> Reply:
    """A responder's answer as a :class:`Reply`."""
    if isinstance(answer, Reply):
        return answer
    status, body, *kind = answer
    content_type = kind[0] if kind else "application/json"
    if isinstance(body, bytes):
        return Reply(raw=body, status=status, content_type=content_type)
    return Reply(body, status, content_type=content_type)


# --- bodies -----------------------------------------------------------------------------------------


def chat_completion(content: str | None = "ok", tool_calls: list[dict[str, Any]] | None = None, *,
                    model: str = "fake-model", finish: str | None = None, usage: Any = "default",
                    id: str = "chatcmpl-fake") -> dict[str, Any]:  # noqa: A002 - the wire's own name
    """An OpenAI ``chat.completion`` body; ``usage=None`` leaves the usage block out."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    body: dict[str, Any] = {
        "id": id, "object": "chat.completion", "created": 1, "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish or ("tool_calls" if tool_calls else "stop")}],
    }
    if usage == "default":
        usage = {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
    if usage is not None:
        body["usage"] = usage
    return body


def tool_call(call_id: str, name: str, arguments: str | dict[str, Any]) -> dict[str, Any]:
    """One chat ``tool_calls`` entry; ``arguments`` as the wire string (a dict is encoded)."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


def responses_object(text: str = "ok", *, model: str = "fake-model", id: str = "resp_fake") -> dict[str, Any]:  # noqa: A002
    """An OpenAI Responses ``response`` body with one assistant message."""
    return {
        "id": id, "object": "response", "created_at": 1, "status": "completed", "model": model,
        "output": [{"type": "message", "id": "msg_fake", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}],
        "usage": {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7},
    }


#: OpenAI's usage block as its chat completions always send it: the detail objects are there with zeros
OPENAI_CHAT_USAGE: dict[str, Any] = {
    "prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7,
    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                  "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
}
#: the same for the Responses API
OPENAI_RESPONSES_USAGE: dict[str, Any] = {
    "input_tokens": 5, "output_tokens": 2, "total_tokens": 7,
    "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0},
}


def openai_answer(request: Request) -> Reply:
    """A 200 as OpenAI shapes it for ``request``'s path, usage details included (a probe's usage
    census reads them: the plain default answer leaves them out, as many compatible servers do)."""
    if request.path.endswith("/responses"):
        body = responses_object("OK")
        body["usage"] = dict(OPENAI_RESPONSES_USAGE)
        return Reply(body)
    return Reply(chat_completion("OK", usage=dict(OPENAI_CHAT_USAGE)))


def error_body(message: str, *, type: str = "invalid_request_error", code: str | None = None) -> dict[str, Any]:  # noqa: A002
    """An OpenAI error envelope."""
    return {"error": {"message": message, "type": type, "code": code}}


# --- replies and faults -----------------------------------------------------------------------------


def json_reply(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
    """``body`` as JSON with ``status`` and ``headers``; ``raw`` holds the exact bytes sent, for comparisons."""
    return Reply(body, status, dict(headers or {}), raw=json.dumps(body).encode("utf-8"))


def raw(body: bytes, headers: dict[str, str] | None = None, status: int = 200) -> Reply:
    """``body`` as it is (malformed JSON, a gzip bomb, an oversized body), with a Content-Length."""
    return Reply(raw=body, status=status, headers=dict(headers or {}))


def rate_limited(retry_after: str = "0", message: str = "Rate limit reached") -> Reply:
    """A 429 with a Retry-After header."""
    return Reply({"error": {"message": message, "type": "rate_limit"}}, 429, {"Retry-After": retry_after})


def lying_usage(usage: Any, text: str = "done") -> Reply:
    """A well-formed completion whose usage block says ``usage`` (``Infinity`` / ``NaN`` spelled as JSON extensions)."""
    return Reply(chat_completion(text, usage=usage))


def every_nth(n: int, reply: Reply, otherwise: Responder) -> Responder:
    """Answer every ``n``-th request the fake receives with ``reply`` (a 429 now and then), the rest with ``otherwise``."""

    def responder(request: Request) -> Reply | None:
        return reply if request.number % n == 0 else otherwise(request)

    return responder


def unscripted(request: Request) -> Reply:
    """A 500 for a request nothing was scripted for: a test that forgot to queue an answer sees it fail."""
    return json_reply({"error": {"message": f"no answer scripted for {request.method} {request.path}"}}, 500)


def _endless(handler: BaseHTTPRequestHandler, stop: threading.Event) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    piece = b" " * 65536
    chunk = b"%x\r\n%s\r\n" % (len(piece), piece)
    sent = 0
    while sent < ENDLESS_CAP and not stop.is_set():
        handler.wfile.write(chunk)
        sent += len(piece)


def _drip_body(handler: BaseHTTPRequestHandler, stop: threading.Event) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", "2000")
    handler.end_headers()
    handler.wfile.flush()
    for _ in range(2000):
        if stop.wait(DRIP_S):
            return
        handler.wfile.write(b" ")
        handler.wfile.flush()


def _drip_head(handler: BaseHTTPRequestHandler, stop: threading.Event) -> None:
    handler.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
    handler.wfile.flush()
    for _ in range(2000):
        if stop.wait(DRIP_S):
            return
        handler.wfile.write(b"a")
        handler.wfile.flush()


#: a chunked body that never ends (until the client hangs up, the fake stops, or 8 GiB)
endless = Reply(writer=_endless)
#: headers at once, then a 2 000-byte body one byte every DRIP_S seconds
drip_body = Reply(writer=_drip_body)
#: the status line, then a header dripped one byte every DRIP_S seconds (never finished)
drip_head = Reply(writer=_drip_head)


def sse(events: list[Any], *, done: bool = True) -> Reply:
    """A ``text/event-stream`` answer: one ``data:`` line per event (JSON unless bytes), then ``[DONE]``."""
    lines = [b"data: " + (e if isinstance(e, bytes) else json.dumps(e).encode("utf-8")) + b"\n\n" for e in events]
    if done:
        lines.append(b"data: [DONE]\n\n")
    return Reply(raw=b"".join(lines), content_type="text/event-stream")


# --- scripted agents --------------------------------------------------------------------------------


def agent_completion(content: str | None = "", tool_calls: list[dict[str, Any]] | None = None, *,
                     finish: str | None = None, prompt_tokens: int = 20, completion_tokens: int = 5) -> dict[str, Any]:
    """The scripted agent's ``chat.completion`` body (the trial tests' records are pinned to these bytes)."""
    return chat_completion(content, tool_calls, model="agent-model", finish=finish, id="chatcmpl-test",
                           usage={"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                                  "total_tokens": prompt_tokens + completion_tokens})


def error_answer(status: int, message: str, code: str | None = None) -> tuple[int, dict[str, Any]]:
    """``(status, OpenAI error envelope)``: a responder's shorthand for a refusal."""
    return status, error_body(message, code=code)


def on_body(respond: Callable[[dict[str, Any]], Reply | tuple[Any, ...] | None]) -> Responder:
    """A responder made of a function of the request's JSON body (``{}`` when it had none)."""

    def responder(request: Request) -> Reply | tuple[Any, ...] | None:
        return respond(request.body if request.body is not None else {})

    return responder


def agent_answer(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """The scripted agent's answer to a request body: the first tool after a user turn, text after a tool result."""
    messages = body.get("messages", [])
    tools = body.get("tools") or []
    if tools and messages and messages[-1].get("role") != "tool":
        name = tools[0]["function"]["name"]
        return 200, agent_completion(None, [tool_call(f"call_{len(messages)}", name, {"amount": 1})])
    return 200, agent_completion(f"done after {len(messages)} messages")


def agent(request: Request) -> Reply:
    """The scripted agent as a responder (:func:`agent_answer` of the request's body)."""
    return as_reply(agent_answer(request.body if isinstance(request.body, dict) else {}))


def stateless_agent(request: Request) -> Reply:
    """A tool-using agent whose ids derive from the request body: identical trajectories from any process."""
    body = request.body if isinstance(request.body, dict) else {}
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()
    messages = body.get("messages") or []
    tools = body.get("tools") or []
    last = messages[-1]["role"] if messages else "user"
    calls = None
    if tools and last == "user":
        calls = [tool_call(f"call_{digest[:10]}", tools[0]["function"]["name"], {"amount": 2})]
    prompt = sum(len(json.dumps(m)) for m in messages) // 4
    return Reply({
        **chat_completion(None if calls else f"Done after {len(messages)} messages.", calls,
                          model=body.get("model", "agent-model"), id=f"chatcmpl-{digest[:16]}",
                          usage={"prompt_tokens": prompt, "completion_tokens": 12, "total_tokens": prompt + 12}),
        "created": 1_700_000_000,
    })


# --- the server -------------------------------------------------------------------------------------


class FakeProvider(ServedOnLoopback):
    """Records every request and answers from the queue, the responder, then the defaults; use with ``with``."""

    def __init__(self, responder: Reply | Responder | None = None, *, routes: dict[str, Any] | None = None,
                 delay_s: float = 0.0, catalog: list[str] | None = None, tls: tuple[str, str] | None = None,
                 name: str | None = None, answer_headers: Callable[[Request], dict[str, str]] | None = None) -> None:
        """``tls``: a certificate and key file to serve https with; ``catalog``: model ids ``GET …/models`` lists;
        ``name``: the default chat answer says ``<name>:<model>``, so a test of several upstreams sees which one
        answered; ``answer_headers``: headers added to every answer (an OpenRouter-style generation id)."""
        self.responder = responder
        self.name = name
        self.answer_headers = answer_headers
        #: path suffix -> JSON body or :class:`Reply`; a test may change it between requests
        self.routes: dict[str, Any] = dict(routes or {})
        #: seconds every answer is held back (a provider's latency)
        self.delay_s = delay_s
        #: model ids ``GET …/models`` lists (a gateway's catalog), an empty list refuses it with a 404;
        #: None leaves the listing to the routes and the responder
        self.catalog = catalog
        self.requests: list[Request] = []
        #: set when the fake stops: ends every answer still streaming or dripping
        self.stop = threading.Event()
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._received = 0
        self._answer_up_to: int | None = None  # None: every request is answered
        self._released = threading.Condition(self._lock)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # headers and body go out as two writes; without this the client's delayed ACK adds
                # ~40 ms to every answer, which a latency benchmark would charge to the client
                if isinstance(self.request, socket.socket) and self.request.family != socket.AF_UNIX:
                    self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                data = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(data) if data else None
                except ValueError:  # recorded as raw bytes only: a test of a client sending junk reads ``raw``
                    body = None
                fake._respond(self, data, body)

            do_GET = do_POST = do_PUT = do_DELETE = _serve  # noqa: N815 - http.server's naming

            def log_message(self, *args: Any) -> None:
                pass

        httpd = LoopbackHTTPServer(("127.0.0.1", 0), Handler)
        self.scheme = "http"
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
            self.scheme = "https"
        self._serve(httpd)

    # -- addresses

    @property
    def root(self) -> str:
        """``http(s)://127.0.0.1:<port>``."""
        return f"{self.scheme}://127.0.0.1:{self.port}"

    @property
    def base(self) -> str:
        """``http(s)://127.0.0.1:<port>/v1``: the api_base a plan's calls are pointed at."""
        return self.root + "/v1"

    # -- scripting

    def queue(self, answer: Reply | Any, status: int = 200, headers: dict[str, str] | None = None, *,
              times: int = 1) -> None:
        """Answer the next ``times`` requests with ``answer``: a :class:`Reply`, or a JSON body (or a
        function of the :class:`Request` giving one) sent with ``status`` and ``headers``."""
        reply = answer if isinstance(answer, Reply) else Reply(answer, status, dict(headers or {}))
        with self._lock:
            self._queue.extend([reply] * times)

    def queue_error(self, status: int, message: str, code: str | None = None, times: int = 1) -> None:
        """Refuse the next ``times`` calls with ``status`` and an OpenAI error envelope."""
        self.queue(error_body(message, code=code), status, times=times)

    def script(self, *replies: Reply) -> None:
        """Replace the queue with ``replies`` and forget what was recorded."""
        with self._lock:
            self._queue = deque(replies)
            self.requests.clear()

    def reset(self, *, scripts: bool = False) -> None:
        """Forget recorded requests and queued answers; ``scripts``: the responder and the catalog too."""
        with self._lock:
            self.requests.clear()
            self._queue.clear()
            if scripts:
                self.responder = None
                self.catalog = None

    def hold_after(self, answered: int) -> None:
        """Answer the next ``answered`` requests; hold each later one until :meth:`release`."""
        with self._lock:
            self._answer_up_to = self._received + answered

    def held(self) -> int:
        """How many requests are being held now."""
        with self._lock:
            return 0 if self._answer_up_to is None else max(0, self._received - self._answer_up_to)

    def release(self) -> None:
        """Answer every held request, and every later one."""
        with self._lock:
            self._answer_up_to = None
            self._released.notify_all()

    # -- reading the wire

    @property
    def count(self) -> int:
        """Requests received so far (not reset by :meth:`reset`)."""
        with self._lock:
            return self._received

    def last(self) -> Request:
        """The most recent request."""
        with self._lock:
            assert self.requests, "the fake provider received no request"
            return self.requests[-1]

    def bodies(self) -> list[Any]:
        """The parsed JSON body of every recorded call (every request but a GET, which carries none), in order."""
        with self._lock:
            return [r.body for r in self.requests if r.method != "GET"]

    def models(self) -> list[Any]:
        """The model each JSON call asked for, in order."""
        with self._lock:
            return [r.body.get("model") for r in self.requests if isinstance(r.body, dict)]

    def posts(self, path_part: str = "") -> list[Request]:
        """Recorded POSTs whose path contains ``path_part``."""
        with self._lock:
            return [r for r in self.requests if r.method == "POST" and path_part in r.path]

    # -- serving

    def start(self) -> FakeProvider:
        """Serve until :meth:`close`: for a fixture that outlives a ``with`` block."""
        return self.__enter__()

    def close(self) -> None:
        """Stop serving (the end of the ``with`` block)."""
        self.__exit__(None, None, None)

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()
        self.release()  # held handler threads end with the server
        super().__exit__(*exc)

    def _choose(self, request: Request) -> Reply:
        if request.method == "GET":
            if self.catalog is not None and request.path.split("?")[0].rstrip("/").endswith("/models"):
                if not self.catalog:
                    return Reply({"error": {"message": "not found"}}, 404)
                return Reply({"object": "list", "data": [{"id": m, "object": "model"} for m in self.catalog]})
            queued = None  # a GET never takes a queued answer: those are the answers to calls
        else:
            with self._lock:
                queued = self._queue.popleft() if self._queue else None
        if queued is not None:
            return queued
        for suffix, routed in list(self.routes.items()):
            if request.path.endswith(suffix):
                return routed if isinstance(routed, Reply) else Reply(routed)
        responder = self.responder
        chosen = responder if isinstance(responder, Reply) else responder(request) if responder else None
        return as_reply(chosen) if chosen is not None else self._default(request)

    def _default(self, request: Request) -> Reply:
        path = request.path.split("?")[0].rstrip("/")
        model = request.body.get("model", "fake-model") if isinstance(request.body, dict) else "fake-model"
        if request.method == "POST" and path.endswith("/chat/completions"):
            return Reply(chat_completion(f"{self.name}:{model}" if self.name else "ok", model=model))
        if request.method == "POST" and path.endswith("/responses"):
            return Reply(responses_object(model=model))
        return Reply({"error": {"message": f"the fake provider has no answer for {request.method} {request.path}: "
                                           "queue one, or pass a responder"}}, 404)

    def _respond(self, handler: BaseHTTPRequestHandler, data: bytes, body: Any) -> None:
        with self._lock:
            self._received += 1
            number = self._received
            request = Request(handler.command, handler.path, {k.lower(): v for k, v in handler.headers.items()},
                              data, body, number, handler.client_address[1])
            self.requests.append(request)
            self._released.wait_for(lambda: self._answer_up_to is None or number <= self._answer_up_to,
                                    timeout=HOLD_LIMIT_S)
        reply = self._choose(request)
        delay = reply.delay_s or self.delay_s
        if delay:
            time.sleep(delay)
        if reply.held_until is not None:
            reply.held_until.wait(HOLD_LIMIT_S)
        if reply.writer is not None:
            reply.writer(handler, self.stop)
            return
        if reply.drop:
            handler.close_connection = True
            handler.connection.shutdown(socket.SHUT_RDWR)
            return
        payload = reply.payload(request)
        headers = {**reply.headers, **(self.answer_headers(request) if self.answer_headers else {})}
        handler.send_response(reply.status)
        handler.send_header("Content-Type", reply.content_type)
        handler.send_header("Content-Length", str(len(payload)))
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        if reply.cut_short:
            handler.wfile.write(payload[: len(payload) // 2])
            handler.wfile.flush()
            handler.close_connection = True
            return
        handler.wfile.write(payload)


@contextmanager
def serving_with_keys(keys: Mapping[str, str], responder: Reply | Responder | None = None) -> Iterator[FakeProvider]:
    """A fake provider (``responder``: :func:`unscripted` by default), with ``keys`` set in ``os.environ``
    while it serves: litellm's own routes read them there."""
    import pytest

    with pytest.MonkeyPatch.context() as mp:
        for name, value in keys.items():
            mp.setenv(name, value)
        with FakeProvider(responder if responder is not None else unscripted) as fake:
            yield fake


def serve_agent(api_key: str) -> Iterator[FakeProvider]:
    """A module fixture's body: the scripted :func:`agent`, with the OpenAI key set and no gateway in the environment."""
    import pytest

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_API_KEY", api_key)
        mp.delenv("LLM_PROXY_BASE_URL", raising=False)
        with FakeProvider(agent) as fake:
            yield fake


def import_litellm() -> ModuleType:
    """litellm, imported without its start-up download of the model cost map (a test never leaves loopback)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    return litellm


def main(argv: list[str]) -> None:
    """Serve a scripted agent until killed, printing the base URL (benchmarks run it beside the driver)."""
    responders = {"default": agent, "stateless": stateless_agent}
    name = "default"
    if argv[:1] == ["--agent"]:
        if len(argv) < 2 or argv[1] not in responders:
            raise SystemExit(f"--agent takes one of {sorted(responders)}")
        name, argv = argv[1], argv[2:]
    with FakeProvider(responders[name], delay_s=float(argv[0]) if argv else 0.0) as fake:
        print(fake.base, flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])

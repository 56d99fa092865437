"""The loopback emulator every protocol module builds on.

An :class:`Emulator` is an HTTP server on 127.0.0.1 (an ephemeral port) that reads each request
body (bounded in size), holds it to the corpus rules that apply to its protocol, route and the
model the request names, and answers either the first broken rule's exact status and error body,
or a success built from its script (:class:`Reply`), minting reasoning carriers as the provider
would. Every exchange is recorded with every rule the request broke, not only the one answered,
so the conformance matrix can name them all.

A protocol module subclasses it and supplies ``protocol``, ``checks`` (the predicates its rules
name), ``model_of`` (where the request names its model) and ``success`` (the provider's answer).
"""

from __future__ import annotations

import json
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

from capplan.conformance.carriers import CarrierMint
from capplan.conformance.corpus import Rule

#: the largest request body an emulator reads; a bigger one is answered 413
MAX_REQUEST_BYTES = 16 * 1024 * 1024
#: how long a request may take to arrive before the emulator gives up on it
READ_TIMEOUT_S = 30.0

#: a rule's predicate: the request body, the rule's params and the emulator (for its mint and
#: route); ``None`` when the request keeps the rule, else the fields the error's placeholders take
Check = Callable[["Emulator", Mapping[str, Any], Mapping[str, Any]], "dict[str, Any] | None"]


@dataclass(frozen=True)
class Reply:
    """What the emulated model does on one successful request.

    ``tool_calls`` are ``(name, arguments)`` pairs (two or more: parallel calls); with none the
    model answers ``text``. ``reasoning`` is the thinking it shows when the request asked for
    thinking (the emulator mints the carrier the protocol binds to it).
    """

    text: str = "done"
    tool_calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    reasoning: str = "Let me think about which tool answers this."


@dataclass(frozen=True)
class Violation:
    """A rule a request broke, and the error the provider answers for it."""

    rule_id: str
    status: int
    body: dict[str, Any]

    @property
    def message(self) -> str:
        """The provider's error text (the ``message`` inside the body), for a one-line report."""
        return _message_of(self.body) or json.dumps(self.body, sort_keys=True)


@dataclass
class Exchange:
    """One request the emulator received and what it answered."""

    path: str
    body: Any
    status: int
    answer: Any
    model: str | None
    violations: tuple[Violation, ...] = ()
    #: the rules this request was held to (those of the protocol, route and model)
    rules: tuple[str, ...] = ()


class Emulator(ABC):
    """A strict loopback provider for one protocol and route."""

    protocol: ClassVar[str]
    #: predicate name -> predicate; the corpus loader refuses a rule naming another
    checks: ClassVar[Mapping[str, Check]]

    def __init__(self, rules: Sequence[Rule], *, route: str, script: Sequence[Reply] = (),
                 mint: CarrierMint | None = None) -> None:
        """``rules``: the corpus (those of other protocols and routes are ignored)."""
        self.route = route
        self.rules = tuple(rule for rule in rules if rule.protocol == self.protocol and route in rule.routes)
        self.mint = mint if mint is not None else CarrierMint(route)
        self.exchanges: list[Exchange] = []
        self._script: list[Reply] = list(script)
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- what a protocol module supplies -------------------------------------------------------

    @abstractmethod
    def model_of(self, path: str, body: Mapping[str, Any]) -> str | None:
        """The model the request names (in its body or its path)."""

    @abstractmethod
    def success(self, path: str, body: Mapping[str, Any], model: str, reply: Reply) -> tuple[int, Any]:
        """The provider's answer to an accepted request, with carriers minted for ``model``."""

    # --- the script -----------------------------------------------------------------------------

    def script(self, replies: Sequence[Reply]) -> None:
        """Replace what the model does on the next successful requests, in order."""
        with self._lock:
            self._script = list(replies)

    def _next_reply(self) -> Reply:
        with self._lock:
            return self._script.pop(0) if self._script else Reply()

    # --- one request ----------------------------------------------------------------------------

    def violations(self, path: str, body: Mapping[str, Any], model: str) -> tuple[tuple[Violation, ...], tuple[str, ...]]:
        """Every rule (of those for ``model``) that ``body`` breaks, in corpus order, and the ids held to."""
        found: list[Violation] = []
        held: list[str] = []
        for rule in self.rules:
            if not rule.applies(self.protocol, self.route, model):
                continue
            held.append(rule.id)
            fields = self.checks[rule.check](self, body, rule.params)
            if fields is not None:
                found.append(Violation(rule.id, rule.status, rule.render_error(fields)))
        return tuple(found), tuple(held)

    def answer(self, path: str, raw: bytes) -> tuple[int, Any]:
        """The status and JSON answer to one request; records the exchange."""
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            return self._record(path, None, None, 400, _plain_error("request body is not JSON"), (), ())
        if not isinstance(body, dict):
            return self._record(path, body, None, 400, _plain_error("request body is not a JSON object"), (), ())
        model = self.model_of(path, body)
        if model is None:
            return self._record(path, body, None, 400, _plain_error("request names no model"), (), ())
        found, held = self.violations(path, body, model)
        if found:
            return self._record(path, body, model, found[0].status, found[0].body, found, held)
        status, answer = self.success(path, body, model, self._next_reply())
        return self._record(path, body, model, status, answer, (), held)

    def _record(self, path: str, body: Any, model: str | None, status: int, answer: Any,
                found: tuple[Violation, ...], held: tuple[str, ...]) -> tuple[int, Any]:
        with self._lock:
            self.exchanges.append(Exchange(path, body, status, answer, model, found, held))
        return status, answer

    # --- the server -----------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` of the running server."""
        if self._server is None:
            raise RuntimeError("the emulator is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Emulator:
        """Listen on an ephemeral loopback port, serving from a daemon thread."""
        emulator = self

        class Handler(BaseHTTPRequestHandler):
            timeout = READ_TIMEOUT_S

            def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
                try:
                    length = int(self.headers.get("Content-Length") or 0)
                except ValueError:
                    length = -1
                if length < 0:
                    self._send(400, _plain_error("Content-Length is not a length"))
                    return
                if length > MAX_REQUEST_BYTES:
                    self._send(413, _plain_error("request body too large"))
                    return
                raw = self.rfile.read(length)
                status, answer = emulator.answer(self.path, raw)
                self._send(status, answer)

            def do_GET(self) -> None:  # noqa: N802
                self._send(404, _plain_error(f"no such path {self.path}"))

            def _send(self, status: int, answer: Any) -> None:
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the standard library's name)
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"emulator-{self.protocol}-{self.route}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket (bounded: the serving thread is joined for 10 s at most)."""
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = None
        self._thread = None

    def __enter__(self) -> Emulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _plain_error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error"}}


def _message_of(body: Any) -> str | None:
    """The first ``message`` string in an error body, however deep (providers nest it differently)."""
    if isinstance(body, dict):
        if isinstance(body.get("message"), str):
            return str(body["message"])
        for value in body.values():
            found = _message_of(value)
            if found:
                return found
    if isinstance(body, list):
        for value in body:
            found = _message_of(value)
            if found:
                return found
    return None

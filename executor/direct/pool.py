"""Kept-alive HTTP connections for the direct transport, shared by every thread of a process.

Each origin (``scheme://host:port``) is served one of two ways, chosen on its first call (in the
reference mode, :mod:`capplan.core.reference_mode`, always the second: seam *http.client pool*):

- **HTTP/1.1 on the standard library's** ``http.client``: a stack of idle kept-alive connections
  per origin; a call takes one (or opens one), sends, reads the whole answer and puts it back
  unless the server said it closes. A plain request's head is written here and goes out with its body in
  one send (:mod:`capplan.executor.direct.request_head`), and its answer is read by
  :mod:`capplan.executor.direct.answer_reader`. This is every route in the common case (OpenAI, OpenRouter,
  xAI, Azure AI, self-hosted endpoints, gateways) and the cheap one: measured by
  ``benchmarks/transport.py`` with 32 threads calling a loopback server at once, about 0.25 ms of
  CPU per call against 1.0 ms for a shared ``httpx.Client``, whose request and response models,
  cookie jar and connection pool (httpcore scans every pooled connection, polling each socket,
  on every request and every response close) are the difference. At ``--concurrency 32`` that is
  most of what stood between a trial run and the wire's floor.
- **httpx** where it does what the first cannot: an origin whose scheme a proxy variable names
  (``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY``, any case; httpx then applies ``NO_PROXY`` as it
  does for litellm's own senders), an endpoint URL with credentials in it (``https://user:pass@host``,
  which httpx sends as ``Authorization: Basic``), and ``https`` origins when the ``h2`` package
  is installed (HTTP/2, negotiated through ALPN where the server offers it).

Either way: a ``User-Agent: capplan/<version>`` header (unless the request names its own), TLS verification with the CA bundle httpx uses (certifi, or ``SSL_CERT_FILE`` /
``SSL_CERT_DIR``), the per-attempt timeout as one deadline for the whole attempt (connecting,
sending and every read together: a status line, headers or body dripped a byte at a time end
there: :mod:`capplan.executor.direct.socket_deadline`, and
:mod:`capplan.executor.direct.httpx_deadline` on the httpx path), the body read within
the binding's limits (:mod:`capplan.executor.direct.bounded_body`), redirects
never followed (a 3xx is an answer like any other status: httpx drops only ``Authorization``
when the origin changes, so a gateway or ``api-key`` header would reach whatever host a 3xx
names), an idle connection closed after :data:`KEEPALIVE_EXPIRY_S` (httpx's default) or when
its socket shows the server hung up, and a forked child (a process pool, Ray) opening its own,
because a connection must never be shared across processes. A failure is raised as
:class:`WireTimeout` or :class:`WireBroken` from the exception that caused it.
"""

from __future__ import annotations

import http.client
import importlib.metadata
import importlib.util
import os
import select
import ssl
import threading
import time
import urllib.request
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import SplitResult, urlsplit

from capplan.core.reference_mode import reference_mode, speed_memo
from capplan.executor.direct.answer_reader import AnswerMalformed, AnswerReader, header_message
from capplan.executor.direct.request_head import plain_head
from capplan.executor.direct.socket_deadline import DeadlineSocket
from capplan.executor.direct.bounded_body import (
    BodyLimits,
    BodyTooLarge,
    BodyUndecodable,
    DeadlinePassed,
    read_body,
    remaining,
)

#: Idle connections kept per origin: enough for a trial run's --concurrency, bounded for a runaway one.
MAX_IDLE_CONNECTIONS = 256
#: Seconds an idle connection is kept (httpx's default): servers close idle connections after a
#: few seconds (Node's default is 5), and a request sent on one the server is closing is lost.
KEEPALIVE_EXPIRY_S = 5.0
#: The timeout of a request that names none (the plan's per-attempt timeout always does).
DEFAULT_TIMEOUT_S = 600.0
#: The limits of a request that names none (the plan's binding always does): the binding's defaults.
DEFAULT_LIMITS = BodyLimits(max_response_bytes=64 * 1024 * 1024, max_decoded_bytes=64 * 1024 * 1024)

_HTTP2 = importlib.util.find_spec("h2") is not None


class WireTimeout(Exception):
    """No answer within the attempt's timeout (connecting, sending or reading)."""


class WireBroken(Exception):
    """The connection failed: refused, dropped, or the answer was cut short or unreadable."""


class WireTooLarge(Exception):
    """The answer's body passed one of the binding's limits; ``status`` is the answer's, ``field`` the limit's name."""

    def __init__(self, status: int, field: str, limit: int) -> None:
        super().__init__(f"the answer's body is larger than {field} ({limit} bytes)")
        self.status = status
        self.field = field
        self.limit = limit


class ResponseHeaders(dict[str, str]):
    """Response headers by lower-cased name, repeated headers joined with ``", "`` (as httpx reads them)."""

    @classmethod
    def of(cls, pairs: Iterable[tuple[str, str]]) -> ResponseHeaders:
        out = cls()
        for name, value in pairs:
            key = name.lower()
            out[key] = f"{out[key]}, {value}" if key in out else value
        return out

    def get(self, name: str, default: Any = None) -> Any:  # case-insensitive, as a header lookup must be
        return super().get(name.lower(), default)


@dataclass(frozen=True)
class WireAnswer:
    """One HTTP answer, read whole (what the direct transport's errors keep as ``response``)."""

    status_code: int
    headers: ResponseHeaders
    content: bytes


class _Sender(Protocol):
    def send(self, url: str, content: bytes, headers: Mapping[str, str], timeout_s: float,
             limits: BodyLimits) -> WireAnswer: ...

    def close(self) -> None: ...

    def idle(self) -> int: ...


@speed_memo(maxsize=1)
def user_agent() -> str:
    """``capplan/<version>``: what every direct request names itself (http.client sends none of its own)."""
    try:
        return f"capplan/{importlib.metadata.version('capplan')}"
    except importlib.metadata.PackageNotFoundError:  # a source tree that was never installed
        return "capplan"


def _with_agent(headers: Mapping[str, str]) -> dict[str, str]:
    out = dict(headers)
    if not any(name.lower() == "user-agent" for name in out):
        out["User-Agent"] = user_agent()
    return out


def origin(url: str) -> str:
    """``scheme://host:port`` of ``url``: what one pool serves."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


class _Response(http.client.HTTPResponse):
    """``http.client``'s answer, its header block parsed by :func:`header_message`."""

    def begin(self) -> None:
        # http.client.HTTPResponse.begin (3.11 to 3.13) but for the header block's parse
        if self.headers is not None:
            return  # already begun
        while True:  # skip any 100 Continue answers, their headers read within http.client's bounds
            version, status, reason = self._read_status()
            if status != http.client.CONTINUE:
                break
            http.client._read_headers(self.fp)
        self.code = self.status = status
        self.reason = reason.strip()
        if version in ("HTTP/1.0", "HTTP/0.9"):
            self.version = 10
        elif version.startswith("HTTP/1."):
            self.version = 11
        else:
            raise http.client.UnknownProtocol(version)
        self.headers = self.msg = header_message(http.client._read_headers(self.fp))
        transfer_encoding = self.headers.get("transfer-encoding")
        if transfer_encoding and transfer_encoding.lower() == "chunked":
            self.chunked = True
            self.chunk_left = None
        else:
            self.chunked = False
        self.will_close = self._check_close()
        self.length = None
        length = self.headers.get("content-length")
        if length and not self.chunked:
            try:
                self.length = int(length)
            except ValueError:
                self.length = None
            else:
                if self.length < 0:  # a negative length is no length
                    self.length = None
        if status in (http.client.NO_CONTENT, http.client.NOT_MODIFIED) or 100 <= status < 200 or self._method == "HEAD":
            self.length = 0
        if not self.will_close and not self.chunked and self.length is None:
            self.will_close = True  # no length to end it: the body runs to the connection's close


class _Connections:
    """Idle kept-alive ``http.client`` connections to one origin; any thread takes one, sends, gives it back."""

    def __init__(self, parts: SplitResult) -> None:
        if parts.hostname is None:
            raise WireBroken("the endpoint URL names no host")  # never the URL: it may carry credentials
        self._host = parts.hostname
        self._https = parts.scheme == "https"
        self._port = parts.port or (443 if self._https else 80)
        self._context = _ssl_context() if self._https else None
        self._lock = threading.Lock()
        self._idle: list[tuple[http.client.HTTPConnection, float]] = []

    def _open(self, deadline: float) -> http.client.HTTPConnection:
        left = remaining(deadline)
        if self._context is not None:
            connection: http.client.HTTPConnection = http.client.HTTPSConnection(
                self._host, self._port, timeout=left, context=self._context)
        else:
            connection = http.client.HTTPConnection(self._host, self._port, timeout=left)
        connection.response_class = _Response
        connection.connect()  # connecting (and the TLS handshake) within the time left
        connection.sock = DeadlineSocket(connection.sock, deadline)
        return connection

    def _take(self, deadline: float) -> http.client.HTTPConnection:
        while True:
            with self._lock:
                if not self._idle:
                    break
                connection, since = self._idle.pop()  # the most recently used: the least likely to be closed
            if time.monotonic() - since < KEEPALIVE_EXPIRY_S and _still_open(connection):
                return connection
            connection.close()
        return self._open(deadline)

    def _give_back(self, connection: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < MAX_IDLE_CONNECTIONS:
                self._idle.append((connection, time.monotonic()))
                return
        connection.close()

    def send(self, url: str, content: bytes, headers: Mapping[str, str], timeout_s: float,
             limits: BodyLimits) -> WireAnswer:
        parts = urlsplit(url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        deadline = time.monotonic() + timeout_s
        connection: http.client.HTTPConnection | None = None
        try:
            connection = self._take(deadline)
            sock = connection.sock
            if isinstance(sock, DeadlineSocket):  # every connection _open made
                sock.deadline = deadline
            response = _request(connection, target, content, _with_agent(headers))
            if isinstance(response, AnswerReader):
                body = read_body(response.read1, response.header("content-encoding"), response.status, limits,
                                 deadline)
                pairs, reusable = response.headers, response.reusable
            else:
                body = read_body(response.read1, response.getheader("content-encoding"), response.status, limits,
                                 deadline)
                response.close()  # read to its end; read1 does not mark it done, and the connection asks before reuse
                pairs, reusable = response.getheaders(), not response.will_close
        except TimeoutError as exc:  # socket.timeout is TimeoutError; so is DeadlinePassed
            _close(connection)
            raise WireTimeout(f"{type(exc).__name__}: {exc}") from exc
        except BodyTooLarge as exc:
            _close(connection)  # the rest of the body is still on the connection
            raise WireTooLarge(exc.status, exc.field, exc.limit) from None
        except BodyUndecodable as exc:
            _close(connection)
            raise WireBroken(str(exc)) from exc
        except (OSError, http.client.HTTPException, AnswerMalformed) as exc:
            _close(connection)
            raise WireBroken(f"{type(exc).__name__}: {exc}") from exc
        except BaseException:
            _close(connection)  # an interrupt mid-answer leaves the connection unusable
            raise
        answer = WireAnswer(response.status, ResponseHeaders.of(pairs), body)
        if reusable:
            self._give_back(connection)
        else:
            connection.close()
        return answer

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for connection, _ in idle:
            connection.close()

    def idle(self) -> int:
        with self._lock:
            return len(self._idle)


def _request(connection: http.client.HTTPConnection, target: str, content: bytes,
             headers: dict[str, str]) -> AnswerReader | http.client.HTTPResponse:
    """POST ``content`` on ``connection`` and read the answer's status line and headers.

    A plain request's head (:func:`~capplan.executor.direct.request_head.plain_head`) goes out in
    one send with the body, and the answer is read by :class:`AnswerReader` (seam *answer reader*);
    the connection's own state machine is left idle, as ``getresponse`` leaves it. Any other request
    is ``http.client``'s ``request`` and ``getresponse`` (the reference mode sends through httpx).
    """
    sock = connection.sock
    head = plain_head(connection.host, connection.port, connection.default_port, target, len(content), headers) \
        if sock is not None else None
    if head is None:
        connection.request("POST", target, body=content, headers=headers)
        return connection.getresponse()
    sock.sendall(head + content)
    reader = AnswerReader(sock)
    reader.read_head()
    return reader


def _close(connection: http.client.HTTPConnection | None) -> None:
    if connection is not None:
        connection.close()


class _Httpx:
    """One ``httpx.Client`` for an origin behind a proxy, or for HTTP/2."""

    def __init__(self, http2: bool) -> None:
        import httpx  # only for these origins: the common case never imports it on the call path

        self._httpx = httpx
        self._client = httpx.Client(
            http2=http2, follow_redirects=False, timeout=httpx.Timeout(DEFAULT_TIMEOUT_S),
            limits=httpx.Limits(max_connections=MAX_IDLE_CONNECTIONS, max_keepalive_connections=MAX_IDLE_CONNECTIONS,
                                keepalive_expiry=KEEPALIVE_EXPIRY_S),
            trust_env=True,  # the proxy variables, and SSL_CERT_FILE / SSL_CERT_DIR
        )
        from capplan.executor.direct.httpx_deadline import attempt_deadline, bound_by_deadline

        bound_by_deadline(self._client)  # httpx's timeout is per read; the attempt's is a total
        self._attempt_deadline = attempt_deadline
        self._timeouts: dict[float, Any] = {}

    def send(self, url: str, content: bytes, headers: Mapping[str, str], timeout_s: float,
             limits: BodyLimits) -> WireAnswer:
        httpx = self._httpx
        deadline = time.monotonic() + timeout_s
        timeout = self._timeouts.get(timeout_s)
        if timeout is None:  # one per distinct value: the plan's per-attempt timeout, in practice one
            timeout = self._timeouts.setdefault(timeout_s, httpx.Timeout(timeout_s))
        try:
            request = self._client.build_request("POST", url, content=content, headers=_with_agent(headers),
                                                 timeout=timeout)
            # streamed: the body is read piece by piece within the limits, every network read and write
            # (the headers' too) given the time left
            with self._attempt_deadline(deadline):
                response = self._client.send(request, stream=True)
                try:
                    pieces: Iterator[bytes] = response.iter_raw()
                    body = read_body(lambda _n: next(pieces, b""), response.headers.get("content-encoding"),
                                     response.status_code, limits, deadline)
                finally:
                    response.close()
        except (httpx.TimeoutException, DeadlinePassed) as exc:
            raise WireTimeout(f"{type(exc).__name__}: {exc}") from exc
        except BodyTooLarge as exc:
            raise WireTooLarge(exc.status, exc.field, exc.limit) from None
        except BodyUndecodable as exc:
            raise WireBroken(str(exc)) from exc
        except (httpx.TransportError, httpx.DecodingError) as exc:
            raise WireBroken(f"{type(exc).__name__}: {exc}") from exc
        return WireAnswer(response.status_code, ResponseHeaders.of(response.headers.multi_items()), body)

    def close(self) -> None:
        self._client.close()

    def idle(self) -> int:
        return 0  # httpx keeps its own count; nothing here needs it


_lock = threading.Lock()
_senders: dict[tuple[int, str], _Sender] = {}


def sender_for(url: str) -> _Sender:
    """This process's sender for ``url``'s origin."""
    key = (os.getpid(), origin(url))
    found = _senders.get(key)
    if found is not None:
        return found
    with _lock:
        found = _senders.get(key)
        if found is None:
            found = _senders[key] = _make(urlsplit(url))
        return found


def _make(parts: SplitResult) -> _Sender:
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise WireBroken(f"unsupported URL scheme {parts.scheme!r} (http or https)")
    if reference_mode():  # httpx for every origin: the same headers, bounds, deadline and no redirects
        return _Httpx(http2=_HTTP2 and scheme == "https")
    proxies = urllib.request.getproxies_environment()
    if scheme in proxies or "all" in proxies or "@" in parts.netloc:
        return _Httpx(http2=_HTTP2 and scheme == "https")
    if _HTTP2 and scheme == "https":
        return _Httpx(http2=True)
    return _Connections(parts)


def send(url: str, content: bytes, headers: Mapping[str, str], timeout_s: float | None,
         limits: BodyLimits = DEFAULT_LIMITS) -> WireAnswer:
    """POST ``content`` to ``url`` on this process's kept-alive connections to its origin.

    ``timeout_s`` bounds the whole attempt (connecting, sending, every read); ``limits`` the body.
    """
    return sender_for(url).send(url, content, headers, DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s, limits)


def idle_connections(url: str) -> int:
    """How many idle kept-alive connections this process holds to ``url``'s origin (0 through httpx)."""
    found = _senders.get((os.getpid(), origin(url)))
    return found.idle() if found is not None else 0


def close_all() -> None:
    """Close this process's connections (tests, and a long-lived process that changes endpoints)."""
    with _lock:
        mine = [key for key in _senders if key[0] == os.getpid()]
        closing = [_senders.pop(key) for key in mine]
    for sender in closing:
        sender.close()


def _ssl_context() -> ssl.SSLContext:
    import httpx  # its CA bundle rules (certifi, SSL_CERT_FILE, SSL_CERT_DIR), made once per origin

    return httpx.create_ssl_context(trust_env=True)


def _still_open(connection: http.client.HTTPConnection) -> bool:
    """Whether an idle connection can carry a request: readable means the server closed it (or sent stray bytes)."""
    sock = connection.sock
    if sock is None:
        return False
    try:
        if hasattr(select, "poll"):
            poller = select.poll()  # poll, not select: a process with over 1 024 open files has larger descriptors
            poller.register(sock, select.POLLIN)
            return not poller.poll(0)
        return not select.select([sock], [], [], 0)[0]
    except (OSError, ValueError):
        return False

"""Kept-alive HTTP connections for the direct transport, shared by every thread of a process.

Each origin (``scheme://host:port``) is served one of two ways, chosen on its first call:

- **HTTP/1.1 on the standard library's** ``http.client``: a stack of idle kept-alive connections
  per origin; a call takes one (or opens one), sends, reads the whole answer and puts it back
  unless the server said it closes. This is every route in the common case (OpenAI, OpenRouter,
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
``SSL_CERT_DIR``), the per-attempt timeout on connecting and on every read and write, redirects
never followed (a 3xx is an answer like any other status: httpx drops only ``Authorization``
when the origin changes, so a gateway or ``api-key`` header would reach whatever host a 3xx
names), an idle connection closed after :data:`KEEPALIVE_EXPIRY_S` (httpx's default) or when
its socket shows the server hung up, and a forked child (a process pool, Ray) opening its own,
because a connection must never be shared across processes. A failure is raised as
:class:`WireTimeout` or :class:`WireBroken` from the exception that caused it.
"""

from __future__ import annotations

import functools
import http.client
import importlib.metadata
import importlib.util
import os
import select
import ssl
import threading
import time
import urllib.request
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import SplitResult, urlsplit

#: Idle connections kept per origin: enough for a trial run's --concurrency, bounded for a runaway one.
MAX_IDLE_CONNECTIONS = 256
#: Seconds an idle connection is kept (httpx's default): servers close idle connections after a
#: few seconds (Node's default is 5), and a request sent on one the server is closing is lost.
KEEPALIVE_EXPIRY_S = 5.0
#: The timeout of a request that names none (the plan's per-attempt timeout always does).
DEFAULT_TIMEOUT_S = 600.0

_HTTP2 = importlib.util.find_spec("h2") is not None


class WireTimeout(Exception):
    """No answer within the attempt's timeout (connecting, sending or reading)."""


class WireBroken(Exception):
    """The connection failed: refused, dropped, or the answer was cut short or unreadable."""


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
    def send(self, url: str, content: bytes, headers: Mapping[str, str], timeout_s: float) -> WireAnswer: ...

    def close(self) -> None: ...

    def idle(self) -> int: ...


@functools.cache
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

    def _open(self, timeout_s: float) -> http.client.HTTPConnection:
        if self._context is not None:
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout_s, context=self._context)
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout_s)

    def _take(self, timeout_s: float) -> http.client.HTTPConnection:
        while True:
            with self._lock:
                if not self._idle:
                    break
                connection, since = self._idle.pop()  # the most recently used: the least likely to be closed
            if time.monotonic() - since < KEEPALIVE_EXPIRY_S and _still_open(connection):
                if connection.sock is not None:
                    connection.sock.settimeout(timeout_s)
                connection.timeout = timeout_s
                return connection
            connection.close()
        return self._open(timeout_s)

    def _give_back(self, connection: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < MAX_IDLE_CONNECTIONS:
                self._idle.append((connection, time.monotonic()))
                return
        connection.close()

    def send(self, url: str, content: bytes, headers: Mapping[str, str], timeout_s: float) -> WireAnswer:
        parts = urlsplit(url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        connection = self._take(timeout_s)
        try:
            connection.request("POST", target, body=content, headers=_with_agent(headers))
            response = connection.getresponse()
            raw = response.read()
        except TimeoutError as exc:  # socket.timeout is TimeoutError
            connection.close()
            raise WireTimeout(f"{type(exc).__name__}: {exc}") from exc
        except (OSError, http.client.HTTPException) as exc:
            connection.close()
            raise WireBroken(f"{type(exc).__name__}: {exc}") from exc
        except BaseException:
            connection.close()  # an interrupt mid-answer leaves the connection unusable
            raise
        answer = WireAnswer(response.status, ResponseHeaders.of(response.getheaders()),
                            _decoded(raw, response.getheader("content-encoding")))
        if response.will_close:
            connection.close()
        else:
            self._give_back(connection)
        return answer

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for connection, _ in idle:
            connection.close()

    def idle(self) -> int:
        with self._lock:
            return len(self._idle)


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
        self._timeouts: dict[float, Any] = {}

    def send(self, url: str, content: bytes, headers: Mapping[str, str], timeout_s: float) -> WireAnswer:
        httpx = self._httpx
        timeout = self._timeouts.get(timeout_s)
        if timeout is None:  # one per distinct value: the plan's per-attempt timeout, in practice one
            timeout = self._timeouts.setdefault(timeout_s, httpx.Timeout(timeout_s))
        try:
            response = self._client.post(url, content=content, headers=_with_agent(headers), timeout=timeout)
        except httpx.TimeoutException as exc:
            raise WireTimeout(f"{type(exc).__name__}: {exc}") from exc
        except (httpx.TransportError, httpx.DecodingError) as exc:
            raise WireBroken(f"{type(exc).__name__}: {exc}") from exc
        return WireAnswer(response.status_code, ResponseHeaders.of(response.headers.multi_items()), response.content)

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
    proxies = urllib.request.getproxies_environment()
    if scheme in proxies or "all" in proxies or "@" in parts.netloc:
        return _Httpx(http2=_HTTP2 and scheme == "https")
    if _HTTP2 and scheme == "https":
        return _Httpx(http2=True)
    return _Connections(parts)


def send(url: str, content: bytes, headers: Mapping[str, str], timeout_s: float | None) -> WireAnswer:
    """POST ``content`` to ``url`` on this process's kept-alive connections to its origin."""
    return sender_for(url).send(url, content, headers, DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s)


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


def _decoded(raw: bytes, encoding: str | None) -> bytes:
    """The body without its content coding (capplan asks for none; a server may send gzip or deflate anyway)."""
    if not encoding or encoding.strip().lower() in ("identity", ""):
        return raw
    coding = encoding.strip().lower()
    try:
        if coding in ("gzip", "x-gzip"):
            return zlib.decompress(raw, 16 + zlib.MAX_WBITS)
        if coding == "deflate":
            try:
                return zlib.decompress(raw)
            except zlib.error:
                return zlib.decompress(raw, -zlib.MAX_WBITS)  # raw deflate, as some servers send it
    except zlib.error as exc:
        raise WireBroken(f"the answer's {coding} body cannot be decoded: {exc}") from exc
    raise WireBroken(f"the answer is {coding}-encoded, which capplan does not decode (it asked for identity)")

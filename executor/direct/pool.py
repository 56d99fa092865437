"""One pooled ``httpx.Client`` per process and origin: kept-alive connections shared by every call.

A client is made on the first call to an origin and kept; a forked child (a process pool, Ray)
makes its own, because a connection pool must never be shared across processes. HTTP/2 is
offered when the ``h2`` package is installed (httpx then negotiates it through ALPN on ``https``
origins whose server offers it); otherwise, and on plain ``http``, requests go as HTTP/1.1.
Redirects are never followed: httpx drops only ``Authorization`` when the origin changes, so a
gateway header or an ``api-key`` header would reach whatever host a 3xx names.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from urllib.parse import urlsplit

import httpx

#: Connections kept per origin: enough for a trial run's --concurrency, bounded for a runaway one.
MAX_CONNECTIONS = 256

_lock = threading.Lock()
_clients: dict[tuple[int, str], httpx.Client] = {}
_HTTP2 = importlib.util.find_spec("h2") is not None


def origin(url: str) -> str:
    """``scheme://host:port`` of ``url``: what one connection pool serves."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def client_for(url: str) -> httpx.Client:
    """This process's pooled client for ``url``'s origin."""
    key = (os.getpid(), origin(url))
    found = _clients.get(key)
    if found is not None:
        return found
    with _lock:
        found = _clients.get(key)
        if found is None:
            found = httpx.Client(
                # HTTP/2 is negotiated through TLS (ALPN); a plain-http origin speaks HTTP/1.1 either way
                http2=_HTTP2 and key[1].startswith("https:"),
                follow_redirects=False,
                # the per-attempt timeout travels with each request; this one only bounds what has none
                timeout=httpx.Timeout(600.0),
                limits=httpx.Limits(max_connections=MAX_CONNECTIONS, max_keepalive_connections=MAX_CONNECTIONS),
                # proxies and CA bundles from the environment apply, as they do to litellm's senders
                trust_env=True,
            )
            _clients[key] = found
        return found


def close_all() -> None:
    """Close this process's clients (tests, and a long-lived process that changes endpoints)."""
    with _lock:
        mine = [k for k in _clients if k[0] == os.getpid()]
        for key in mine:
            _clients.pop(key).close()

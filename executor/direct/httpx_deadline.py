"""The attempt's deadline on the httpx path: every network read and write waits at most the time left.

httpx applies its timeout to each read, so a server that drips the status line or the headers a
byte at a time, each just inside it, keeps an attempt going for ever (the body is read in pieces
and checked between them by :mod:`capplan.executor.direct.bounded_body`, the headers are not).
httpcore, under httpx, reads and writes through a network backend's streams; each ``httpx.Client``
the direct transport makes gets its pools' backend wrapped so every ``read``, ``write``, connect
and TLS handshake is given ``min(its timeout, the time left)``, from the deadline the calling thread
set with :func:`attempt_deadline` (sync httpx does its I/O on the calling thread, HTTP/2 included).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import httpcore

_current = threading.local()


@contextmanager
def attempt_deadline(deadline: float) -> Iterator[None]:
    """Within the block, this thread's network I/O through a wrapped client ends at ``deadline`` (monotonic)."""
    _current.at = deadline
    try:
        yield
    finally:
        _current.at = None


def _clamped(timeout: float | None) -> float | None:
    deadline: float | None = getattr(_current, "at", None)
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise httpcore.ReadTimeout("the attempt's deadline passed")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _clamped(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _clamped(timeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, _clamped(timeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        return _Stream(self._inner.connect_tcp(host, port, _clamped(timeout), local_address, socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        return _Stream(self._inner.connect_unix_socket(path, _clamped(timeout), socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def bound_by_deadline(client: Any) -> None:
    """Wrap the network backend of every pool ``client`` sends through (its own and its proxies').

    Raises ``RuntimeError`` when an httpx release no longer keeps its pools where this looks: the
    deadline is not something to lose quietly (a test sends through every path and fails then).
    """
    transports = [client._transport, *client._mounts.values()]
    for transport in transports:
        if transport is None:  # a mount that says "no proxy for these hosts"
            continue
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if not isinstance(backend, httpcore.NetworkBackend):
            raise RuntimeError(f"httpx's transport {type(transport).__name__} keeps no httpcore pool where the direct "
                               "transport wraps it: the attempt's deadline cannot be applied")
        if not isinstance(backend, _Backend):
            setattr(pool, "_network_backend", _Backend(backend))  # noqa: B010 - `pool` is `Any | None` to mypy

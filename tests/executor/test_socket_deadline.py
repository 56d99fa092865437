"""The attempt's deadline on each send and receive of a kept-alive connection (seam *socket deadline*).

A plain TCP connection on Linux is left in blocking mode with the kernel's timeouts set to the time
left; a TLS one, and every one in the reference mode, keeps Python's own timeout. Both must end a
silent server's attempt as a timeout, not a broken connection. Against loopback servers this test
starts; every wait is bounded so that a deadline that never fires fails the test instead of hanging it.
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import struct
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from capplan.executor.direct import pool, socket_deadline
from capplan.executor.direct.socket_deadline import DeadlineSocket, kernel_timeouts, timeval
from tests.fake_provider import FakeProvider, json_reply, unscripted
from tests.serving import RawAcceptor

HEADERS = {"Content-Type": "application/json"}
OK = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}]}
#: the bound on every wait in this file: generous, a passing test never waits it out
WAIT_S = 60.0
LINUX = sys.platform.startswith("linux")


@pytest.fixture(autouse=True)
def _fresh_pools() -> Iterator[None]:
    pool.close_all()
    yield
    pool.close_all()


def _bounded(call: Any) -> BaseException | None:
    """Run ``call`` on a thread, waiting at most WAIT_S for it; what it raised (None when it returned)."""
    raised: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:  # handed to the test
            raised.append(exc)
        else:
            raised.append(None)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(WAIT_S)
    assert not thread.is_alive(), "the attempt's deadline never ended the call"
    return raised[0]


def _pooled_socket(base: str) -> DeadlineSocket:
    sender = pool._senders[(os.getpid(), pool.origin(base))]  # the connection a call left in the pool
    assert isinstance(sender, pool._Connections)
    connection, _ = sender._idle[-1]
    sock = connection.sock
    assert isinstance(sock, DeadlineSocket)
    return sock


@pytest.mark.fast_side
@pytest.mark.skipif(not LINUX, reason="the kernel's timeouts are used on Linux only")
def test_a_plain_connection_is_left_blocking_and_bounded_by_the_kernel() -> None:
    with FakeProvider(unscripted) as server:
        server.script(json_reply(OK))
        answer = pool.send(f"{server.base}/chat/completions", b"{}", HEADERS, 30.0)
        assert json.loads(answer.content) == OK
        sock = _pooled_socket(server.base)
        assert sock.kernel and sock.gettimeout() is None  # blocking: no poll, no mode switch per receive
        seconds, micros = struct.unpack("@ll", sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, 16))
        assert 0 < seconds + micros / 1e6 <= 30.0  # the time that was left, never "no timeout" (zero)


@pytest.mark.fast_side
def test_the_reference_mode_keeps_pythons_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket_deadline, "reference_mode", lambda: True)
    with FakeProvider(unscripted) as server:
        server.script(json_reply(OK), json_reply(OK))
        for _ in range(2):  # the second on the kept-alive connection
            answer = pool.send(f"{server.base}/chat/completions", b"{}", HEADERS, 30.0)
            assert json.loads(answer.content) == OK
        sock = _pooled_socket(server.base)
        timeout = sock.gettimeout()
        assert not sock.kernel and timeout is not None and 0 < timeout <= 30.0


@pytest.mark.fast_side
def test_a_tls_socket_keeps_pythons_timeout() -> None:
    # OpenSSL's read retries a kernel timeout on a blocking socket for ever: TLS must never take that path
    plain = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    wrapped = ssl.create_default_context().wrap_socket(plain, server_hostname="localhost", do_handshake_on_connect=False)
    try:
        assert not kernel_timeouts(wrapped)
        assert kernel_timeouts(plain) is LINUX
    finally:
        wrapped.close()
        plain.close()


def test_a_unix_socket_keeps_pythons_timeout() -> None:
    left, right = socket.socketpair()
    try:
        assert not kernel_timeouts(left)
    finally:
        left.close()
        right.close()


@pytest.mark.parametrize(("seconds", "expected"), [(2.5, (2, 500_000)), (0.25, (0, 250_000)), (1e-9, (0, 1)),
                                                   (600.0, (600, 0))])
def test_a_timeout_is_a_timeval_and_never_zero(seconds: float, expected: tuple[int, int]) -> None:
    assert struct.unpack("@ll", timeval(seconds)) == expected


class _NeverReads(RawAcceptor):
    """Accepts connections and never reads from them or answers: a send fills the buffers and waits."""

    def __init__(self) -> None:
        self.held: list[socket.socket] = []
        super().__init__()

    def accepted(self, conn: socket.socket) -> None:
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.held.append(conn)

    def close(self) -> None:
        super().close()
        for conn in self.held:
            conn.close()


def test_a_server_that_never_reads_ends_the_send_at_the_deadline_as_a_timeout() -> None:
    server = _NeverReads()
    body = b"x" * (64 * 1024 * 1024)  # far more than both ends' buffers hold
    try:
        base = f"http://127.0.0.1:{server.port}/v1"
        raised = _bounded(lambda: pool.send(f"{base}/chat/completions", body, HEADERS, 0.5))
        assert isinstance(raised, pool.WireTimeout), raised
        assert pool.idle_connections(base) == 0  # a connection that timed out is never reused
    finally:
        server.close()


def test_a_server_that_never_answers_ends_the_receive_at_the_deadline_as_a_timeout() -> None:
    server = _NeverReads()
    try:
        base = f"http://127.0.0.1:{server.port}/v1"
        raised = _bounded(lambda: pool.send(f"{base}/chat/completions", b"{}", HEADERS, 0.5))
        assert isinstance(raised, pool.WireTimeout), raised
    finally:
        server.close()

"""The direct transport's kept-alive connections: reuse, hang-ups, expiry, proxies, codings, names.

Against loopback servers: the recording server for ordinary answers, and a raw socket server
that answers once and then closes the kept-alive connection while it sits idle in the pool (what
a server's own keep-alive timeout does).
"""

from __future__ import annotations

import base64
import gzip
import json
import socket
import threading
from collections.abc import Iterator

import pytest

from capplan.executor.direct import pool
from tests.fake_provider import FakeProvider, Reply, json_reply, unscripted
from tests.serving import RawAcceptor, read_request

BODY = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode("utf-8")
HEADERS = {"Content-Type": "application/json", "Authorization": "Bearer sk-pool-test"}
#: the bound on every wait for the loopback server's thread: generous, a passing test never waits it out
WAIT_S = 60.0
OK = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}]}


@pytest.fixture(autouse=True)
def _fresh_pools() -> Iterator[None]:
    pool.close_all()
    yield
    pool.close_all()


@pytest.fixture
def server() -> Iterator[FakeProvider]:
    with FakeProvider(unscripted) as srv:
        yield srv


def _post(base: str, timeout_s: float = WAIT_S) -> pool.WireAnswer:
    return pool.send(f"{base}/chat/completions", BODY, HEADERS, timeout_s)


def test_calls_reuse_one_connection_and_name_capplan(server: FakeProvider) -> None:
    server.script(json_reply(OK), json_reply(OK))
    first, second = _post(server.base), _post(server.base)
    assert (first.status_code, json.loads(second.content)) == (200, OK)
    assert len({seen.client_port for seen in server.requests}) == 1
    assert server.requests[0].headers["user-agent"].startswith("capplan")
    assert server.requests[0].headers["authorization"] == "Bearer sk-pool-test"
    assert server.requests[0].path == "/v1/chat/completions"


def test_response_headers_are_read_by_any_case(server: FakeProvider) -> None:
    server.script(json_reply({"error": {"message": "slow down"}}, 429, headers={"Retry-After": "3"}))
    answer = _post(server.base)
    assert answer.status_code == 429
    assert answer.headers.get("retry-after") == answer.headers.get("Retry-After") == "3"
    assert "retry-after" in dict(answer.headers)  # the parser keeps them lower-cased, as httpx does


@pytest.mark.fast_side
def test_an_expired_idle_connection_is_not_reused(server: FakeProvider, monkeypatch: pytest.MonkeyPatch) -> None:
    server.script(json_reply(OK), json_reply(OK))
    _post(server.base)
    monkeypatch.setattr(pool, "KEEPALIVE_EXPIRY_S", 0.0)
    _post(server.base)
    assert len({seen.client_port for seen in server.requests}) == 2


def test_a_server_saying_close_gets_a_new_connection_next_time(server: FakeProvider) -> None:
    server.script(json_reply(OK, headers={"Connection": "close"}), json_reply(OK))
    _post(server.base)
    assert pool.idle_connections(server.base) == 0
    _post(server.base)
    assert len({seen.client_port for seen in server.requests}) == 2


class _AnswersOnceThenHangsUp(RawAcceptor):
    """Answers each connection's first request (kept alive), then closes that connection while it is idle."""

    def __init__(self) -> None:
        self.connections = 0
        #: set by the test once its client has the answer (and has put the connection back in its pool)
        self.answered = threading.Event()
        self.hung_up = threading.Event()
        super().__init__()

    def accepted(self, conn: socket.socket) -> None:
        self.connections += 1
        with conn:
            conn.settimeout(WAIT_S)
            read_request(conn)
            payload = json.dumps(OK).encode("utf-8")
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         + f"Content-Length: {len(payload)}\r\n\r\n".encode("ascii") + payload)
            self.answered.wait(WAIT_S)  # hang up only on a connection idle in the client's pool
        self.hung_up.set()

    def close(self) -> None:
        self.answered.set()
        super().close()


def test_a_connection_the_server_closed_while_idle_is_noticed_before_sending() -> None:
    server = _AnswersOnceThenHangsUp()
    try:
        base = f"http://127.0.0.1:{server.port}/v1"
        assert _post(base).status_code == 200
        server.answered.set()
        assert server.hung_up.wait(timeout=WAIT_S)
        assert _post(base).status_code == 200  # not a dropped-connection error: a fresh connection carried it
        assert server.connections == 2
    finally:
        server.close()


def test_a_gzip_answer_is_read(server: FakeProvider) -> None:
    server.script(Reply(raw=gzip.compress(json.dumps(OK).encode("utf-8")), headers={"Content-Encoding": "gzip"}))
    assert json.loads(_post(server.base).content) == OK


def test_an_answer_in_an_unknown_coding_is_a_broken_answer_not_garbage(server: FakeProvider) -> None:
    server.script(Reply(raw=b"\x00\x01", headers={"Content-Encoding": "br"}))
    with pytest.raises(pool.WireBroken, match="br-encoded"):
        _post(server.base)


def test_no_answer_in_time_is_a_timeout(server: FakeProvider) -> None:
    released = threading.Event()  # the answer comes only once the client has timed out
    server.script(Reply(raw=json.dumps(OK).encode("utf-8"), held_until=released))
    try:
        with pytest.raises(pool.WireTimeout):
            _post(server.base, timeout_s=0.2)
    finally:
        released.set()
    assert pool.idle_connections(server.base) == 0  # a connection that timed out is never reused


@pytest.mark.fast_side
def test_a_refused_connection_is_broken() -> None:
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()  # nothing listens there now
    with pytest.raises(pool.WireBroken, match="ConnectionRefusedError"):
        _post(f"http://127.0.0.1:{port}/v1")


def test_a_proxy_variable_sends_the_origin_through_the_proxy(server: FakeProvider,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy",
                 "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    # the recording server stands in for the proxy: a proxied request names the absolute URL
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{server.port}")
    server.script(json_reply(OK))
    answer = pool.send("http://provider.invalid/v1/chat/completions", BODY, HEADERS, WAIT_S)
    assert answer.status_code == 200
    assert server.requests[0].path == "http://provider.invalid/v1/chat/completions"
    assert server.requests[0].headers["user-agent"].startswith("capplan")


def test_credentials_in_the_endpoint_url_go_as_basic_auth_and_never_into_an_error(server: FakeProvider) -> None:
    server.script(json_reply(OK))
    base = f"http://gw-user:gw-pass-123@127.0.0.1:{server.port}/v1"
    assert _post(base).status_code == 200
    # as httpx always sent it (the transport before this pool was httpx for every origin)
    assert server.requests[0].headers["authorization"] == "Basic " + base64.b64encode(b"gw-user:gw-pass-123").decode()
    with pytest.raises(pool.WireBroken) as raised:
        pool.send("http://gw-user:gw-pass-123@/v1/chat/completions", BODY, HEADERS, 1.0)
    assert "gw-pass-123" not in str(raised.value)


def test_a_url_of_another_scheme_is_refused() -> None:
    with pytest.raises(pool.WireBroken, match="unsupported URL scheme"):
        pool.send("ftp://127.0.0.1/v1/chat/completions", BODY, HEADERS, 1.0)


#: header blocks as a provider may send them: plain ones, and every shape the email parser reads its own way
HEADER_BLOCKS = (
    b"Content-Type: application/json\r\nContent-Length: 12\r\nX-A:  b  \r\nx-a:c\r\nEmpty:\r\nT:\tv\t\r\n\r\n",
    b"\r\n", b"A: b\nC: d\n\n", b"A: b\r\n folded\r\n\r\n", b"A: b\rC: d\r\n\r\n", b":x\r\nB: c\r\n\r\n",
    b"A: \xe9\xff\r\n\r\n", b"A b: c\r\nD: e\r\n\r\n", b"From x: y\r\n\r\n", b"A: b\r\n", b"A: b\x0bc\r\n\r\n",
    b"A: b\x85c\r\n\r\n", b"no colon\r\nA: b\r\n\r\n",
)


@pytest.mark.parametrize("block", HEADER_BLOCKS)
def test_a_header_block_reads_as_the_email_parser_reads_it(block: bytes) -> None:
    import email.parser
    import http.client
    import io

    from capplan.executor.direct.answer_reader import header_message, header_pairs

    lines = http.client._read_headers(io.BytesIO(block))  # type: ignore[attr-defined]  # what it hands over
    fast = header_message(lines)
    plain = email.parser.Parser(_class=http.client.HTTPMessage).parsestr(b"".join(lines).decode("iso-8859-1"))
    assert type(fast) is type(plain)
    assert fast.items() == plain.items() == header_pairs(lines)
    for name in ("a", "content-length", "x-a", "missing"):
        assert fast.get(name) == plain.get(name) and fast.get_all(name) == plain.get_all(name)
    assert fast.get_payload() == plain.get_payload()

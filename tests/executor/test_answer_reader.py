"""The direct transport's answer reader against ``http.client``'s, on the same bytes (seam *answer reader*).

Each answer is read by :class:`AnswerReader` from a socket that hands its bytes over whole, and one
byte at a time, and by ``http.client.HTTPResponse``; the body of both through the same
:func:`read_body`. Where the two agree the status, header pairs, body and reuse must be equal, or both
must refuse the answer. Where ``answer_reader``'s docstring says they differ (RFC 9112's framing), the
test shows ``http.client``'s reading and the reader's, so a change on either side is seen. The last
tests put the reader on a real loopback connection, through the pool.
"""

from __future__ import annotations

import gzip
import http.client
import io
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capplan.executor.direct import pool
from capplan.executor.direct.answer_reader import MAX_HEADERS, MAX_LINE, AnswerMalformed, AnswerReader
from capplan.executor.direct.bounded_body import BodyLimits, BodyUndecodable, read_body
from tests.serving import RawAcceptor, read_request

LIMITS = BodyLimits(max_response_bytes=1 << 20, max_decoded_bytes=1 << 20)
STATUS = b"HTTP/1.1 200 OK\r\n"


class _Bytes:
    """A socket whose receives hand over ``data`` at most ``piece`` bytes at a time, then ``b""``."""

    def __init__(self, data: bytes, piece: int) -> None:
        self._data = data
        self._piece = piece
        self.received = 0

    def recv(self, size: int) -> bytes:
        out = self._data[self.received:self.received + min(size, self._piece)]
        self.received += len(out)
        return out

    def makefile(self, mode: str = "rb") -> io.BufferedReader:
        return io.BufferedReader(io.BytesIO(self._data))


Outcome = tuple[Any, ...]


def ours(data: bytes, piece: int) -> Outcome:
    """What the reader makes of ``data`` received ``piece`` bytes at a time."""
    reader = AnswerReader(_Bytes(data, piece))
    try:
        reader.read_head()
        body = read_body(reader.read1, reader.header("content-encoding"), reader.status, LIMITS,
                         time.monotonic() + 60)
    except (AnswerMalformed, BodyUndecodable):
        return ("refused",)
    return reader.status, reader.headers, body, reader.reusable


def theirs(data: bytes) -> Outcome:
    """What ``http.client`` makes of ``data`` (reused unless it says it closes)."""
    response = http.client.HTTPResponse(_Bytes(data, len(data) or 1))  # type: ignore[arg-type]
    try:
        response.begin()
        body = read_body(response.read1, response.getheader("content-encoding"), response.status, LIMITS,
                         time.monotonic() + 60)
    except (http.client.HTTPException, BodyUndecodable):
        return ("refused",)
    return response.status, response.getheaders(), body, not response.will_close


def both_ways(data: bytes) -> Outcome:
    """The reader's outcome, the same whether ``data`` arrives whole or a byte at a time."""
    whole, dripped = ours(data, len(data) or 1), ours(data, 1)
    assert whole == dripped
    return whole


def _answer(head: bytes, body: bytes = b"") -> bytes:
    return STATUS + head + b"\r\n" + body


AGREED = {
    "length": _answer(b"Content-Type: application/json\r\nContent-Length: 2\r\n", b"{}"),
    "chunked": _answer(b"Transfer-Encoding: chunked\r\n", b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"),
    "chunk extension and trailer": _answer(b"Transfer-Encoding: Chunked\r\n",
                                           b"5;name=value\r\nhello\r\n0\r\nX-Trailer: 1\r\n\r\n"),
    "to the close": _answer(b"Content-Type: text/plain\r\n", b"everything until the server closes"),
    "says close": _answer(b"Connection: close\r\nContent-Length: 3\r\n", b"abc"),
    "http/1.0": b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nabc",
    "http/1.0 keep-alive": b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 3\r\n\r\nabc",
    "http/1.0 keep-alive header": b"HTTP/1.0 200 OK\r\nKeep-Alive: timeout=5\r\nContent-Length: 3\r\n\r\nabc",
    "continue first": b"HTTP/1.1 100 Continue\r\n\r\n" + _answer(b"Content-Length: 2\r\n", b"ok"),
    "no content": b"HTTP/1.1 204 No Content\r\n\r\n",
    "no reason": b"HTTP/1.1 404\r\nContent-Length: 0\r\n\r\n",
    "error status": b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 5\r\n\r\noops!",
    "folded header": _answer(b"X-A: b\r\n folded\r\nContent-Length: 2\r\n", b"{}"),
    "bare line feeds": b"HTTP/1.1 200 OK\nContent-Length: 2\n\n{}",
    "repeated headers": _answer(b"X-A: 1\r\nx-a: 2\r\nContent-Length: 0\r\n"),
    "blank values": _answer(b"Empty:\r\nT:\tv\t\r\nContent-Length: 0\r\n"),
    "latin-1 value": _answer(b"X-A: \xe9\r\nContent-Length: 0\r\n"),
    "gzip": _answer(b"Content-Encoding: gzip\r\nContent-Length: %d\r\n" % len(gzip.compress(b"{}")),
                    gzip.compress(b"{}")),
    "unknown coding": _answer(b"Content-Encoding: br\r\nContent-Length: 2\r\n", b"{}"),
    "99 headers": _answer(b"".join(b"X-%d: v\r\n" % n for n in range(MAX_HEADERS - 2)) + b"Content-Length: 0\r\n"),
    "longest header line": _answer(b"X-A: " + b"v" * (MAX_LINE - 7) + b"\r\nContent-Length: 0\r\n"),
    # refused by both
    "nothing": b"",
    "not http": b"FOO 200 OK\r\n\r\n",
    "no status code": b"HTTP/1.1 abc\r\n\r\n",
    "another version": b"HTTP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n",
    "100 headers": _answer(b"".join(b"X-%d: v\r\n" % n for n in range(MAX_HEADERS - 1)) + b"Content-Length: 0\r\n"),
    "header line too long": _answer(b"X-A: " + b"v" * (MAX_LINE - 6) + b"\r\nContent-Length: 0\r\n"),
    "status line too long": b"HTTP/1.1 200 " + b"O" * MAX_LINE + b"\r\n\r\n",
    "bad chunk size": _answer(b"Transfer-Encoding: chunked\r\n", b"zz\r\nhello\r\n0\r\n\r\n"),
    "cut inside a chunk": _answer(b"Transfer-Encoding: chunked\r\n", b"5\r\nhel"),
    "no last chunk": _answer(b"Transfer-Encoding: chunked\r\n", b"5\r\nhello\r\n"),
    "chunks without line ends": _answer(b"Transfer-Encoding: chunked\r\n", b"2\r\nok1\r\nz0\r\n\r\n"),
    "a chunk longer than its size": _answer(b"Transfer-Encoding: chunked\r\n", b"2\r\nokXX\r\n0\r\n\r\n"),
}


@pytest.mark.parametrize("name", sorted(AGREED))
def test_the_reader_reads_as_http_client_does(name: str) -> None:
    data = AGREED[name]
    assert both_ways(data) == theirs(data)


#: where RFC 9112's framing and http.client part: (the bytes, what http.client makes of them, the reader)
DIFFERENT: dict[str, tuple[bytes, Outcome, Outcome]] = {
    "body short of its length": (
        _answer(b"Content-Length: 10\r\n", b"abc"),
        (200, [("Content-Length", "10")], b"abc", True), ("refused",)),
    "early hints first": (
        b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" + _answer(b"Content-Length: 2\r\n", b"ok"),
        (103, [("Link", "</a>")], b"", True), (200, [("Content-Length", "2")], b"ok", True)),
    "length not a number": (
        _answer(b"Content-Length: abc\r\n", b"body"),
        (200, [("Content-Length", "abc")], b"body", False), ("refused",)),
    "lengths that disagree": (
        _answer(b"Content-Length: 2\r\nContent-Length: 3\r\n", b"abc"),
        (200, [("Content-Length", "2"), ("Content-Length", "3")], b"ab", True), ("refused",)),
    "another transfer coding": (
        _answer(b"Transfer-Encoding: gzip\r\n", b"body"),
        (200, [("Transfer-Encoding", "gzip")], b"body", False), ("refused",)),
    "chunk without its line end": (
        _answer(b"Transfer-Encoding: chunked\r\n", b"5\r\nhelloXX0\r\n\r\n"),
        (200, [("Transfer-Encoding", "chunked")], b"hello", True), ("refused",)),
    "a second answer after the first": (
        _answer(b"Content-Length: 2\r\n", b"okHTTP/1.1 200 OK\r\n\r\n"),
        (200, [("Content-Length", "2")], b"ok", True), (200, [("Content-Length", "2")], b"ok", False)),
}


@pytest.mark.parametrize("name", sorted(DIFFERENT))
def test_where_the_framing_rules_part_from_http_client(name: str) -> None:
    data, http_client, reader = DIFFERENT[name]
    assert theirs(data) == http_client
    if name == "a second answer after the first":
        # stray bytes the answer's receives brought; those that come later make the idle connection
        # readable, which the pool checks before reusing it (the loopback test below)
        assert ours(data, len(data)) == reader
    else:
        assert both_ways(data) == reader


def test_lengths_that_agree_are_one_length() -> None:
    data = _answer(b"Content-Length: 2\r\nContent-Length: 2, 2\r\n", b"ok")
    assert both_ways(data)[2:] == (b"ok", True)


def test_trailer_lines_are_bounded_as_header_lines_are() -> None:
    trailers = b"".join(b"X-%d: v\r\n" % n for n in range(MAX_HEADERS + 5))
    data = _answer(b"Transfer-Encoding: chunked\r\n", b"2\r\nok\r\n0\r\n" + trailers + b"\r\n")
    assert both_ways(data) == ("refused",)


_NAME = st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_", min_size=1, max_size=12).filter(
    lambda name: name.lower() not in ("content-length", "transfer-encoding", "connection", "keep-alive",
                                      "content-encoding", "proxy-connection"))
_VALUE = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=30)


@settings(max_examples=200, deadline=None)
@given(headers=st.lists(st.tuples(_NAME, _VALUE), max_size=8), body=st.binary(max_size=300),
       chunked=st.booleans(), cuts=st.lists(st.integers(1, 50), max_size=6), close=st.booleans(),
       piece=st.integers(1, 64))
def test_any_plain_answer_reads_as_http_client_reads_it(headers: list[tuple[str, str]], body: bytes, chunked: bool,
                                                       cuts: list[int], close: bool, piece: int) -> None:
    head = b"".join(f"{name}: {value}\r\n".encode("ascii") for name, value in headers)
    if close:
        head += b"Connection: close\r\n"
    if chunked:
        chunks, rest = [], body
        for cut in cuts:
            if rest:
                chunks.append(b"%x\r\n%s\r\n" % (len(rest[:cut]), rest[:cut]))
                rest = rest[cut:]
        if rest:
            chunks.append(b"%x\r\n%s\r\n" % (len(rest), rest))
        data = _answer(head + b"Transfer-Encoding: chunked\r\n", b"".join(chunks) + b"0\r\n\r\n")
    else:
        data = _answer(head + b"Content-Length: %d\r\n" % len(body), body)
    expected = theirs(data)
    assert expected[2] == body
    assert ours(data, piece) == ours(data, len(data)) == expected


# -- on a real connection, through the pool ---------------------------------------------------


@pytest.fixture(autouse=True)
def _fresh_pools() -> Iterator[None]:
    pool.close_all()
    yield
    pool.close_all()


class _Scripted(RawAcceptor):
    """A loopback server that answers each request on a connection with the next of ``answers``, then hangs up."""

    def __init__(self, answers: list[bytes]) -> None:
        self.answers = answers
        self.connections = 0
        super().__init__()

    def accepted(self, conn: Any) -> None:
        self.connections += 1
        conn.settimeout(WAIT_S)  # a client that never sends fails the test instead of hanging it
        try:
            for answer in self.answers:
                if not read_request(conn):
                    return
                conn.sendall(answer)
        finally:
            conn.close()

    def __enter__(self) -> _Scripted:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


WAIT_S = 60.0
URL = "http://127.0.0.1:{port}/v1/chat/completions"
HEADERS = {"Content-Type": "application/json"}


@pytest.mark.fast_side
def test_a_kept_alive_connection_carries_answers_in_turn() -> None:
    answers = [_answer(b"Content-Length: 2\r\n", b"{}"),
               _answer(b"Transfer-Encoding: chunked\r\n", b"2\r\n[]\r\n0\r\n\r\n")]
    with _Scripted(answers) as server:
        url = URL.format(port=server.port)
        first = pool.send(url, b"{}", HEADERS, WAIT_S)
        assert pool.idle_connections(url) == 1
        second = pool.send(url, b"{}", HEADERS, WAIT_S)
    assert (first.status_code, first.content, second.content) == (200, b"{}", b"[]")
    assert server.connections == 1


@pytest.mark.fast_side
def test_an_answer_cut_short_is_broken_and_its_connection_dropped() -> None:
    with _Scripted([_answer(b"Content-Length: 10\r\n", b"abc")]) as server:
        url = URL.format(port=server.port)
        with pytest.raises(pool.WireBroken, match="short of its Content-Length"):
            pool.send(url, b"{}", HEADERS, WAIT_S)
        assert pool.idle_connections(url) == 0


def test_bytes_after_an_answer_are_never_read_as_the_next() -> None:
    stray = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n[]"
    with _Scripted([_answer(b"Content-Length: 2\r\n", b"{}") + stray, stray]) as server:
        url = URL.format(port=server.port)
        assert pool.send(url, b"{}", HEADERS, WAIT_S).content == b"{}"
        assert pool.idle_connections(url) == 0  # dropped, not kept with a stray answer on it


class _EndlessContinue(RawAcceptor):
    """Reads the request, then sends ``100 Continue`` answers until the client hangs up (or the test ends)."""

    def accepted(self, conn: Any) -> None:
        conn.settimeout(WAIT_S)
        try:
            conn.recv(65536)
            while not self.stop.is_set():
                conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n" * 64)
        except OSError:
            pass  # the client gave up: what the test expects
        finally:
            conn.close()


def test_endless_informational_answers_end_at_the_attempts_deadline() -> None:
    server = _EndlessContinue()
    raised: list[BaseException] = []

    def attempt() -> None:
        try:
            pool.send(URL.format(port=server.port), b"{}", HEADERS, 0.5)
        except BaseException as exc:  # handed to the test
            raised.append(exc)

    try:
        thread = threading.Thread(target=attempt, daemon=True)
        thread.start()
        thread.join(WAIT_S)  # bounded: a deadline that never fires fails the test instead of hanging it
        assert not thread.is_alive(), "the attempt's deadline never ended the call"
        assert len(raised) == 1 and isinstance(raised[0], pool.WireTimeout), raised
    finally:
        server.stop.set()
        pool.close_all()  # the client's end closes: the server's send fails and its loop ends
        server.close()

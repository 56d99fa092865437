"""One HTTP/1.1 answer read off a kept-alive connection: its status line, headers and body pieces.

Seam *answer reader* (``benchmarks/trial_loop.py``; ``benchmarks/transport.py``): ``http.client``
reads an answer through a buffered file made for it on the socket (a Python-level raw reader under
it), a line at a time for the status and every header, hands the header block to the email parser
(:func:`header_message` spares most of that) and looks each framing header up through the email
message's policy. For a short JSON answer that was about twice the CPU of the exchange itself:
about 100 µs per call against 40 µs for a bare socket, on the loopback server of the benchmarks.
Here the answer is received into one buffer, the head split out of it, and the body handed to
:func:`~capplan.executor.direct.bounded_body.read_body` piece by piece, most answers in the receive
that brought the head.

The framing is read as RFC 9112 says, which is where it differs from ``http.client`` (and agrees with
httpx, the reference mode's sender):

- a body that ends before its ``Content-Length`` is a broken answer (``http.client`` hands back
  what arrived as if it were whole);
- ``Content-Length`` values that are not one decimal number (repeats that agree are one) and a
  transfer coding other than ``chunked`` are broken answers, not guessed at;
- every informational (1xx) answer before the final one is skipped (``http.client`` skips only
  ``100 Continue`` and takes a ``103`` for the answer), except ``101``, which ends the connection;
- a chunk's data must be followed by its line end, and trailer lines count against the same bound
  as header lines;
- bytes after the answer's end (a server answering twice) close the connection instead of being
  read as the next request's answer.

Everything else is ``http.client``'s: its bounds on a line (64 KiB) and on the header lines (100),
its reading of the status line and of ``Connection`` / ``Keep-Alive`` for reuse, a header block that
is not plain ``name: value`` lines given to the email parser, and no length at all meaning the body
runs to the connection's close. ``tests/executor/test_answer_reader.py`` compares the two on the same
bytes, dripped and whole, the differences above included.
"""

from __future__ import annotations

import email.parser
import http.client
import re
from typing import Any

from capplan.core.reference_mode import reference_mode

#: the longest status, header, chunk-size or trailer line, and the most header or trailer lines (http.client's)
MAX_LINE = 65536
MAX_HEADERS = 100
#: the most one receive asks for
_RECEIVE = 64 * 1024

#: A header block every line of which is ``name: value`` in printable ASCII (tabs allowed in the value),
#: ended by an empty line: the email parser reads each such line as the one header it plainly is.
_PLAIN_HEADER_BLOCK = re.compile(rb"(?:[!-9;-~]+:[\t -~]*\r?\n)*\r?\n")
_DIGITS = re.compile(r"[0-9]+")
_CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]+")
#: status codes whose answer has no body, whatever its headers say
_NO_BODY = frozenset({http.client.NO_CONTENT, http.client.NOT_MODIFIED})


class AnswerMalformed(Exception):
    """The bytes on the connection are not an HTTP/1.1 answer capplan reads (the message says where)."""


def header_message(lines: list[bytes]) -> http.client.HTTPMessage:
    """The header lines ``http.client`` read (bounded in length and count) as the message it would make of them.

    Seam *header block parse* (``benchmarks/trial_loop.py``: the email parser ``http.client`` hands the
    block to was the largest cost of reading an answer, for a few plain lines): a block of plain
    ``name: value`` lines is split here, each header as the email parser reads it (the name before the
    first colon, the value after it less leading blanks and the line end); anything else (folded
    lines, stray carriage returns, bytes outside printable ASCII, a line with no name, an end of file
    before the empty line) goes to the email parser, as does every block in the reference mode.
    """
    block = b"".join(lines)
    if reference_mode() or _PLAIN_HEADER_BLOCK.fullmatch(block) is None:
        return email.parser.Parser(_class=http.client.HTTPMessage).parsestr(block.decode("iso-8859-1"))
    message = http.client.HTTPMessage()
    for name, value in _plain_pairs(lines):
        message.set_raw(name, value)
    message.set_payload("")  # as the email parser leaves a block with no body after it
    return message


def header_pairs(lines: list[bytes]) -> list[tuple[str, str]]:
    """The ``(name, value)`` pairs of a header block (its lines, the empty one that ends it included), in order."""
    if _PLAIN_HEADER_BLOCK.fullmatch(b"".join(lines)) is None:
        return header_message(lines).items()
    return _plain_pairs(lines)


def _plain_pairs(lines: list[bytes]) -> list[tuple[str, str]]:
    pairs = []
    for line in lines[:-1]:
        name, _, value = line.decode("ascii").partition(":")
        pairs.append((name, value.lstrip(" \t").rstrip("\r\n")))
    return pairs


def _status(raw: bytes) -> tuple[int, int]:
    """(10 or 11, status) of a status line."""
    if not raw:
        raise AnswerMalformed("the server closed the connection without answering")
    line = raw.decode("iso-8859-1")
    parts = line.split(None, 2)
    version = parts[0] if parts else ""
    code = parts[1] if len(parts) > 1 else ""
    if not version.startswith("HTTP/") or len(code) != 3 or not code.isascii() or not code.isdigit() \
            or int(code) < 100:
        raise AnswerMalformed(f"not an HTTP status line: {line[:200]!r}")
    if version in ("HTTP/1.0", "HTTP/0.9"):
        return 10, int(code)
    if version.startswith("HTTP/1."):
        return 11, int(code)
    raise AnswerMalformed(f"the answer is in {version[:40]!r}, not HTTP/1.x")


class AnswerReader:
    """One answer on ``sock`` (a :class:`~capplan.executor.direct.socket_deadline.DeadlineSocket`):
    :meth:`read_head`, then :meth:`read1` until it returns ``b""``; :attr:`reusable` then says whether
    the connection can carry the next request."""

    def __init__(self, sock: Any) -> None:
        self._sock = sock
        self._buffer = bytearray()
        self._at = 0  # where the unread bytes of the buffer begin
        self._closed = False  # the server closed its end
        self.status = 0
        self.headers: list[tuple[str, str]] = []
        self.will_close = False
        self._left: int | None = None  # body bytes still to come (None: to the close, or chunked)
        self._chunked = False
        self._chunk_left = 0  # chunked: bytes of the current chunk still to come
        self._done = False
        self._joined: dict[str, str] = {}  # lower-cased name: its values joined
        self._firsts: dict[str, str] = {}  # lower-cased name: its first value (what http.client looks at)

    # -- the head ------------------------------------------------------------------------------

    def read_head(self) -> None:
        """Read the status line and the headers of the final answer, and how its body is framed."""
        while True:
            whole = self._whole_head()
            if whole is not None:
                status_line, pairs = whole
                version, status = _status(status_line)
            else:  # a line at a time, each bounded, as http.client reads it
                raw = self._line()
                if raw is None:
                    raise AnswerMalformed("the status line is longer than 65536 bytes")
                version, status = _status(raw)
                pairs = header_pairs(self._lines("header"))
            if not 100 <= status < 200 or status == http.client.SWITCHING_PROTOCOLS:
                break
        self.status = status
        self.headers = pairs
        for name, value in pairs:
            key = name.lower()
            if key in self._joined:
                self._joined[key] += f", {value}"
            else:
                self._joined[key] = self._firsts[key] = value
        connection = self._firsts.get("connection")
        if version == 11:
            self.will_close = connection is not None and "close" in connection.lower()
        else:  # HTTP/1.0 keeps the connection only when the answer asks for it
            keep = self._firsts.get("keep-alive") or ("keep-alive" in (connection or "").lower()) or (
                "keep-alive" in self._firsts.get("proxy-connection", "").lower())
            self.will_close = not keep
        self._frame(status)

    def _whole_head(self) -> tuple[bytes, list[tuple[str, str]]] | None:
        """The status line and header pairs of a head that one receive brought whole: plain ``name: value``
        lines ended by CRLF, shorter together than one line may be (so every bound holds); else None,
        and nothing is taken."""
        if self._at == len(self._buffer) and not self._receive():
            return None
        buffer = self._buffer
        end = buffer.find(b"\r\n\r\n", self._at, self._at + MAX_LINE)
        if end < 0:
            return None
        first = buffer.find(b"\n", self._at) + 1
        block = bytes(buffer[first:end + 4])
        if block.count(b"\n") > MAX_HEADERS or _PLAIN_HEADER_BLOCK.fullmatch(block) is None:
            return None
        status_line = bytes(buffer[self._at:first])
        self._at = end + 4
        pairs = []
        for line in block.splitlines()[:-1]:  # the empty line that ends the block is no header
            name, _, value = line.decode("ascii").partition(":")
            pairs.append((name, value.lstrip(" \t")))
        return status_line, pairs

    def _frame(self, status: int) -> None:
        if status in _NO_BODY or status < 200:
            self._left = 0
            if status == http.client.SWITCHING_PROTOCOLS:
                self.will_close = True  # whatever follows is not HTTP/1.1
            return
        coding = self.header("transfer-encoding")
        if coding is not None:
            codings = [part.strip().lower() for part in coding.split(",") if part.strip()]
            if codings != ["chunked"]:
                raise AnswerMalformed(f"the answer's transfer coding {coding[:100]!r} is not one capplan reads "
                                      "(it reads chunked)")
            self._chunked = True
            return
        length = self.header("content-length")
        if length is None:
            self.will_close = True  # no length to end it: the body runs to the connection's close
            return
        values = {part.strip(" \t") for part in length.split(",")}
        if len(values) != 1 or _DIGITS.fullmatch(next(iter(values))) is None:
            raise AnswerMalformed(f"the answer's Content-Length {length[:100]!r} is not one decimal number")
        self._left = int(next(iter(values)))

    def header(self, name: str) -> str | None:
        """Every value of header ``name`` (lower case) joined with ``", "`` (None: it is absent)."""
        return self._joined.get(name)

    # -- the body ------------------------------------------------------------------------------

    def read1(self, limit: int) -> bytes:
        """At most ``limit`` (> 0) bytes of the body, once some arrived; ``b""`` at its end."""
        if self._done:
            return b""
        if self._chunked:
            return self._read1_chunked(limit)
        if self._left is None:  # to the close
            piece = self._take(limit)
            if not piece:
                self._done = True
            return piece
        if self._left == 0:
            self._done = True
            return b""
        piece = self._take(min(limit, self._left))
        if not piece:
            raise AnswerMalformed(f"the answer ended {self._left} bytes short of its Content-Length")
        self._left -= len(piece)
        return piece

    def _read1_chunked(self, limit: int) -> bytes:
        if self._chunk_left == 0:
            raw = self._line()
            if raw is None:
                raise AnswerMalformed("a chunk-size line is longer than 65536 bytes")
            size = raw.split(b";", 1)[0].strip(b" \t\r\n")
            if _CHUNK_SIZE.fullmatch(size) is None:
                raise AnswerMalformed(f"not a chunk size: {raw[:100]!r}" if raw else
                                      "the answer ended before its last chunk")
            self._chunk_left = int(size, 16)
            if self._chunk_left == 0:
                self._lines("trailer")
                self._done = True
                return b""
        piece = self._take(min(limit, self._chunk_left))
        if not piece:
            raise AnswerMalformed("the answer ended inside a chunk")
        self._chunk_left -= len(piece)
        if self._chunk_left == 0:
            end = self._line()
            if end not in (b"\r\n", b"\n"):
                raise AnswerMalformed("a chunk's data is not followed by its line end")
        return piece

    @property
    def reusable(self) -> bool:
        """Whether the connection can carry another request: the answer read to its end, nothing after it."""
        return self._done and not self.will_close and not self._closed and self._at == len(self._buffer)

    # -- the buffer ----------------------------------------------------------------------------

    def _receive(self) -> bool:
        """One receive appended to the buffer; False once the server closed its end."""
        if self._closed:
            return False
        if self._at == len(self._buffer):
            self._buffer.clear()
            self._at = 0
        elif self._at > _RECEIVE:
            del self._buffer[:self._at]
            self._at = 0
        piece = self._sock.recv(_RECEIVE)
        if not piece:
            self._closed = True
            return False
        self._buffer += piece
        return True

    def _line(self) -> bytes | None:
        """The next line, its end included (what arrived before a close: maybe none); None past MAX_LINE bytes."""
        searched = 0  # bytes after the unread start already searched for the line's end
        while True:
            start = self._at
            end = self._buffer.find(b"\n", start + searched, start + MAX_LINE)
            if end >= 0:
                line = bytes(self._buffer[start:end + 1])
                self._at = end + 1
                return line
            searched = len(self._buffer) - start
            if searched >= MAX_LINE:
                return None
            if not self._receive():  # the compaction a receive may do keeps the unread bytes' order
                line = bytes(self._buffer[self._at:])
                self._at = len(self._buffer)
                return line

    def _lines(self, what: str) -> list[bytes]:
        """Header (or trailer) lines up to and including the empty one that ends them."""
        lines: list[bytes] = []
        while True:
            line = self._line()
            if line is None:
                raise AnswerMalformed(f"a {what} line is longer than 65536 bytes")
            lines.append(line)
            if len(lines) > MAX_HEADERS:  # counted with the empty line, as http.client counts
                raise AnswerMalformed(f"the answer has more than {MAX_HEADERS} {what} lines")
            if line in (b"\r\n", b"\n", b""):
                return lines

    def _take(self, limit: int) -> bytes:
        """At most ``limit`` bytes: buffered ones first, else one receive's; ``b""`` once the server closed."""
        if self._at == len(self._buffer) and not self._receive():
            return b""
        piece = bytes(self._buffer[self._at:self._at + limit])
        self._at += len(piece)
        return piece

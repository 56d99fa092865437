"""Reading an answer's body within its limits: bytes off the wire, bytes after decoding, and the deadline.

A provider is untrusted: an endless chunked body, a gzip body that inflates a thousandfold or a
body dripped one byte at a time must not take the machine's memory or outlive the attempt's
timeout. The body is read in pieces of at most :data:`PIECE` bytes and decoded as it comes
(``zlib.decompressobj`` with ``max_length``), so at most one piece beyond a limit is ever held; a
limit passed or the deadline reached ends the read at once. The limits come from the plan's
binding (``max_response_bytes``, ``max_decoded_bytes``).
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass

#: The most bytes one read asks for.
PIECE = 64 * 1024


@dataclass(frozen=True)
class BodyLimits:
    """How much of one answer is read (bytes on the wire) and kept (bytes after the content coding)."""

    max_response_bytes: int
    max_decoded_bytes: int


class BodyTooLarge(Exception):
    """An answer's body passed one of its limits; nothing of it is kept."""

    def __init__(self, status: int, field: str, limit: int) -> None:
        super().__init__(f"the answer's body is larger than {field} ({limit} bytes); reading stopped there")
        self.status = status
        self.field = field
        self.limit = limit


class DeadlinePassed(TimeoutError):
    """The attempt's total time (connect, send and every read together) ran out."""


class BodyUndecodable(Exception):
    """The body's content coding is one capplan does not decode, or its bytes are not that coding."""


def remaining(deadline: float) -> float:
    """Seconds left before ``deadline`` (a ``time.monotonic`` value); raises once it has passed."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise DeadlinePassed("the attempt's deadline passed")
    return left


class _Decoder:
    """Undoes one content coding piece by piece, holding at most ``limit`` decoded bytes."""

    def __init__(self, coding: str, status: int, limits: BodyLimits) -> None:
        self._coding = coding
        self._status = status
        self._limits = limits
        self._out = bytearray()
        self._inflate: zlib._Decompress | None = None
        self._first = b""  # deflate: the first bytes, kept until they say zlib-wrapped or raw
        if coding in ("gzip", "x-gzip"):
            self._inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)

    def _keep(self, data: bytes) -> None:
        self._out += data
        if len(self._out) > self._limits.max_decoded_bytes:
            raise BodyTooLarge(self._status, "max_decoded_bytes", self._limits.max_decoded_bytes)

    def feed(self, data: bytes) -> None:
        if self._coding == "identity":
            self._keep(data)
            return
        if self._inflate is None:  # deflate: zlib-wrapped as the standard says, or raw as some servers send it
            self._first += data
            if len(self._first) < 2:
                return
            data, self._first = self._first, b""
            header_ok = (data[0] & 0x0F) == 8 and ((data[0] << 8) | data[1]) % 31 == 0
            self._inflate = zlib.decompressobj(zlib.MAX_WBITS if header_ok else -zlib.MAX_WBITS)
        try:
            while True:
                # at most a piece at a time (never a second copy of the whole body), and never more than
                # one byte past the room left, so passing the limit is seen without inflating past it
                want = min(PIECE, self._limits.max_decoded_bytes - len(self._out) + 1)
                out = self._inflate.decompress(data, want)
                self._keep(out)
                data = self._inflate.unconsumed_tail
                if not data and len(out) < want:  # input used up and nothing held back by the bound
                    return
        except zlib.error as exc:
            raise BodyUndecodable(f"the answer's {self._coding} body cannot be decoded: {exc}") from exc

    def finish(self) -> bytes:
        if self._first:
            raise BodyUndecodable(f"the answer's {self._coding} body is cut short")
        if self._inflate is not None:
            try:
                self._keep(self._inflate.flush(max(1, self._limits.max_decoded_bytes - len(self._out) + 1)))
            except zlib.error as exc:
                raise BodyUndecodable(f"the answer's {self._coding} body cannot be decoded: {exc}") from exc
            if not self._inflate.eof:
                raise BodyUndecodable(f"the answer's {self._coding} body is cut short")
        return bytes(self._out)


def read_body(read: Callable[[int], bytes], encoding: str | None, status: int, limits: BodyLimits,
              deadline: float) -> bytes:
    """The decoded body, read with ``read(n)`` (returning at most ``n`` bytes, ``b""`` at the end).

    ``read`` must return as soon as some bytes arrive (``read1``, an iterator's next piece): the
    deadline is checked between pieces, and a read that blocks is the caller's to bound.
    """
    coding = (encoding or "").strip().lower() or "identity"
    if coding not in ("identity", "gzip", "x-gzip", "deflate"):
        raise BodyUndecodable(f"the answer is {coding}-encoded, which capplan does not decode (it asked for identity)")
    decoder = _Decoder(coding, status, limits)
    received = 0
    while True:
        remaining(deadline)
        piece = read(min(PIECE, limits.max_response_bytes - received + 1))
        if not piece:
            return decoder.finish()
        received += len(piece)
        if received > limits.max_response_bytes:
            raise BodyTooLarge(status, "max_response_bytes", limits.max_response_bytes)
        decoder.feed(piece)

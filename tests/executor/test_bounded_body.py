"""Reading an answer's body within its limits, piece by piece: every content coding, every way to pass a limit."""

from __future__ import annotations

import gzip
import time
import zlib
from collections.abc import Callable

import pytest

from capplan.executor.direct.bounded_body import (
    BodyLimits,
    BodyTooLarge,
    BodyUndecodable,
    DeadlinePassed,
    read_body,
)

TEXT = b'{"choices": []}' * 1000
LIMITS = BodyLimits(max_response_bytes=1 << 20, max_decoded_bytes=1 << 20)


def reader(data: bytes, piece: int = 7) -> Callable[[int], bytes]:
    """``read(n)`` over ``data``, at most ``piece`` bytes a call (a server that sends little at a time)."""
    at = 0

    def read(n: int) -> bytes:
        nonlocal at
        out = data[at:at + min(n, piece)]
        at += len(out)
        return out

    return read


def later() -> float:
    return time.monotonic() + 3600


@pytest.mark.parametrize("coding, encoded", [
    (None, TEXT), ("identity", TEXT), ("gzip", gzip.compress(TEXT, mtime=0)), ("x-gzip", gzip.compress(TEXT, mtime=0)),
    ("deflate", zlib.compress(TEXT)), ("deflate", zlib.compress(TEXT, wbits=-zlib.MAX_WBITS)),
    (" GZIP ", gzip.compress(TEXT, mtime=0)),
])
def test_every_coding_is_decoded_from_small_pieces(coding: str | None, encoded: bytes) -> None:
    assert read_body(reader(encoded), coding, 200, LIMITS, later()) == TEXT


def test_a_body_exactly_at_both_limits_is_read() -> None:
    limits = BodyLimits(len(TEXT), len(TEXT))
    assert read_body(reader(TEXT, 4096), None, 200, limits, later()) == TEXT


@pytest.mark.parametrize("coding, encoded, field", [
    (None, TEXT, "max_response_bytes"),
    ("gzip", gzip.compress(bytes(1 << 22), mtime=0), "max_decoded_bytes"),
    ("deflate", zlib.compress(bytes(1 << 22)), "max_decoded_bytes"),
])
def test_one_byte_past_a_limit_stops_the_read(coding: str | None, encoded: bytes, field: str) -> None:
    limits = BodyLimits(len(TEXT) - 1, len(TEXT) - 1) if coding is None else BodyLimits(1 << 20, 1 << 20)
    with pytest.raises(BodyTooLarge) as raised:
        read_body(reader(encoded, 65536), coding, 503, limits, later())
    assert (raised.value.field, raised.value.status) == (field, 503)


@pytest.mark.parametrize("coding, encoded, message", [
    ("gzip", gzip.compress(TEXT, mtime=0)[:-20], "cut short"),
    ("gzip", b"not gzip at all", "cannot be decoded"),
    ("deflate", b"x", "cut short"),
    ("br", b"whatever", "br-encoded, which capplan does not decode"),
    ("gzip, gzip", gzip.compress(gzip.compress(TEXT, mtime=0), mtime=0), "does not decode"),
])
def test_a_body_that_is_not_its_coding_is_undecodable(coding: str, encoded: bytes, message: str) -> None:
    with pytest.raises(BodyUndecodable, match=message):
        read_body(reader(encoded), coding, 200, LIMITS, later())


def test_the_deadline_is_checked_between_pieces() -> None:
    calls = 0

    def slow(n: int) -> bytes:
        nonlocal calls
        calls += 1
        return b" "  # a byte each time: a read timeout alone would never fire

    with pytest.raises(DeadlinePassed):
        read_body(slow, None, 200, LIMITS, time.monotonic() - 1)
    assert calls == 0

"""One HTTP exchange with the standard library, every failure turned into data.

Nothing here raises on a network or protocol problem: a refused connection, a timeout, an
HTML error page or an empty body all come back as a :class:`Reply` with ``status`` (0 when no
HTTP answer arrived) and a readable ``error``. Callers record it and move on.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

RAW_KEEP = 2000  # characters of a non-JSON body kept for the record
# The most of one answer read: a measured answer is a few KB and a catalogue a few MB, but an endpoint
# is untrusted (a broken or hostile one may send without end, or drip a byte at a time).
MAX_BODY_BYTES = 32 * 1024 * 1024
_CHUNK = 65536


class BodyTooLarge(OSError):
    """An answer longer than MAX_BODY_BYTES: not read further (an OSError, so it is a transport failure)."""


@dataclass
class Reply:
    """What came back: status, parsed JSON (or None), and an error text when not a clean 200."""

    status: int
    body: Any
    raw: str
    headers: dict[str, str] = field(default_factory=dict)
    error: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """A 2xx answer with a JSON object body: the only kind a measurement can use."""
        return 200 <= self.status < 300 and isinstance(self.body, dict)


def send(method: str, url: str, body: bytes | None, headers: dict[str, str],
         timeout: float) -> Reply:
    """Perform one request; never raises for transport or decoding problems."""
    started = time.monotonic()
    request = urllib.request.Request(url, data=body, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            status, payload, hdrs = resp.status, read_bounded(resp, timeout), dict(resp.headers.items())
    except urllib.error.HTTPError as exc:
        status, hdrs = exc.code, dict(exc.headers.items()) if exc.headers else {}
        try:
            payload = read_bounded(exc, timeout)
        except (OSError, http.client.HTTPException):
            payload = b""
    except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as exc:
        return Reply(0, None, "", error=describe_failure(url, exc, timeout),
                     seconds=time.monotonic() - started)
    reply = decode(status, payload, hdrs)
    reply.seconds = time.monotonic() - started
    return reply


def read_bounded(stream: Any, timeout: float) -> bytes:
    """At most MAX_BODY_BYTES of ``stream``, within ``timeout`` seconds in all.

    The socket timeout bounds each read, not the body: a body dripped a byte at a time would pass
    every read, so the whole body has its own deadline. ``read1`` returns what one read got.
    """
    read = getattr(stream, "read1", None) or stream.read
    deadline = time.monotonic() + timeout
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = read(_CHUNK)
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if total > MAX_BODY_BYTES:
            raise BodyTooLarge(f"the answer is over {MAX_BODY_BYTES} bytes; not read further")
        if time.monotonic() > deadline:
            raise TimeoutError(f"the answer's body took over {timeout:g}s")
        chunks.append(chunk)


def decode(status: int, payload: bytes, headers: dict[str, str]) -> Reply:
    """Parse a body; a non-JSON or non-object body is an error even under a 200."""
    raw = payload.decode("utf-8", "replace")
    try:
        body: Any = json.loads(raw) if raw.strip() else None
    except ValueError:
        body = None
    # Gemini wraps some errors in a one-element list.
    if isinstance(body, list) and len(body) == 1 and isinstance(body[0], dict):
        body = body[0]
    reply = Reply(status, body, raw[:RAW_KEEP], headers)
    if not isinstance(body, dict):
        kind = headers.get("Content-Type") or headers.get("content-type") or "no content type"
        shown = raw.strip()[:160] or "<empty body>"
        reply.error = f"non-JSON response (HTTP {status}, {kind}): {shown!r}"
    elif not 200 <= status < 300:
        reply.error = error_text(body, raw)
    return reply


def error_text(body: Any, raw: str = "") -> str:
    """The provider's own error message, exactly as sent (trimmed to 500 characters)."""
    message: Any = None
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):
            message = err.get("message") or json.dumps(err, ensure_ascii=False)
        else:
            message = err or body.get("message") or body.get("detail")
        if message is None:
            message = json.dumps(body, ensure_ascii=False)
    return str(message if message is not None else raw)[:500]


def describe_failure(url: str, exc: BaseException, timeout: float) -> str:
    """A one-line account of why no HTTP answer arrived (no traceback, no headers)."""
    parts = urllib.parse.urlsplit(url)
    where = f"{parts.hostname}:{parts.port or (443 if parts.scheme == 'https' else 80)}"
    reason: Any = getattr(exc, "reason", exc)
    if isinstance(reason, (socket.timeout, TimeoutError)):
        return f"no answer from {where} within {timeout:g}s"
    if isinstance(reason, ConnectionRefusedError):
        return f"cannot connect to {where}: connection refused (is the base URL right?)"
    if isinstance(reason, socket.gaierror):
        return f"cannot resolve host {parts.hostname!r}: {reason.strerror or reason}"
    if isinstance(reason, ssl.SSLError):
        return f"TLS error talking to {where}: {reason.reason or reason}"
    return f"request to {where} failed: {type(reason).__name__}: {reason}"

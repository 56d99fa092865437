"""A plain POST's request head, written as ``http.client`` writes it, to go out in one send with its body.

Part of seam *http.client pool* (:mod:`capplan.executor.direct.pool`; ``benchmarks/trial_loop.py``):
``HTTPConnection.request`` builds the head a header at a time (a regular-expression check and an
encode for each, the request line and the ``Host`` header worked out again on every call) and
sends the head and the body in two sends, each of which lets go of the GIL and takes it back: at
``--concurrency 32`` that was a tenth of the transport's CPU per call. For the requests capplan
sends (ASCII header names and values, an origin-form target), :func:`plain_head` writes the same
bytes at once, in the same order: the request line, ``Host`` (with the port unless it is the
scheme's default), ``Accept-Encoding: identity``, ``Content-Length``, then the headers as given.

Anything else -- a header ``http.client`` would add itself (``Host``, ``Accept-Encoding``,
``Content-Length``, ``Transfer-Encoding``), a name outside the token characters, a value with a
byte outside printable ASCII and tab (a line break included: no header can be smuggled in), a
target with a space or a control character, a host that is not plain ASCII or is an IPv6
address -- is None: ``http.client`` writes that request, and refuses what it refuses.
``tests/executor/test_request_head.py`` compares the bytes with what ``http.client`` sends.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

#: header names: RFC 9110 token characters
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
#: header values: printable ASCII and tab, nothing else (http.client would take more, and checks it)
_VALUE = re.compile(r"[\t -~]*")
#: the request target: origin-form, visible ASCII only
_TARGET = re.compile(r"/[!-~]*")
#: the headers http.client adds, or changes how it writes the body, when a request names them
_ITS_OWN = frozenset({"host", "accept-encoding", "content-length", "transfer-encoding"})


def plain_head(host: str, port: int, default_port: int, target: str, content_length: int,
               headers: Mapping[str, str]) -> bytes | None:
    """The head ``http.client`` writes for ``POST target`` with a body of ``content_length`` bytes and
    ``headers``; None where ``http.client`` must write it (see the module doc)."""
    if _TARGET.fullmatch(target) is None or not host.isascii() or ":" in host or not host.isprintable() \
            or " " in host:
        return None
    for name, value in headers.items():
        if type(name) is not str or type(value) is not str or _TOKEN.fullmatch(name) is None \
                or _VALUE.fullmatch(value) is None or name.lower() in _ITS_OWN:
            return None
    host_line = host if port == default_port else f"{host}:{port}"
    lines = [f"POST {target} HTTP/1.1", f"Host: {host_line}", "Accept-Encoding: identity",
             f"Content-Length: {content_length}", *(f"{name}: {value}" for name, value in headers.items()), "", ""]
    return "\r\n".join(lines).encode("ascii")

"""A plain POST's head, written by capplan in one send (seam *http.client pool*): the same bytes
``http.client`` sends, and ``http.client`` itself for anything else."""

from __future__ import annotations

import http.client
import socket
import threading
from typing import Any

import pytest

from capplan.executor.direct.request_head import plain_head

BODY = b'{"model":"m","messages":[{"role":"user","content":"hi \xc3\xa9"}]}'


def _http_client_bytes(host: str, port: int, target: str, headers: dict[str, str], https: bool = False) -> bytes:
    """What ``http.client`` writes for this POST, read off the other end of a socket pair."""
    ours, theirs = socket.socketpair()
    got: list[bytes] = []

    def read() -> None:
        while chunk := theirs.recv(65536):
            got.append(chunk)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        connection: http.client.HTTPConnection = (http.client.HTTPSConnection if https else http.client.HTTPConnection)(
            host, port)
        connection.sock = ours
        connection.request("POST", target, body=BODY, headers=headers)
    finally:
        ours.close()  # the reader sees the end, sent or refused, and returns before its socket is closed
        reader.join(timeout=10)
        theirs.close()
    assert not reader.is_alive()
    return b"".join(got)


@pytest.mark.parametrize(("host", "port", "https", "target", "headers"), [
    ("127.0.0.1", 8123, False, "/v1/chat/completions",
     {"Content-Type": "application/json", "Authorization": "Bearer sk-test-123", "User-Agent": "capplan/0.1.0"}),
    ("api.openai.com", 443, True, "/v1/responses", {"authorization": "Bearer x", "X-Title": "a b\tc ~!"}),
    ("example.com", 80, False, "/openai/deployments/d/chat/completions?api-version=2024-10-21",
     {"api-key": "k", "OpenAI-Organization": "org-1", "x-empty": ""}),
    ("localhost", 443, False, "/", {}),
    ("gw.internal", 8080, True, "/v1/x%20y", {"HTTP-Referer": "https://a.example/?q=1&r=2", "X-Many": "1, 2, 3"}),
])
def test_a_plain_head_is_the_bytes_http_client_sends(host: str, port: int, https: bool, target: str,
                                                     headers: dict[str, str]) -> None:
    default = 443 if https else 80
    head = plain_head(host, port, default, target, len(BODY), headers)
    assert head is not None
    assert head + BODY == _http_client_bytes(host, port, target, headers, https=https)


@pytest.mark.parametrize(("target", "headers", "host"), [
    ("/v1/chat", {"Host": "other.example"}, "h"),  # a header http.client adds or skips itself
    ("/v1/chat", {"accept-encoding": "gzip"}, "h"),
    ("/v1/chat", {"Content-Length": "3"}, "h"),
    ("/v1/chat", {"Transfer-Encoding": "chunked"}, "h"),
    ("/v1/chat", {"X-Evil": "a\r\nX-Injected: 1"}, "h"),  # a line break: never written here
    ("/v1/chat", {"X-Fold": "a\n b"}, "h"),
    ("/v1/chat", {"X-Latin": "caf\xe9"}, "h"),
    ("/v1/chat", {"Bad Name": "v"}, "h"),
    ("/v1/chat", {"X-Colon:": "v"}, "h"),
    ("/v1/chat", {"X-Int": 3}, "h"),
    ("/v1/a b", {}, "h"),  # a target http.client refuses
    ("/v1/\x00", {}, "h"),
    ("http://h/v1", {}, "h"),  # not origin-form
    ("/v1/chat", {}, "::1"),  # an IPv6 host: http.client brackets it
    ("/v1/chat", {}, "bücher.example"),
])
def test_anything_else_is_left_to_http_client(target: str, headers: dict[str, Any], host: str) -> None:
    assert plain_head(host, 8080, 80, target, 10, headers) is None


def test_what_http_client_refuses_it_still_refuses() -> None:
    with pytest.raises(ValueError, match="Invalid header value"):
        _http_client_bytes("h", 80, "/v1", {"X-Evil": "a\r\nX-Injected: 1"})

"""The emulator base answers what is not a request with a plain error, bounded, and records what it read."""

from __future__ import annotations

import http.client
import json
from typing import Any
from urllib.parse import urlsplit

from capplan.conformance.corpus import Corpus
from capplan.conformance.emulator import MAX_REQUEST_BYTES
from capplan.conformance.emulators.openai_chat import OpenAIChatEmulator


def raw_post(base_url: str, body: bytes, headers: dict[str, str]) -> tuple[int, Any]:
    parts = urlsplit(base_url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
    try:
        connection.putrequest("POST", "/v1/chat/completions")
        for name, value in headers.items():
            connection.putheader(name, value)
        connection.endheaders(body)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def test_a_length_that_is_not_one_is_answered_400_and_too_large_a_body_413(corpus: Corpus) -> None:
    with OpenAIChatEmulator(corpus.rules, route="openai") as emu:
        status, answer = raw_post(emu.base_url, b"{}", {"Content-Length": "two"})
        assert status == 400 and answer["error"]["message"] == "Content-Length is not a length"
        status, _ = raw_post(emu.base_url, b"", {"Content-Length": str(MAX_REQUEST_BYTES + 1)})
        assert status == 413
        assert emu.exchanges == []  # nothing was read as a request


def test_a_body_that_is_not_a_json_object_is_answered_400_and_recorded(corpus: Corpus) -> None:
    with OpenAIChatEmulator(corpus.rules, route="openai") as emu:
        for body in (b"not json", b"[1, 2]", b'{"messages": []}'):
            status, answer = raw_post(emu.base_url, body, {"Content-Length": str(len(body))})
            assert status == 400 and answer["error"]["type"] == "invalid_request_error"
        assert [exchange.status for exchange in emu.exchanges] == [400, 400, 400]
        assert [exchange.violations for exchange in emu.exchanges] == [(), (), ()]

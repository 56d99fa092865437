"""Redactor.value walks any JSON-like value alike, whatever the exact types of its nodes."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from capplan.core.redaction import REDACTED, Redactor

SECRET = "sk-redactor-value-secret"


class Name(str):
    pass


class Mapping(dict):  # type: ignore[type-arg]
    pass


class Items(list):  # type: ignore[type-arg]
    pass


def test_every_node_kind_is_walked_and_the_copy_is_plain() -> None:
    redactor = Redactor([SECRET])
    data: dict[Any, Any] = {
        "plain": f"key {SECRET}", Name(f"k-{SECRET}"): Name(f"v {SECRET}"), 3: 4.5, None: True, "off": False,
        "mapping": Mapping({"x": [SECRET]}), "ordered": OrderedDict(y=SECRET),
        "items": Items([SECRET, 1]), "tuple": (SECRET, None), "bytes": SECRET.encode(),
        "url": "https://u:pw@example.com/?api_key=abc",
    }
    out = redactor.value(data)
    assert out == {
        "plain": f"key {REDACTED}", f"k-{REDACTED}": f"v {REDACTED}", 3: 4.5, None: True, "off": False,
        "mapping": {"x": [REDACTED]}, "ordered": {"y": REDACTED}, "items": [REDACTED, 1], "tuple": [REDACTED, None],
        "bytes": SECRET.encode(),  # not text: left as it is
        "url": f"https://{REDACTED}@example.com/?api_key={REDACTED}",
    }
    assert type(out["mapping"]) is dict and type(out["items"]) is list and type(out["tuple"]) is list
    assert data["plain"] == f"key {SECRET}"  # the input is not changed

"""Redactor.value walks any JSON-like value alike, whatever the exact types of its nodes."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from capplan.core.redaction import REDACTED, Redactor, _echo_forms

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


# --- the one-search check before the walk (seam: record redaction check) ---------------------------

#: secrets whose echo forms JSON writes escaped: a quote, a backslash, a non-ASCII letter, a control character
AWKWARD = ('ab"cd-secret', "ab\\cd-secret", "clé-secrète-1", "tab\tsecret-1")


def _strings_holding(secret: str) -> list[Any]:
    """Values whose strings (or keys) hold ``secret`` in each form an echo takes, and the URL shapes."""
    held: list[Any] = [f"before {secret} after", {f"k {secret}": 1}, [[{"deep": [secret]}]]]
    held += [{"text": f"x{form}y"} for form in sorted(_echo_forms(secret))]
    held += [f"{c}https://user:pw@example.com/" for c in ("\x01", "\n", '"', "\\", " ")]
    held += ["see https://example.com/?token=abc", {"u": "x\x1fhttp://t@h"}]
    return held


def test_the_check_never_misses_what_the_walk_would_replace() -> None:
    for secret in (SECRET, *AWKWARD):
        redactor = Redactor([secret])
        for value in _strings_holding(secret):
            assert redactor.value(value) != value, (secret, value)  # each really holds something to replace
            assert redactor.may_change(value), (secret, value)
    # a value that is not JSON data is walked, whatever it holds
    assert Redactor([SECRET]).may_change({"t": (SECRET,), "s": {1}})


def test_clean_records_are_not_walked() -> None:
    from capplan.core.reference_mode import reference_mode

    records = {"messages": [{"role": "user", "content": 'say "hi" = 1 \\ é \n'}], "n": 1.5, "ok": None,
               "url": "https://example.com/v1?model=x"}
    for redactor in (Redactor([SECRET, *AWKWARD]), Redactor()):
        assert redactor.value(records) == records
        assert redactor.may_change(records) is reference_mode()  # the reference mode walks every record

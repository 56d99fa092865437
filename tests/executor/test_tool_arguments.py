"""The argument ladder: JSON, YAML, repaired JSON, repaired YAML; and what counts as undecodable."""

from __future__ import annotations

import pytest

from capplan.executor.tool_arguments import ArgumentsUndecodable, decode_arguments, repair_json_text


@pytest.mark.parametrize(
    ("raw", "expected", "rung"),
    [
        ('{"a": 1, "b": [true, null]}', {"a": 1, "b": [True, None]}, "json"),
        ("", {}, "json"),
        ("   ", {}, "json"),
        ("a: 1\nb: [x, y]", {"a": 1, "b": ["x", "y"]}, "yaml"),
        ("{a: 1}", {"a": 1}, "yaml"),
        ("date: 2024-01-01", {"date": "2024-01-01"}, "yaml"),
        ('```json\n{"a": [1, 2,],}\n```', {"a": [1, 2]}, "repaired_json"),
        ('{"a": True, "b": None, "c": "True stays"\n', {"a": True, "b": None, "c": "True stays"}, "repaired_json"),
        ('{"a": "cut off', {"a": "cut off"}, "repaired_json"),
        ('{"a": [1, {"b": 2', {"a": [1, {"b": 2}]}, "repaired_json"),
        ('{"q": "say \\"hi\\"", "n": 1,', {"q": 'say "hi"', "n": 1}, "repaired_json"),
        ("```yaml\na: 1\nb: two\n```", {"a": 1, "b": "two"}, "repaired_yaml"),
    ],
)
def test_ladder_decodes(raw: str, expected: dict, rung: str) -> None:
    assert decode_arguments(raw) == (expected, rung)


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        ("[1, 2]", "json: decoded to list, not an object"),
        ("hello there", "yaml: decoded to str, not an object"),
        ('"just a string"', "json: decoded to str"),
        ("{{{", "repaired_yaml:"),
        ("!!binary aGk=", "yaml:"),
    ],
)
def test_undecodable_names_every_rung(raw: str, needle: str) -> None:
    with pytest.raises(ArgumentsUndecodable) as info:
        decode_arguments(raw)
    message = str(info.value)
    assert needle in message
    for rung in ("json:", "yaml:", "repaired_json:", "repaired_yaml:"):
        assert rung in message


def test_repair_never_touches_string_contents() -> None:
    assert repair_json_text('{"s": "None, True, ]}", }') == '{"s": "None, True, ]}" }'

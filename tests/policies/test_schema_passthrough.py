"""PassthroughSchema and the position-aware walk every rewriting sanitiser builds on."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from executor.policies.schema_sanitizer import (
    PassthroughSchema,
    SchemaCapability,
    iter_subschemas,
    json_pointer,
    map_subschemas,
    re2_incompatible,
    walk_schemas,
)

TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "t",
        "parameters": {
            "type": "object",
            "$defs": {"X": {"type": "string", "pattern": "(?=x)"}},
            "properties": {
                "x": {"$ref": "#/$defs/X"},
                "m": {"type": "object", "additionalProperties": {"type": "integer"}},
            },
        },
    },
}


def test_passthrough_returns_deep_copies_and_never_mutates() -> None:
    before = copy.deepcopy(TOOL)
    out = PassthroughSchema().sanitize([TOOL])
    assert out == [TOOL] and out[0] is not TOOL
    out[0]["function"]["parameters"]["properties"]["x"]["$ref"] = "changed"
    assert before == TOOL


def test_passthrough_keeps_every_capability() -> None:
    assert PassthroughSchema().supported_capabilities() == frozenset(SchemaCapability)
    assert (PassthroughSchema.slot, PassthroughSchema.name) == ("schema_sanitizer", "passthrough")


def test_the_walk_visits_schemas_and_skips_data() -> None:
    schema = {
        "type": "object",
        "properties": {"title": {"type": "string"}, "pattern": {"type": "string"}},
        "items": [{"type": "integer"}],
        "anyOf": [{"type": "object"}],
        "dependencies": {"a": ["b"], "c": {"required": ["d"]}},
        "default": {"type": "not a schema"},
        "examples": [{"properties": {}}],
        "enum": [{"items": {}}],
    }
    paths = [path for path, _ in iter_subschemas(schema)]
    assert paths == [
        ("properties", "title"),
        ("properties", "pattern"),
        ("items", 0),
        ("anyOf", 0),
        ("dependencies", "c"),
    ]
    assert next(p for p, _ in walk_schemas(schema)) == ()


def test_map_subschemas_copies_data_and_maps_schemas() -> None:
    schema = {"default": {"k": [1]}, "not": {"type": "null"}}
    out = map_subschemas(schema, lambda sub, rel: {"seen": list(rel)})
    assert out == {"default": {"k": [1]}, "not": {"seen": ["not"]}}
    assert out["default"] is not schema["default"]


def test_json_pointer_escapes_names() -> None:
    assert json_pointer(("properties", "a/b~c", "items", 0)) == "/properties/a~1b~0c/items/0"
    assert json_pointer(()) == ""


@pytest.mark.parametrize(
    "pattern",
    ["^(?!^[-+.]*$)[+-]?0*\\d*\\.?\\d*$", "(?=a)", "a(?!b)", "(?<=x)y", "(?<!x)y", "(a)\\1", "(a)(b)\\2", "x(?:(?=y))"],
)
def test_lookarounds_and_backreferences_are_re2_incompatible(pattern: str) -> None:
    assert re2_incompatible(pattern)


@pytest.mark.parametrize(
    "pattern",
    [
        "^SKU-[A-Z0-9]+$",
        "\\(?=",  # an escaped paren made optional, then '='
        "[(?!]",  # a class of three characters
        "[]()?=]",  # ']' first in a class is a member
        "[^]?=(]",
        "[[:alpha:](?=]",
        "a\\\\1",  # an escaped backslash, then the digit 1
        "(?P<name>x)",
        "(?:x)\\d{4}",
        "\\0",
    ],
)
def test_safe_patterns_are_re2_compatible(pattern: str) -> None:
    assert not re2_incompatible(pattern)

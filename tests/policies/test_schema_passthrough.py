"""PassthroughSchema and the position-aware walk every rewriting sanitiser builds on."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from capplan.executor.policies.schema_sanitizer import (
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


def _reference_walk(root: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    # the walk's definition, written out recursively: the node, then each subschema's walk in order
    if not isinstance(root, dict):
        return []
    found = [(path, root)]
    for rel, sub in iter_subschemas(root):
        found += _reference_walk(sub, path + rel)
    return found


def test_the_walk_visits_in_document_order_on_every_fixture_schema() -> None:
    fixtures = Path(__file__).parent / "fixtures"
    schemas = [TOOL["function"]["parameters"]]
    for path in sorted(fixtures.glob("tools_*.json")):
        schemas += [t["function"]["parameters"] for t in json.loads(path.read_text())]
    nested = {"anyOf": [{"items": [{"type": "string"}, {"not": {"type": "null"}}]}, True], "dependencies": {"a": ["b"], "c": {"x": 1}}}
    schemas.append({"properties": {"n": nested}, "$defs": {"d": nested}, "items": {"prefixItems": [nested]}})
    for schema in schemas:
        walked = list(walk_schemas(schema, ("root",)))
        assert [(p, id(n)) for p, n in walked] == [(p, id(n)) for p, n in _reference_walk(schema, ("root",))]
    assert list(walk_schemas(True)) == []


def test_map_subschemas_can_take_data_as_it_is_for_a_node_the_caller_owns() -> None:
    schema = {"default": {"k": [1]}, "enum": [["x"]], "not": {"type": "null"}}
    out = map_subschemas(schema, lambda sub, rel: dict(sub), copy_data=False)
    assert out == schema and out is not schema
    assert out["default"] is schema["default"] and out["enum"] is schema["enum"]
    assert out["not"] is not schema["not"]


def test_json_copy_copies_flat_lists_and_nested_data_alike() -> None:
    from capplan.executor.policies.schema_sanitizer import json_copy

    for value in (["a", 1, 2.5, True, None], [["nested"]], [{"k": "v"}], [], [("a", "b")]):
        copied = json_copy(value)
        assert copied == value and copied is not value and type(copied) is type(value)
    nested = [["nested"]]
    assert json_copy(nested)[0] is not nested[0]

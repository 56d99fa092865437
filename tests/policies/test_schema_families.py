"""The per-family sanitisers: Gemini's union flattening and the cycle-tolerant variants."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from capplan.executor.families.cohere import CohereRecursiveSchema
from capplan.executor.families.gemini import GeminiRecursiveSchema, GeminiSchema
from capplan.executor.families.xai import XaiGrokRecursiveSchema
from capplan.executor.policies.schema_sanitizer import SchemaRefCycleError, SchemaRewriteError, ToolSchemaSanitizer
from capplan.executor.policies.strict_schema import StrictSchema

FIXTURES = Path(__file__).parent / "fixtures"
STUB = {"type": "object", "additionalProperties": True}


def params(sanitizer: ToolSchemaSanitizer, fixture: str) -> dict[str, Any]:
    tools = json.loads((FIXTURES / fixture).read_text())
    before = copy.deepcopy(tools)
    (out,) = sanitizer.sanitize(tools)
    assert tools == before
    result: dict[str, Any] = out["function"]["parameters"]
    Draft202012Validator.check_schema(result)
    return result


def union_tool(*branches: dict[str, Any]) -> list[dict[str, Any]]:
    schema = {
        "type": "object",
        "properties": {"u": {"oneOf": list(branches), "discriminator": {"propertyName": "kind"}}},
    }
    return [{"type": "function", "function": {"name": "u", "parameters": schema}}]


@pytest.mark.parametrize(
    ("cls", "flags"),
    [
        (GeminiSchema, (True, False, False, True)),
        (GeminiRecursiveSchema, (True, False, False, True)),
        (CohereRecursiveSchema, (False, True, True, True)),
        (XaiGrokRecursiveSchema, (True, True, True, True)),
    ],
)
def test_each_family_sets_only_its_flags(cls: type[StrictSchema], flags: tuple[bool, ...]) -> None:
    assert issubclass(cls, StrictSchema)
    assert (
        cls.flatten_oneof_discriminator,
        cls.strip_parameters_root_description,
        cls.strip_re2_incompatible_patterns,
        cls.carry_scalar_dict_map_value,
    ) == flags
    assert (cls.KEY_FIELD, cls.VALUE_FIELD) == ("key", "value")


def test_gemini_flattens_a_discriminated_union() -> None:
    item = params(GeminiSchema(), "tools_discriminated_union.json")["properties"]["item"]
    assert "oneOf" not in item and "discriminator" not in item
    assert item["type"] == "object" and item["title"] == "Item"
    kind = item["properties"]["kind"]
    assert kind["type"] == "string" and kind["enum"] == ["ticket", "chat"]
    assert "ticket: A support ticket." in kind["description"] and "chat: A chat thread." in kind["description"]
    assert list(item["properties"]) == ["kind", "subject", "priority", "channel"]
    assert item["required"] == ["kind", "subject"]


def test_gemini_leaves_a_bare_union_alone() -> None:
    bare = params(GeminiSchema(), "tools_discriminated_union.json")["properties"]["bare"]
    assert [b["title"] for b in bare["anyOf"]] == ["Ticket", "Chat"]


def test_gemini_lifts_flattened_union_fields_into_dict_map_entries() -> None:
    by_id = params(GeminiSchema(), "tools_discriminated_union.json")["properties"]["by_id"]
    items = by_id["items"]
    assert list(items["properties"]) == ["key", "kind", "subject", "priority", "channel"]
    assert items["required"] == ["key", "kind", "subject"]


def test_gemini_keeps_the_root_description_and_unsafe_patterns() -> None:
    out = params(GeminiSchema(), "tools_decimal.json")
    assert out["description"] == "Input model for charge."
    assert out["properties"]["amount"]["type"] == "number"
    assert out["properties"]["discount"]["anyOf"][1]["pattern"].startswith("^(?!")


def test_flattening_keeps_conflicting_declarations_as_alternatives() -> None:
    a = {"type": "object", "properties": {"kind": {"const": "a"}, "n": {"type": "integer"}}, "required": ["kind", "n"]}
    b = {"type": "object", "properties": {"kind": {"const": "b"}, "n": {"type": "string"}}, "required": ["kind", "n"]}
    (out,) = GeminiSchema().sanitize(union_tool(a, b))
    union = out["function"]["parameters"]["properties"]["u"]
    assert union["properties"]["n"] == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert union["properties"]["kind"] == {"enum": ["a", "b"]}
    assert union["required"] == ["kind", "n"]


@pytest.mark.parametrize(
    ("branches", "message"),
    [
        (({"type": "object", "properties": {"x": {"type": "string"}}},), "no const/enum for discriminator"),
        (({"type": "string"},), "must be an object with properties"),
        (
            (
                {"type": "object", "properties": {"kind": {"const": "a"}}, "additionalProperties": False},
                {"type": "object", "properties": {"kind": {"const": "b"}}},
            ),
            "branches disagree on \\['additionalProperties'\\]",
        ),
    ],
)
def test_a_union_that_cannot_be_flattened_faithfully_is_refused(
    branches: tuple[dict[str, Any], ...], message: str
) -> None:
    with pytest.raises(SchemaRewriteError, match=message):
        GeminiSchema().sanitize(union_tool(*branches))


def test_branch_keywords_they_all_share_are_kept() -> None:
    a = {"type": "object", "properties": {"kind": {"enum": ["a"]}}, "additionalProperties": False}
    b = {"type": "object", "properties": {"kind": {"enum": ["b"]}}, "additionalProperties": False}
    (out,) = GeminiSchema().sanitize(union_tool(a, b))
    assert out["function"]["parameters"]["properties"]["u"]["additionalProperties"] is False


def test_plain_gemini_still_refuses_recursive_refs() -> None:
    with pytest.raises(SchemaRefCycleError):
        params(GeminiSchema(), "tools_recursive.json")


@pytest.mark.parametrize("cls", [GeminiRecursiveSchema, CohereRecursiveSchema, XaiGrokRecursiveSchema])
def test_recursive_variants_stub_the_point_of_reentry(cls: type[StrictSchema]) -> None:
    root = params(cls(), "tools_recursive.json")["properties"]["root"]
    children = root["properties"]["children"]
    assert children["items"] == STUB
    assert children["description"] == "Child nodes." and root["properties"]["label"] == {
        "title": "Label",
        "type": "string",
    }


def test_a_diamond_is_not_a_cycle_for_the_recursive_variant() -> None:
    props = params(GeminiRecursiveSchema(), "tools_recursive.json")["properties"]
    assert (
        props["home"]
        == props["work"]
        == {
            "properties": {"city": {"title": "City", "type": "string"}},
            "required": ["city"],
            "title": "Address",
            "type": "object",
        }
    )


def test_the_stub_is_a_fresh_copy_every_time() -> None:
    first = params(GeminiRecursiveSchema(), "tools_recursive.json")
    first["properties"]["root"]["properties"]["children"]["items"]["mutated"] = True
    second = params(GeminiRecursiveSchema(), "tools_recursive.json")
    assert second["properties"]["root"]["properties"]["children"]["items"] == STUB
    assert dict(GeminiRecursiveSchema.CYCLE_STUB) == STUB


def test_recursive_variants_carry_fieldless_map_values() -> None:
    counts = params(GeminiRecursiveSchema(), "tools_dict_maps.json")["properties"]["counts"]
    assert counts["items"]["properties"] == {"key": {"type": "string", "description": "The map key identifier."},
                                             "value": {"type": "integer", "description": "The map value."}}


def test_cohere_keeps_unions_and_carries_union_valued_maps_whole() -> None:
    out = params(CohereRecursiveSchema(), "tools_discriminated_union.json")
    assert "description" not in out
    assert "oneOf" in out["properties"]["item"]
    value = out["properties"]["by_id"]["items"]["properties"]["value"]
    assert [b["title"] for b in value["oneOf"]] == ["Ticket", "Chat"]


def test_cohere_and_xai_strip_unsafe_patterns_like_strict() -> None:
    for cls in (CohereRecursiveSchema, XaiGrokRecursiveSchema):
        out = params(cls(), "tools_decimal.json")
        assert out["properties"]["discount"]["anyOf"][1] == {"type": "string"}
        assert "description" not in out


def test_xai_flattens_union_values_before_lifting_them() -> None:
    items = params(XaiGrokRecursiveSchema(), "tools_discriminated_union.json")["properties"]["by_id"]["items"]
    assert list(items["properties"])[:2] == ["key", "kind"] and "value" not in items["properties"]

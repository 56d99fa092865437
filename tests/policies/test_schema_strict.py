"""StrictSchema: each rewrite it performs, everything it must leave alone, and its loud failures."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, ClassVar

import pytest
from jsonschema import Draft202012Validator

from capplan.executor.policies.schema_sanitizer import (
    SchemaCapability,
    SchemaInvariantError,
    SchemaRefCycleError,
    SchemaRefError,
    SchemaRewriteError,
    ToolSchemaError,
    ToolShapeError,
)
from capplan.executor.policies.strict_schema import StrictSchema, is_decimal_idiom

FIXTURES = Path(__file__).parent / "fixtures"
DECIMAL_PATTERN = "^(?!^[-+.]*$)[+-]?0*\\d*\\.?\\d*$"


def load(name: str) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = json.loads((FIXTURES / name).read_text())
    return tools


def tool(params: dict[str, Any], name: str = "t") -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": "does t", "parameters": params}}


def obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


def params_of(tools: list[dict[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = tools[0]["function"]["parameters"]
    return result


def strict(params: dict[str, Any]) -> dict[str, Any]:
    return params_of(StrictSchema().sanitize([tool(params)]))


# --- the slot contract -------------------------------------------------------------------------


def test_flags_and_names_have_the_specified_defaults() -> None:
    assert (StrictSchema.slot, StrictSchema.name) == ("schema_sanitizer", "strict")
    assert StrictSchema.KEY_FIELD == "key" and StrictSchema.VALUE_FIELD == "value"
    # carrying is capplan's default (tolokaforge's is False): docs/deviations.md
    assert StrictSchema.carry_scalar_dict_map_value is True
    assert StrictSchema.flatten_oneof_discriminator is False
    assert StrictSchema.strip_parameters_root_description is True
    assert StrictSchema.strip_re2_incompatible_patterns is True


def test_advertises_only_what_it_passes_through() -> None:
    assert StrictSchema().supported_capabilities() == {
        SchemaCapability.REGEX_PATTERN,
        SchemaCapability.DATE_TIME_FORMAT,
    }


@pytest.mark.parametrize("fixture", sorted(p.name for p in FIXTURES.glob("tools_*.json") if "recursive" not in p.name))
def test_pure_and_deterministic_on_every_fixture(fixture: str) -> None:
    tools = load(fixture)
    before = copy.deepcopy(tools)
    first = StrictSchema().sanitize(tools)
    assert tools == before
    assert json.dumps(StrictSchema().sanitize(tools)) == json.dumps(first)
    # the output shares nothing with the input: editing one cannot reach the other
    first[0]["function"]["parameters"]["properties"].clear()
    assert tools == before
    for out in StrictSchema().sanitize(tools):
        Draft202012Validator.check_schema(out["function"]["parameters"])


def test_a_tool_without_parameters_is_copied() -> None:
    bare = {"type": "function", "function": {"name": "ping"}}
    assert StrictSchema().sanitize([bare]) == [bare]


@pytest.mark.parametrize(
    "bad",
    [
        {"name": "flat", "parameters": {}},
        {"type": "function", "function": {"parameters": {}}},
        {"type": "function", "function": {"name": "p", "parameters": "object"}},
        "tool",
    ],
)
def test_a_tool_that_is_not_an_openai_function_is_refused(bad: Any) -> None:
    with pytest.raises(ToolShapeError):
        StrictSchema().sanitize([bad])


# --- $ref inlining -----------------------------------------------------------------------------


def test_refs_are_inlined_and_defs_dropped_per_tool() -> None:
    params = {
        "type": "object",
        "$defs": {"Address": obj(city={"type": "string"})},
        "properties": {"home": {"$ref": "#/$defs/Address", "description": "Where they live."}},
    }
    out = strict(params)
    assert "$defs" not in out
    # the ref's own keywords win over the definition's
    assert out["properties"]["home"] == {**obj(city={"type": "string"}), "description": "Where they live."}


def test_a_diamond_is_inlined_on_every_branch() -> None:
    params = {
        "type": "object",
        "definitions": {"Address": obj(city={"type": "string"})},
        "properties": {"home": {"$ref": "#/definitions/Address"}, "work": {"$ref": "#/definitions/Address"}},
    }
    out = strict(params)
    assert "definitions" not in out
    assert out["properties"]["home"] == out["properties"]["work"] == obj(city={"type": "string"})
    # each inlined copy is its own object, so editing one site cannot change the other
    assert out["properties"]["home"] is not out["properties"]["work"]


def test_a_recursive_ref_is_a_typed_error_naming_the_cycle() -> None:
    with pytest.raises(SchemaRefCycleError) as raised:
        StrictSchema().sanitize(load("tools_recursive.json"))
    assert raised.value.tool == "submit_tree"
    assert raised.value.chain == ("TreeNode", "TreeNode")
    assert raised.value.pointer == "/properties/root/properties/children/items"
    assert isinstance(raised.value, ValueError)


def test_an_indirect_cycle_is_caught_too() -> None:
    params = {
        "type": "object",
        "$defs": {"A": obj(b={"$ref": "#/$defs/B"}), "B": obj(a={"$ref": "#/$defs/A"})},
        "properties": {"start": {"$ref": "#/$defs/A"}},
    }
    with pytest.raises(SchemaRefCycleError, match="A -> B -> A"):
        strict(params)


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("#/$defs/Missing", "names no definition"),
        ("https://example.com/s.json", "not a local"),
        ("#/properties/x", "not a local"),
    ],
)
def test_a_ref_that_cannot_be_resolved_is_a_typed_error(ref: str, message: str) -> None:
    with pytest.raises(SchemaRefError, match=message):
        strict({"type": "object", "$defs": {"Other": {"type": "string"}}, "properties": {"x": {"$ref": ref}}})


def test_ref_shaped_data_is_not_inlined() -> None:
    # a property named $ref and a default that looks like a ref are data, not references
    params = obj(**{"$ref": {"type": "string", "default": {"$ref": "#/$defs/Nope"}}})
    assert strict(params) == params


# --- Decimal anyOf collapse --------------------------------------------------------------------


def test_the_decimal_idiom_collapses_to_number_keeping_description_and_bounds() -> None:
    props = params_of(StrictSchema().sanitize(load("tools_decimal.json")))["properties"]
    assert props["amount"] == {"type": "number", "description": "Amount to charge.", "title": "Amount"}
    assert props["fee"] == {"type": "number", "minimum": 0.0, "title": "Fee"}


def test_every_other_anyof_shape_is_kept() -> None:
    props = params_of(StrictSchema().sanitize(load("tools_decimal.json")))["properties"]
    # Optional[Decimal] is not the idiom: kept as a union, only its unsafe pattern goes
    assert props["discount"]["anyOf"] == [{"type": "number"}, {"type": "string"}, {"type": "null"}]
    assert props["ratio"]["anyOf"] == [{"type": "number"}, {"type": "string"}]


@pytest.mark.parametrize(
    "anyof",
    [
        [{"type": "number"}, {"type": "string"}],
        [{"type": "number"}, {"type": "string", "pattern": DECIMAL_PATTERN, "maxLength": 9}],
        [{"type": "integer"}, {"type": "string", "pattern": DECIMAL_PATTERN}],
        [{"type": "number"}, {"type": "string", "pattern": DECIMAL_PATTERN}, {"type": "null"}],
    ],
)
def test_near_misses_are_not_the_decimal_idiom(anyof: list[dict[str, Any]]) -> None:
    assert not is_decimal_idiom({"anyOf": anyof})


# --- typed dict-map -> entry array -------------------------------------------------------------


def test_an_object_valued_dict_map_becomes_an_entry_array() -> None:
    props = params_of(StrictSchema().sanitize(load("tools_dict_maps.json")))["properties"]
    levels = props["levels"]
    assert levels["type"] == "array"
    # the map's own description, then how to fill the array
    assert levels["description"] == (
        "Stock level per SKU. Provide as a JSON array of objects, each with a 'key' field as the identifier."
    )
    assert "additionalProperties" not in levels
    items = levels["items"]
    assert list(items["properties"]) == ["key", "qty", "note"]
    assert items["properties"]["key"] == {"type": "string", "description": "The map key identifier."}
    assert items["required"] == ["key", "qty"]


def test_optional_and_nested_dict_maps_are_converted_where_they_stand() -> None:
    props = params_of(StrictSchema().sanitize(load("tools_dict_maps.json")))["properties"]
    branches = props["maybe_levels"]["anyOf"]
    assert branches[0]["type"] == "array" and branches[1] == {"type": "null"}
    assert props["order"]["properties"]["lines"]["type"] == "array"


def test_a_fieldless_dict_map_carries_its_values_under_the_value_field() -> None:
    props = params_of(StrictSchema().sanitize(load("tools_dict_maps.json")))["properties"]
    assert props["counts"] == {
        "type": "array",
        "title": "Counts",
        "items": {
            "type": "object",
            "properties": {"key": {"type": "string", "description": "The map key identifier."},
                           "value": {"type": "integer", "description": "The map value."}},
            "required": ["key", "value"],
        },
    }


def test_without_value_carriage_a_fieldless_dict_map_is_left_as_declared() -> None:
    # key-only entries would drop every value; the declared map loses nothing
    class KeyOnly(StrictSchema):
        carry_scalar_dict_map_value: ClassVar[bool] = False

    props = params_of(KeyOnly().sanitize(load("tools_dict_maps.json")))["properties"]
    assert props["counts"] == {"additionalProperties": {"type": "integer"}, "title": "Counts", "type": "object"}


def test_a_carried_value_keeps_its_own_description() -> None:
    value = {"type": "integer", "description": "Units on hand."}
    out = strict(obj(counts={"type": "object", "additionalProperties": value}))
    assert out["properties"]["counts"]["items"]["properties"]["value"] == value


def test_map_bounds_key_constraints_default_and_examples_follow_the_conversion() -> None:
    value = obj(qty={"type": "integer"})
    params = obj(
        m={
            "type": "object",
            "additionalProperties": value,
            "propertyNames": {"pattern": "^SKU-"},
            "minProperties": 1,
            "maxProperties": 5,
            "default": {"SKU-1": {"qty": 1}},
            "examples": [{"SKU-2": {"qty": 2}}],
        }
    )
    m = strict(params)["properties"]["m"]
    assert m["minItems"] == 1 and m["maxItems"] == 5
    assert m["items"]["properties"]["key"] == {"type": "string", "pattern": "^SKU-",
                                               "description": "The map key identifier."}
    assert m["default"] == [{"key": "SKU-1", "qty": 1}]
    assert m["examples"] == [[{"key": "SKU-2", "qty": 2}]]


def test_renamed_key_field_and_its_collision() -> None:
    class Named(StrictSchema):
        KEY_FIELD: ClassVar[str] = "sku"

    params = obj(m={"type": "object", "additionalProperties": obj(qty={"type": "integer"})})
    assert "sku" in params_of(Named().sanitize([tool(params)]))["properties"]["m"]["items"]["properties"]
    clash = obj(m={"type": "object", "additionalProperties": obj(key={"type": "string"})})
    with pytest.raises(SchemaRewriteError, match="already have a field named 'key'"):
        strict(clash)


def test_a_subclass_with_equal_key_and_value_fields_is_refused_at_definition() -> None:
    with pytest.raises(TypeError, match="distinct"):

        class Broken(StrictSchema):
            VALUE_FIELD: ClassVar[str] = "key"


def test_maps_with_named_properties_and_the_parameters_root_are_not_converted() -> None:
    mixed = {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "integer"}}
    assert strict(obj(m=mixed))["properties"]["m"] == mixed
    root = {"type": "object", "additionalProperties": obj(qty={"type": "integer"})}
    assert strict(root) == root


# --- RE2 pattern strip, root description, verbatim -------------------------------------------


def test_only_re2_incompatible_patterns_are_removed() -> None:
    params = obj(
        sku={"type": "string", "pattern": "^SKU-[A-Z0-9]+$"},
        ahead={"type": "string", "pattern": "^(?=.*\\d).+$"},
        backref={"type": "string", "pattern": "^(a)\\1$"},
    )
    props = strict(params)["properties"]
    assert props["sku"]["pattern"] == "^SKU-[A-Z0-9]+$"
    assert props["ahead"] == {"type": "string"} and props["backref"] == {"type": "string"}


def test_the_root_description_goes_and_nested_descriptions_stay() -> None:
    params = {**obj(x={"type": "string", "description": "kept"}), "description": "Input model for t."}
    out = strict(params)
    assert "description" not in out and out["properties"]["x"]["description"] == "kept"


def test_everything_else_is_copied_verbatim() -> None:
    params = obj(
        a={"type": "string", "title": "A", "examples": ["x"], "format": "date-time", "minLength": 1, "maxLength": 9},
        b={"type": "integer", "minimum": 0, "maximum": 9, "default": 3, "enum": [1, 3]},
        c={"type": "object", "additionalProperties": False, "minProperties": 1, "properties": {}},
        d={"type": "object", "additionalProperties": True, "x-owner": {"team": "billing"}},
        e={"anyOf": [{"type": "string"}, {"type": "null"}]},
    )
    assert strict(params) == params


# --- post-condition ----------------------------------------------------------------------------


def test_invariants_catch_a_required_name_without_its_property() -> None:
    broken = tool({"type": "object", "properties": {"a": obj(b={"type": "string"})}, "required": ["a"]})
    broken["function"]["parameters"]["properties"]["a"]["required"] = ["b", "title"]
    with pytest.raises(SchemaInvariantError) as raised:
        StrictSchema().validate_invariants(broken)
    assert raised.value.pointer == "/properties/a" and "['title']" in str(raised.value)
    assert isinstance(raised.value, ValueError)


@pytest.mark.parametrize("keyword, value, fix", [
    ("allOf", [{"type": "string"}], "merge its branches"),
    ("default", "x", "state the default in the description"),
])
def test_a_strict_tool_with_a_keyword_strict_validators_refuse_is_refused_where_it_stands(
        keyword: str, value: Any, fix: str) -> None:
    # OpenAI answers "In context=('properties', 'v'), 'allOf' is not permitted." for every call
    # (conformance rule openai.strict_keyword_not_permitted); refused here, the place is named once
    params = {"type": "object", "properties": {"v": {"type": "string", keyword: value}}, "required": ["v"],
              "additionalProperties": False}
    asked = tool(params)
    asked["function"]["strict"] = True
    with pytest.raises(SchemaInvariantError) as raised:
        StrictSchema().sanitize([asked])
    assert raised.value.pointer == "/properties/v"
    assert repr(keyword) in str(raised.value) and fix in str(raised.value) and "drop strict: true" in str(raised.value)
    # a property *named* like the keyword is a property, and the keyword outside strict mode is kept
    named = {"type": "object", "properties": {keyword: {"type": "string"}}, "required": [keyword],
             "additionalProperties": False}
    named_tool = tool(named)
    named_tool["function"]["strict"] = True
    assert params_of(StrictSchema().sanitize([named_tool])) == named
    assert strict(params)["properties"]["v"][keyword] == value


def test_sanitising_refuses_input_whose_required_names_no_property() -> None:
    with pytest.raises(SchemaInvariantError, match="required names \\['y'\\]"):
        strict({"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x", "y"]})


def test_required_only_branches_are_not_object_schemas() -> None:
    # "at least one of" idiom: the branches constrain the parent's properties
    params = {**obj(a={"type": "string"}, b={"type": "string"}), "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}
    assert strict(params) == params


def test_invariants_catch_an_unsafe_regex_anywhere() -> None:
    unsafe = tool(obj(x={"type": "string", "pattern": "(?<!a)b"}))
    with pytest.raises(SchemaInvariantError, match="RE2-incompatible pattern"):
        StrictSchema().validate_invariants(unsafe)
    keyed = obj(m={"type": "object", "patternProperties": {"^(?!tmp_)": {"type": "string"}}})
    with pytest.raises(SchemaInvariantError, match="patternProperties name"):
        strict(keyed)


def test_invariants_catch_a_surviving_ref_from_an_overridden_hook() -> None:
    class Lazy(StrictSchema):
        @classmethod
        def inline_refs_in_tool(cls, tool: dict[str, Any]) -> dict[str, Any]:
            return tool

    with pytest.raises(SchemaInvariantError, match="survived inlining"):
        Lazy().sanitize([tool({"type": "object", "properties": {"x": {"$ref": "#/$defs/X"}}})])


def test_every_failure_is_a_value_error_naming_the_tool() -> None:
    for exc in (SchemaRefError, SchemaRefCycleError, SchemaRewriteError, SchemaInvariantError, ToolShapeError):
        assert issubclass(exc, ToolSchemaError) and issubclass(exc, ValueError)
    with pytest.raises(ToolSchemaError, match=r"^tool 'named': "):
        StrictSchema().sanitize([tool({"type": "object", "properties": {"x": {"$ref": "#/$defs/X"}}}, name="named")])


def test_an_inline_hook_from_outside_capplan_is_handed_a_copy_and_a_shipped_one_the_callers_tool(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from capplan.executor.families import gemini
    from capplan.executor.families.cohere import CohereRecursiveSchema
    from capplan.executor.families.gemini import GeminiRecursiveSchema, GeminiSchema
    from capplan.executor.families.xai import XaiGrokRecursiveSchema
    from capplan.executor.policies import strict_schema

    class Scribbling(StrictSchema):
        name: ClassVar[str] = "scribbling"

        @classmethod
        def inline_refs_in_tool(cls, tool: dict[str, Any]) -> dict[str, Any]:
            tool["function"]["parameters"]["x-scribbled"] = True
            return super().inline_refs_in_tool(tool)

    tools = load("tools_dict_maps.json")
    before = copy.deepcopy(tools)
    (out,) = Scribbling().sanitize(tools)
    assert tools == before and out["function"]["parameters"]["x-scribbled"] is True

    # which tool object reaches the inlining: the caller's own unless the hook comes from elsewhere
    handed: list[bool] = []
    given: list[dict[str, Any]] = []
    real = strict_schema.inline_tool_refs

    def spy(tool: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        handed.append(tool is given[0])
        return real(tool, **kwargs)

    monkeypatch.setattr(strict_schema, "inline_tool_refs", spy)
    monkeypatch.setattr(gemini, "inline_tool_refs", spy)
    for family in (StrictSchema, GeminiSchema, GeminiRecursiveSchema, XaiGrokRecursiveSchema, CohereRecursiveSchema):
        handed.clear()
        given[:] = [copy.deepcopy(tools[0])]
        family().sanitize(given)
        assert handed == [True], family.__name__
    handed.clear()
    given[:] = [copy.deepcopy(tools[0])]
    Scribbling().sanitize(given)
    assert handed == [False] and "x-scribbled" not in given[0]["function"]["parameters"]


def test_every_registered_sanitiser_leaves_its_input_alone() -> None:
    # what lets StrictSchema hand a shipped inline hook the caller's own tool dicts
    from capplan.executor.registry import policy_class, registered_names

    cases = [load(p.name) for p in sorted(FIXTURES.glob("tools_*.json"))]
    for name in registered_names("schema_sanitizer"):
        sanitizer = policy_class("schema_sanitizer", name)()
        for tools in cases:
            before = copy.deepcopy(tools)
            try:
                sanitizer.sanitize(tools)
            except ToolSchemaError:
                pass
            assert tools == before, name


def test_the_inlined_tool_keeps_its_key_order_and_shares_nothing_with_the_input() -> None:
    from capplan.executor.policies.strict_schema import inline_tool_refs

    tool = {
        "type": "function",
        "function": {
            "name": "t",
            "parameters": {"$defs": {"X": {"type": "string", "enum": ["a"]}}, "properties": {"x": {"$ref": "#/$defs/X"}}},
            "strict": True,
            "x-extra": {"k": [1]},
        },
        "x-tool": ["v"],
    }
    before = copy.deepcopy(tool)
    out = inline_tool_refs(tool, on_cycle=lambda ref, chain, path: {})
    assert json.dumps(out) == json.dumps({
        "type": "function",
        "function": {"name": "t", "parameters": {"properties": {"x": {"type": "string", "enum": ["a"]}}},
                     "strict": True, "x-extra": {"k": [1]}},
        "x-tool": ["v"],
    })
    out["function"]["x-extra"]["k"].append(2)
    out["x-tool"].append("w")
    out["function"]["parameters"]["properties"]["x"]["enum"].append("b")
    assert tool == before


def _outcome(sanitizer: StrictSchema, tools: list[dict[str, Any]]) -> str:
    try:
        return json.dumps(sanitizer.sanitize(tools))
    except ToolSchemaError as exc:
        return f"{type(exc).__name__}: {exc}"


def _nested(levels: int) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "string", "description": "{not a dict}"}
    for _ in range(levels):
        node = {"type": "object", "properties": {"a": node}, "required": ["a"]}
    return {"type": "function", "function": {"name": "deep", "parameters": node}}


@pytest.mark.fast_side
@pytest.mark.parametrize("family", ["strict", "gemini", "gemini_recursive"])
def test_a_schema_without_refs_comes_out_as_the_walk_makes_it(family: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # the C copy taken for ref-free schemas must give exactly what the inlining walk gives,
    # errors included, at and around the walk's depth limit and for a subschema used twice
    from capplan.executor.policies import strict_schema
    from capplan.executor.registry import policy_class

    shared = {"type": "object", "properties": {"city": {"type": "string"}}}
    cases = [load(name) for name in sorted(p.name for p in FIXTURES.glob("tools_*.json"))]
    cases += [[_nested(n)] for n in (1, 30, 31, 32, 33, 63, 64, 65, 66)]
    cases.append([{"type": "function", "function": {"name": "two", "parameters": {
        "type": "object", "properties": {"home": shared, "work": shared}, "default": {"home": {"city": "$ref"}}}}}])
    sanitizer = policy_class("schema_sanitizer", family)()
    small = _nested(31)["function"]["parameters"]
    copied = strict_schema.copy_if_no_refs_within_limits(small)
    assert copied is not None and copied == small and copied is not small
    assert copied["properties"] is not small["properties"]
    assert strict_schema.copy_if_no_refs_within_limits(_nested(64)["function"]["parameters"]) is None
    assert strict_schema.copy_if_no_refs_within_limits({"properties": {"x": {"$ref": "#/$defs/X"}}}) is None
    fast = [_outcome(sanitizer, copy.deepcopy(tools)) for tools in cases]
    monkeypatch.setattr(strict_schema, "copy_if_no_refs_within_limits", lambda body: None)
    assert [_outcome(sanitizer, copy.deepcopy(tools)) for tools in cases] == fast
    assert any("deeper than" in outcome for outcome in fast) and any(o.startswith("[") for o in fast)

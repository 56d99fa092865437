"""The built-in response policies, their public helpers, and the ``param_types`` map."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from capplan.executor.policies.dict_maps import DICT_MAP, DICT_MAP_VALUE, find_additional_properties
from capplan.executor.policies.response_policy import (
    ArrayDictMapResponse,
    JsonCoerceResponse,
    StandardResponse,
    UnwrapInputResponse,
    coerce_empty_containers,
    coerce_json_strings,
    param_types_from_tools,
)
from capplan.executor.policies.schema_sanitizer import ToolShapeError

FIXTURES = Path(__file__).parent / "fixtures"


def fixture(name: str) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = json.loads((FIXTURES / name).read_text())
    return tools


# --- param_types -------------------------------------------------------------------------------


def test_param_types_label_dict_maps_through_refs_and_optional() -> None:
    assert param_types_from_tools(fixture("tools_dict_maps.json")) == {
        "set_inventory": {
            "levels": DICT_MAP,
            "counts": DICT_MAP_VALUE,
            "maybe_levels": DICT_MAP,
            "order": "object",
            "order.lines": DICT_MAP,
            "metadata": "object",
        }
    }


def test_param_types_see_through_decimal_optional_and_unions() -> None:
    # Optional[Decimal] and Union[float, str] have no single type, so no repair may assume one
    assert param_types_from_tools(fixture("tools_decimal.json"))["charge"] == {"amount": "number", "fee": "number"}
    types = param_types_from_tools(fixture("tools_discriminated_union.json"))["file_item"]
    assert types == {"item": "object", "bare": "object", "by_id": DICT_MAP_VALUE}
    assert param_types_from_tools(fixture("tools_keyword_names.json"))["create_case"]["description"] == "string"


def test_param_types_cover_tools_without_parameters_and_refuse_duplicates() -> None:
    ping = {"type": "function", "function": {"name": "ping"}}
    assert param_types_from_tools([ping]) == {"ping": {}}
    with pytest.raises(ToolShapeError, match="share this name"):
        param_types_from_tools([ping, ping])


def test_find_additional_properties_handles_optional_shapes() -> None:
    typed = {"type": "integer"}
    assert find_additional_properties({"type": "object", "additionalProperties": typed}) == typed
    assert (
        find_additional_properties({"anyOf": [{"type": "object", "additionalProperties": typed}, {"type": "null"}]})
        == typed
    )
    assert find_additional_properties({"oneOf": [{"type": "null"}, {"additionalProperties": True}]}) is True
    assert find_additional_properties({"anyOf": [{"additionalProperties": False}, {"type": "null"}]}) is False
    assert find_additional_properties({"type": "string"}) is None


# --- helpers -----------------------------------------------------------------------------------


def test_coerce_json_strings_decodes_containers_only() -> None:
    args = {"a": '["x", "y"]', "o": '  {"k": 1}', "n": "42", "t": "true", "s": "plain", "bad": "[not json", "x": 3}
    assert coerce_json_strings(args) == {
        "a": ["x", "y"],
        "o": {"k": 1},
        "n": "42",
        "t": "true",
        "s": "plain",
        "bad": "[not json",
        "x": 3,
    }


def test_coerce_json_strings_respects_a_declared_string() -> None:
    args = {"payload": '{"raw": true}', "items": '["a"]'}
    assert coerce_json_strings(args, param_types={"payload": "string", "items": "array"}) == {
        "payload": '{"raw": true}',
        "items": ["a"],
    }


def test_coerce_empty_containers_follows_declared_types() -> None:
    args = {"a": "", "o": "", "m": "", "v": "", "s": "", "u": ""}
    types = {"a": "array", "o": "object", "m": DICT_MAP, "v": DICT_MAP_VALUE, "s": "string"}
    assert coerce_empty_containers(args, types) == {"a": [], "o": {}, "m": {}, "v": {}, "s": "", "u": ""}
    assert coerce_empty_containers(args, None) == args


# --- policies ----------------------------------------------------------------------------------


def test_standard_is_a_no_op_copy() -> None:
    args = {"a": '["x"]'}
    out = StandardResponse().parse_arguments(args, param_types={"a": "array"})
    assert out == args and out is not args


def test_unwrap_input_removes_only_the_envelope() -> None:
    policy = UnwrapInputResponse()
    assert policy.parse_arguments({"input": {"city": "Oslo"}}) == {"city": "Oslo"}
    assert policy.parse_arguments({"input": {"a": 1}, "b": 2}) == {"input": {"a": 1}, "b": 2}
    assert policy.parse_arguments({"input": "text"}) == {"input": "text"}
    # a tool that declares `input` keeps it
    assert policy.parse_arguments({"input": {"a": 1}}, param_types={"input": "object"}) == {"input": {"a": 1}}


def test_json_coerce_repairs_stringified_and_empty_containers() -> None:
    out = JsonCoerceResponse().parse_arguments(
        {"equipment": "", "tags": '["a"]', "id": "007"},
        param_types={"equipment": "array", "tags": "array", "id": "string"},
    )
    assert out == {"equipment": [], "tags": ["a"], "id": "007"}


def test_array_dict_map_pivots_declared_maps_only() -> None:
    policy = ArrayDictMapResponse()
    args = {
        "levels": [{"key": "A", "qty": 1}, {"key": "B", "qty": 2, "note": None}],
        "counts": [{"key": "A", "value": 3}],
        "rows": [{"key": "A", "qty": 1}],
    }
    types = {"levels": DICT_MAP, "counts": DICT_MAP_VALUE, "rows": "array"}
    before = copy.deepcopy(args)
    assert policy.parse_arguments(args, param_types=types) == {
        "levels": {"A": {"qty": 1}, "B": {"qty": 2, "note": None}},
        "counts": {"A": 3},
        "rows": [{"key": "A", "qty": 1}],
    }
    assert args == before
    # without declarations a list of {key, ...} is indistinguishable from real data
    assert policy.parse_arguments(args) == args


def test_array_dict_map_composes_json_coerce_and_reaches_one_level_in() -> None:
    policy = ArrayDictMapResponse()
    args = {
        "levels": '[{"key": "A", "qty": 1}]',
        "order": {"customer": "c", "lines": [{"key": "L1", "qty": 2}]},
        "m": "",
    }
    types = {"levels": DICT_MAP, "order": "object", "order.lines": DICT_MAP, "m": DICT_MAP}
    assert policy.parse_arguments(args, param_types=types) == {
        "levels": {"A": {"qty": 1}},
        "order": {"customer": "c", "lines": {"L1": {"qty": 2}}},
        "m": {},
    }


@pytest.mark.parametrize(
    "emitted",
    [
        [{"key": "A", "qty": 1}, {"key": "A", "qty": 2}],  # a repeated key: which one wins is a guess
        [{"key": "A", "qty": 1}, {"qty": 2}],  # an entry without its key
        [{"key": ["A"], "qty": 1}],
        ["A"],
        {"A": {"qty": 1}},  # already the native shape
    ],
)
def test_array_dict_map_keeps_what_it_cannot_pivot_faithfully(emitted: Any) -> None:
    out = ArrayDictMapResponse().parse_arguments({"levels": emitted}, param_types={"levels": DICT_MAP})
    assert out == {"levels": emitted}


def test_integer_keys_become_strings_and_flattened_union_entries_keep_their_fields() -> None:
    out = ArrayDictMapResponse().parse_arguments(
        {"by_id": [{"key": 7, "kind": "chat", "channel": "web"}, {"key": "t1", "value": {"kind": "ticket"}}]},
        param_types={"by_id": DICT_MAP_VALUE},
    )
    assert out == {"by_id": {"7": {"kind": "chat", "channel": "web"}, "t1": {"kind": "ticket"}}}

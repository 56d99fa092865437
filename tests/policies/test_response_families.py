"""Per-family response policies: Gemini's carried-value unwrap and MiniMax-M3's tags recovery."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from capplan.executor.families.gemini import ScalarArrayDictMapResponse
from capplan.executor.families.minimax import (
    ARRAY_SITES,
    MAX_ITEM_DEPTH,
    ItemRecursiveUnwrapResponse,
    JsonRecursiveCoerceResponse,
    MinimaxM3TagRecoveryResponse,
    unwrap_item_wrappers,
)
from capplan.executor.policies.dict_maps import DICT_MAP, DICT_MAP_VALUE
from capplan.executor.policies.response_policy import ArrayDictMapResponse, ResponsePolicy

# --- Gemini: carried values --------------------------------------------------------------------


def test_scalar_array_dict_map_extends_array_dict_map() -> None:
    assert issubclass(ScalarArrayDictMapResponse, ArrayDictMapResponse)
    assert ScalarArrayDictMapResponse.name == "scalar_array_dict_map"


def test_native_shape_with_the_wrapper_kept_is_unwrapped_for_fieldless_maps() -> None:
    policy = ScalarArrayDictMapResponse()
    types = {"counts": DICT_MAP_VALUE, "order": "object", "order.stock": DICT_MAP_VALUE}
    args = {"counts": {"A": {"value": 10}, "B": 4}, "order": {"stock": {"X": {"value": 1}}}}
    before = copy.deepcopy(args)
    assert policy.parse_arguments(args, param_types=types) == {
        "counts": {"A": 10, "B": 4},
        "order": {"stock": {"X": 1}},
    }
    assert args == before


def test_entry_arrays_are_pivoted_and_unwrapped_in_one_pass() -> None:
    out = ScalarArrayDictMapResponse().parse_arguments(
        {"counts": '[{"key": "A", "value": 10}]'}, param_types={"counts": DICT_MAP_VALUE}
    )
    assert out == {"counts": {"A": 10}}


def test_object_valued_maps_whose_objects_have_a_value_field_are_left_alone() -> None:
    # Dict[str, Wrapper] where Wrapper has one field named `value`: the wrapper is the data
    args = {"prices": [{"key": "A", "value": 3}], "wrapped": {"B": {"value": 4}}}
    out = ScalarArrayDictMapResponse().parse_arguments(args, param_types={"prices": DICT_MAP, "wrapped": DICT_MAP})
    assert out == {"prices": {"A": {"value": 3}}, "wrapped": {"B": {"value": 4}}}


def test_multi_field_entries_and_undeclared_params_are_untouched() -> None:
    args = {"counts": {"A": {"value": 1, "unit": "kg"}}, "other": {"A": {"value": 1}}}
    out = ScalarArrayDictMapResponse().parse_arguments(args, param_types={"counts": DICT_MAP_VALUE})
    assert out == args
    assert ScalarArrayDictMapResponse().parse_arguments(args) == args


# --- MiniMax-M3: tags ---------------------------------------------------------------------------

M3 = MinimaxM3TagRecoveryResponse()


def test_sites_are_the_documented_allowlist() -> None:
    assert {("updates", "tags"), ("item", "tags")} == ARRAY_SITES


@pytest.mark.parametrize(
    ("tags", "expected"),
    [
        ({"item": "receipt-issued"}, ["receipt-issued"]),
        ({"item": ["a", "b"]}, ["a", "b"]),
        ({"item": {"item": "a"}}, ["a"]),
        ('["receipt-issued"]', ["receipt-issued"]),
        ('{"item": "a"}', ["a"]),
        ("", []),
        (["a", "b"], ["a", "b"]),
        ([], []),
        (None, None),
        ("vip", "vip"),
        ({"item": "a", "refund-requested": ""}, {"item": "a", "refund-requested": ""}),
    ],
)
@pytest.mark.parametrize("parent", ["updates", "item"])
def test_tags_recovery_at_each_site(parent: str, tags: Any, expected: Any) -> None:
    args = {parent: {"tags": tags, "status": ""}, "ticket_id": "42"}
    before = copy.deepcopy(args)
    assert M3.parse_arguments(args) == {parent: {"tags": expected, "status": ""}, "ticket_id": "42"}
    assert args == before


def test_nothing_outside_the_sites_is_touched() -> None:
    args = {
        "tags": "",
        "keyword": "",
        "employee_id": "",
        "note": {"item": "x"},
        "updates": {"labels": ""},
        "item": "tags",
    }
    assert M3.parse_arguments(args, param_types={"tags": "array"}) == args


def test_the_stages_run_coerce_then_unwrap_and_work_alone() -> None:
    assert [type(s) for s in M3.stages] == [JsonRecursiveCoerceResponse, ItemRecursiveUnwrapResponse]
    wrapped_string = {"updates": {"tags": '{"item": "a"}'}}
    assert JsonRecursiveCoerceResponse().parse_arguments(wrapped_string) == {"updates": {"tags": {"item": "a"}}}
    assert ItemRecursiveUnwrapResponse().parse_arguments(wrapped_string) == wrapped_string
    assert all(isinstance(s, ResponsePolicy) for s in M3.stages)


def test_pathological_nesting_is_returned_as_emitted() -> None:
    deep: Any = "a"
    for _ in range(MAX_ITEM_DEPTH + 1):
        deep = {"item": deep}
    assert unwrap_item_wrappers(deep) is deep
    shallow: Any = "a"
    for _ in range(MAX_ITEM_DEPTH):
        shallow = {"item": shallow}
    assert unwrap_item_wrappers(shallow) == ["a"]

"""Seam *plain validity*: the quick check says "valid" only where jsonschema finds nothing, and the
validator built on it reports exactly what jsonschema reports."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from capplan.executor.plain_validity import QuickValidator, quick_check

REPO = Path(__file__).resolve().parents[2]

TYPES = ["object", "array", "string", "integer", "number", "boolean", "null"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([0.0, 1.0, -2.0, 1e300, 3]) | st.text(max_size=6) | st.sampled_from(["a", "b", "red"]),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.sampled_from(["a", "b", "c", "n", "x"]),
                                                                      children, max_size=4),
    max_leaves=12,
)

annotations = st.fixed_dictionaries({}, optional={"description": st.text(max_size=5), "title": st.just("T"),
                                                  "default": json_values, "format": st.sampled_from(["date", "email"]),
                                                  "examples": st.just([1])})


def _with(base: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.tuples(base, annotations).map(lambda pair: {**pair[1], **pair[0]})


schemas = st.recursive(
    _with(st.fixed_dictionaries({}, optional={
        "type": st.sampled_from(TYPES) | st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True),
        "enum": st.lists(st.sampled_from(["a", "b", "red", "1"]), min_size=1, max_size=3, unique=True),
    })),
    lambda children: _with(st.fixed_dictionaries({}, optional={
        "type": st.sampled_from(["object", "array"]),
        "properties": st.dictionaries(st.sampled_from(["a", "b", "c", "n"]), children, max_size=3),
        "required": st.lists(st.sampled_from(["a", "b", "c", "n"]), max_size=3, unique=True),
        "additionalProperties": st.booleans() | children,
        "items": children,
        # keywords the check does not model: the whole schema is left to jsonschema
        "minimum": st.integers(0, 3),
        "maxLength": st.integers(0, 3),
        "pattern": st.just("^a"),
    })),
    max_leaves=8,
)


def _errors(validator: Any, instance: Any) -> list[tuple[str, str]]:
    return sorted(("/".join(map(str, e.absolute_path)), e.message) for e in validator.iter_errors(instance))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schemas, json_values)
def test_a_quick_yes_is_always_jsonschemas_yes(schema: dict[str, Any], instance: Any) -> None:
    plain = Draft202012Validator(schema)
    check = quick_check(schema)
    if check is not None and check(instance):
        assert not list(plain.iter_errors(instance)), (schema, instance)
    assert _errors(QuickValidator(plain, check), instance) == _errors(plain, instance)


EDGE_VALUES = [True, False, 0, 1, -7, 10**30, 0.0, 1.0, -2.0, 1.5, float("nan"), float("inf"), "", "1", "kg",
               None, [], [1], {}, {"a": 1}]


@pytest.mark.fast_side
@pytest.mark.parametrize("name", TYPES)
def test_each_type_name_is_read_as_jsonschema_reads_it(name: str) -> None:
    check = quick_check({"type": name})
    assert check is not None
    plain = Draft202012Validator({"type": name})
    for value in EDGE_VALUES:  # a type alone: the quick answer is jsonschema's, both ways
        assert check(value) == plain.is_valid(value), (name, value)


TOOL = {"type": "object", "properties": {
    "n": {"type": "integer", "description": "how many"},
    "unit": {"type": "string", "enum": ["kg", "lb"]},
    "tags": {"type": "array", "items": {"type": "string"}},
    "where": {"type": ["object", "null"], "properties": {"lat": {"type": "number"}}, "required": ["lat"],
              "additionalProperties": False},
}, "required": ["n", "unit", "tags", "where"], "additionalProperties": False}


@pytest.mark.fast_side
@pytest.mark.parametrize("instance", [
    {"n": 3, "unit": "kg", "tags": [], "where": None},
    {"n": 3.0, "unit": "lb", "tags": ["a", "b"], "where": {"lat": 1.5}},
    {"n": -1, "unit": "kg", "tags": ["x"], "where": {"lat": 0}},
])
def test_a_valid_call_of_a_plain_tool_schema_takes_the_quick_way(instance: dict[str, Any]) -> None:
    check = quick_check(TOOL)
    assert check is not None and check(instance)


@pytest.mark.fast_side
@pytest.mark.parametrize("instance", [
    {"n": True, "unit": "kg", "tags": [], "where": None},  # a bool is not an integer
    {"n": 3.5, "unit": "kg", "tags": [], "where": None},
    {"n": 3, "unit": "KG", "tags": [], "where": None},
    {"n": 3, "unit": "kg", "tags": [1], "where": None},
    {"n": 3, "unit": "kg", "tags": [], "where": {"lat": "1"}},
    {"n": 3, "unit": "kg", "tags": [], "where": {"lat": 1, "lon": 2}},
    {"n": 3, "unit": "kg", "tags": []},
    {"n": 3, "unit": "kg", "tags": [], "where": None, "extra": 1},
    [], "text", None,
])
def test_every_violation_is_worded_by_jsonschema(instance: Any) -> None:
    plain = Draft202012Validator(TOOL)
    check = quick_check(TOOL)
    assert check is not None and not check(instance)
    found = _errors(QuickValidator(plain, check), instance)
    assert found and found == _errors(plain, instance)


@pytest.mark.parametrize("schema", [
    {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object"},
    {"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}, "$defs": {"x": {}}},
    {"type": "string", "pattern": "^a"},
    {"type": "integer", "minimum": 1},
    {"type": "array", "items": [{"type": "string"}]},
    {"type": "array", "items": False},
    {"type": "widget"},
    {"type": []},
    {"enum": [1, 2]},
    {"enum": []},
    {"properties": {"a": {"type": "string"}}, "required": "a"},
    "not a schema",
])
def test_a_schema_it_does_not_model_is_left_to_jsonschema(schema: Any) -> None:
    assert quick_check(schema) is None


@pytest.mark.fast_side
def test_a_schema_nested_past_the_bound_is_left_to_jsonschema() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(40):
        schema = {"type": "array", "items": schema}
    assert quick_check(schema) is None
    shallow: dict[str, Any] = {"type": "array", "items": {"type": "array"}}
    assert quick_check(shallow) is not None


def test_the_reference_mode_never_takes_the_quick_way() -> None:
    code = "from capplan.executor.plain_validity import quick_check; print(quick_check({'type': 'object'}))"
    env = {**os.environ, "CAPPLAN_REFERENCE": "1", "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "None"

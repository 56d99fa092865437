"""The tool memo's first build: tools read off validated specs, verdicts kept by schema content."""

from __future__ import annotations

import copy
import json
import math
from typing import Any, ClassVar

import pytest

from capplan.executor.client import Client
from capplan.executor.messages import ChatRequest, ToolSpec
from capplan.executor.policies.schema_sanitizer import (
    PassthroughSchema,
    SchemaCapability,
    ToolSchemaSanitizer,
    rewrites,
)
from capplan.executor.policies.strict_schema import StrictSchema
from capplan.executor.tool_memo import CHECKED_SCHEMAS, InvalidToolSchemaError, ToolMemo, content_key
from tests.executor.plans import make_plan

USER = [{"role": "user", "content": "x"}]


def tool(name: str, parameters: dict[str, Any], **function: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, **function, "parameters": parameters}}


LOOKUP = tool(
    "lookup",
    {"type": "object", "properties": {"id": {"type": "string", "enum": ["a", "b"]}}, "required": ["id"]},
    description="Find a record.",
)
PING = tool("ping", {"type": "object", "properties": {}, "additionalProperties": False}, strict=True)


def request(*tools: dict[str, Any]) -> ChatRequest:
    return ChatRequest.model_validate({"tools": list(tools), "messages": USER})


@pytest.mark.parametrize("sanitizer", ["passthrough", "strict"])
def test_the_first_build_reads_the_specs_as_their_json_would(sanitizer: str) -> None:
    # what the serialise-and-parse round trip gave, key for key and in the same order
    req = request(LOOKUP, PING, tool("bare", {"type": "object"}))
    wire = Client(make_plan(policies={"schema_sanitizer": sanitizer}), env={}).build(req).kwargs["tools"]
    expected = json.loads(req.tools_json())
    if sanitizer == "strict":
        expected = StrictSchema().sanitize(expected)
    assert json.dumps(wire) == json.dumps(expected)


def test_parameters_that_are_not_plain_json_take_the_serialising_way() -> None:
    odd = ToolSpec.model_validate(
        tool("odd", {"type": "object", "properties": {"k": {"enum": ("a", "b")}}, "x-limits": {1: "one"}})
    )
    req = ChatRequest.model_validate({"tools": [odd], "messages": USER})
    wire = Client(make_plan(), env={}).build(req).kwargs["tools"]
    assert wire == json.loads(req.tools_json())
    params = wire[0]["function"]["parameters"]
    assert params["properties"]["k"]["enum"] == ["a", "b"] and params["x-limits"] == {"1": "one"}
    assert params is not odd.function.parameters


def test_a_nan_in_the_parameters_is_serialised_as_before() -> None:
    odd = ToolSpec.model_validate(tool("odd", {"type": "object", "default": {"v": math.nan}}))
    req = ChatRequest.model_validate({"tools": [odd], "messages": USER})
    wire = Client(make_plan(), env={}).build(req).kwargs["tools"]
    assert wire[0]["function"]["parameters"]["default"] == {"v": None} == json.loads(req.tools_json())[0][
        "function"
    ]["parameters"]["default"]


def test_the_send_path_never_reaches_the_callers_specs_on_a_verbatim_route() -> None:
    # on a passthrough route the built tools share the specs' parameter dicts; the provider call
    # gets a copy, so what it does to its kwargs reaches neither the caller nor the next request
    def completion(**kwargs: Any) -> dict[str, Any]:
        params = kwargs["tools"][0]["function"]["parameters"]
        params["properties"]["id"]["enum"].append("mutated by the transport")
        params["required"].clear()
        kwargs["tools"].append("mutated by the transport")
        return {"choices": [{"message": {"content": "ok"}}]}

    caller = copy.deepcopy(LOOKUP)
    req = request(caller)
    declared = copy.deepcopy(req.tools[0].function.parameters)
    client = Client(make_plan(), completion=completion, env={})
    before = copy.deepcopy(client.build(req).kwargs)
    client.generate(req)
    client.generate(req)
    assert req.tools[0].function.parameters == declared
    assert caller == LOOKUP
    assert client.build(req).kwargs == before
    assert Client(make_plan(), env={}).build(request(caller)).kwargs["tools"] == before["tools"]


def test_an_invalid_schema_is_refused_on_every_new_client_and_every_build() -> None:
    bad = tool("bad", {"type": "object", "properties": {"x": {"type": "dictionary"}}})
    for _ in range(2):
        client = Client(make_plan(), env={})
        for _ in range(2):
            with pytest.raises(InvalidToolSchemaError, match="bad"):
                client.build(request(bad))


def test_the_check_tells_apart_schemas_that_differ_only_in_a_value_type() -> None:
    # 1 and True are equal in Python; as minProperties one is valid and the other is not
    good = tool("counted", {"type": "object", "minProperties": 1})
    bad = tool("counted", {"type": "object", "minProperties": True})
    assert content_key(good["function"]["parameters"]) != content_key(bad["function"]["parameters"])
    Client(make_plan(), env={}).build(request(good))
    with pytest.raises(InvalidToolSchemaError, match="/minProperties"):
        Client(make_plan(), env={}).build(request(bad))


def test_the_check_refuses_an_invalid_schema_whose_valid_twin_was_checked_with_other_sharing() -> None:
    shared = {"type": "string"}
    twin = {"type": "object", "properties": {"a": shared, "b": shared}}
    CHECKED_SCHEMAS.check({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}})
    CHECKED_SCHEMAS.check(twin)
    with pytest.raises(InvalidToolSchemaError, match="/properties/b/type"):
        Client(make_plan(), env={}).build(request(tool("t", {**twin, "properties": {"a": shared, "b": {"type": 7}}})))


def test_a_sanitiser_that_defines_sanitize_rewrites_unless_it_says_otherwise() -> None:
    class Renaming(PassthroughSchema):
        name: ClassVar[str] = "renaming"

        def sanitize(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return [{**t, "function": {**t["function"], "name": "renamed"}} for t in tools]

    class Verbatim(PassthroughSchema):
        name: ClassVar[str] = "verbatim"

    class Own(ToolSchemaSanitizer):
        name: ClassVar[str] = "own"

        def sanitize(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return copy.deepcopy(tools)

        def supported_capabilities(self) -> frozenset[SchemaCapability]:
            return frozenset()

    assert not rewrites(PassthroughSchema()) and not rewrites(Verbatim())
    assert rewrites(Renaming()) and rewrites(StrictSchema()) and rewrites(Own())
    # and the memo a builder makes follows it: a rewriting sanitiser is called, a verbatim one is not
    for sanitizer, called in ((Renaming(), True), (Verbatim(), False)):
        memo = ToolMemo(sanitizer.sanitize, lambda tools: {}, verbatim=not rewrites(sanitizer))
        name = memo.prepare(request(LOOKUP).tools_json()).shared()[0]["function"]["name"]
        assert (name == "renamed") is called


@pytest.mark.fast_side
def test_a_verbatim_memo_never_calls_the_sanitiser_and_hands_on_the_declared_list() -> None:
    def refuse(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        raise AssertionError("a verbatim memo has nothing to sanitise")

    req = request(LOOKUP)
    prepared = ToolMemo(refuse, lambda tools: {}, verbatim=True).prepare_objects(req.tools, req.tools_json)
    assert prepared.shared() is prepared.declared_shared()
    assert prepared.shared()[0]["function"]["parameters"] is req.tools[0].function.parameters
    # the copies it gives out are the caller's to edit
    fresh = prepared.declared()
    fresh[0]["function"]["parameters"]["properties"].clear()
    assert req.tools[0].function.parameters == LOOKUP["function"]["parameters"]


@pytest.mark.fast_side
def test_equal_lists_made_afresh_share_an_entry_once_a_second_list_is_seen() -> None:
    calls: list[list[str]] = []

    def sanitize(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        calls.append([t["function"]["name"] for t in tools])
        return StrictSchema().sanitize(tools)

    memo = ToolMemo(sanitize, lambda tools: {})
    first, second, again = request(LOOKUP), request(PING), request(copy.deepcopy(LOOKUP))
    a = memo.prepare_objects(first.tools, first.tools_json)
    b = memo.prepare_objects(second.tools, second.tools_json)
    assert memo.prepare_objects(again.tools, again.tools_json) is a
    assert memo.prepare_objects(first.tools, first.tools_json) is a
    assert calls == [["lookup"], ["ping"]]
    assert a.digest != b.digest and a.digest == memo.prepare_objects(again.tools, again.tools_json).digest


def test_the_digest_tells_apart_lists_that_differ_in_a_name_a_description_or_strict() -> None:
    memo = ToolMemo(StrictSchema().sanitize, lambda tools: {})
    variants = [
        LOOKUP,
        tool("lookup2", LOOKUP["function"]["parameters"], description="Find a record."),
        tool("lookup", LOOKUP["function"]["parameters"], description="Find one record."),
        # strict mode needs additionalProperties: false on every object (the sanitiser refuses it otherwise)
        tool("lookup", {**LOOKUP["function"]["parameters"], "additionalProperties": False},
             description="Find a record.", strict=True),
        tool("lookup", {**LOOKUP["function"]["parameters"], "additionalProperties": False}, description="Find a record."),
        tool("lookup", LOOKUP["function"]["parameters"]),
    ]
    digests = {memo.prepare_objects(r.tools, r.tools_json).digest for r in map(request, variants)}
    assert len(digests) == len(variants)


def test_enrichment_follows_each_tool_list() -> None:
    plan = make_plan(policies={"prompt_policy": "dict_map_hints"})
    client = Client(plan, env={})
    value = {"type": "object", "properties": {"amount": {"type": "number"}}}
    mapped = tool("set_prices", {"type": "object", "properties": {"prices": {"type": "object", "additionalProperties": value}}})
    with_map = ChatRequest.model_validate({"system": "s", "tools": [mapped], "messages": USER})
    without = ChatRequest.model_validate({"system": "s", "tools": [LOOKUP], "messages": USER})
    hinted = client.build(with_map).effective_system_prompt
    plain = client.build(without).effective_system_prompt
    assert hinted.startswith("s") and "prices" in hinted and plain == "s"
    assert client.build(with_map).effective_system_prompt == hinted


@pytest.mark.fast_side
def test_a_bounded_memo_forgets_its_oldest_entry_and_never_keeps_an_unhashable_key() -> None:
    from capplan.executor.tool_memo import BoundedMemo

    memo: BoundedMemo[Any, str] = BoundedMemo(size=2)
    memo.put("a", "A")
    memo.put("b", "B")
    memo.put("a", "A2")  # a known key is replaced in place, nothing is evicted
    assert (memo.get("a"), memo.get("b")) == ("A2", "B")
    memo.put("c", "C")
    assert (memo.get("a"), memo.get("b"), memo.get("c")) == (None, "B", "C")
    unhashable = ("settings", ["a list"])
    memo.put(unhashable, "X")
    assert memo.get(unhashable) is None and memo.get("c") == "C"


@pytest.mark.fast_side
def test_what_is_made_from_tool_objects_is_found_by_those_objects_only() -> None:
    from capplan.executor.tool_memo import PerToolObjects

    memo: PerToolObjects[str] = PerToolObjects(size=4)
    first, second = request(LOOKUP).tools, request(LOOKUP).tools
    memo.put_made(first, "system", "made")
    assert memo.get_made(first, "system") == "made"
    assert memo.get_made(list(first), "system") == "made"  # the same objects in another list
    assert memo.get_made(second, "system") is None  # equal objects made afresh are other objects
    assert memo.get_made(first, "another system") is None
    assert memo.get_made(first[::-1] * 2, "system") is None


@pytest.mark.fast_side
def test_clearing_the_tool_caches_makes_the_next_schema_check_run_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from jsonschema import validators

    from capplan.executor.tool_memo import clear_tool_caches

    schema = {"type": "object", "properties": {"cleared": {"type": "string"}}}
    CHECKED_SCHEMAS.check(schema)
    checked: list[object] = []
    real = validators.validator_for

    def counting(schema: Any, default: Any = None) -> Any:
        checked.append(schema)
        return real(schema, default=default)

    monkeypatch.setattr(validators, "validator_for", counting)
    CHECKED_SCHEMAS.check(schema)
    assert checked == []
    clear_tool_caches()
    CHECKED_SCHEMAS.check(schema)
    assert checked and checked[0] is schema

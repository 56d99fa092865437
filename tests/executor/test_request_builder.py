"""Request building in the spec's order, with the real policies a plan names."""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

import pytest

from capplan.executor.client import Client
from capplan.executor.messages import ChatRequest
from capplan.executor.policies.params_policy import ReasoningConfigError
from capplan.executor.policies.schema_sanitizer import SchemaRefCycleError
from capplan.executor.tool_memo import InvalidToolSchemaError
from capplan.executor.value_rules import RejectedValueError
from tests.executor.plans import make_plan

ANTHROPIC = {
    "content_policy": "anthropic",
    "reasoning_codec": "anthropic",
    "cache_policy": "anthropic_ephemeral",
}
LOOKUP = {
    "type": "function",
    "function": {
        "name": "lookup",
        "description": "Find a record.",
        "parameters": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
    },
}
SIGNED = {
    "blocks": [
        {"type": "thinking", "text": "step 1", "signature": "SIG-1"},
        {"type": "redacted_thinking", "encrypted_data": "ENC-1"},
    ]
}


def _build(plan: Any, request: dict[str, Any], env: dict[str, str] | None = None) -> Any:
    return Client(plan, env=env or {}).build(ChatRequest.model_validate(request))


def test_spec_cache_example_byte_for_byte() -> None:
    tc = {"id": "toolu_1", "type": "function", "function": {"name": "a", "arguments": "{}"}}
    request = {
        "system": "You are a helpful assistant.",
        "tools": [
            {"type": "function", "function": {"name": "a", "parameters": {}}},
            {"type": "function", "function": {"name": "b", "parameters": {}}},
        ],
        "messages": [
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": "thinking", "tool_calls": [tc]},
            {"role": "tool", "tool_call_id": "toolu_1", "content": "result"},
        ],
    }
    kwargs = _build(make_plan("anthropic", "claude-x", policies=ANTHROPIC), request).kwargs
    marker = {"type": "ephemeral"}
    assert kwargs["messages"] == [
        {"role": "system", "content": [{"type": "text", "text": "You are a helpful assistant.", "cache_control": marker}]},
        {"role": "user", "content": [{"type": "text", "text": "task", "cache_control": marker}]},
        {"role": "assistant", "content": "thinking", "tool_calls": [tc]},
        {"role": "tool", "tool_call_id": "toolu_1", "content": [{"type": "text", "text": "result", "cache_control": marker}]},
    ]
    assert kwargs["tools"] == [
        {"type": "function", "function": {"name": "a", "parameters": {}}},
        {"type": "function", "function": {"name": "b", "parameters": {}}, "cache_control": marker},
    ]
    assert json.dumps(kwargs).count("cache_control") == 4


def test_effective_system_prompt_is_the_plain_enriched_string() -> None:
    dict_map_tool = {
        "type": "function",
        "function": {
            "name": "set_prices",
            "parameters": {
                "type": "object",
                "properties": {
                    "prices": {
                        "type": "object",
                        "additionalProperties": {"type": "object", "properties": {"amount": {"type": "number"}}},
                    }
                },
                "required": ["prices"],
            },
        },
    }
    plan = make_plan("anthropic", "claude-x", policies={**ANTHROPIC, "prompt_policy": "dict_map_hints"})
    built = _build(plan, {"system": "Base.", "tools": [dict_map_tool], "messages": [{"role": "user", "content": "x"}]})
    assert isinstance(built.effective_system_prompt, str)
    assert built.effective_system_prompt.startswith("Base.") and "prices" in built.effective_system_prompt
    assert built.kwargs["messages"][0]["content"][0]["text"] == built.effective_system_prompt


def test_reasoning_replay_is_spliced_onto_every_assistant_turn_that_carries_it() -> None:
    call = {"id": "t1", "function": {"name": "lookup", "arguments": '{"id": "1"}'}}
    request = {
        "tools": [LOOKUP],
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "", "tool_calls": [call], "reasoning": SIGNED},
            {"role": "tool", "tool_call_id": "t1", "content": "found"},
            {"role": "assistant", "content": "done", "reasoning": {"blocks": [{"type": "thinking", "text": "", "signature": "SIG-2"}]}},
            {"role": "user", "content": "again"},
        ],
        # thinking on: with it off, Claude's history thinking is left out (test_reasoning_origin.py)
        "reasoning": {"mode": "adaptive", "effort_hint": "high"},
    }
    messages = _build(make_plan("anthropic", "claude-x", policies=ANTHROPIC), request).kwargs["messages"]
    assert messages[1]["thinking_blocks"] == [
        {"type": "thinking", "thinking": "step 1", "signature": "SIG-1"},
        {"type": "redacted_thinking", "data": "ENC-1"},
    ]
    assert messages[3]["thinking_blocks"] == [{"type": "thinking", "thinking": "", "signature": "SIG-2"}]
    # a codec without a replay contract adds nothing, whatever the history carries
    plain = _build(make_plan("openai", "gpt-x", policies={"reasoning_codec": "openai"}), request).kwargs["messages"]
    assert all("thinking_blocks" not in m for m in plain)


def test_summary_blocks_are_left_out_for_anthropic_and_recorded() -> None:
    request = {
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "ok", "reasoning": {"blocks": [{"type": "summary_text", "text": "s"}]}},
            {"role": "user", "content": "more"},
        ]
    }
    built = _build(make_plan("anthropic", "claude-x", policies=ANTHROPIC), request)
    assert built.kwargs["messages"][1] == {"role": "assistant", "content": "ok"}
    ((record),) = built.reasoning_left_out
    assert (record.message, record.block, record.type) == (1, 0, "summary_text")
    assert "no Anthropic signature" in record.reason


def test_empty_assistant_filler_is_per_instance() -> None:
    call = {"id": "t1", "function": {"name": "lookup", "arguments": "{}"}}
    request = {
        "tools": [LOOKUP],
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "  ", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "t1", "content": "r"},
        ],
    }
    default = _build(make_plan(), request).kwargs["messages"][1]
    nova = _build(make_plan(policies={"message_assembly_policy": "nova"}), request).kwargs["messages"][1]
    kimi = _build(make_plan(policies={"message_assembly_policy": ("nova", {"empty_assistant_filler": " "})}), request)
    assert default["content"] == "  "
    assert nova["content"] == "I'll help you with that."
    assert kimi.kwargs["messages"][1]["content"] == " "


def test_tool_result_images_follow_the_content_policy() -> None:
    call = {"id": "t1", "function": {"name": "lookup", "arguments": "{}"}}
    request = {
        "tools": [LOOKUP],
        "messages": [
            {"role": "user", "content": "shot"},
            {"role": "assistant", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "t1", "content": "see image", "images": [{"media_type": "image/png", "data": "iVBORw0KGgo="}]},
        ],
    }
    anthropic = _build(make_plan("anthropic", "c", policies={"content_policy": "anthropic"}), request).kwargs["messages"][-1]
    assert anthropic["content"] == [
        {"type": "text", "text": "see image"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
    ]
    openai = _build(make_plan(), request).kwargs["messages"][-1]
    assert openai["content"].startswith("see image\n\n[image 1 of 1 returned by the tool was not sent (image/png")


@pytest.mark.parametrize(
    ("params", "reasoning", "expected"),
    [
        ({}, {"mode": "adaptive", "effort_hint": "high"}, {"reasoning_effort": "high"}),
        ({"reasoning_via_extra_body": True}, {"mode": "adaptive", "effort_hint": "low"}, {"extra_body": {"reasoning": {"effort": "low", "enabled": True}}}),
        (
            {"reasoning_via_thinking_kwarg": True, "drop_sampling_when_thinking": True},
            {"mode": "budget", "budget_tokens": 4000},
            {"thinking": {"type": "enabled", "budget_tokens": 4000}},
        ),
    ],
)
def test_reasoning_routing(params: dict, reasoning: dict, expected: dict) -> None:
    kwargs = _build(
        make_plan(params=params), {"messages": [{"role": "user", "content": "x"}], "reasoning": reasoning, "temperature": 0.5, "top_p": 0.9}
    ).kwargs
    for key, value in expected.items():
        assert kwargs[key] == value
    sampling_dropped = params.get("drop_sampling_when_thinking", False)
    assert ("temperature" in kwargs) is not sampling_dropped and ("top_p" in kwargs) is not sampling_dropped


def test_adaptive_on_a_thinking_route_fails_loud() -> None:
    plan = make_plan(params={"reasoning_via_thinking_kwarg": True})
    with pytest.raises(ReasoningConfigError, match="adaptive"):
        _build(plan, {"messages": [{"role": "user", "content": "x"}], "reasoning": {"mode": "adaptive", "effort_hint": "high"}})


def test_request_settings_beat_plan_defaults() -> None:
    plan = make_plan(request_defaults={"temperature": 0.0, "seed": 1, "top_p": 0.5, "max_tokens": 64})
    base = {"messages": [{"role": "user", "content": "x"}]}
    assert {k: _build(plan, base).kwargs[k] for k in ("temperature", "seed", "top_p", "max_tokens")} == {
        "temperature": 0.0, "seed": 1, "top_p": 0.5, "max_tokens": 64,
    }
    over = _build(plan, {**base, "temperature": 0.7, "seed": 2, "top_p": 0.8, "max_tokens": 10}).kwargs
    assert (over["temperature"], over["seed"], over["top_p"], over["max_tokens"]) == (0.7, 2, 0.8, 10)


def test_value_rules_reject_override_drop() -> None:
    evidence = "2026-08-01, measured"
    rules = {
        "reasoning_effort": {"medium": {"action": "reject", "evidence": evidence}, "high": {"action": "override", "with": "low", "evidence": evidence}},
        "tool_choice": {"auto": {"action": "drop", "evidence": evidence}},
    }
    plan = make_plan(rules=rules)
    with pytest.raises(RejectedValueError, match="remaining choices"):
        _build(plan, {"messages": [{"role": "user", "content": "x"}], "reasoning": {"mode": "adaptive", "effort_hint": "medium"}})
    built = _build(
        plan,
        {"messages": [{"role": "user", "content": "x"}], "tools": [LOOKUP], "tool_choice": "auto", "reasoning": {"mode": "adaptive", "effort_hint": "high"}},
    )
    assert built.kwargs["reasoning_effort"] == "low" and "tool_choice" not in built.kwargs
    assert {(s.param, s.requested, s.sent, s.action) for s in built.value_substitutions} == {
        ("reasoning_effort", "high", "low", "override"),
        ("tool_choice", "auto", None, "drop"),
    }


def test_tools_are_sanitised_before_caching_and_the_caller_keeps_its_own() -> None:
    decimal_tool = {
        "type": "function",
        "function": {
            "name": "pay",
            "parameters": {
                "type": "object",
                "description": "Pydantic docstring",
                "properties": {
                    "amount": {"anyOf": [{"type": "number"}, {"type": "string", "pattern": "^(?!^[-+.]*$)[+-]?0*\\d*\\.?\\d*$"}], "description": "Decimal"},
                    "title": {"type": "string", "examples": ["Mr"]},
                },
                "required": ["amount", "title"],
            },
        },
    }
    request = ChatRequest.model_validate({"tools": [decimal_tool], "messages": [{"role": "user", "content": "x"}]})
    before = copy.deepcopy(request.tool_dicts())
    kwargs = Client(make_plan(policies={"schema_sanitizer": "strict"}), env={}).build(request).kwargs
    params = kwargs["tools"][0]["function"]["parameters"]
    assert params["properties"]["amount"] == {"type": "number", "description": "Decimal"}
    assert params["properties"]["title"] == {"type": "string", "examples": ["Mr"]}
    assert "description" not in params
    assert request.tool_dicts() == before


@pytest.mark.fast_side
def test_sanitisation_is_memoised_on_the_tool_list() -> None:
    client = Client(make_plan(policies={"schema_sanitizer": "strict"}), env={})
    calls: list[int] = []
    real = client.policies.schema_sanitizer

    class Counting:
        def sanitize(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
            calls.append(len(tools))
            return real.sanitize(tools)

    client.builder.tool_memo._sanitize = Counting().sanitize
    request = {"tools": [LOOKUP], "messages": [{"role": "user", "content": "x"}]}
    first = client.build(request).kwargs["tools"]
    validated = ChatRequest.model_validate(request)
    second = client.build(validated).kwargs["tools"]
    third = client.build(validated.extended([{"role": "assistant", "content": "ok"}])).kwargs["tools"]
    other = client.build({**request, "tools": [dict(LOOKUP, function={**LOOKUP["function"], "name": "other"})]})
    assert calls == [1, 1]
    assert first == second == third and third[0]["function"]["name"] == "lookup"
    assert other.kwargs["tools"][0]["function"]["name"] == "other"


def test_what_the_provider_call_does_to_its_kwargs_never_reaches_the_next_request() -> None:
    # built kwargs share the memoised tools and converted messages; the send path copies them
    def completion(**kwargs: Any) -> dict[str, Any]:
        kwargs["tools"][0]["function"]["name"] = "mutated by the transport"
        kwargs["messages"][0]["content"] = "mutated by the transport"
        return {"choices": [{"message": {"content": "ok"}}]}

    client = Client(make_plan(policies={"schema_sanitizer": "strict"}), completion=completion, env={})
    request = ChatRequest.model_validate({"tools": [LOOKUP], "messages": [{"role": "user", "content": "x"}]})
    before = copy.deepcopy(client.build(request).kwargs)
    client.generate(request)
    assert client.build(request).kwargs == before
    assert client.build(request.extended([{"role": "assistant", "content": "ok"}])).kwargs["messages"][0] == {
        "role": "user",
        "content": "x",
    }


def test_a_recursive_ref_the_sanitiser_cannot_inline_is_a_typed_error() -> None:
    tree = {
        "type": "function",
        "function": {
            "name": "tree",
            "parameters": {
                "type": "object",
                "$defs": {"Node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}},
                "properties": {"root": {"$ref": "#/$defs/Node"}},
            },
        },
    }
    with pytest.raises(SchemaRefCycleError):
        _build(make_plan(policies={"schema_sanitizer": "strict"}), {"tools": [tree], "messages": [{"role": "user", "content": "x"}]})


def test_an_invalid_sanitised_schema_is_refused_before_sending() -> None:
    bad = {"type": "function", "function": {"name": "bad", "parameters": {"type": "object", "properties": {"x": {"type": "dictionary"}}}}}
    with pytest.raises(InvalidToolSchemaError, match="bad"):
        _build(make_plan(), {"tools": [bad], "messages": [{"role": "user", "content": "x"}]})


def test_user_content_parts_and_tool_choice_on_the_wire() -> None:
    request = {
        "tools": [LOOKUP],
        "tool_choice": {"type": "function", "function": {"name": "lookup"}},
        "messages": [{"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "https://x/y.png"}}]}],
    }
    kwargs = _build(make_plan(), request).kwargs
    assert kwargs["messages"][0]["content"][1] == {"type": "image_url", "image_url": {"url": "https://x/y.png"}}
    assert kwargs["tool_choice"] == {"type": "function", "function": {"name": "lookup"}}


def test_no_system_message_when_the_prompt_is_empty() -> None:
    built = _build(make_plan(), {"messages": [{"role": "user", "content": "x"}]})
    assert built.kwargs["messages"][0]["role"] == "user"
    assert built.effective_system_prompt == ""


def test_transport_is_applied_last() -> None:
    plan = make_plan("openrouter", "anthropic/claude-x", openrouter={"provider_order": ["anthropic"], "allow_fallbacks": False}, params={"reasoning_via_extra_body": True})
    kwargs = _build(plan, {"messages": [{"role": "user", "content": "x"}], "reasoning": {"mode": "adaptive", "effort_hint": "high"}}).kwargs
    assert kwargs["extra_body"] == {"reasoning": {"effort": "high", "enabled": True}, "provider": {"order": ["anthropic"], "allow_fallbacks": False, "data_collection": "deny"}}
    assert kwargs["model"] == "openrouter/anthropic/claude-x"


def test_policy_set_is_built_once_per_client() -> None:
    client = Client(make_plan(), env={})
    assert dataclasses.is_dataclass(client.policies)
    first = client.policies.schema_sanitizer
    client.build({"messages": [{"role": "user", "content": "x"}]})
    assert client.policies.schema_sanitizer is first


def test_one_client_builds_identically_from_many_threads() -> None:
    from concurrent.futures import ThreadPoolExecutor

    client = Client(make_plan("anthropic", "claude-x", policies={**ANTHROPIC, "schema_sanitizer": "strict"}), env={})
    requests = [
        {"system": f"s{i % 3}", "tools": [dict(LOOKUP, function={**LOOKUP["function"], "name": f"t{i % 5}"})], "messages": [{"role": "user", "content": str(i)}]}
        for i in range(60)
    ]
    expected = [json.dumps(Client(client.plan, env={}).build(r).kwargs, sort_keys=True) for r in requests]
    with ThreadPoolExecutor(max_workers=8) as pool:
        got = list(pool.map(lambda r: json.dumps(client.build(r).kwargs, sort_keys=True), requests))
    assert got == expected


def test_the_unchecked_built_request_is_the_dataclass_built_as_usual() -> None:
    from capplan.executor.request_builder import BuiltRequest, built_request_unchecked

    built = Client(make_plan(), env={}).build({"system": "s", "messages": [{"role": "user", "content": "x"}]})
    fields = {field.name: getattr(built, field.name) for field in dataclasses.fields(BuiltRequest)}
    assert built_request_unchecked(**fields) == BuiltRequest(**fields) == built
    assert vars(built_request_unchecked(**fields)) == vars(BuiltRequest(**fields))
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.kwargs = {}  # type: ignore[misc]

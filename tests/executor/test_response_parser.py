"""Response parsing on recorded response bodies (dicts), without litellm."""

from __future__ import annotations

from typing import Any

import pytest

from capplan.executor.client import Client
from capplan.executor.errors import ResponseShapeError
from capplan.executor.result import PARSER_ERROR_RAW_ARGS_EXCERPT_MAX_CHARS, ParserError
from tests.executor.plans import make_plan

DICT_MAP_TOOL = {
    "type": "function",
    "function": {
        "name": "set_stock",
        "parameters": {
            "type": "object",
            "properties": {
                "levels": {"type": "object", "additionalProperties": {"type": "object", "properties": {"qty": {"type": "integer"}}, "required": ["qty"]}},
                "note": {"type": "string"},
            },
            "required": ["levels"],
        },
    },
}
LOOKUP = {
    "type": "function",
    "function": {"name": "lookup", "parameters": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}},
}


def _response(message: dict[str, Any], *, usage: dict[str, Any] | None = None, finish: str = "stop", **extra: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "finish_reason": finish, "message": {"role": "assistant", **message}}], "usage": usage or {}, **extra}


def _call(name: str, arguments: str, call_id: str = "c1") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _generate(plan: Any, response: dict[str, Any], tools: list[dict[str, Any]] | None = None) -> Any:
    client = Client(plan, completion=lambda **_: response, env={})
    request: dict[str, Any] = {"system": "sys", "messages": [{"role": "user", "content": "go"}]}
    if tools:
        request["tools"] = tools
    return client.generate(request)


def test_text_usage_reasoning_cost_and_finish_reason() -> None:
    usage = {
        "prompt_tokens": 100,
        "completion_tokens": 20,
        "prompt_tokens_details": {"cached_tokens": 30},
        "completion_tokens_details": {"reasoning_tokens": 12},
        "cost": 0.0123,
    }
    plan = make_plan(policies={"reasoning_codec": "openai"})
    result = _generate(plan, _response({"content": "hello", "reasoning_content": "I thought"}, usage=usage))
    assert result.text == "hello"
    assert result.finish_reason == "stop"
    assert (result.usage.prompt_tokens, result.usage.cached_tokens, result.usage.reasoning_tokens) == (100, 30, 12)
    assert result.reasoning is not None and result.reasoning.summary == "I thought"
    assert (result.cost_usd, result.cost_source) == (0.0123, "litellm")
    assert result.effective_system_prompt == "sys"
    assert result.tool_calls == () and result.parser_errors == ()


def test_anthropic_thinking_blocks_and_cache_counters() -> None:
    message = {
        "content": "done",
        "reasoning_content": "hmm",
        "thinking_blocks": [
            {"type": "thinking", "thinking": "hmm", "signature": "SIG"},
            {"type": "redacted_thinking", "data": "ENC"},
        ],
    }
    usage = {"prompt_tokens": 20, "completion_tokens": 5, "cache_creation_input_tokens": 4, "cache_read_input_tokens": 6}
    plan = make_plan("anthropic", "claude-x", policies={"reasoning_codec": "anthropic"}, pricing={"key": "anthropic/claude-x", "input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75})
    result = _generate(plan, _response(message, usage=usage))
    blocks = result.reasoning.blocks
    assert [(b.type, b.text, b.signature, b.encrypted_data) for b in blocks] == [
        ("thinking", "hmm", "SIG", None),
        ("redacted_thinking", "", None, "ENC"),
    ]
    assert (result.usage.cache_creation_input_tokens, result.usage.cache_read_input_tokens) == (4, 6)
    assert result.cost_source == "pricing"
    assert result.cost_usd == pytest.approx((10 * 3.0 + 6 * 0.3 + 4 * 3.75 + 5 * 15.0) / 1e6)


def test_unknown_reasoning_block_type_is_a_typed_error_not_a_drop() -> None:
    message = {"content": "x", "thinking_blocks": [{"type": "mystery", "payload": "?"}]}
    with pytest.raises(ResponseShapeError, match="mystery"):
        _generate(make_plan(policies={"reasoning_codec": "anthropic"}), _response(message))


def test_no_choices_is_a_typed_error() -> None:
    with pytest.raises(ResponseShapeError, match="no choices"):
        _generate(make_plan(), {"choices": [], "usage": {}})


def test_malformed_usage_never_raises() -> None:
    # out-of-bounds counters are unknown (None), never a made-up 0, and each is a recorded problem
    result = _generate(make_plan(), _response({"content": "x"}, usage={"prompt_tokens": "many", "completion_tokens": -1}))
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (None, None)
    assert result.usage.provider_raw == {"prompt_tokens": "many", "completion_tokens": -1}
    assert result.cost_source == "unknown" and result.cost_usd is None
    assert result.response_problems[:2] == ("usage.prompt_tokens is not a number but str ('many'): the count is unknown",
                                            "usage.completion_tokens is negative (-1): the count is unknown")


def test_generation_id_from_litellm_hidden_headers() -> None:
    response = _response({"content": "x"}, _hidden_params={"additional_headers": {"llm_provider-x-generation-id": "gen-42"}})
    assert _generate(make_plan(), response).openrouter_generation_id == "gen-42"
    wrong = _response({"content": "x"}, _hidden_params={"additional_headers": {"llm_provider-x-openrouter-generation-id": "gen-42"}})
    assert _generate(make_plan(), wrong).openrouter_generation_id is None


def test_ladder_recovers_yaml_and_records_undecodable_calls() -> None:
    garbage = "<<not arguments>> " * 60
    message = {"content": "", "tool_calls": [_call("lookup", "id: abc", "c1"), _call("lookup", garbage, "c2")]}
    result = _generate(make_plan(), _response(message, finish="tool_calls"), [LOOKUP])
    assert [c.arguments for c in result.tool_calls] == [{"id": "abc"}, {}]
    assert [c.id for c in result.tool_calls] == ["c1", "c2"]
    (error,) = result.parser_errors
    assert isinstance(error, ParserError) and error.tool_name == "lookup"
    assert error.raw_arguments == garbage[:PARSER_ERROR_RAW_ARGS_EXCERPT_MAX_CHARS]
    assert len(error.raw_arguments) == 500
    assert "json:" in error.reason and "repaired_yaml:" in error.reason
    # {} stands in for undecodable text; it is not held to the schema
    assert result.validation_errors == ()
    assert result.finish_reason == "tool_calls"


def test_schema_violations_are_recorded_against_the_sanitised_schema() -> None:
    plan = make_plan(policies={"schema_sanitizer": "strict", "response_policy": "array_dict_map"})
    # the sanitised schema shows `levels` as an array of {key, qty}; the model emitted a dict
    bad = _call("set_stock", '{"levels": {"a": {"qty": 1}}}', "c1")
    good = _call("set_stock", '{"levels": [{"key": "a", "qty": 2}]}', "c2")
    unknown = _call("delete_all", "{}", "c3")
    result = _generate(plan, _response({"tool_calls": [bad, good, unknown]}), [DICT_MAP_TOOL])
    by_id = {v.tool_call_id: v for v in result.validation_errors}
    assert set(by_id) == {"c1", "c3"}
    assert by_id["c1"].path == "levels" and "not of type 'array'" in by_id["c1"].message
    assert "did not offer" in by_id["c3"].message
    # the response policy reverses the dict-map rewrite for the tool
    assert result.tool_calls[1].arguments == {"levels": {"a": {"qty": 2}}}


def test_response_policy_gets_param_types() -> None:
    plan = make_plan(policies={"response_policy": "json_coerce"})
    tool = {"type": "function", "function": {"name": "tag", "parameters": {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}}}}}
    result = _generate(plan, _response({"tool_calls": [_call("tag", '{"tags": ""}')]}), [tool])
    assert result.tool_calls[0].arguments == {"tags": []}


def test_result_is_frozen_and_serialisable() -> None:
    result = _generate(make_plan(policies={"reasoning_codec": "openai"}), _response({"content": "x", "reasoning_content": "r"}))
    with pytest.raises(AttributeError):
        result.text = "y"  # type: ignore[misc]
    data = result.to_json()
    origin = {"protocol": "openai-chat", "route": "openai", "model": "openai/gpt-test", "upstream": None}
    assert data["reasoning"] == {"blocks": [{"type": "summary_text", "text": "r", "signature": None, "encrypted_data": None,
                                             "extras": {}, "origin": origin}],
                                 "summary": "r", "signatures": [], "signatures_origin": None}
    assert data["usage"]["prompt_tokens"] == 0 and data["guard_rejections"] == []


def test_assistant_text_policy_reshapes_provider_text() -> None:
    plan = make_plan(policies={"assistant_text_policy": "cohere_markers"})
    result = _generate(plan, _response({"content": "<|START_TEXT|>Your refund is on its way.<|END_TEXT|>"}))
    assert result.text == "Your refund is on its way."


def test_mock_text_bypasses_the_assistant_text_policy() -> None:
    class Marking:
        def parse_assistant_text(self, text: str, *, model: Any) -> str:
            return "reshaped"

    import dataclasses

    live = Client(make_plan(), completion=lambda **_: _response({"content": "raw"}), env={})
    live.parser.policies = dataclasses.replace(live.policies, assistant_text_policy=Marking())
    assert live.generate({"messages": [{"role": "user", "content": "x"}]}).text == "reshaped"
    mock = Client(make_plan("mock", "echo"), env={})
    mock.parser.policies = dataclasses.replace(mock.policies, assistant_text_policy=Marking())
    assert mock.generate({"messages": [{"role": "user", "content": "x"}]}).text.startswith("mock reply ")

"""The Responses request and answer mappings, item by item (the wire itself: test_direct_responses_wire_identity)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from capplan.executor.policies.reasoning_codec.openai_responses import (
    OUTPUT_KEY,
    REPLAY_KEY,
    OpenAIResponsesReasoningCodec,
)
from capplan.executor.reasoning import ReasoningBlock, StructuredReasoning
from capplan.executor.responses_request import ResponsesRequestError, responses_kwargs
from capplan.executor.responses_response import UnknownOutputItemError, chat_shape
from capplan.core.errors import ExitCode

BODY = {"store": False, "include": ["reasoning.encrypted_content"]}
CODEC = OpenAIResponsesReasoningCodec()
CALL = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\": \"a\"}"}}


def reasoning_entry(rs: str, follower: dict[str, str] | None) -> dict[str, Any]:
    block = ReasoningBlock(type="encrypted", text="thought", encrypted_data=f"ENC-{rs}",
                           extras=(("id", rs), ("summary", [{"type": "summary_text", "text": "thought"}]),
                                   *((("follower", follower),) if follower else ())))
    return CODEC.encode_for_replay(StructuredReasoning(blocks=(block,)))[REPLAY_KEY][0]


def test_the_conversation_becomes_instructions_and_items() -> None:
    kwargs = {"model": "openai/gpt-5", "api_key": "k", "messages": [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": [{"type": "text", "text": "look"},
                                     {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}]},
        {"role": "assistant", "content": "On it.", "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "found"},
    ], "tools": [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}],
        "tool_choice": {"type": "function", "function": {"name": "lookup"}}, "max_tokens": 99,
        "reasoning_effort": "low", "parallel_tool_calls": False}
    out = responses_kwargs(kwargs, BODY)
    assert out["instructions"] == "Be terse."
    assert out["input"] == [
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "look"},
            {"type": "input_image", "image_url": "data:image/png;base64,AA", "detail": "auto"}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "On it.", "annotations": []}]},
        {"type": "function_call", "call_id": "call_1", "name": "lookup", "arguments": "{\"q\": \"a\"}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "found"},
    ]
    # strict is always said: the Responses API reads a missing one as true
    assert out["tools"] == [{"type": "function", "name": "lookup", "parameters": {"type": "object"}, "strict": False}]
    assert out["tool_choice"] == {"type": "function", "name": "lookup"}
    assert out["max_output_tokens"] == 99 and out["reasoning"] == {"effort": "low"}
    assert (out["store"], out["include"], out["parallel_tool_calls"]) == (False, ["reasoning.encrypted_content"], False)
    assert out["model"] == "openai/gpt-5" and out["api_key"] == "k" and "messages" not in out


def test_each_reasoning_item_goes_right_before_the_item_it_preceded_which_gets_its_id() -> None:
    second = {**CALL, "id": "call_2"}
    message = {"role": "assistant", "content": "Checking.", "tool_calls": [CALL, second], REPLAY_KEY: [
        reasoning_entry("rs_a", {"type": "message", "id": "msg_a"}),
        reasoning_entry("rs_b", {"type": "function_call", "id": "fc_b", "call_id": "call_2"})]}
    items = responses_kwargs({"messages": [{"role": "user", "content": "go"}, message]}, BODY)["input"][1:]
    assert [(i["type"], i.get("id")) for i in items] == [
        ("reasoning", "rs_a"), ("message", "msg_a"), ("function_call", None), ("reasoning", "rs_b"),
        ("function_call", "fc_b")]
    assert items[0]["encrypted_content"] == "ENC-rs_a" and items[0]["summary"] == [{"type": "summary_text", "text": "thought"}]


def test_a_turn_that_only_reasoned_is_followed_by_an_empty_reply_and_no_follower_means_the_first_item() -> None:
    only = {"role": "assistant", "content": "", REPLAY_KEY: [reasoning_entry("rs_x", None)]}
    items = responses_kwargs({"messages": [{"role": "user", "content": "go"}, only]}, BODY)["input"][1:]
    assert [i["type"] for i in items] == ["reasoning", "message"]
    assert items[1]["content"][0]["text"] == ""
    unplaced = {"role": "assistant", "content": None, "tool_calls": [CALL], REPLAY_KEY: [
        reasoning_entry("rs_y", {"type": "function_call", "id": "fc_gone", "call_id": "call_other"})]}
    items = responses_kwargs({"messages": [{"role": "user", "content": "go"}, unplaced]}, BODY)["input"][1:]
    # the follower named is not in this turn: the item still precedes the turn's first item, which keeps no id
    assert [(i["type"], i.get("id")) for i in items] == [("reasoning", "rs_y"), ("function_call", None)]


@pytest.mark.parametrize(("key", "value", "says"), [
    ("stop", ["\n"], "no stop sequences"),
    ("response_format", {"type": "json_object"}, "text.format"),
    ("seed", 7, "supports_seed: false"),
    ("frobnicate", 1, "chat completions parameter"),
])
def test_a_chat_only_field_is_refused_naming_it_and_the_fix(key: str, value: Any, says: str) -> None:
    with pytest.raises(ResponsesRequestError) as caught:
        responses_kwargs({"messages": [{"role": "user", "content": "go"}], key: value}, BODY)
    assert f"request field {key!r}" in str(caught.value) and says in str(caught.value)
    assert caught.value.exit_code == ExitCode.INPUT


def test_a_content_part_without_counterpart_is_refused() -> None:
    audio = {"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "AA", "format": "wav"}}]}
    with pytest.raises(ResponsesRequestError, match=r"messages\[0\]: a 'input_audio' content part"):
        responses_kwargs({"messages": [audio]}, BODY)


def test_the_plans_reasoning_summary_is_merged_with_the_effort() -> None:
    body = {**BODY, "reasoning": {"summary": "auto"}}
    out = responses_kwargs({"messages": [{"role": "user", "content": "go"}], "reasoning_effort": "high"}, body)
    assert out["reasoning"] == {"summary": "auto", "effort": "high"}
    assert body["reasoning"] == {"summary": "auto"}  # the plan's own dict is never changed


def answer(output: list[dict[str, Any]], **top: Any) -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "created_at": 1, "model": "gpt-5", "status": "completed",
            "output": output, "usage": {"input_tokens": 10, "output_tokens": 7, "total_tokens": 17,
                                        "input_tokens_details": {"cached_tokens": 4},
                                        "output_tokens_details": {"reasoning_tokens": 5}}, **top}


def test_an_answer_reads_into_the_chat_shape_with_its_items_kept() -> None:
    output = [{"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "plan"}],
               "encrypted_content": "ENC"},
              {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "lookup", "arguments": "{\"q\":"}]
    shaped = chat_shape(answer(output), {"x-request-id": "r"}, 200, None, "openai")
    (choice,) = shaped["choices"]
    assert choice["finish_reason"] == "tool_calls" and shaped["id"] == "resp_1"
    assert choice["message"]["tool_calls"] == [{"id": "call_9", "type": "function",
                                                "function": {"name": "lookup", "arguments": "{\"q\":"}}]
    assert choice["message"]["reasoning_content"] == "plan"
    assert choice["message"]["provider_specific_fields"][OUTPUT_KEY] == output
    # the chat names the usage extractor reads, and the provider's own counters beside them (kept raw)
    assert shaped["usage"] == {"prompt_tokens": 10, "completion_tokens": 7, "total_tokens": 17,
                               "prompt_tokens_details": {"cached_tokens": 4},
                               "completion_tokens_details": {"reasoning_tokens": 5},
                               "input_tokens": 10, "output_tokens": 7, "input_tokens_details": {"cached_tokens": 4},
                               "output_tokens_details": {"reasoning_tokens": 5}}
    reasoning = CODEC.extract(choice["message"])
    assert reasoning is not None
    (block,) = reasoning.blocks
    assert (block.type, block.encrypted_data, block.text) == ("encrypted", "ENC", "plan")
    assert dict(block.extras)["follower"] == {"type": "function_call", "id": "fc_1", "call_id": "call_9"}


def test_incomplete_and_refusal_answers() -> None:
    cut = answer([{"type": "reasoning", "id": "rs_1", "summary": []}], status="incomplete",
                 incomplete_details={"reason": "max_output_tokens"})
    assert chat_shape(cut, {}, 200, None, "openai")["choices"][0]["finish_reason"] == "length"
    filtered = answer([], status="incomplete", incomplete_details={"reason": "content_filter"})
    assert chat_shape(filtered, {}, 200, None, "openai")["choices"][0]["finish_reason"] == "content_filter"
    refusal = answer([{"type": "message", "id": "m", "role": "assistant",
                       "content": [{"type": "refusal", "refusal": "I can't help with that."}]}])
    message = chat_shape(refusal, {}, 200, None, "openai")["choices"][0]["message"]
    assert message["content"] == message["refusal"] == "I can't help with that."


def test_an_unknown_output_item_is_an_error_that_quotes_it_and_keeps_the_answer() -> None:
    data = answer([{"type": "web_search_call", "id": "ws_1", "status": "completed"}])
    with pytest.raises(UnknownOutputItemError) as caught:
        chat_shape(data, {}, 200, None, "openai")
    assert "output[0] is an item of type 'web_search_call'" in str(caught.value)
    assert '"id": "ws_1"' in str(caught.value) and caught.value.answer is data
    assert caught.value.exit_code == ExitCode.INPUT


def test_the_codec_replays_only_blocks_with_their_encrypted_payload() -> None:
    plain = ReasoningBlock(type="summary_text", text="plan", extras=(("id", "rs_1"),))
    signed = ReasoningBlock(type="thinking", text="t", signature="SIG")
    reasoning = StructuredReasoning(blocks=(plain, signed))
    assert "encrypted_content" in str(CODEC.unusable(plain, reasoning))
    assert "another model family" in str(CODEC.unusable(signed, reasoning))
    assert CODEC.extract({"provider_specific_fields": {OUTPUT_KEY: [{"type": "message", "content": []}]}}) is None
    with pytest.raises(ValueError, match="encrypted_content must be a string"):
        CODEC.extract({"provider_specific_fields": {OUTPUT_KEY: [{"type": "reasoning", "encrypted_content": 5}]}})
    assert json.dumps(CODEC.encode_for_replay(StructuredReasoning()))  == "{}"


@pytest.mark.parametrize(("code", "status", "kind"), [
    ("server_error", 500, "ProviderHTTPError"), ("rate_limit_exceeded", 429, "ProviderRateLimitError"),
    ("invalid_prompt", 400, "ProviderHTTPError"), ("something_new", 200, "ProviderHTTPError"),
])
def test_a_failed_response_is_the_error_its_code_has_as_an_http_answer(code: str, status: int, kind: str) -> None:
    failed = answer([], status="failed", error={"code": code, "message": "it went wrong"})
    with pytest.raises(Exception) as caught:
        chat_shape(failed, {}, 200, None, "openai")
    assert type(caught.value).__name__ == kind and caught.value.status_code == status  # type: ignore[attr-defined]
    assert f"the response failed ({code}): it went wrong" in str(caught.value)


def test_a_failed_response_with_a_server_error_is_tried_again_and_the_attempts_say_so() -> None:
    from pathlib import Path

    from capplan.executor.client import Client
    from capplan.executor.plan import Plan
    from tests.fake_provider import FakeProvider, json_reply, unscripted

    plan = Plan.load(Path(__file__).resolve().parents[2] / "golden" / "plans" / "gpt-5.json")
    failed = answer([], status="failed", error={"code": "server_error", "message": "try again"})
    ok = answer([{"type": "message", "id": "m", "role": "assistant",
                  "content": [{"type": "output_text", "text": "done", "annotations": []}]}])
    waits: list[float] = []
    with FakeProvider(unscripted) as server:
        server.script(json_reply(failed), json_reply(ok))
        client = Client(plan, env={"OPENAI_API_KEY": "sk-test"}, api_base=server.base, sleep=waits.append)
        result = client.generate({"messages": [{"role": "user", "content": "go"}]})
    assert result.text == "done" and len(waits) == 1
    assert [(a.status, a.error_class) for a in result.attempts] == [("error", "server_error"), ("ok", None)]

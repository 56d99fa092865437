"""A growing history is converted once per message, and builds exactly what a fresh build would."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from capplan.executor.client import Client
from capplan.executor.messages import ChatRequest
from tests.executor.plans import make_plan

ANTHROPIC = {"content_policy": "anthropic", "reasoning_codec": "anthropic", "cache_policy": "anthropic_ephemeral"}
TOOL = {"type": "function", "function": {"name": "step", "parameters": {"type": "object", "properties": {}}}}


def turn(i: int) -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "content": "", "tool_calls": [{"id": f"c{i}", "function": {"name": "step", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": f"c{i}", "content": f"result {i}"},
    ]


def counting(client: Client) -> list[str]:
    converted: list[str] = []
    real = client.builder.converter.message

    def message(msg: Any) -> dict[str, Any]:
        converted.append(msg.role)
        return real(msg)

    client.builder.converter.message = message  # type: ignore[method-assign]
    return converted


@pytest.mark.fast_side
@pytest.mark.parametrize("policies", [{}, ANTHROPIC], ids=["openai", "anthropic"])
def test_each_turn_converts_only_its_new_messages_and_matches_a_fresh_build(policies: dict[str, str]) -> None:
    plan = make_plan(policies=policies)
    client, fresh = Client(plan, env={}), Client(plan, env={})
    converted = counting(client)
    data: dict[str, Any] = {"system": "s", "tools": [TOOL], "messages": [{"role": "user", "content": "go"}]}
    request = ChatRequest.model_validate(data)
    client.build(request)
    for i in range(20):
        request = request.extended(turn(i))
        data["messages"] += turn(i)
        before = len(converted)
        kwargs = client.build(request).kwargs
        assert len(converted) - before == 2
        assert json.dumps(kwargs, sort_keys=True) == json.dumps(fresh.build(data).kwargs, sort_keys=True)


@pytest.mark.fast_side
def test_a_history_rebuilt_from_the_same_message_objects_reuses_their_conversion() -> None:
    client = Client(make_plan(), env={})
    converted = counting(client)
    first = ChatRequest.model_validate({"messages": [{"role": "user", "content": "go"}, *turn(0)]})
    client.build(first)
    grown = ChatRequest(messages=[*first.messages, *ChatRequest.model_validate({"messages": [{"role": "user", "content": "and"}]}).messages])
    client.build(grown)
    assert converted == ["user", "assistant", "tool", "user"]


def test_an_edited_history_is_converted_afresh() -> None:
    client = Client(make_plan(), env={})
    base = ChatRequest.model_validate({"messages": [{"role": "user", "content": "go"}, *turn(0)]})
    client.build(base)
    edited = ChatRequest.model_validate({"messages": [{"role": "user", "content": "changed"}, *turn(0)]})
    edited = ChatRequest(messages=[edited.messages[0], *base.messages[1:]])
    assert client.build(edited).kwargs["messages"][0] == {"role": "user", "content": "changed"}


def test_extended_validates_the_new_messages_and_their_tool_call_ids() -> None:
    request = ChatRequest.model_validate({"messages": [{"role": "user", "content": "go"}, *turn(0)]})
    with pytest.raises(ValueError, match=r"messages\[3\] answers tool_call_id 'c9'"):
        request.extended([{"role": "tool", "tool_call_id": "c9", "content": "x"}])
    with pytest.raises(ValidationError):
        request.extended([{"role": "assistant"}])
    grown = request.extended(turn(1))
    assert [m.role for m in grown.messages] == ["user", "assistant", "tool", "assistant", "tool"]
    assert len(request.messages) == 3


def test_reasoning_left_out_is_reported_for_the_whole_history_when_only_new_messages_convert() -> None:
    plan = make_plan(policies=ANTHROPIC)
    client, fresh = Client(plan, env={}), Client(plan, env={})
    data: dict[str, Any] = {"messages": [{"role": "user", "content": "go"}]}
    request = ChatRequest.model_validate(data)
    for i in range(4):
        said = {"role": "assistant", "content": f"step {i}", "reasoning": {"blocks": [{"type": "summary_text", "text": "s"}]}}
        request = request.extended([said, {"role": "user", "content": "more"}])
        data["messages"] += [said, {"role": "user", "content": "more"}]
        left = client.build(request).reasoning_left_out
        assert left == fresh.build(data).reasoning_left_out
        assert [r.message for r in left] == [1 + 2 * k for k in range(i + 1)]

"""ReasoningContentCodec: reasoning_content in and out, on the turns its replay scope names.

The wire side (real litellm to a loopback server, inside a trial) is in
tests/trials/test_reasoning_content_replay.py; these pin the codec and the request builder's
placement of an ``in_loop`` replay, including that the shared conversation cache is never
written through.
"""

from __future__ import annotations

from typing import Any

import pytest

from capplan.executor.client import Client
from capplan.executor.messages import ChatRequest
from capplan.executor.policies.reasoning_codec import ReasoningContentCodec
from capplan.executor.reasoning import ReasoningBlock, StructuredReasoning
from capplan.executor.registry import policy_class
from tests.executor.plans import make_plan

TOOL = {"type": "function", "function": {"name": "step", "parameters": {"type": "object", "properties": {}}}}


def thought(text: str) -> dict[str, Any]:
    return {"blocks": [{"type": "reasoning_text", "text": text}]}


def call_turn(i: int, reasoning: str | None) -> list[dict[str, Any]]:
    assistant: dict[str, Any] = {"role": "assistant", "content": "",
                                 "tool_calls": [{"id": f"c{i}", "function": {"name": "step", "arguments": "{}"}}]}
    if reasoning is not None:
        assistant["reasoning"] = thought(reasoning)
    return [assistant, {"role": "tool", "tool_call_id": f"c{i}", "content": f"result {i}"}]


def client(replay: str, **params: Any) -> Client:
    return Client(make_plan("openai", "qwen3-8b",
                            policies={"reasoning_codec": ("reasoning_content", {"replay": replay, **params})}))


def sent(c: Client, messages: list[dict[str, Any]]) -> list[str | None]:
    wire = c.build({"messages": messages, "tools": [TOOL]}).kwargs["messages"]
    return [m.get("reasoning_content") for m in wire if m["role"] == "assistant"]


def test_the_registry_name_resolves_to_the_codec() -> None:
    assert policy_class("reasoning_codec", "reasoning_content") is ReasoningContentCodec


def test_extract_keeps_the_text_as_reasoning_not_as_a_summary() -> None:
    got = ReasoningContentCodec().extract({"role": "assistant", "reasoning_content": "Paris first."})
    assert got == StructuredReasoning(blocks=(ReasoningBlock(type="reasoning_text", text="Paris first."),))
    assert ReasoningContentCodec().extract({"role": "assistant", "reasoning_content": ""}) is None
    assert ReasoningContentCodec().extract({"role": "assistant", "content": "hi"}) is None


def test_replay_joins_texts_and_leaves_opaque_blocks_out_with_the_reason() -> None:
    codec = ReasoningContentCodec()
    reasoning = StructuredReasoning(blocks=(
        ReasoningBlock(type="thinking", text="a", signature="sig"),
        ReasoningBlock(type="encrypted", encrypted_data="opaque"),
        ReasoningBlock(type="reasoning_text", text="b")))
    assert codec.unusable(reasoning.blocks[1], reasoning) == (
        "an opaque reasoning payload without text has no reasoning_content form")
    kept = StructuredReasoning(blocks=(reasoning.blocks[0], reasoning.blocks[2]))
    assert codec.encode_for_replay(kept) == {"reasoning_content": "a\n\nb"}


def test_openrouter_gets_the_envelope_only_when_the_plan_asks_for_it() -> None:
    reasoning = StructuredReasoning(blocks=(ReasoningBlock(type="reasoning_text", text="r"),))
    plain = ReasoningContentCodec().for_route(openrouter=True)
    assert plain.encode_for_replay(reasoning) == {}
    assert plain.unusable(reasoning.blocks[0], reasoning) is not None
    envelope = ReasoningContentCodec(openrouter_envelope=True).for_route(openrouter=True)
    assert envelope.encode_for_replay(reasoning) == {"reasoning_details": [{"type": "reasoning.text", "text": "r"}]}


def test_all_turns_replays_on_every_assistant_turn() -> None:
    history = [{"role": "user", "content": "go"}, *call_turn(1, "r1"), *call_turn(2, "r2")]
    assert sent(client("all_turns"), history) == ["r1", "r2"]


def test_in_loop_replays_only_the_turn_the_request_continues() -> None:
    c = client("in_loop")
    history = [{"role": "user", "content": "go"}, *call_turn(1, "r1"), *call_turn(2, "r2")]
    assert sent(c, history) == [None, "r2"]
    built = c.build({"messages": history, "tools": [TOOL]})
    # the earlier turn is recorded as left out, and why; the in-loop one is not
    assert [(r.message, r.reason) for r in built.reasoning_left_out] == [
        (1, "replayed only on the tool-call turn right before the request (replay: in_loop)")]
    # a new user message ends the loop: nothing is replayed
    assert sent(c, [*history, {"role": "assistant", "content": "done"}, {"role": "user", "content": "again"}]) == [
        None, None, None]


def test_in_loop_never_writes_through_the_shared_conversation_cache() -> None:
    c = client("in_loop")
    first = ChatRequest.model_validate({"tools": [TOOL], "messages": [{"role": "user", "content": "go"},
                                                                     *call_turn(1, "r1")]})
    assert replayed(c.build(first).kwargs) == ["r1"]
    # the next step extends the same message objects, so its build reuses the cached conversion
    # of turn 1: had the in-loop replay been written into it, turn 1 would carry r1 here
    grown = first.extended(call_turn(2, "r2"))
    assert replayed(c.build(grown).kwargs) == [None, "r2"]
    assert replayed(c.build(first).kwargs) == ["r1"]


def replayed(kwargs: dict[str, Any]) -> list[str | None]:
    return [m.get("reasoning_content") for m in kwargs["messages"] if m["role"] == "assistant"]


def test_never_replays_nothing_and_says_why_citing_the_evidence() -> None:
    c = client("never", evidence="accepted-ignored (measured 2026-12-01)")
    history = [{"role": "user", "content": "go"}, *call_turn(1, "r1")]
    built = c.build({"messages": history, "tools": [TOOL]})
    assert "reasoning_content" not in built.kwargs["messages"][-2]
    (left,) = built.reasoning_left_out
    assert left.reason.startswith("replay is off for this route") and "2026-12-01" in left.reason


@pytest.mark.parametrize("replay", ["sometimes", 3])
def test_an_unknown_scope_is_refused_naming_the_parameter(replay: Any) -> None:
    from capplan.executor.policy_params import check_params

    (problem,) = check_params(ReasoningContentCodec, {"replay": replay})
    assert problem.loc == ("replay",)

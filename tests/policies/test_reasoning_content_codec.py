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


def test_in_loop_replays_every_step_of_the_current_tool_loop() -> None:
    c = client("in_loop")
    history = [{"role": "user", "content": "go"}, *call_turn(1, "r1"), *call_turn(2, "r2"), *call_turn(3, "r3")]
    # every assistant step since the last user message: a template that keeps the current turn's
    # reasoning renders all of them, not only the last
    assert sent(c, history) == ["r1", "r2", "r3"]
    assert c.build({"messages": history, "tools": [TOOL]}).reasoning_left_out == ()
    # a new user message ends the loop: the earlier loop's steps are left out, and why
    after = [*history, {"role": "assistant", "content": "done", "reasoning": thought("r4")},
             {"role": "user", "content": "again"}]
    assert sent(c, after) == [None, None, None, None]
    built = c.build({"messages": after, "tools": [TOOL]})
    assert [(r.message, r.reason) for r in built.reasoning_left_out] == [
        (i, "replayed only within the current tool loop, the steps since the last user message (replay: in_loop)")
        for i in (1, 3, 5, 7)]
    # the next loop replays its own steps only
    second = [*after, *call_turn(5, "r5"), *call_turn(6, "r6")]
    assert sent(c, second) == [None, None, None, None, "r5", "r6"]
    assert [r.message for r in c.build({"messages": second, "tools": [TOOL]}).reasoning_left_out] == [1, 3, 5, 7]


def test_in_loop_replays_a_step_without_tool_calls_inside_the_loop_too() -> None:
    c = client("in_loop")
    note = {"role": "assistant", "content": "Let me look.", "reasoning": thought("r0")}
    history = [{"role": "user", "content": "go"}, note, *call_turn(1, "r1"), *call_turn(2, None)]
    assert sent(c, history) == ["r0", "r1", None]


def test_in_loop_never_writes_through_the_shared_conversation_cache() -> None:
    c = client("in_loop")
    first = ChatRequest.model_validate({"tools": [TOOL], "messages": [{"role": "user", "content": "go"},
                                                                     *call_turn(1, "r1")]})
    assert replayed(c.build(first).kwargs) == ["r1"]
    # the next step extends the same message objects, so its build reuses the cached conversion
    grown = first.extended(call_turn(2, "r2"))
    built = c.build(grown).kwargs
    assert replayed(built) == ["r1", "r2"]
    # a new user turn on the same objects: had a replay been written into the cached dicts,
    # turn 1 and 2 would carry their reasoning here
    later = grown.extended([{"role": "assistant", "content": "done"}, {"role": "user", "content": "more"}])
    assert replayed(c.build(later).kwargs) == [None, None, None]
    assert replayed(c.build(first).kwargs) == ["r1"]
    assert replayed(c.build(grown).kwargs) == ["r1", "r2"]


@pytest.mark.fast_side
def test_in_loop_converts_each_step_once_across_the_requests_of_a_loop() -> None:
    c = client("in_loop")
    calls: list[str] = []
    request = ChatRequest.model_validate({"tools": [TOOL], "messages": [{"role": "user", "content": "go"},
                                                                       *call_turn(1, "r1")]})
    original = ReasoningContentCodec.encode_for_replay

    def counting(self: ReasoningContentCodec, reasoning: StructuredReasoning) -> dict[str, Any]:
        calls.append(reasoning.blocks[0].text or "")
        return original(self, reasoning)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ReasoningContentCodec, "encode_for_replay", counting)
        for step in (2, 3, 4):
            assert replayed(c.build(request).kwargs) == [f"r{i}" for i in range(1, step)]
            request = request.extended(call_turn(step, f"r{step}"))
    # three requests of one loop, steps 1..3: each step's reasoning encoded once, not once per request
    assert calls == ["r1", "r2", "r3"]


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

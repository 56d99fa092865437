"""The Responses request builder's item memo: the same bytes as converting every message afresh,
and each wire message converted once per conversation.

A real tool loop runs against the strict Responses emulator (127.0.0.1, an ephemeral port, stopped
on exit): every turn replays the encrypted reasoning items of the earlier turns, so the requests
built from the memo are also held to the provider's replay rules. Each turn's request is then built
by a fresh client (nothing remembered: every message converted for the first time) from a copy of
the conversation (new message objects), and the two must be the same JSON text.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from capplan.conformance.corpus import load_corpus
from capplan.conformance.emulator import Reply
from capplan.conformance.emulators.openai_responses import ResponsesEmulator
from capplan.executor.client import Client
from capplan.executor.messages import ChatRequest, ReasoningIn
from capplan.executor.plan import Plan
from capplan.executor.responses_request import InputItemMemo, input_items, message_items

KEY = "sk-item-memo-test"
GOLDEN_PLANS = Path(__file__).resolve().parents[2] / "golden" / "plans"
TOOLS = [{"type": "function", "function": {"name": "lookup", "description": "Look a word up.", "parameters": {
    "type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}}]
#: a tool step, a parallel tool step, an answer, then a second user turn with its own tool step and answer
SCRIPT = [Reply(tool_calls=(("lookup", {"q": "alpha"}),)),
          Reply(tool_calls=(("lookup", {"q": "beta"}), ("lookup", {"q": "gamma"}))),
          Reply(text="alpha beta gamma"),
          Reply(tool_calls=(("lookup", {"q": "delta"}),)),
          Reply(text="delta")]


@pytest.fixture()
def emulator() -> Iterator[ResponsesEmulator]:
    emu = ResponsesEmulator(load_corpus().rules, route="openai", script=SCRIPT)
    with emu:
        yield emu


def gpt5() -> Plan:
    plan = Plan.load(GOLDEN_PLANS / "gpt-5.json")
    assert plan.wire is not None and plan.wire.protocol == "openai-responses"
    return plan


def client(plan: Plan, emu: ResponsesEmulator) -> Client:
    return Client(plan, env={"OPENAI_API_KEY": KEY}, api_base=emu.base_url + "/v1")


def text(kwargs: dict[str, Any]) -> str:
    return json.dumps(kwargs, ensure_ascii=False)


def run_loop(agent: Client) -> list[ChatRequest]:
    """The tool loop of SCRIPT, as the trial loop writes the conversation; every request sent."""
    request = ChatRequest.model_validate({"system": "You look words up.", "tools": TOOLS,
                                          "messages": [{"role": "user", "content": "Look up three words."}]})
    sent: list[ChatRequest] = []
    for step in range(len(SCRIPT)):
        sent.append(request)
        result = agent.generate(request)
        assert result.reasoning is not None
        assistant: dict[str, Any] = {"role": "assistant", "content": result.text or None,
                                     "reasoning": ReasoningIn.from_structured(result.reasoning).model_dump(
                                         mode="json", exclude_none=True)}
        added: list[dict[str, Any]] = [assistant]
        if result.tool_calls:
            assistant["tool_calls"] = [{"id": call.id, "type": "function",
                                        "function": {"name": call.name, "arguments": call.raw_arguments}}
                                       for call in result.tool_calls]
            added += [{"role": "tool", "tool_call_id": call.id, "content": f"{call.name} = found"}
                      for call in result.tool_calls]
        elif step == 2:
            added.append({"role": "user", "content": "And one more."})
        else:
            break
        # the history's message objects carry over, as the trial loop's do: only the new ones are new
        more = ChatRequest.model_validate({"messages": added}).messages
        request = request.model_copy(update={"messages": [*request.messages, *more]})
    return sent


def test_each_turn_is_the_same_json_as_a_fresh_conversion(emulator: ResponsesEmulator) -> None:
    plan = gpt5()
    agent = client(plan, emulator)
    sent = run_loop(agent)
    assert all(exchange.status == 200 for exchange in emulator.exchanges), [
        (exchange.status, exchange.answer) for exchange in emulator.exchanges if exchange.status != 200]
    last = agent.build(sent[-1]).kwargs
    kinds = [item["type"] for item in last["input"]]
    assert kinds.count("reasoning") == 4 and kinds.count("function_call") == 4  # replayed, so the memo saw them
    for request in sent:
        fresh = client(plan, emulator)  # a new builder: nothing remembered
        copied = ChatRequest.model_validate(request.model_dump(mode="json", exclude_none=True))
        assert text(agent.build(request).kwargs) == text(fresh.build(copied).kwargs)


@pytest.mark.fast_side
def test_a_second_build_reuses_each_messages_items(emulator: ResponsesEmulator) -> None:
    agent = client(gpt5(), emulator)
    sent = run_loop(agent)
    first = agent.build(sent[-1]).kwargs["input"]
    again = agent.build(sent[-1]).kwargs["input"]
    assert again is not first and again == first
    # the same item objects: converted once, shared read-only
    assert all(a is b for a, b in zip(first, again))
    # the previous turn's request shares every item of the messages it has in common
    before = agent.build(sent[-2]).kwargs["input"]
    assert all(a is b for a, b in zip(before, first))


def test_the_memo_gives_what_conversion_gives_and_converts_a_new_dict_again() -> None:
    reasoning_item = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "opaque"}
    wire = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "hi"},
                                     {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}],
         "responses_reasoning": [{"item": reasoning_item,
                                  "follower": {"type": "function_call", "call_id": "call_1", "id": "fc_1"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "found"},
        {"role": "system", "content": "A later system message is an item."},
    ]
    memo = InputItemMemo()
    plain = input_items(wire)
    assert input_items(wire, memo) == plain
    assert json.dumps(input_items(wire, memo)) == json.dumps(plain)
    assert plain[1][2] == {"type": "function_call", "call_id": "call_1", "name": "lookup", "arguments": "{}",
                           "id": "fc_1"}
    assert plain[1][1] == reasoning_item and plain[1][1] is not reasoning_item  # a copy, never the caller's
    # an equal message that is another object is converted again (it may be edited later; the memo keys on identity)
    edited = {**wire[3], "content": "changed"}
    assert memo.items(edited, 3) == message_items(edited, 3) != memo.items(wire[3], 3)


@pytest.mark.fast_side
def test_the_memo_is_bounded_and_keeps_the_messages_in_use() -> None:
    memo = InputItemMemo(size=3)
    messages = [{"role": "user", "content": f"m{i}"} for i in range(3)]
    kept = memo.items(messages[0], 0)
    memo.items(messages[1], 1)
    memo.items(messages[2], 2)
    assert memo.items(messages[0], 0) is kept  # used again: now the most recent
    memo.items({"role": "user", "content": "m3"}, 3)  # drops the least recently used: messages[1]
    assert memo.items(messages[0], 0) is kept
    assert len(memo._entries) == 3 and id(messages[1]) not in memo._entries

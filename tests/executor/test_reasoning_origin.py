"""Reasoning carries its origin: recorded at extraction, replayed only to that origin, proven on the wire.

Every generation here goes through capplan's real path: ``Client`` on a bundled plan, litellm for
the native Anthropic and Gemini routes and capplan's direct transport for the OpenAI-compatible
ones, against one loopback server that records each request body and answers with a provider's
response shape. A history is made the way the trial loop makes it (``ReasoningIn.from_structured``
of a result, dumped to JSON and read back), then sent on through another plan or another
request; the recorded body shows what reached the provider, and the result's
``reasoning_left_out`` says why anything did not.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from capplan.executor.client import Client
from capplan.executor.errors import ReasoningError
from capplan.executor.messages import ChatRequest, ReasoningIn
from capplan.executor.plan import Plan
from capplan.executor.reasoning import ReasoningOrigin
from capplan.executor.result import GenerationResult
from capplan.trials.loop.handoff import HANDOFF, handoff_wire
from tests.chat_route import chat_route_plan
from tests.executor.plans import make_plan
from tests.fake_provider import FakeProvider, import_litellm

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "policies" / "fixtures"
ENV = {"ANTHROPIC_API_KEY": "k", "GEMINI_API_KEY": "k", "OPENROUTER_API_KEY": "k", "OPENAI_API_KEY": "k"}
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {
    "type": "object", "properties": {"q": {"type": "string"}}}}}]
THINKING_ON = {"mode": "adaptive", "effort_hint": "low"}
BUDGET_ON = {"mode": "budget", "budget_tokens": 2048}


def bundled(name: str) -> Plan:
    return Plan.load(ROOT / "golden" / "plans" / f"{name}.json")


def fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return data


def chat_body(message: dict[str, Any], *, provider: str | None = None, model: str = "m") -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "gen-1", "object": "chat.completion", "created": 1, "model": model,
        "choices": [{"index": 0, "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                     "message": {"role": "assistant", **message}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }
    if provider is not None:
        body["provider"] = provider
    return body


ANTHROPIC_NATIVE = fixture("reasoning_anthropic_messages_response.json")
GEMINI_NATIVE = fixture("reasoning_gemini_generate_content_response.json")
OPENROUTER_CLAUDE = fixture("reasoning_openrouter_anthropic_response.json")
OPENROUTER_GEMINI = fixture("reasoning_openrouter_gemini_response.json")


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProvider]:
    import_litellm()
    with FakeProvider(routes={"/v1/messages": ANTHROPIC_NATIVE, ":generateContent": GEMINI_NATIVE}) as served:
        yield served


@pytest.fixture(autouse=True)
def native_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    # the bundled native bindings name no key variable: litellm reads its own from the environment
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)


def client(plan: Plan, server: FakeProvider) -> Client:
    return Client(plan, env=ENV, api_base=server.root)


def answer_chat(server: FakeProvider, body: dict[str, Any]) -> None:
    server.routes["/chat/completions"] = body


def first_turn(plan: Plan, server: FakeProvider, reasoning: dict[str, Any] | None = None) -> GenerationResult:
    request: dict[str, Any] = {"tools": TOOLS, "messages": [{"role": "user", "content": "look it up"}]}
    if reasoning is not None:
        request["reasoning"] = reasoning
    return client(plan, server).generate(request)


def history(result: GenerationResult, *, then: str = "tool") -> list[dict[str, Any]]:
    """The conversation after ``result``, as the trial loop records it (JSON, read back)."""
    assert result.reasoning is not None
    message: dict[str, Any] = {"role": "assistant", "content": result.text or None}
    if result.tool_calls:
        message["tool_calls"] = [{"id": call.id, "type": "function",
                                  "function": {"name": call.name, "arguments": json.dumps(call.arguments)}}
                                 for call in result.tool_calls]
    message["reasoning"] = ReasoningIn.from_structured(result.reasoning).model_dump(mode="json", exclude_none=True)
    messages = [{"role": "user", "content": "look it up"}, json.loads(json.dumps(message))]
    if then in ("tool", "tool_then_user") and result.tool_calls:
        messages += [{"role": "tool", "tool_call_id": call.id, "content": "found"} for call in result.tool_calls]
    if then != "tool" or not result.tool_calls:
        messages.append({"role": "user", "content": "and then?"})
    return messages


def send(plan: Plan, server: FakeProvider, messages: list[dict[str, Any]],
         reasoning: dict[str, Any] | None = None) -> tuple[GenerationResult, dict[str, Any]]:
    """One request through ``plan``'s real path; the result and the body the provider received."""
    request: dict[str, Any] = {"tools": TOOLS, "messages": messages}
    if reasoning is not None:
        request["reasoning"] = reasoning
    before = len(server.requests)
    result = client(plan, server).generate(request)
    assert len(server.requests) == before + 1
    return result, server.requests[-1].body


def origin_of(plan: Plan, upstream: str | None = None) -> ReasoningOrigin:
    protocol = plan.wire.protocol if plan.wire is not None else "litellm"
    return ReasoningOrigin(protocol, plan.binding.key or plan.model.provider, plan.model.wire_model, upstream)


def wire_text(body: dict[str, Any]) -> str:
    return json.dumps(body, sort_keys=True)


# --- origin recorded at extraction, for each codec -------------------------------------------


def test_anthropic_blocks_record_their_origin(server: FakeProvider) -> None:
    plan = bundled("claude-opus-4.7")
    result = first_turn(plan, server)
    assert result.reasoning is not None and len(result.reasoning.blocks) == 3
    assert {block.origin for block in result.reasoning.blocks} == {origin_of(plan)}
    assert origin_of(plan) == ReasoningOrigin("litellm", "anthropic", "anthropic/claude-opus-4.7")


def test_gemini_blocks_and_thought_signatures_record_their_origin(server: FakeProvider) -> None:
    plan = bundled("gemini-3.1-pro-preview")
    result = first_turn(plan, server)
    assert result.reasoning is not None and result.reasoning.signatures == ("SIG_THOUGHT_A", "SIG_TEXT_B", "SIG_CALL_C")
    assert result.reasoning.signatures_origin == origin_of(plan)
    assert {block.origin for block in result.reasoning.blocks} == {origin_of(plan)}


@pytest.mark.parametrize(("plan_name", "body", "upstream"), [
    ("claude-opus-4.7-openrouter", OPENROUTER_CLAUDE, OPENROUTER_CLAUDE.get("provider")),
    ("gemini-3.5-flash-openrouter", OPENROUTER_GEMINI, "Google"),
])
def test_openrouter_entries_record_the_upstream_that_served_them(
        server: FakeProvider, plan_name: str, body: dict[str, Any], upstream: str | None) -> None:
    plan = bundled(plan_name)
    answer_chat(server, body)
    result = first_turn(plan, server)
    assert result.reasoning is not None and result.reasoning.blocks
    assert {block.origin for block in result.reasoning.blocks} == {origin_of(plan, upstream)}


@pytest.mark.parametrize(("plan_name", "message"), [
    ("gpt-5", {"content": "ok", "reasoning_content": "summary"}),
    ("kimi-k3", {"content": "ok", "reasoning": "summary"}),
    ("deepseek-v4-flash", {"content": "ok", "reasoning_content": "thought"}),
])
def test_text_reasoning_records_its_origin_and_is_not_bound_to_it(
        server: FakeProvider, plan_name: str, message: dict[str, Any]) -> None:
    # gpt-5 on chat completions (examples/overlays/chat-completions.yaml): its flat reasoning summary
    plan = chat_route_plan(plan_name) if plan_name == "gpt-5" else bundled(plan_name)
    answer_chat(server, chat_body(message, provider="Moonshot AI" if plan_name == "kimi-k3" else None))
    result = first_turn(plan, server)
    assert result.reasoning is not None and len(result.reasoning.blocks) == 1
    block = result.reasoning.blocks[0]
    upstream = "Moonshot AI" if plan_name == "kimi-k3" else None
    assert block.origin == origin_of(plan, upstream) and not block.origin_bound


def test_the_recorded_origin_survives_the_trial_loops_json_round_trip(server: FakeProvider) -> None:
    plan = bundled("gemini-3.1-pro-preview")
    result = first_turn(plan, server)
    assert result.reasoning is not None
    recorded = history(result)[1]["reasoning"]
    assert recorded["blocks"][0]["origin"] == {"protocol": "litellm", "route": "gemini",
                                               "model": "gemini/gemini-3.1-pro-preview"}
    assert ReasoningIn.model_validate(recorded).to_structured() == result.reasoning


# --- same origin: verbatim; model switch and route switch: left out, naming both origins ------


def test_same_origin_replays_signed_thinking_verbatim(server: FakeProvider) -> None:
    plan = bundled("claude-opus-4.7")
    messages = history(first_turn(plan, server))
    result, body = send(plan, server, messages)
    native = [block for block in ANTHROPIC_NATIVE["content"] if block["type"] in ("thinking", "redacted_thinking")]
    assert body["messages"][1]["content"][: len(native)] == native
    assert result.reasoning_left_out == ()


def test_a_model_switch_drops_signed_anthropic_thinking_and_says_why(server: FakeProvider) -> None:
    made, target = bundled("claude-opus-4.7"), bundled("claude-opus-5")
    messages = history(first_turn(made, server), then="tool_then_user")  # a switch at a user turn
    result, body = send(target, server, messages, reasoning=THINKING_ON)
    assistant = body["messages"][1]
    assert [block["type"] for block in assistant["content"]] == ["text", "tool_use"]
    for secret in ("EqQBCkgIBRABGAIiQL0sig1", "EmwKAhgBEgy3va3pzix"):
        assert secret not in wire_text(body)
    assert [(r.message, r.block, r.type) for r in result.reasoning_left_out] == [
        (1, 0, "thinking"), (1, 1, "thinking"), (1, 2, "redacted_thinking")]
    for record in result.reasoning_left_out:
        assert record.reason.startswith("model switch:")
        assert "anthropic/claude-opus-4.7" in record.reason and "anthropic/claude-opus-5" in record.reason


def test_a_model_switch_drops_gemini_thought_signatures_and_says_why(server: FakeProvider) -> None:
    made = bundled("gemini-3.1-pro-preview")
    target = make_plan("gemini", "gemini-3-pro-preview", policies={"reasoning_codec": "gemini"})
    messages = history(first_turn(made, server))
    result, body = send(target, server, messages)
    model_turn = body["contents"][1]
    assert model_turn["role"] == "model"
    # no signature reaches the new model: not the message's, not the one litellm keeps in the
    # function call's id (call_<uuid>__thought__<signature>), on the call or on its result
    for signature in ("SIG_THOUGHT_A", "SIG_TEXT_B", "SIG_CALL_C"):
        assert signature not in wire_text(body)
    call = next(part for part in model_turn["parts"] if "function_call" in part or "functionCall" in part)
    # litellm marks a Gemini 3 function call that carries no signature with Google's documented
    # placeholder ("skip_thought_signature_validator", base64), never a signature from elsewhere
    assert base64.b64decode(call["thoughtSignature"]) == b"skip_thought_signature_validator"
    signatures = [r for r in result.reasoning_left_out if r.type == "signature"]
    assert [r.where for r in signatures] == [f"messages[1].reasoning.signatures[{i}]" for i in range(3)]
    assert all(r.reason.startswith("model switch:") and "gemini/gemini-3.1-pro-preview" in r.reason
               and "gemini/gemini-3-pro-preview" in r.reason for r in signatures)
    # the signed thought is bound and goes; the unsigned one is plain text and stays
    assert [(r.block, r.type) for r in result.reasoning_left_out if r.type != "signature"] == [(0, "thinking")]
    thoughts = [part["text"] for part in model_turn["parts"] if part.get("thought")]
    assert thoughts == ["I need the live value."]


def test_the_same_gemini_model_gets_every_thought_signature_back(server: FakeProvider) -> None:
    plan = bundled("gemini-3.1-pro-preview")
    messages = history(first_turn(plan, server))
    result, body = send(plan, server, messages)
    parts = body["contents"][1]["parts"]
    assert parts[1] == {"text": "Let me check.", "thoughtSignature": "SIG_THOUGHT_A"}
    assert parts[2]["thoughtSignature"] == "SIG_CALL_C"
    assert result.reasoning_left_out == ()


def test_a_model_switch_drops_an_openrouter_encrypted_entry_and_keeps_plain_text(server: FakeProvider) -> None:
    made, target = bundled("gemini-3.5-flash-openrouter"), bundled("gemini-2.5-pro-openrouter")
    answer_chat(server, OPENROUTER_GEMINI)
    messages = history(first_turn(made, server), then="tool_then_user")  # a switch at a user turn
    result, body = send(target, server, messages)
    details = body["messages"][1]["reasoning_details"]
    assert [entry["type"] for entry in details] == ["reasoning.text"]
    assert "CiQB0e2Kb7Yw8r3Zg7m3fQk0" not in wire_text(body)
    (record,) = result.reasoning_left_out
    assert (record.message, record.block, record.type) == (1, 1, "encrypted")
    assert record.reason.startswith("model switch:") and "google/gemini-3.5-flash" in record.reason
    assert "google/gemini-2.5-pro" in record.reason


def test_a_route_switch_drops_signed_thinking_and_says_why(server: FakeProvider) -> None:
    made, target = bundled("claude-opus-4.7"), bundled("claude-opus-4.7-openrouter")
    messages = history(first_turn(made, server), then="tool_then_user")  # a switch at a user turn
    answer_chat(server, chat_body({"content": "done"}))
    result, body = send(target, server, messages)
    assert "reasoning_details" not in body["messages"][1] and "thinking_blocks" not in body["messages"][1]
    assert "EqQBCkgIBRABGAIiQL0sig1" not in wire_text(body)
    assert len(result.reasoning_left_out) == 3
    assert all(r.reason.startswith("route switch:") and "anthropic (litellm)" in r.reason
               and "openrouter (openai-chat)" in r.reason for r in result.reasoning_left_out)


def test_an_upstream_switch_on_a_pinned_route_drops_the_encrypted_entry(server: FakeProvider) -> None:
    made = bundled("gemini-3.5-flash-openrouter")
    answer_chat(server, OPENROUTER_GEMINI)  # served by "Google"
    messages = history(first_turn(made, server), then="tool_then_user")  # a switch at a user turn
    pinned = make_plan("openrouter", "google/gemini-3.5-flash", policies={"reasoning_codec": "gemini"},
                       openrouter={"provider_order": ["google-ai-studio"], "allow_fallbacks": False})
    answer_chat(server, chat_body({"content": "done"}))
    result, body = send(pinned, server, messages)
    assert "CiQB0e2Kb7Yw8r3Zg7m3fQk0" not in wire_text(body)
    assert [r.type for r in result.reasoning_left_out] == ["encrypted"]
    assert result.reasoning_left_out[0].reason.startswith("upstream switch:")
    # the same upstream, named as OpenRouter names it, is the same origin
    same = make_plan("openrouter", "google/gemini-3.5-flash", policies={"reasoning_codec": "gemini"},
                     openrouter={"provider_order": ["google"], "allow_fallbacks": False})
    assert made.model.wire_model == same.model.wire_model
    result, body = send(same, server, messages)
    assert "CiQB0e2Kb7Yw8r3Zg7m3fQk0" in wire_text(body) and result.reasoning_left_out == ()


def test_a_history_without_origins_is_replayed_as_the_caller_gave_it(server: FakeProvider) -> None:
    made, target = bundled("claude-opus-4.7"), bundled("claude-opus-5")
    messages = history(first_turn(made, server))
    for block in messages[1]["reasoning"]["blocks"]:
        del block["origin"]
    result, body = send(target, server, messages, reasoning=THINKING_ON)
    assert body["messages"][1]["content"][0]["signature"] == "EqQBCkgIBRABGAIiQL0sig1"
    assert result.reasoning_left_out == ()


@pytest.mark.parametrize(("foreign_origin", "sent"), [("drop", []), ("text", ["The user wants a screenshot; call the tool."])])
def test_foreign_origin_says_whether_another_origins_text_is_replayed_unsigned(
        server: FakeProvider, foreign_origin: str, sent: list[str]) -> None:
    made = bundled("claude-opus-4.7")
    messages = history(first_turn(made, server))
    target = make_plan("openrouter", "moonshotai/kimi-k3",
                       policies={"reasoning_codec": ("openai_summary_replay", {"foreign_origin": foreign_origin})})
    answer_chat(server, chat_body({"content": "done"}))
    result, body = send(target, server, messages)
    details = body["messages"][1].get("reasoning_details", [])
    assert [entry["text"] for entry in details] == sent
    assert all(set(entry) == {"type", "text"} for entry in details)  # no signature travels
    assert "EqQBCkgIBRABGAIiQL0sig1" not in wire_text(body)
    first = result.reasoning_left_out[0]
    assert first.reason.startswith("route switch:")
    assert ("replayed as its plain text only" in first.reason) == (foreign_origin == "text")


# --- context handoff --------------------------------------------------------------------------


def test_a_context_handoff_drops_the_bound_blocks_of_what_it_keeps(server: FakeProvider) -> None:
    plan = bundled("claude-opus-4.7")
    messages = history(first_turn(plan, server))
    assistant, *results = messages[1:]
    wire, left = handoff_wire(messages[0], "the user wants a lookup", kept=[assistant, *results])
    assert [r.type for r in left] == ["thinking", "thinking", "redacted_thinking"]
    assert all(r.message == 2 and r.reason == HANDOFF for r in left)
    assert wire[2]["reasoning"]["blocks"] == []
    assert wire[2]["tool_calls"] == assistant["tool_calls"]
    result, body = send(plan, server, wire)
    (sent,) = [message for message in body["messages"] if message["role"] == "assistant"]
    assert [block["type"] for block in sent["content"]] == ["text", "tool_use"]
    assert result.reasoning_left_out == ()


def test_a_context_handoff_keeps_plain_reasoning_text() -> None:
    kept = [{"role": "assistant", "content": "x", "reasoning": {
        "blocks": [{"type": "reasoning_text", "text": "plain"},
                   {"type": "encrypted", "encrypted_data": "opaque"}],
        "signatures": ["S"]}}]
    wire, left = handoff_wire({"role": "user", "content": "go"}, "recap", kept=kept)
    assert wire[2]["reasoning"]["blocks"] == [{"type": "reasoning_text", "text": "plain", "extras": {}}]
    assert wire[2]["reasoning"]["signatures"] == []
    assert [(r.block, r.type) for r in left] == [(1, "encrypted"), (0, "signature")]
    ChatRequest.model_validate({"messages": wire})  # still a valid request


def test_a_context_handoff_takes_a_dropped_signature_out_of_the_call_ids_too() -> None:
    kept = [
        {"role": "assistant", "content": None, "reasoning": {"signatures": ["SIGC"]},
         "tool_calls": [{"id": "call_1__thought__SIGC", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                        {"id": "call_2", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1__thought__SIGC", "content": "a"},
        {"role": "tool", "tool_call_id": "call_2", "content": "b"},
    ]
    wire, left = handoff_wire({"role": "user", "content": "go"}, "recap", kept=kept)
    assert [call["id"] for call in wire[2]["tool_calls"]] == ["call_1", "call_2"]
    assert [m["tool_call_id"] for m in wire[3:]] == ["call_1", "call_2"]
    assert "SIGC" not in json.dumps(wire)
    ChatRequest.model_validate({"messages": wire})


# --- reasoning off ----------------------------------------------------------------------------


def test_reasoning_off_sends_no_history_thinking_to_claude(server: FakeProvider) -> None:
    plan = bundled("claude-opus-4.7")
    messages = history(first_turn(plan, server))
    result, body = send(plan, server, messages, reasoning={"mode": "off"})
    assert "thinking" not in body
    assert [block["type"] for block in body["messages"][1]["content"]] == ["text", "tool_use"]
    assert [r.type for r in result.reasoning_left_out] == ["thinking", "thinking", "redacted_thinking"]
    assert all("reasoning is off" in r.reason for r in result.reasoning_left_out)
    # the same conversation with thinking on again replays it: the cached conversion is untouched
    result, body = send(plan, server, messages, reasoning=BUDGET_ON)
    assert body["messages"][1]["content"][0]["type"] == "thinking" and result.reasoning_left_out == ()


def test_reasoning_off_over_openrouter_sends_no_claude_reasoning_details(server: FakeProvider) -> None:
    plan = bundled("claude-opus-4.7-openrouter")
    answer_chat(server, OPENROUTER_CLAUDE)
    messages = history(first_turn(plan, server))
    answer_chat(server, chat_body({"content": "done"}))
    result, body = send(plan, server, messages, reasoning={"mode": "off"})
    assert set(body["messages"][1]) <= {"role", "content", "tool_calls"}
    assert result.reasoning_left_out and all("reasoning is off" in r.reason for r in result.reasoning_left_out)


def test_reasoning_off_still_replays_to_a_model_that_thinks_unasked(server: FakeProvider) -> None:
    # Gemini thinks whatever the request says, and OpenRouter refuses a Gemini tool loop without
    # its reasoning details: "off" sends no reasoning parameter, it does not strip the history
    plan = bundled("gemini-3.5-flash-openrouter")
    assert plan.request_defaults.reasoning.mode == "off"
    answer_chat(server, OPENROUTER_GEMINI)
    messages = history(first_turn(plan, server))
    answer_chat(server, chat_body({"content": "done"}))
    result, body = send(plan, server, messages)
    assert [e["type"] for e in body["messages"][1]["reasoning_details"]] == ["reasoning.text", "reasoning.encrypted"]
    assert result.reasoning_left_out == ()


# --- a route with no reasoning fields ---------------------------------------------------------

EVERY_KIND = {
    "blocks": [
        {"type": "thinking", "text": "t", "signature": "SIG"},
        {"type": "redacted_thinking", "encrypted_data": "RED"},
        {"type": "summary_text", "text": "s"},
        {"type": "reasoning_text", "text": "r"},
        {"type": "encrypted", "encrypted_data": "ENC", "extras": {"format": "google-gemini-v1", "id": "c1"}},
    ],
    "summary": "s",
    "signatures": ["GSIG"],
}


@pytest.mark.parametrize("plan_name", ["gpt-4o", "gpt-5", "o3"])
def test_plain_openai_routes_send_no_reasoning_fields(server: FakeProvider, plan_name: str) -> None:
    # OpenAI's chat completions (gpt-5 and o3 kept there by examples/overlays/chat-completions.yaml)
    plan = chat_route_plan(plan_name)
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}],
         "reasoning": copy.deepcopy(EVERY_KIND)},
        {"role": "tool", "tool_call_id": "c1", "content": "found"},
    ]
    answer_chat(server, chat_body({"content": "done"}))
    result, body = send(plan, server, messages)
    for message in body["messages"]:
        assert set(message) <= {"role", "content", "tool_calls", "tool_call_id"}
    for secret in ("SIG", "RED", "ENC", "GSIG"):
        assert f'"{secret}"' not in wire_text(body)
    left = {(r.block, r.type) for r in result.reasoning_left_out}
    assert left == {(0, "thinking"), (1, "redacted_thinking"), (2, "summary_text"), (3, "reasoning_text"),
                    (4, "encrypted")}


# --- against the strict emulators: the recorded origin is what turns a refusal into acceptance ---
#
# Each pair below sends the same conversation twice through capplan's real path: once as the
# trial loop records it (with origins), once with the origins removed, which capplan must replay
# as the caller gave it, i.e. naively. The emulator verifies every carrier against the route and
# model it minted it for, so the naive replay is refused with the provider's text and capplan's is
# accepted.

ANTHROPIC_THINKING = {"claude-opus-4.7": {"mode": "budget", "budget_tokens": 4000},
                      "claude-opus-5": {"mode": "adaptive", "effort_hint": "high"}}


def without_origins(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` as a caller that does not record origins would hand them over."""
    bare = copy.deepcopy(messages)
    for message in bare:
        reasoning = message.get("reasoning")
        if reasoning is not None:
            reasoning.pop("signatures_origin", None)
            for block in reasoning.get("blocks", []):
                block.pop("origin", None)
    return bare


def loop_message(result: GenerationResult) -> list[dict[str, Any]]:
    """The assistant turn and its tool results, as the trial loop appends them (JSON, read back)."""
    message: dict[str, Any] = {"role": "assistant", "content": result.text or None}
    if result.tool_calls:
        message["tool_calls"] = [{"id": call.id, "type": "function",
                                  "function": {"name": call.name, "arguments": json.dumps(call.arguments)}}
                                 for call in result.tool_calls]
    if result.reasoning is not None:
        message["reasoning"] = ReasoningIn.from_structured(result.reasoning).model_dump(mode="json", exclude_none=True)
    results = [{"role": "tool", "tool_call_id": call.id, "content": "found"} for call in result.tool_calls]
    out: list[dict[str, Any]] = json.loads(json.dumps([message, *results]))
    return out


@pytest.fixture(scope="module")
def corpus() -> Any:
    from capplan.conformance.corpus import load_corpus
    from capplan.conformance.emulators import checks_by_protocol

    return load_corpus(checks=checks_by_protocol())


def test_a_claude_model_switch_is_accepted_where_the_naive_replay_is_refused(corpus: Any) -> None:
    from capplan.conformance.emulators.anthropic import AnthropicMessagesEmulator, AnthropicReply

    made, target = bundled("claude-opus-4.7"), bundled("claude-opus-5")
    with AnthropicMessagesEmulator(corpus.rules, route="anthropic") as emu:
        emu.script([AnthropicReply(tool_calls=(("lookup", {"q": "a"}),), reasoning="look a up", redacted=True),
                    AnthropicReply(text="found a", reasoning="answer")])
        messages: list[dict[str, Any]] = [{"role": "user", "content": "find a"}]
        for _ in range(2):  # one tool loop on Opus 4.7, thinking on
            result = Client(made, env=ENV, api_base=emu.base_url).generate(
                {"tools": TOOLS, "messages": messages, "reasoning": ANTHROPIC_THINKING["claude-opus-4.7"]})
            messages += loop_message(result)
        messages.append({"role": "user", "content": "now find b"})  # the next user turn goes to Opus 5
        emu.script([AnthropicReply(text="found b"), AnthropicReply(text="found b")])
        switched = Client(target, env=ENV, api_base=emu.base_url)
        request = {"tools": TOOLS, "reasoning": ANTHROPIC_THINKING["claude-opus-5"]}
        accepted = switched.generate({**request, "messages": messages})
        exchange = emu.exchanges[-1]
        assert exchange.status == 200 and exchange.violations == (), exchange.answer
        assert all(block["type"] not in ("thinking", "redacted_thinking")
                   for m in exchange.body["messages"] if m["role"] == "assistant" and isinstance(m["content"], list)
                   for block in m["content"])
        assert {r.reason.split(":")[0] for r in accepted.reasoning_left_out} == {"model switch"}
        with pytest.raises(Exception) as refused:
            switched.generate({**request, "messages": without_origins(messages)})
        naive = emu.exchanges[-1]
        assert naive.status == 400 and naive.violations[0].rule_id == "anthropic.thinking_signature"
        assert "Invalid `signature` in `thinking` block" in str(refused.value)


def test_claude_with_reasoning_off_after_thinking_turns_is_accepted(corpus: Any) -> None:
    from capplan.conformance.emulators.anthropic import AnthropicMessagesEmulator, AnthropicReply

    plan = bundled("claude-opus-5")
    with AnthropicMessagesEmulator(corpus.rules, route="anthropic") as emu:
        emu.script([AnthropicReply(tool_calls=(("lookup", {"q": "a"}),), reasoning="look a up"),
                    AnthropicReply(text="found a", reasoning="answer"),
                    AnthropicReply(text="found b")])
        messages: list[dict[str, Any]] = [{"role": "user", "content": "find a"}]
        for _ in range(2):
            result = Client(plan, env=ENV, api_base=emu.base_url).generate(
                {"tools": TOOLS, "messages": messages, "reasoning": ANTHROPIC_THINKING["claude-opus-5"]})
            messages += loop_message(result)
        messages.append({"role": "user", "content": "now find b"})
        result = Client(plan, env=ENV, api_base=emu.base_url).generate(
            {"tools": TOOLS, "messages": messages, "reasoning": {"mode": "off"}})
        last = emu.exchanges[-1]
        assert last.status == 200 and last.violations == () and "thinking" not in last.body
        assert "thinking" not in json.dumps(last.body["messages"])
        assert result.reasoning_left_out and all("reasoning is off" in r.reason for r in result.reasoning_left_out)


def test_a_gemini_model_switch_mid_loop_is_accepted_where_the_naive_replay_is_refused(
        corpus: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from capplan.conformance.emulator import Reply
    from capplan.conformance.emulators.gemini import GeminiEmulator

    made = bundled("gemini-3.1-pro-preview")
    target = make_plan("gemini", "gemini-3-flash-preview", policies={"reasoning_codec": "gemini"})
    with GeminiEmulator(corpus.rules, route="gemini") as emu:
        emu.script([Reply(tool_calls=(("lookup", {"q": "a"}),)), Reply(tool_calls=(("lookup", {"q": "b"}),))])
        messages: list[dict[str, Any]] = [{"role": "user", "content": "find a, then b"}]
        result = Client(made, env=ENV, api_base=emu.base_url).generate({"tools": TOOLS, "messages": messages})
        messages += loop_message(result)
        assert result.reasoning is not None and result.reasoning.signatures
        # the same loop continues on another Gemini 3 model
        switched = Client(target, env=ENV, api_base=emu.base_url)
        before = len(emu.exchanges)
        accepted = switched.generate({"tools": TOOLS, "messages": messages})
        (exchange,) = emu.exchanges[before:]  # accepted the first time
        assert exchange.status == 200 and exchange.violations == (), exchange.answer
        assert [r.type for r in accepted.reasoning_left_out] == ["signature"] * len(result.reasoning.signatures)
        # naive: refused with Google's text; litellm 1.110.2 then resends on its own with Google's
        # placeholder in place of every replayed signature (rejected_thought_signature_retry)
        before = len(emu.exchanges)
        switched.generate({"tools": TOOLS, "messages": without_origins(messages)})
        refused, resent = emu.exchanges[before:]
        assert refused.status == 400 and refused.violations[0].rule_id == "gemini.thought_signature_corrupted"
        assert refused.answer["error"]["message"] == "Corrupted thought signature."
        assert resent.status == 200


def test_a_claude_model_switch_mid_tool_loop_with_thinking_on_is_refused_before_sending(corpus: Any) -> None:
    """The foreign signed blocks must go (anthropic.thinking_signature), and then the loop's assistant
    turn has no thinking block, which Anthropic refuses (anthropic.thinking_at_loop_tail): capplan
    refuses the switching request itself, saying to switch at a user turn or send it with reasoning off."""
    from capplan.conformance.emulators.anthropic import AnthropicMessagesEmulator, AnthropicReply

    made, target = bundled("claude-opus-4.7"), bundled("claude-opus-5")
    with AnthropicMessagesEmulator(corpus.rules, route="anthropic") as emu:
        emu.script([AnthropicReply(tool_calls=(("lookup", {"q": "a"}),), reasoning="look a up"),
                    AnthropicReply(text="found a")])
        messages: list[dict[str, Any]] = [{"role": "user", "content": "find a"}]
        result = Client(made, env=ENV, api_base=emu.base_url).generate(
            {"tools": TOOLS, "messages": messages, "reasoning": ANTHROPIC_THINKING["claude-opus-4.7"]})
        messages += loop_message(result)
        switched = Client(target, env=ENV, api_base=emu.base_url)
        with pytest.raises(ReasoningError, match=r"anthropic\.thinking_at_loop_tail.*at a user turn, or send this "
                                                 r"request with reasoning off"):
            switched.generate({"tools": TOOLS, "messages": messages, "reasoning": ANTHROPIC_THINKING["claude-opus-5"]})
        assert len(emu.exchanges) == 1
        # the ways out the refusal names are accepted: the same request with reasoning off
        switched.generate({"tools": TOOLS, "messages": messages, "reasoning": {"mode": "off"}})
        assert emu.exchanges[-1].status == 200 and emu.exchanges[-1].violations == ()

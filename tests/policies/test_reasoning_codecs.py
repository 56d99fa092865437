"""Reasoning codecs: extraction and replay, on dicts, on objects, and through real litellm."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
from tests.fake_provider import FakeProvider, import_litellm

from capplan.executor.families.deepseek import OpenAISummaryReplayReasoningCodec
from capplan.executor.policies.reasoning_codec import (
    AnthropicReasoningCodec,
    GeminiReasoningCodec,
    NoReasoningCodec,
    OpenAIReasoningCodec,
    ReasoningCodec,
    ReasoningCodecError,
)
from capplan.executor.reasoning import ReasoningBlock, StructuredReasoning
from capplan.executor.registry import policy_class

FIXTURES = Path(__file__).parent / "fixtures"


def fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return data


def as_object(message: dict[str, Any]) -> SimpleNamespace:
    """A message read through attributes, the way a litellm ``Message`` is."""
    return SimpleNamespace(**message)


BOTH_FORMS: list[Callable[[dict[str, Any]], Any]] = [dict, as_object]

SIGNED = ReasoningBlock(type="thinking", text="step 1", signature="sig-1")
REDACTED = ReasoningBlock(type="redacted_thinking", encrypted_data="opaque==")
SUMMARY = ReasoningBlock(type="summary_text", text="a summary")


@pytest.fixture(scope="module")
def llm() -> Iterator[tuple[ModuleType, FakeProvider]]:
    litellm = import_litellm()
    with FakeProvider() as server:
        yield litellm, server


# --- registry wiring -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("none", NoReasoningCodec),
        ("anthropic", AnthropicReasoningCodec),
        ("openai", OpenAIReasoningCodec),
        ("gemini", GeminiReasoningCodec),
        ("openai_summary_replay", OpenAISummaryReplayReasoningCodec),
    ],
)
def test_registry_names_resolve_to_the_codecs(name: str, cls: type[ReasoningCodec]) -> None:
    assert policy_class("reasoning_codec", name) is cls
    assert cls.name == name and cls.slot == "reasoning_codec"
    assert isinstance(cls(), ReasoningCodec)


# --- NoReasoningCodec ------------------------------------------------------------------------


def test_no_codec_extracts_nothing_and_replays_nothing() -> None:
    codec = NoReasoningCodec()
    assert codec.extract({"reasoning_content": "x", "thinking_blocks": [{"type": "thinking"}]}) is None
    # a stray reasoning from another provider must not grow a key on this wire
    assert codec.encode_for_replay(StructuredReasoning(blocks=(SIGNED, REDACTED), summary="s")) == {}


# --- AnthropicReasoningCodec -----------------------------------------------------------------


@pytest.mark.parametrize("form", BOTH_FORMS)
def test_anthropic_extracts_blocks_verbatim(form: Callable[[dict[str, Any]], Any]) -> None:
    message = {
        "reasoning_content": "step 1",
        "thinking_blocks": [
            {"type": "thinking", "thinking": "step 1", "signature": "sig-1"},
            {"type": "redacted_thinking", "data": "opaque=="},
        ],
    }
    got = AnthropicReasoningCodec().extract(form(message))
    assert got == StructuredReasoning(
        blocks=(
            ReasoningBlock(type="thinking", text="step 1", signature="sig-1"),
            ReasoningBlock(type="redacted_thinking", text="", encrypted_data="opaque=="),
        ),
        summary="step 1",
    )


def test_anthropic_keeps_signature_of_an_omitted_display_block() -> None:
    got = AnthropicReasoningCodec().extract({"thinking_blocks": [{"type": "thinking", "thinking": "", "signature": "s"}]})
    assert got is not None
    assert got.blocks == (ReasoningBlock(type="thinking", text="", signature="s"),)
    assert got.summary is None


def test_anthropic_prefers_thinking_blocks_over_openrouter_details() -> None:
    message = {
        "thinking_blocks": [{"type": "thinking", "thinking": "native", "signature": "n"}],
        "provider_specific_fields": {"reasoning_details": [{"type": "reasoning.text", "text": "routed"}]},
    }
    got = AnthropicReasoningCodec().extract(message)
    assert got is not None and [b.text for b in got.blocks] == ["native"]


@pytest.mark.parametrize(
    "message",
    [{}, {"thinking_blocks": None, "reasoning_content": None}, {"thinking_blocks": [], "reasoning_content": ""}],
)
def test_anthropic_returns_none_without_reasoning(message: dict[str, Any]) -> None:
    assert AnthropicReasoningCodec().extract(message) is None


def test_anthropic_summary_alone_gives_no_blocks() -> None:
    assert AnthropicReasoningCodec().extract({"reasoning_content": "just text"}) == StructuredReasoning(
        blocks=(), summary="just text"
    )


@pytest.mark.parametrize(
    ("blocks", "message"),
    [
        ([{"type": "thinking_v2", "thinking": "x"}], "unknown Anthropic thinking block type 'thinking_v2'"),
        (["not a dict"], "must be a dict, got str"),
        ([{"type": "thinking", "thinking": "x", "signature": "s", "citations": ["c"]}], "keys this codec cannot replay"),
        ([{"type": "redacted_thinking"}], "needs a string `data`"),
        ([{"type": "thinking", "thinking": 3}], "string `thinking`"),
    ],
)
def test_anthropic_refuses_what_it_cannot_interpret(blocks: list[Any], message: str) -> None:
    with pytest.raises(ReasoningCodecError, match=message) as caught:
        AnthropicReasoningCodec().extract({"thinking_blocks": blocks})
    assert isinstance(caught.value, ValueError)


def test_anthropic_ignores_null_valued_unknown_keys() -> None:
    got = AnthropicReasoningCodec().extract({"thinking_blocks": [{"type": "redacted_thinking", "data": "d", "cache_control": None}]})
    assert got is not None and got.blocks == (ReasoningBlock(type="redacted_thinking", encrypted_data="d"),)


def test_anthropic_replay_shape_with_the_redacted_asymmetry() -> None:
    payload = AnthropicReasoningCodec().encode_for_replay(StructuredReasoning(blocks=(SIGNED, REDACTED)))
    assert payload == {
        "thinking_blocks": [
            {"type": "thinking", "thinking": "step 1", "signature": "sig-1"},
            {"type": "redacted_thinking", "data": "opaque=="},
        ]
    }


def test_anthropic_replay_of_no_blocks_is_empty_even_with_a_summary() -> None:
    assert AnthropicReasoningCodec().encode_for_replay(StructuredReasoning(blocks=(), summary="x")) == {}


def test_anthropic_refuses_to_replay_a_summary_block() -> None:
    with pytest.raises(ReasoningCodecError, match="summary_text"):
        AnthropicReasoningCodec().encode_for_replay(StructuredReasoning(blocks=(SIGNED, SUMMARY)))


def test_anthropic_refuses_a_redacted_block_without_data() -> None:
    with pytest.raises(ReasoningCodecError, match="without its data"):
        AnthropicReasoningCodec().encode_for_replay(StructuredReasoning(blocks=(ReasoningBlock(type="redacted_thinking"),)))


def test_anthropic_round_trip_is_verbatim() -> None:
    blocks = [
        {"type": "thinking", "thinking": "a", "signature": "s1"},
        {"type": "thinking", "thinking": "", "signature": "s2"},
        {"type": "redacted_thinking", "data": "r"},
    ]
    codec = AnthropicReasoningCodec()
    extracted = codec.extract({"thinking_blocks": blocks})
    assert extracted is not None
    assert codec.encode_for_replay(extracted) == {"thinking_blocks": blocks}


def test_anthropic_over_openrouter_keeps_signed_details_and_replays_them() -> None:
    message = fixture("reasoning_openrouter_anthropic_response.json")["choices"][0]["message"]
    details = message["reasoning_details"]
    got = AnthropicReasoningCodec().extract(
        {"reasoning_content": message["reasoning"], "provider_specific_fields": {"reasoning_details": details}}
    )
    assert got is not None
    assert [(b.type, b.signature, b.encrypted_data) for b in got.blocks] == [
        ("reasoning_text", "EqQBCkgIBRABGAIiQOR-sig", None),
        ("encrypted", None, "EmwKAhgBEgy3va3pzix-redacted"),
    ]
    assert AnthropicReasoningCodec().encode_for_replay(got) == {"reasoning_details": details}


def test_anthropic_refuses_an_unknown_openrouter_entry() -> None:
    with pytest.raises(ReasoningCodecError, match="unknown Anthropic reasoning_details type 'reasoning.summary'"):
        AnthropicReasoningCodec().extract(
            {"provider_specific_fields": {"reasoning_details": [{"type": "reasoning.summary", "summary": "s"}]}}
        )


def test_anthropic_refuses_mixed_envelopes_on_replay() -> None:
    routed = ReasoningBlock(type="reasoning_text", text="t", signature="s")
    with pytest.raises(ReasoningCodecError, match="mixes"):
        AnthropicReasoningCodec().encode_for_replay(StructuredReasoning(blocks=(SIGNED, routed)))


def test_anthropic_through_litellm_round_trips_signed_and_redacted_blocks(
    llm: tuple[ModuleType, FakeProvider],
) -> None:
    litellm, server = llm
    body = fixture("reasoning_anthropic_messages_response.json")
    server.routes["/v1/messages"] = body
    tools = [{"type": "function", "function": {"name": "screenshot", "parameters": {"type": "object", "properties": {}}}}]
    first = [{"role": "user", "content": "take a screenshot"}]
    response = litellm.completion(
        model="anthropic/claude-sonnet-4-5", api_base=server.root, api_key="k", messages=first, tools=tools, max_tokens=64
    )
    message = response.choices[0].message
    codec = AnthropicReasoningCodec()
    reasoning = codec.extract(message)  # the real litellm Message object
    assert reasoning is not None
    native = [block for block in body["content"] if block["type"] in ("thinking", "redacted_thinking")]
    assert len(reasoning.blocks) == 3 and reasoning.blocks[1] == ReasoningBlock(
        type="thinking", text="", signature="EqQBCkgIBRABGAIiQL0sig2-omitted-display"
    )

    call = message.tool_calls[0]
    history = [
        *first,
        {
            "role": "assistant",
            "content": message.content,
            "tool_calls": [{"id": call.id, "type": "function", "function": {"name": "screenshot", "arguments": "{}"}}],
            **codec.encode_for_replay(reasoning),
        },
        {"role": "tool", "tool_call_id": call.id, "content": "ok"},
    ]
    litellm.completion(
        model="anthropic/claude-sonnet-4-5", api_base=server.root, api_key="k", messages=history, tools=tools, max_tokens=64
    )
    sent_assistant = server.requests[-1].body["messages"][1]
    assert sent_assistant["content"][: len(native)] == native


# --- OpenAIReasoningCodec and the summary-replay family codec --------------------------------


@pytest.mark.parametrize("form", BOTH_FORMS)
def test_openai_extracts_one_summary_block(form: Callable[[dict[str, Any]], Any]) -> None:
    got = OpenAIReasoningCodec().extract(form({"reasoning_content": "because"}))
    assert got == StructuredReasoning(blocks=(ReasoningBlock(type="summary_text", text="because"),), summary="because")


@pytest.mark.parametrize("message", [{}, {"reasoning_content": None}, {"reasoning_content": ""}])
def test_openai_returns_none_without_reasoning(message: dict[str, Any]) -> None:
    assert OpenAIReasoningCodec().extract(message) is None


def test_openai_refuses_a_non_string_summary() -> None:
    with pytest.raises(ReasoningCodecError, match="reasoning_content must be a string"):
        OpenAIReasoningCodec().extract({"reasoning_content": ["a"]})


def test_openai_replays_nothing() -> None:
    assert OpenAIReasoningCodec().encode_for_replay(StructuredReasoning(blocks=(SUMMARY,), summary="s")) == {}


def test_summary_replay_keeps_the_openai_extraction() -> None:
    message = {"reasoning_content": "think", "provider_specific_fields": {"reasoning_details": [{"type": "odd"}]}}
    assert OpenAISummaryReplayReasoningCodec().extract(message) == OpenAIReasoningCodec().extract(message)


def test_summary_replay_emits_unsigned_text_entries() -> None:
    reasoning = StructuredReasoning(blocks=(SUMMARY, ReasoningBlock(type="summary_text", text=""), SIGNED, REDACTED))
    assert OpenAISummaryReplayReasoningCodec().encode_for_replay(reasoning) == {
        "reasoning_details": [
            {"type": "reasoning.text", "text": "a summary"},
            {"type": "reasoning.text", "text": "step 1"},
        ]
    }


@pytest.mark.parametrize(
    "reasoning",
    [StructuredReasoning(), StructuredReasoning(blocks=(REDACTED,)), StructuredReasoning(summary="only a summary")],
)
def test_summary_replay_without_text_is_empty(reasoning: StructuredReasoning) -> None:
    assert OpenAISummaryReplayReasoningCodec().encode_for_replay(reasoning) == {}


# --- GeminiReasoningCodec: the OpenRouter envelope -------------------------------------------


def openrouter_gemini_message() -> dict[str, Any]:
    message = fixture("reasoning_openrouter_gemini_response.json")["choices"][0]["message"]
    return {
        "content": message["content"],
        "reasoning_content": message["reasoning"],
        "provider_specific_fields": {"reasoning": message["reasoning"], "reasoning_details": message["reasoning_details"]},
    }


@pytest.mark.parametrize("form", BOTH_FORMS)
def test_gemini_reads_the_openrouter_envelope_with_every_key(form: Callable[[dict[str, Any]], Any]) -> None:
    got = GeminiReasoningCodec().extract(form(openrouter_gemini_message()))
    assert got is not None
    text, encrypted = got.blocks
    assert text == ReasoningBlock(
        type="reasoning_text", text="**Checking the weather** I should call the tool.",
        extras=(("format", "google-gemini-v1"), ("index", 0)),
    )
    assert encrypted.type == "encrypted" and (encrypted.encrypted_data or "").startswith("CiQB")
    assert encrypted.extras == (("id", "tool_get_weather_abc123"), ("format", "google-gemini-v1"), ("index", 0))
    assert got.summary == "**Checking the weather** I should call the tool."


def test_gemini_replays_the_openrouter_envelope_verbatim() -> None:
    message = openrouter_gemini_message()
    codec = GeminiReasoningCodec()
    extracted = codec.extract(message)
    assert extracted is not None
    assert codec.encode_for_replay(extracted) == {
        "reasoning_details": message["provider_specific_fields"]["reasoning_details"]
    }


def test_gemini_keeps_null_text_and_summary_entries_verbatim() -> None:
    details = [
        {"type": "reasoning.text", "text": None, "signature": None, "format": "unknown"},
        {"type": "reasoning.summary", "summary": "short", "format": "openai-responses-v1"},
    ]
    codec = GeminiReasoningCodec()
    extracted = codec.extract({"provider_specific_fields": {"reasoning_details": details}})
    assert extracted is not None and [b.type for b in extracted.blocks] == ["reasoning_text", "summary_text"]
    assert codec.encode_for_replay(extracted) == {"reasoning_details": details}


@pytest.mark.parametrize(
    ("details", "message"),
    [
        ([{"type": "reasoning.thought", "text": "x"}], "unknown Gemini reasoning_details type 'reasoning.thought'"),
        ([7], "entry must be a dict, got int"),
    ],
)
def test_gemini_refuses_unknown_envelope_entries(details: list[Any], message: str) -> None:
    with pytest.raises(ReasoningCodecError, match=message):
        GeminiReasoningCodec().extract({"provider_specific_fields": {"reasoning_details": details}})


def test_gemini_refuses_a_non_list_envelope() -> None:
    with pytest.raises(ReasoningCodecError, match="must be a list"):
        GeminiReasoningCodec().extract({"provider_specific_fields": {"reasoning_details": {"type": "reasoning.text"}}})


# --- GeminiReasoningCodec: litellm's Gemini route --------------------------------------------


NATIVE_MESSAGE = {
    "content": "Let me check.",
    "reasoning_content": "The user asks for the weather in Paris. I need the live value.",
    "thinking_blocks": [
        {"type": "thinking", "thinking": "The user asks for the weather in Paris. ", "signature": "SIG_THOUGHT_A"},
        {"type": "thinking", "thinking": "I need the live value."},
    ],
    "provider_specific_fields": {"thought_signatures": ["SIG_THOUGHT_A", "SIG_TEXT_B", "SIG_CALL_C"]},
}


@pytest.mark.parametrize("form", BOTH_FORMS)
def test_gemini_native_keeps_thoughts_and_every_signature(form: Callable[[dict[str, Any]], Any]) -> None:
    got = GeminiReasoningCodec().extract(form(NATIVE_MESSAGE))
    assert got == StructuredReasoning(
        blocks=(
            ReasoningBlock(type="thinking", text="The user asks for the weather in Paris. ", signature="SIG_THOUGHT_A"),
            ReasoningBlock(type="thinking", text="I need the live value."),
        ),
        summary="The user asks for the weather in Paris. I need the live value.",
        signatures=("SIG_THOUGHT_A", "SIG_TEXT_B", "SIG_CALL_C"),
    )


def test_gemini_native_replay_is_what_litellm_reads() -> None:
    codec = GeminiReasoningCodec()
    extracted = codec.extract(NATIVE_MESSAGE)
    assert extracted is not None
    assert codec.encode_for_replay(extracted) == {
        "reasoning_content": "The user asks for the weather in Paris. I need the live value.",
        "provider_specific_fields": {"thought_signatures": ["SIG_THOUGHT_A", "SIG_TEXT_B", "SIG_CALL_C"]},
    }


def test_gemini_signatures_without_thoughts_still_replay() -> None:
    # Gemini signs function-call parts even when no thought text is returned
    codec = GeminiReasoningCodec()
    extracted = codec.extract({"thinking_blocks": [], "provider_specific_fields": {"thought_signatures": ["S"]}})
    assert extracted == StructuredReasoning(signatures=("S",))
    assert codec.encode_for_replay(extracted) == {"provider_specific_fields": {"thought_signatures": ["S"]}}


def test_gemini_returns_none_without_reasoning() -> None:
    assert GeminiReasoningCodec().extract({"content": "hi", "provider_specific_fields": {}}) is None
    assert GeminiReasoningCodec().encode_for_replay(StructuredReasoning(summary="x")) == {}


def test_gemini_refuses_a_signature_it_cannot_put_on_the_wire() -> None:
    with pytest.raises(ReasoningCodecError, match="not among the message's thought signatures"):
        GeminiReasoningCodec().encode_for_replay(StructuredReasoning(blocks=(SIGNED,)))


def test_gemini_refuses_anthropic_only_blocks() -> None:
    with pytest.raises(ReasoningCodecError, match=r"cannot replay \['redacted_thinking'\] blocks to Gemini"):
        GeminiReasoningCodec().encode_for_replay(StructuredReasoning(blocks=(SIGNED, REDACTED), signatures=("sig-1",)))


def test_gemini_refuses_both_envelopes_in_one_message() -> None:
    message = {
        "thinking_blocks": [{"type": "thinking", "thinking": "x"}],
        "provider_specific_fields": {"reasoning_details": [{"type": "reasoning.text", "text": "y"}]},
    }
    with pytest.raises(ReasoningCodecError, match="both OpenRouter reasoning_details and Gemini"):
        GeminiReasoningCodec().extract(message)
    mixed = StructuredReasoning(blocks=(ReasoningBlock(type="reasoning_text", text="y"),), signatures=("S",))
    with pytest.raises(ReasoningCodecError, match="mixes"):
        GeminiReasoningCodec().encode_for_replay(mixed)


@pytest.mark.parametrize(
    ("message", "error"),
    [
        ({"thinking_blocks": [{"type": "redacted_thinking", "data": "x"}]}, "unknown Gemini thinking block type"),
        ({"provider_specific_fields": {"thought_signatures": [1]}}, "thought signature must be a string"),
        ({"thinking_blocks": [{"type": "thinking", "thinking": "x", "extra": 1}]}, "keys this codec cannot replay"),
    ],
)
def test_gemini_native_refuses_malformed_fields(message: dict[str, Any], error: str) -> None:
    with pytest.raises(ReasoningCodecError, match=error):
        GeminiReasoningCodec().extract(message)


def test_gemini_route_through_litellm_replays_thoughts_and_signatures(llm: tuple[ModuleType, FakeProvider]) -> None:
    """litellm's own Gemini route: a real response is extracted, replayed, and re-sent as Gemini parts."""
    litellm, server = llm
    server.routes[":generateContent"] = fixture("reasoning_gemini_generate_content_response.json")
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}}}]
    first = [{"role": "user", "content": "weather in Paris?"}]
    call_kwargs = {"model": "gemini/gemini-2.5-pro", "api_base": server.root, "api_key": "k", "tools": tools}
    response = litellm.completion(messages=first, **call_kwargs)
    message = response.choices[0].message
    codec = GeminiReasoningCodec()
    reasoning = codec.extract(message)
    assert reasoning is not None
    assert reasoning.signatures == ("SIG_THOUGHT_A", "SIG_TEXT_B", "SIG_CALL_C")
    assert [b.signature for b in reasoning.blocks] == ["SIG_THOUGHT_A", None]

    call = message.tool_calls[0]  # its id carries SIG_CALL_C, which is the tool call's own business
    history = [
        *first,
        {
            "role": "assistant",
            "content": message.content,
            "tool_calls": [{"id": call.id, "type": "function", "function": {
                "name": call.function.name, "arguments": call.function.arguments}}],
            **codec.encode_for_replay(reasoning),
        },
        {"role": "tool", "tool_call_id": call.id, "content": "18C"},
    ]
    litellm.completion(messages=history, **call_kwargs)
    model_turn = server.requests[-1].body["contents"][1]
    assert model_turn["role"] == "model"
    parts = model_turn["parts"]
    assert parts[0] == {"thought": True, "text": "The user asks for the weather in Paris. I need the live value."}
    # litellm puts the first listed signature on the text part, as it does for its own Message dump
    assert parts[1] == {"text": "Let me check.", "thoughtSignature": "SIG_THOUGHT_A"}
    assert parts[2]["thoughtSignature"] == "SIG_CALL_C"


def test_openrouter_gemini_through_litellm_replays_the_envelope_verbatim(llm: tuple[ModuleType, FakeProvider]) -> None:
    litellm, server = llm
    body = fixture("reasoning_openrouter_gemini_response.json")
    server.routes["/chat/completions"] = body
    kwargs = {"model": "openrouter/google/gemini-3-pro-preview", "api_base": server.base, "api_key": "k"}
    first = [{"role": "user", "content": "weather in Paris?"}]
    message = litellm.completion(messages=first, **kwargs).choices[0].message
    codec = GeminiReasoningCodec()
    reasoning = codec.extract(message)
    assert reasoning is not None and len(reasoning.blocks) == 2
    history = [*first, {"role": "assistant", "content": "ok", **codec.encode_for_replay(reasoning)},
               {"role": "user", "content": "and tomorrow?"}]
    litellm.completion(messages=history, **kwargs)
    sent = server.requests[-1].body["messages"][1]
    assert sent["reasoning_details"] == body["choices"][0]["message"]["reasoning_details"]

"""Real wire: real litellm sends to a loopback server; we assert what went over the wire.

This is the one test module that imports litellm (seconds to import), through the client's own
lazy import. One server serves the whole module; each test queues the provider's answer, sends
through ``Client.generate``, and reads back the recorded method, path, headers and JSON body.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from capplan.executor.client import Client
from capplan.executor.plan import DEFAULT_OPENROUTER_REFERER, DEFAULT_OPENROUTER_TITLE
from tests.fake_provider import FakeProvider, unscripted
from tests.executor.plans import make_plan
from tests.cli_runner import invoke

CREDENTIALS = {"OPENAI_API_KEY": "sk-openai-test", "ANTHROPIC_API_KEY": "sk-ant-test", "OPENROUTER_API_KEY": "sk-or-test"}


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProvider]:
    with pytest.MonkeyPatch.context() as mp:
        for name, value in CREDENTIALS.items():
            mp.setenv(name, value)
        with FakeProvider(unscripted) as srv:
            yield srv


@pytest.fixture(autouse=True)
def _fresh(server: FakeProvider) -> None:
    server.reset()


# --- tools whose sanitisation shows on the wire -------------------------------------------------

DECIMAL = {"anyOf": [{"type": "number"}, {"type": "string", "pattern": "^(?!^[-+.]*$)[+-]?0*\\d*\\.?\\d*$"}], "description": "Amount"}
INVOICE = {
    "type": "function",
    "function": {
        "name": "invoice",
        "description": "Create an invoice.",
        "parameters": {
            "type": "object",
            "description": "Invoice(BaseModel) docstring",
            "$defs": {"Line": {"type": "object", "properties": {"qty": {"type": "integer"}, "price": DECIMAL}, "required": ["qty", "price"]}},
            "properties": {
                "title": {"type": "string", "examples": ["Q3 consulting"]},
                "format": {"type": "string", "enum": ["pdf", "html"]},
                "lines": {"type": "object", "additionalProperties": {"$ref": "#/$defs/Line"}},
            },
            "required": ["title", "format", "lines"],
        },
    },
}
USER = {"role": "user", "content": "bill ACME"}


def _openai_body(message: dict[str, Any], usage: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1767225600,
        "model": "m",
        "choices": [{"index": 0, "finish_reason": "tool_calls" if message.get("tool_calls") else "stop", "message": {"role": "assistant", **message}}],
        "usage": usage,
    }


def test_openai_route_sends_sanitised_tools_and_reasoning_effort(server: FakeProvider) -> None:
    plan = make_plan(
        "openai",
        "gpt-wire-test",
        policies={"schema_sanitizer": "strict", "response_policy": "array_dict_map", "reasoning_codec": "openai"},
    )
    arguments = json.dumps({"title": "Q3", "format": "pdf", "lines": [{"key": "consulting", "qty": 2, "price": 150.5}]})
    server.queue(
        _openai_body(
            {"content": None, "reasoning_content": "The user wants an invoice.", "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "invoice", "arguments": arguments}}]},
            {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150, "prompt_tokens_details": {"cached_tokens": 64}, "completion_tokens_details": {"reasoning_tokens": 11}},
        )
    )
    client = Client(plan, api_base=server.base)
    result = client.generate({"messages": [USER], "tools": [INVOICE], "reasoning": {"mode": "adaptive", "effort_hint": "high"}, "tool_choice": "auto"})

    sent = server.last()
    assert (sent.method, sent.path) == ("POST", "/v1/chat/completions")
    assert sent.headers["authorization"] == "Bearer sk-openai-test"
    assert sent.body["model"] == "gpt-wire-test"
    assert sent.body["reasoning_effort"] == "high" and "reasoning" not in sent.body and "thinking" not in sent.body
    assert sent.body["tools"] == client.build_request({"messages": [USER], "tools": [INVOICE]})["tools"]
    params = sent.body["tools"][0]["function"]["parameters"]
    assert "$defs" not in params and "description" not in params
    assert params["properties"]["title"] == {"type": "string", "examples": ["Q3 consulting"]}
    assert params["properties"]["format"] == {"type": "string", "enum": ["pdf", "html"]}
    line = params["properties"]["lines"]
    assert line["type"] == "array" and line["items"]["properties"]["price"] == {"type": "number", "description": "Amount"}
    assert "usage" not in sent.body  # an OpenRouter extension; other upstreams reject it

    assert result.reasoning is not None and result.reasoning.summary == "The user wants an invoice."
    assert (result.usage.prompt_tokens, result.usage.cached_tokens, result.usage.reasoning_tokens) == (120, 64, 11)
    assert result.tool_calls[0].arguments == {"title": "Q3", "format": "pdf", "lines": {"consulting": {"qty": 2, "price": 150.5}}}
    assert result.validation_errors == () and result.parser_errors == ()
    assert result.finish_reason == "tool_calls" and result.latency_s > 0


def test_openrouter_route_extra_body_reasoning_pin_usage_include_and_headers(server: FakeProvider) -> None:
    plan = make_plan(
        "openrouter",
        "deepseek/deepseek-v4",
        policies={"reasoning_codec": "openai_summary_replay"},
        params={"reasoning_via_extra_body": True},
        openrouter={"provider_order": ["deepinfra", "together"], "allow_fallbacks": False},
        pricing={"key": "deepseek/deepseek-v4", "input": 0.5, "output": 2.0},
    )
    server.queue(
        _openai_body(
            {"content": "Done.", "reasoning": "short thought", "reasoning_details": [{"type": "reasoning.text", "text": "short thought", "format": "unknown", "index": 0}]},
            {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60, "cost": 0.00042},
        ),
        headers={"x-generation-id": "gen-1767225600-abc"},
    )
    history = [
        USER,
        {"role": "assistant", "content": "Working.", "reasoning": {"blocks": [{"type": "summary_text", "text": "earlier thought"}], "summary": "earlier thought"}},
        {"role": "user", "content": "continue"},
    ]
    result = Client(plan, api_base=server.root + "/api/v1").generate({"messages": history, "reasoning": {"mode": "adaptive", "effort_hint": "medium"}})

    sent = server.last()
    assert sent.path == "/api/v1/chat/completions"
    assert sent.body["model"] == "deepseek/deepseek-v4"
    assert sent.body["usage"] == {"include": True}
    assert sent.body["reasoning"] == {"effort": "medium", "enabled": True} and "reasoning_effort" not in sent.body
    assert sent.body["provider"] == {"order": ["deepinfra", "together"], "allow_fallbacks": False, "data_collection": "deny"}
    assert sent.headers["http-referer"] == DEFAULT_OPENROUTER_REFERER and sent.headers["x-title"] == DEFAULT_OPENROUTER_TITLE
    assert sent.headers["x-data-collection-opt-out"] == "true"
    assert sent.headers["authorization"] == "Bearer sk-or-test"
    assert sent.body["messages"][1]["reasoning_details"] == [{"type": "reasoning.text", "text": "earlier thought"}]

    assert result.openrouter_generation_id == "gen-1767225600-abc"
    assert (result.cost_usd, result.cost_source) == (0.00042, "litellm")
    assert result.reasoning is not None and result.reasoning.summary == "short thought"


def test_openrouter_anthropic_nested_cache_counters(server: FakeProvider) -> None:
    plan = make_plan("openrouter", "anthropic/claude-wire", policies={"reasoning_codec": "anthropic"}, pricing={"key": "anthropic/claude-wire", "input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75})
    usage = {
        "prompt_tokens": 1000,
        "completion_tokens": 10,
        "total_tokens": 1010,
        "prompt_tokens_details": {"cached_tokens": 800, "cache_write_tokens": 150, "cache_read_tokens": 800},
    }
    server.queue(_openai_body({"content": "hi"}, usage), headers={"x-generation-id": "gen-2"})
    result = Client(plan, api_base=server.root + "/api/v1").generate({"messages": [USER]})
    assert (result.usage.cache_read_input_tokens, result.usage.cache_creation_input_tokens) == (800, 150)
    assert result.cost_source == "pricing"
    assert result.cost_usd == pytest.approx((50 * 3.0 + 800 * 0.3 + 150 * 3.75 + 10 * 15.0) / 1e6)


def test_litellm_zeroes_nested_cache_writes_when_top_level_zeros_are_present(server: FakeProvider) -> None:
    """Canary for litellm 1.110.2: top-level ``cache_creation_input_tokens: 0`` overwrites the nested
    ``cache_write_tokens`` before any code of ours sees the response. If this starts failing, litellm
    stopped clobbering the nested counter and the extractor's nested path recovers it."""
    usage = {
        "prompt_tokens": 1000,
        "completion_tokens": 10,
        "total_tokens": 1010,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "prompt_tokens_details": {"cached_tokens": 800, "cache_write_tokens": 150, "cache_read_tokens": 800},
    }
    server.queue(_openai_body({"content": "hi"}, usage))
    result = Client(make_plan("openrouter", "anthropic/claude-wire"), api_base=server.root + "/api/v1").generate({"messages": [USER]})
    assert (result.usage.cache_read_input_tokens, result.usage.cache_creation_input_tokens) == (800, 0)
    assert result.usage.provider_raw["prompt_tokens_details"]["cache_write_tokens"] == 0


ANTHROPIC_POLICIES = {"content_policy": "anthropic", "reasoning_codec": "anthropic", "cache_policy": "anthropic_ephemeral"}
LOOKUP = {"type": "function", "function": {"name": "lookup", "description": "Find an order.", "parameters": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}}}


def test_anthropic_route_replays_signed_thinking_with_cache_markers(server: FakeProvider) -> None:
    plan = make_plan(
        "anthropic",
        "claude-sonnet-4-5",
        policies=ANTHROPIC_POLICIES,
        params={"reasoning_via_thinking_kwarg": True, "drop_sampling_when_thinking": True, "reasoning_budget_default": 2048},
    )
    server.queue(
        {
            "id": "msg_2",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [
                {"type": "thinking", "thinking": "The order shipped.", "signature": "SIG-turn-2"},
                {"type": "redacted_thinking", "data": "ENC-turn-2"},
                {"type": "text", "text": "Your order shipped."},
            ],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 40, "output_tokens": 12, "cache_creation_input_tokens": 300, "cache_read_input_tokens": 900},
        }
    )
    history = [
        {"role": "user", "content": "where is order 7?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "toolu_1", "function": {"name": "lookup", "arguments": '{"id": "7"}'}}],
            "reasoning": {"blocks": [{"type": "thinking", "text": "Look it up.", "signature": "SIG-turn-1"}, {"type": "redacted_thinking", "encrypted_data": "ENC-turn-1"}]},
        },
        {"role": "tool", "tool_call_id": "toolu_1", "content": "shipped", "images": [{"media_type": "image/png", "data": "iVBORw0KGgo="}]},
    ]
    result = Client(plan, api_base=server.root).generate(
        {"system": "You are support.", "messages": history, "tools": [LOOKUP], "temperature": 0.3, "reasoning": {"mode": "budget"}}
    )

    sent = server.last()
    assert sent.path == "/v1/messages"
    assert sent.headers["x-api-key"] == "sk-ant-test"
    body = sent.body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert "temperature" not in body
    assert body["system"] == [{"type": "text", "text": "You are support.", "cache_control": {"type": "ephemeral"}}]
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["tools"][-1]["name"] == "lookup" and body["tools"][-1]["input_schema"] == LOOKUP["function"]["parameters"]
    assistant = body["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"][:2] == [
        {"type": "thinking", "thinking": "Look it up.", "signature": "SIG-turn-1"},
        {"type": "redacted_thinking", "data": "ENC-turn-1"},
    ]
    assert assistant["content"][2]["type"] == "tool_use" and assistant["content"][2]["input"] == {"id": "7"}
    tool_result = body["messages"][2]["content"][0]
    assert tool_result["type"] == "tool_result" and tool_result["tool_use_id"] == "toolu_1"
    assert any(part.get("type") == "image" for part in tool_result["content"])
    assert json.dumps(body).count("cache_control") == 4

    assert [(b.type, b.signature, b.encrypted_data) for b in result.reasoning.blocks] == [
        ("thinking", "SIG-turn-2", None),
        ("redacted_thinking", None, "ENC-turn-2"),
    ]
    assert result.text == "Your order shipped."
    assert (result.usage.cache_creation_input_tokens, result.usage.cache_read_input_tokens) == (300, 900)
    assert result.usage.prompt_tokens == 40 + 300 + 900
    assert result.openrouter_generation_id is None


def test_unmapped_model_needs_the_plans_allowed_openai_params(server: FakeProvider) -> None:
    import litellm

    request = {"messages": [USER], "reasoning": {"mode": "budget", "budget_tokens": 1024}}
    params = {"reasoning_via_thinking_kwarg": True}
    refused = Client(make_plan("anthropic", "claude-unmapped-wire", params=params), api_base=server.root)
    with pytest.raises(litellm.UnsupportedParamsError):
        refused.generate(request)
    assert server.requests == []
    server.queue({"id": "m", "type": "message", "role": "assistant", "model": "x", "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}})
    allowed = Client(make_plan("anthropic", "claude-unmapped-wire", params=params, allowed_openai_params=("thinking",)), api_base=server.root)
    assert allowed.generate(request).text == "ok"
    assert server.last().body["thinking"] == {"type": "enabled", "budget_tokens": 1024}


def test_transient_5xx_is_retried_and_a_400_is_not(server: FakeProvider) -> None:
    slept: list[float] = []
    client = Client(make_plan("openai", "gpt-wire-test"), api_base=server.base, sleep=slept.append)
    server.queue({"error": {"message": "overloaded", "type": "server_error"}}, status=503)
    server.queue(_openai_body({"content": "second time lucky"}, {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}))
    assert client.generate({"messages": [USER]}).text == "second time lucky"
    assert slept == [4] and len(server.requests) == 2
    server.reset()
    slept.clear()
    server.queue({"error": {"message": "bad request", "type": "invalid_request_error"}}, status=400)
    with pytest.raises(Exception) as info:
        client.generate({"messages": [USER]})
    assert getattr(info.value, "status_code", None) == 400
    assert slept == [] and len(server.requests) == 1


def test_cli_send_prints_the_parsed_result_and_provider_failures_exit_1(server: FakeProvider, tmp_path: Path) -> None:
    plan_path, request_path = tmp_path / "plan.json", tmp_path / "request.json"
    plan_path.write_bytes(make_plan("openrouter", "x-ai/grok-wire", policies={"reasoning_codec": "openai"}).to_bytes())
    request_path.write_text(json.dumps({"messages": [USER]}), encoding="utf-8")
    server.queue(_openai_body({"content": "hello", "reasoning_content": "r"}, {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5, "cost": 0.001}), headers={"x-generation-id": "gen-cli"})
    result = invoke("send", "--plan", str(plan_path), "--api-base", server.root + "/api/v1", str(request_path))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == "text: hello"
    assert "openrouter_generation_id: gen-cli" in result.stdout and "cost: $0.001000 (litellm)" in result.stdout

    server.queue({"error": {"message": "no such model", "code": 404}}, status=404)
    failed = invoke("send", "--plan", str(plan_path), "--api-base", server.root + "/api/v1", str(request_path))
    assert failed.exit_code == 1
    (line,) = failed.stderr.strip().splitlines()
    assert line.startswith(f"{request_path}: error[PROVIDER]: ") and "Traceback" not in failed.output
    # the one located line is the whole report: none of litellm's own banners
    assert "Give Feedback" not in failed.output and "Provider List" not in failed.output
    assert failed.stdout == ""


# --- reasoning replay: what each route reads, and what a foreign history leaves out -------------

SIGNED = {"type": "thinking", "text": "Look the order up first.", "signature": "EqQBCkYIARgCKkD-sig-1"}
REDACTED = {"type": "redacted_thinking", "encrypted_data": "EmwKAhgBEgy-redacted-1"}
ORDER_TOOL = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}}}
CALL = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{\"id\": \"7\"}"}}


def _claude_history(reasoning: dict[str, Any]) -> dict[str, Any]:
    return {
        "tools": [ORDER_TOOL],
        "messages": [
            {"role": "user", "content": "Where is order 7?"},
            {"role": "assistant", "content": "", "tool_calls": [CALL], "reasoning": reasoning},
            {"role": "tool", "tool_call_id": "call_1", "content": "{\"status\": \"shipped\"}"},
        ],
        "reasoning": {"mode": "budget", "budget_tokens": 2048},
    }


def test_signed_claude_thinking_reaches_openrouter_as_documented_reasoning_details(server: FakeProvider) -> None:
    # OpenRouter's reasoning-tokens guide: pass reasoning_details back unmodified, each entry with its
    # signature and format; litellm forwards the history message's extra key as it is
    plan = make_plan(
        "openrouter", "anthropic/claude-opus-4.7",
        policies={"reasoning_codec": "anthropic"},
        params={"reasoning_via_thinking_kwarg": True, "reasoning_via_extra_body": True},
    )
    server.queue(_openai_body({"content": "Shipped."}, {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}))
    result = Client(plan, api_base=server.root + "/api/v1").generate(_claude_history({"blocks": [SIGNED, REDACTED]}))

    sent = server.last().body
    assistant = sent["messages"][1]
    assert assistant["reasoning_details"] == [
        {"type": "reasoning.text", "text": "Look the order up first.", "signature": "EqQBCkYIARgCKkD-sig-1",
         "format": "anthropic-claude-v1"},
        {"type": "reasoning.encrypted", "data": "EmwKAhgBEgy-redacted-1", "format": "anthropic-claude-v1"},
    ]
    assert "thinking_blocks" not in assistant
    assert sent["reasoning"] == {"max_tokens": 2048, "enabled": True} and "thinking" not in sent
    assert result.reasoning_left_out == ()


def test_openrouter_borne_claude_entries_replay_natively_to_anthropic(server: FakeProvider) -> None:
    plan = make_plan("anthropic", "claude-opus-4-7-wire", policies={"reasoning_codec": "anthropic"},
                     params={"reasoning_via_thinking_kwarg": True})
    server.queue({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-opus-4-7-wire",
        "content": [{"type": "text", "text": "Shipped."}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 9, "output_tokens": 2},
    })
    entry = {"type": "reasoning_text", "text": "Look the order up first.", "signature": "EqQBCkYIARgCKkD-sig-1",
             "extras": {"format": "anthropic-claude-v1", "index": 0}}
    Client(plan, api_base=server.root).generate(_claude_history({"blocks": [entry]}))

    sent = server.last().body
    assistant = sent["messages"][1]
    assert assistant["content"][0] == {"type": "thinking", "thinking": "Look the order up first.",
                                       "signature": "EqQBCkYIARgCKkD-sig-1"}


def test_a_history_from_another_family_builds_and_records_what_was_left_out(server: FakeProvider) -> None:
    # Gemini over OpenRouter receives a history whose reasoning Claude signed: it cannot verify or read it
    plan = make_plan("openrouter", "google/gemini-wire-test", policies={"reasoning_codec": "gemini"},
                     params={"reasoning_via_extra_body": True})
    server.queue(_openai_body({"content": "Shipped."}, {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}))
    result = Client(plan, api_base=server.root + "/api/v1").generate(_claude_history({"blocks": [SIGNED, REDACTED]}))

    assistant = server.last().body["messages"][1]
    assert "reasoning_details" not in assistant and "thinking_blocks" not in assistant
    assert [(r.message, r.block, r.type) for r in result.reasoning_left_out] == [
        (1, 0, "thinking"), (1, 1, "redacted_thinking")]
    assert "signed by another provider" in result.reasoning_left_out[0].reason
    assert result.to_json()["reasoning_left_out"][1]["reason"].startswith("Anthropic's redacted thinking")

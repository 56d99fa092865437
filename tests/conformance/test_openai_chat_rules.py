"""The openai-chat emulator holds each corpus rule: a naive request is refused with the provider's
exact text, and capplan's real path (bundled plan -> executor -> direct transport) is accepted
through a tool loop of three or more steps that replays reasoning exactly as the trial loop does.

A naive request is posted by hand, as the provider receives it, over real HTTP to the loopback
emulator; the accepted side drives ``Client.generate`` against the same emulator.
"""

from __future__ import annotations

import copy
import json
import logging
import re
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from capplan.conformance.corpus import Corpus
from capplan.conformance.emulator import Reply
from capplan.conformance.emulators import emulator_for
from capplan.conformance.emulators.openai_chat import OpenAIChatEmulator, native_position, thinking_switch
from capplan.executor.client import Client
from capplan.executor.errors import ProviderHTTPError, ReasoningError
from capplan.executor.messages import ReasoningIn
from capplan.executor.plan import Plan
from capplan.executor.policies.schema_sanitizer import ToolSchemaError
from capplan.executor.result import GenerationResult
from capplan.trials.loop.tool_call_ids import ToolCallIds
from tests.chat_route import OVERLAY as CHAT_OVERLAY
from tests.chat_route import chat_route_plan
from tests.cli_runner import invoke

ROOT = Path(__file__).resolve().parents[2]
PLANS = ROOT / "golden" / "plans"
TOOLS: list[dict[str, Any]] = [{"type": "function", "function": {
    "name": "lookup", "description": "Look a thing up.",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}}]
THOUGHT = "The user wants the record; the lookup tool answers that."


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    logger = logging.getLogger("capplan")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    yield
    logger.setLevel(level)


def emulator(corpus: Corpus, route: str) -> OpenAIChatEmulator:
    cls = emulator_for("openai-chat")
    assert cls is OpenAIChatEmulator
    return OpenAIChatEmulator(corpus.rules, route=route)


def post(emu: OpenAIChatEmulator, body: Mapping[str, Any]) -> tuple[int, Any]:
    """POST ``body`` to the emulator as a provider receives it (no capplan in between)."""
    request = urllib.request.Request(f"{emu.base_url}/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def client_for(plan_name: str, emu: OpenAIChatEmulator) -> Client:
    # the catalogue model on chat completions (gpt-5 and o3 go through the Responses API by default)
    plan = chat_route_plan(plan_name)
    env = {name: "test-key" for name in plan.wire.key_envs} if plan.wire is not None else {}
    return Client(plan, env=env, api_base=emu.base_url, sleep=lambda s: None)


def tool_loop(client: Client, emu: OpenAIChatEmulator, *, steps: int = 3, parallel: bool = False,
              extra: Mapping[str, Any] | None = None, turns: int = 1) -> list[GenerationResult]:
    """Drive ``steps`` tool-call steps and a final answer per user turn, appending each result as
    the trial loop's ``_accept`` does (ids through ``ToolCallIds``, reasoning through
    ``ReasoningIn.from_structured``), and the tool results after it."""
    calls: tuple[tuple[str, dict[str, Any]], ...]
    script = []
    for turn in range(turns):
        for step in range(steps):
            calls = (("lookup", {"q": f"turn {turn} step {step}"}),)
            if parallel:
                calls += (("lookup", {"q": f"turn {turn} step {step} again"}),)
            script.append(Reply(tool_calls=calls, reasoning=f"{THOUGHT} (turn {turn}, step {step})"))
        script.append(Reply(text=f"answer {turn}", reasoning=f"{THOUGHT} (turn {turn}, answer)"))
    emu.script(script)
    ids = ToolCallIds()
    messages: list[dict[str, Any]] = []
    results = []
    for turn in range(turns):
        messages.append({"role": "user", "content": f"Find record {turn}."})
        for _ in range(steps + 1):
            result = client.generate({"messages": messages, "tools": TOOLS, **(extra or {})})
            results.append(result)
            message: dict[str, Any] = {"role": "assistant", "content": result.text or None}
            assigned = [(call, ids.assign(call.id)) for call in result.tool_calls]
            if assigned:
                message["tool_calls"] = [
                    {"id": new_id, "type": "function",
                     "function": {"name": call.name, "arguments": json.dumps(call.arguments, ensure_ascii=False)}}
                    for call, new_id in assigned]
            if result.reasoning is not None:
                message["reasoning"] = ReasoningIn.from_structured(result.reasoning).model_dump(
                    mode="json", exclude_none=True)
            messages.append(message)
            for call, new_id in assigned:
                messages.append({"role": "tool", "tool_call_id": new_id, "content": f"record for {call.arguments}"})
            if not assigned:
                break
    return results


def accepted(emu: OpenAIChatEmulator, rule_id: str, *, requests: int) -> None:
    """Every request the emulator saw was held to ``rule_id`` and answered 200 without a violation."""
    assert len(emu.exchanges) == requests
    for exchange in emu.exchanges:
        assert rule_id in exchange.rules, (rule_id, exchange.rules)
        assert exchange.violations == (), [v.message for v in exchange.violations]
        assert exchange.status == 200


def refused(emu: OpenAIChatEmulator, status: int, answer: Any, rule_id: str, expected: Mapping[str, Any]) -> None:
    assert status == 400
    assert answer == expected
    assert emu.exchanges[-1].violations[0].rule_id == rule_id


class KnownRefusal(Exception):
    """A bundled plan refused by the one rule a finding names (an xfail expects exactly this)."""


def refused_only_by(emu: OpenAIChatEmulator, rule_id: str) -> KnownRefusal:
    """The refusal the emulator recorded, checked to be ``rule_id``'s and nothing else's."""
    found = [v.rule_id for x in emu.exchanges for v in x.violations]
    assert found == [rule_id], found
    return KnownRefusal(emu.exchanges[-1].violations[0].body)


def compiled_with_overlay(tmp_path: Path, model: str, overlay: str) -> Plan:
    """The bundled ``model`` compiled by ``capplan compile`` on chat completions (this module's protocol:
    ``examples/overlays/chat-completions.yaml`` keeps OpenAI's reasoning models there), with an operator
    overlay on top."""
    path = tmp_path / "overlay.yaml"
    path.write_text(overlay)
    out = tmp_path / "plans"
    result = invoke("compile", "--model", model, "--presets-file", str(CHAT_OVERLAY),
                    "--presets-file", str(path), "--out", str(out))
    assert result.exit_code == 0, result.output
    return Plan.load(out / f"{model.replace('/', '__')}.json")


def history(model: str, *, carriers: list[Mapping[str, Any]], **top: Any) -> dict[str, Any]:
    """A two-step tool loop as the provider receives it; ``carriers[i]`` is merged into the i-th
    assistant tool-call message (so a test leaves one step's reasoning out)."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."},
                                      {"role": "user", "content": "Find it."}]
    for step, fields in enumerate(carriers):
        call_id = f"call_{step}"
        messages.append({"role": "assistant", "content": None, **fields, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "lookup", "arguments": "{\"q\": \"x\"}"}}]})
        messages.append({"role": "tool", "tool_call_id": call_id, "content": "a record"})
    return {"model": model, "messages": messages, "tools": TOOLS, **top}


# --- the emulator's reading of a request ------------------------------------------------------------

def test_thinking_switch_reads_every_documented_switch() -> None:
    assert thinking_switch({"reasoning_effort": "none"}) is False
    assert thinking_switch({"reasoning": {"enabled": False}}) is False
    assert thinking_switch({"thinking": {"type": "disabled"}}) is False
    assert thinking_switch({"chat_template_kwargs": {"enable_thinking": False}}) is False
    assert thinking_switch({"reasoning_effort": "low"}) is True
    assert thinking_switch({"reasoning": {"max_tokens": 2048}}) is True
    assert thinking_switch({"thinking": {"type": "enabled"}}) is True
    assert thinking_switch({"temperature": 0}) is None


def test_native_position_drops_system_and_merges_tool_results() -> None:
    messages = [{"role": "system"}, {"role": "user"}, {"role": "assistant"}, {"role": "tool"}, {"role": "tool"},
                {"role": "assistant"}]
    assert [native_position(messages, i) for i in (1, 2, 3, 4, 5)] == [0, 1, 2, 2, 3]


def test_only_chat_completions_is_served_and_tool_call_ids_are_unique(corpus: Corpus) -> None:
    with emulator(corpus, "vllm") as emu:
        request = urllib.request.Request(f"{emu.base_url}/v1/completions", data=b"{}", method="POST")
        with pytest.raises(urllib.error.HTTPError) as refused_path:
            urllib.request.urlopen(request, timeout=30)
        assert refused_path.value.code == 404 and emu.exchanges[-1].status == 404
        emu.script([Reply(tool_calls=(("lookup", {"q": "a"}), ("lookup", {"q": "b"}))),
                    Reply(tool_calls=(("lookup", {"q": "c"}),))])
        ids = []
        for _ in range(2):
            status, answer = post(emu, {"model": "qwen3-32b", "messages": [{"role": "user", "content": "go"}],
                                        "chat_template_kwargs": {"enable_thinking": True}})
            assert status == 200 and answer["choices"][0]["finish_reason"] == "tool_calls"
            message = answer["choices"][0]["message"]
            assert message["reasoning_content"] == Reply().reasoning
            assert all(json.loads(call["function"]["arguments"]) for call in message["tool_calls"])
            ids += [call["id"] for call in message["tool_calls"]]
        assert ids == ["call_1", "call_2", "call_3"]
        assert answer["usage"]["prompt_tokens"] == len(json.dumps(emu.exchanges[-1].body, sort_keys=True).encode()) // 4


def test_the_bundled_corpus_loads_against_the_emulator_checks(corpus: Corpus) -> None:
    ids = {rule.id for rule in corpus.rules if rule.protocol == "openai-chat"}
    assert {"deepseek.reasoning_content_missing", "moonshot.kimi_reasoning_content_missing",
            "openrouter.kimi_reasoning_missing", "openrouter.gemini_reasoning_details_missing",
            "openrouter.gemini_signature_invalid", "openrouter.anthropic_signature_invalid", "openrouter.anthropic_thinking_block_missing",
            "openai.strict_additional_properties", "openai.strict_required",
            "openai.temperature_default_only", "openai.reasoning_effort_gpt51",
            "openai.max_tokens_unsupported", "openai.argument_unrecognized"} <= ids


# --- DeepSeek (its own API; no bundled plan uses the deepseek route) --------------------------------

def test_deepseek_reasoner_refuses_a_tool_call_turn_without_reasoning_content(corpus: Corpus) -> None:
    with emulator(corpus, "deepseek") as emu:
        body = history("deepseek-reasoner", carriers=[{"reasoning_content": "step one"}, {}])
        status, answer = post(emu, body)
        message = ("Missing `reasoning_content` field in the assistant message at message index 4. For more "
                   "information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls")
        refused(emu, status, answer, "deepseek.reasoning_content_missing",
                {"error": {"message": message, "type": "invalid_request_error", "param": None,
                           "code": "invalid_request_error"}})
        status, answer = post(emu, history("deepseek-reasoner", carriers=[{"reasoning_content": "one"},
                                                                         {"reasoning_content": "two"}]))
        assert status == 200 and answer["choices"][0]["message"]["reasoning_content"] == Reply().reasoning


def test_deepseek_v4_refuses_with_the_v4_text_and_not_when_thinking_is_off(corpus: Corpus) -> None:
    with emulator(corpus, "deepseek") as emu:
        status, answer = post(emu, history("deepseek-v4-flash", carriers=[{}]))
        refused(emu, status, answer, "deepseek.v4_reasoning_content_missing",
                {"error": {"message": "The `reasoning_content` in the thinking mode must be passed back to the API.",
                           "type": "invalid_request_error", "param": None, "code": "invalid_request_error"}})
        status, answer = post(emu, history("deepseek-v4-flash", carriers=[{}], thinking={"type": "disabled"}))
        assert status == 200 and "reasoning_content" not in answer["choices"][0]["message"]


def test_deepseek_v4_through_openrouter_bundled_plan_replays_on_every_step(corpus: Corpus) -> None:
    with emulator(corpus, "openrouter") as emu:
        status, answer = post(emu, history("deepseek/deepseek-v4-flash", carriers=[{"reasoning": "only here"}]))
        raw = ('{"error":{"message":"The `reasoning_content` in the thinking mode must be passed back to the API.",'
               '"type":"invalid_request_error","param":null,"code":"invalid_request_error"}}')
        refused(emu, status, answer, "openrouter.deepseek_v4_reasoning_missing",
                {"error": {"message": "Provider returned error", "code": 400,
                           "metadata": {"raw": raw, "provider_name": "DeepSeek", "is_byok": False}}})
        emu.exchanges.clear()
        results = tool_loop(client_for("deepseek-v4-flash", emu), emu, steps=3, turns=2)
        assert [r.finish_reason for r in results].count("tool_calls") == 6
        accepted(emu, "openrouter.deepseek_v4_reasoning_missing", requests=8)
        last = emu.exchanges[-1].body["messages"]
        assert all(m.get("reasoning_details") for m in last if m.get("tool_calls"))


# --- Kimi K2 thinking --------------------------------------------------------------------------------

def test_moonshot_kimi_refuses_any_tool_call_turn_without_reasoning_content(corpus: Corpus) -> None:
    with emulator(corpus, "moonshot") as emu:
        status, answer = post(emu, history("kimi-k2.6", carriers=[{}, {"reasoning_content": "two"}]))
        refused(emu, status, answer, "moonshot.kimi_reasoning_content_missing",
                {"error": {"type": "invalid_request_error", "message": "thinking is enabled but reasoning_content is "
                           "missing in assistant tool call message at index 2"}, "type": "error"})
        # an earlier turn's reasoning is required too, not only the last step's
        status, _ = post(emu, history("kimi-k2-thinking", carriers=[{}, {"reasoning_content": "two"}]))
        assert status == 400
        status, _ = post(emu, history("kimi-k2.6", carriers=[{}], thinking={"type": "disabled"}))
        assert status == 200
        # K2-Thinking has no off switch: asking for it off does not lift the rule
        status, _ = post(emu, history("kimi-k2-thinking", carriers=[{}], thinking={"type": "disabled"}))
        assert status == 400


def test_openrouter_kimi_refuses_a_loop_whose_earlier_step_lacks_reasoning(corpus: Corpus) -> None:
    with emulator(corpus, "openrouter") as emu:
        body = history("moonshotai/kimi-k2-thinking",
                       carriers=[{}, {"reasoning_details": [{"type": "reasoning.text", "text": "two"}]}])
        status, answer = post(emu, body)
        raw = ('{"error":{"message":"thinking is enabled but reasoning_content is missing in assistant tool call '
               'message at index 2","type":"invalid_request_error"}}')
        refused(emu, status, answer, "openrouter.kimi_reasoning_missing",
                {"error": {"message": "Provider returned error", "code": 400,
                           "metadata": {"raw": raw, "provider_name": "Moonshot AI", "is_byok": False}}})
        # every step carrying its text, in either carrier OpenRouter forwards, is accepted
        status, _ = post(emu, history("moonshotai/kimi-k2-thinking",
                                      carriers=[{"reasoning_content": "one"},
                                                {"reasoning_details": [{"type": "reasoning.text", "text": "two"}]}]))
        assert status == 200
        # reasoning.exclude hides the thinking from the answer, but the model still thinks: the
        # next step has nothing to replay and is refused
        emu.script([Reply(tool_calls=(("lookup", {"q": "a"}),))])
        status, answer = post(emu, {"model": "moonshotai/kimi-k2.6", "reasoning": {"exclude": True}, "tools": TOOLS,
                                    "messages": [{"role": "user", "content": "go"}]})
        assert status == 200 and "reasoning_details" not in answer["choices"][0]["message"]
        status, _ = post(emu, history("moonshotai/kimi-k2.6", carriers=[{}], reasoning={"exclude": True}))
        assert status == 400
        # message.reasoning alone is not a carrier any source shows OpenRouter forwarding
        status, _ = post(emu, history("moonshotai/kimi-k2-thinking", carriers=[{"reasoning": "one"}]))
        assert status == 400


def test_openrouter_kimi_bundled_plan_is_accepted_through_a_tool_loop(corpus: Corpus) -> None:
    """Every tool-call turn replays its reasoning through OpenRouter's envelope (by_route.openrouter:
    all_turns, the rule's own evidence), so no step is refused."""
    with emulator(corpus, "openrouter") as emu:
        try:
            tool_loop(client_for("kimi-k2-thinking", emu), emu, steps=3)
        except ProviderHTTPError:
            raise refused_only_by(emu, "openrouter.kimi_reasoning_missing") from None
        accepted(emu, "openrouter.kimi_reasoning_missing", requests=4)


# --- Gemini 3 through OpenRouter ----------------------------------------------------------------------

def test_openrouter_gemini_refuses_a_tool_call_turn_without_its_signed_details(corpus: Corpus) -> None:
    with emulator(corpus, "openrouter") as emu:
        body = history("google/gemini-3.5-flash", carriers=[{"reasoning_details": [
            {"type": "reasoning.text", "text": "thinking", "format": "google-gemini-v1", "index": 0}]}])
        status, answer = post(emu, body)
        assert status == 400 and emu.exchanges[-1].violations[0].rule_id == "openrouter.gemini_reasoning_details_missing"
        raw = answer["error"]["metadata"]["raw"]
        assert raw.startswith("Gemini models require OpenRouter reasoning details to be preserved in each request.")
        assert "function call `default_api:lookup` , position 1." in raw
        assert answer["error"]["metadata"]["provider_name"] == "Google AI Studio"


def test_openrouter_gemini_answers_with_an_encrypted_entry_naming_the_first_tool_call(corpus: Corpus) -> None:
    with emulator(corpus, "openrouter") as emu:
        emu.script([Reply(tool_calls=(("lookup", {"q": "a"}), ("lookup", {"q": "b"})))])
        status, answer = post(emu, {"model": "google/gemini-3.5-flash", "tools": TOOLS,
                                    "messages": [{"role": "user", "content": "go"}]})
        message = answer["choices"][0]["message"]
        first = message["tool_calls"][0]["id"]
        encrypted = [e for e in message["reasoning_details"] if e["type"] == "reasoning.encrypted"]
        assert status == 200 and [e["id"] for e in encrypted] == [first]
        assert encrypted[0]["data"].startswith("cpl1")


def test_openrouter_gemini_answers_an_edited_or_foreign_signature_with_malformed_function_call(
        corpus: Corpus) -> None:
    with emulator(corpus, "openrouter") as emu:
        emu.script([Reply(tool_calls=(("lookup", {"q": "a"}),))])
        _, made = post(emu, {"model": "google/gemini-3.5-flash", "tools": TOOLS,
                             "messages": [{"role": "user", "content": "go"}]})
        message = made["choices"][0]["message"]
        replay = {"role": "assistant", "content": None, "tool_calls": message["tool_calls"],
                  "reasoning_details": message["reasoning_details"]}
        result = {"role": "tool", "tool_call_id": message["tool_calls"][0]["id"], "content": "a record"}
        start = [{"role": "user", "content": "go"}]
        status, _ = post(emu, {"model": "google/gemini-3.5-flash", "tools": TOOLS, "messages": [*start, replay, result]})
        assert status == 200 and emu.exchanges[-1].violations == ()
        malformed = {"choices": [{"finish_reason": "error", "native_finish_reason": "MALFORMED_FUNCTION_CALL",
                                  "message": {"role": "assistant", "content": None}}]}
        edited = copy.deepcopy(replay)
        edited["reasoning_details"][1]["data"] = edited["reasoning_details"][1]["data"][:-2] + "xx"
        status, answer = post(emu, {"model": "google/gemini-3.5-flash", "tools": TOOLS,
                                    "messages": [*start, edited, result]})
        assert (status, answer) == (200, malformed)
        assert emu.exchanges[-1].violations[0].rule_id == "openrouter.gemini_signature_invalid"
        status, answer = post(emu, {"model": "google/gemini-3.1-pro-preview", "tools": TOOLS,
                                    "messages": [*start, replay, result]})
        assert (status, answer) == (200, malformed)


def test_openrouter_gemini_bundled_plan_is_accepted_through_a_parallel_tool_loop(corpus: Corpus) -> None:
    with emulator(corpus, "openrouter") as emu:
        results = tool_loop(client_for("gemini-3.5-flash-openrouter", emu), emu, steps=3, parallel=True, turns=2)
        assert sum(len(r.tool_calls) for r in results) == 12
        accepted(emu, "openrouter.gemini_reasoning_details_missing", requests=8)
        accepted(emu, "openrouter.gemini_signature_invalid", requests=8)


# --- Claude through OpenRouter --------------------------------------------------------------------------

def _claude_step(emu: OpenAIChatEmulator, model: str) -> dict[str, Any]:
    emu.script([Reply(tool_calls=(("lookup", {"q": "a"}),))])
    status, answer = post(emu, {"model": model, "tools": TOOLS, "reasoning": {"max_tokens": 1024},
                                "messages": [{"role": "user", "content": "go"}]})
    assert status == 200
    message: dict[str, Any] = answer["choices"][0]["message"]
    return message


def test_openrouter_claude_refuses_an_edited_or_moved_signature(corpus: Corpus) -> None:
    with emulator(corpus, "openrouter") as emu:
        made = _claude_step(emu, "anthropic/claude-opus-4.7")
        assert made["reasoning_details"][0]["signature"].startswith("cpl1")
        replay = {"role": "assistant", "content": None, "tool_calls": made["tool_calls"],
                  "reasoning_details": made["reasoning_details"]}
        result = {"role": "tool", "tool_call_id": made["tool_calls"][0]["id"], "content": "a record"}
        base = {"tools": TOOLS, "reasoning": {"max_tokens": 1024}}
        start = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "go"}]
        status, _ = post(emu, {**base, "model": "anthropic/claude-opus-4.7", "messages": [*start, replay, result]})
        assert status == 200
        edited = copy.deepcopy(replay)
        edited["reasoning_details"][0]["text"] += " (edited)"
        status, answer = post(emu, {**base, "model": "anthropic/claude-opus-4.7", "messages": [*start, edited, result]})
        refused(emu, status, answer, "openrouter.anthropic_signature_invalid",
                {"error": {"message": "Provider returned error", "code": 400, "metadata": {
                    "raw": '{"message":"messages.1.content.0: Invalid signature in thinking block"}',
                    "provider_name": "Amazon Bedrock", "is_byok": False}}})
        status, _ = post(emu, {**base, "model": "anthropic/claude-sonnet-4.6", "messages": [*start, replay, result]})
        assert status == 400 and emu.exchanges[-1].violations[0].rule_id == "openrouter.anthropic_signature_invalid"


@pytest.mark.parametrize("plan_name", ["claude-opus-4.7-openrouter", "claude-sonnet-4.6-openrouter"])
def test_openrouter_claude_bundled_plan_is_accepted_through_a_tool_loop(corpus: Corpus, plan_name: str) -> None:
    with emulator(corpus, "openrouter") as emu:
        results = tool_loop(client_for(plan_name, emu), emu, steps=3, turns=2)
        assert all(r.reasoning is not None for r in results)
        accepted(emu, "openrouter.anthropic_signature_invalid", requests=8)
        replayed = [m for m in emu.exchanges[-1].body["messages"] if m.get("reasoning_details")]
        assert len(replayed) >= 3 and all(e.get("signature") for m in replayed for e in m["reasoning_details"])


def _claude_switch(opus: Client, sonnet: Client, messages: list[dict[str, Any]], switch_at: int) -> None:
    """Three steps of a tool loop, made by Opus before ``switch_at`` and by Sonnet from it on."""
    for step in range(4):
        result = (opus if step < switch_at else sonnet).generate({"messages": messages, "tools": TOOLS})
        if not result.tool_calls:
            return
        call = result.tool_calls[0]
        turn: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [
            {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": json.dumps(call.arguments)}}]}
        if result.reasoning is not None:
            turn["reasoning"] = ReasoningIn.from_structured(result.reasoning).model_dump(mode="json", exclude_none=True)
        messages += [turn, {"role": "tool", "tool_call_id": call.id, "content": "a record"}]


def test_openrouter_claude_model_switch_mid_loop_is_refused_before_sending(corpus: Corpus) -> None:
    """Opus's signed thinking cannot go to Sonnet (its origin is another model), and Anthropic refuses a
    loop step whose turn does not start with a thinking block: capplan refuses the switching request
    itself, naming both and the ways that are accepted, and the provider never sees it."""
    with emulator(corpus, "openrouter") as emu:
        opus, sonnet = client_for("claude-opus-4.7-openrouter", emu), client_for("claude-sonnet-4.6-openrouter", emu)
        emu.script([Reply(tool_calls=(("lookup", {"q": f"step {i}"}),)) for i in range(3)] + [Reply(text="done")])
        with pytest.raises(ReasoningError, match=r"(?s)messages\[\d+\]: this request continues a tool loop.*model switch.*"
                           r"openrouter\.anthropic_thinking_block_missing.*at a user turn, or send this request with reasoning off"):
            _claude_switch(opus, sonnet, [{"role": "user", "content": "Find it."}], switch_at=2)
        assert len(emu.exchanges) == 2 and all(ex.violations == () for ex in emu.exchanges)


def test_openrouter_claude_model_switch_at_a_user_turn_is_accepted(corpus: Corpus) -> None:
    with emulator(corpus, "openrouter") as emu:
        opus, sonnet = client_for("claude-opus-4.7-openrouter", emu), client_for("claude-sonnet-4.6-openrouter", emu)
        emu.script([Reply(tool_calls=(("lookup", {"q": "a"}),)), Reply(text="one"),
                    Reply(tool_calls=(("lookup", {"q": "b"}),)), Reply(text="two")])
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Find a."}]
        _claude_switch(opus, opus, messages, switch_at=9)
        messages += [{"role": "assistant", "content": "one"}, {"role": "user", "content": "Now find b."}]
        _claude_switch(sonnet, sonnet, messages, switch_at=9)
        accepted(emu, "openrouter.anthropic_signature_invalid", requests=4)
        accepted(emu, "openrouter.anthropic_thinking_block_missing", requests=4)


def test_openrouter_claude_with_thinking_refuses_a_loop_step_without_its_thinking_block(corpus: Corpus) -> None:
    with emulator(corpus, "openrouter") as emu:
        status, answer = post(emu, history("anthropic/claude-opus-4.7", carriers=[{}], reasoning={"max_tokens": 1024}))
        raw = ('{"type":"error","error":{"type":"invalid_request_error","message":"messages.1.content.0.type: Expected '
               '`thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is enabled, a final '
               '`assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and '
               '`tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this '
               'requirement, disable `thinking`. Please consult our documentation at '
               'https://docs.claude.com/en/docs/build-with-claude/extended-thinking"},"request_id":"req_redacted"}')
        refused(emu, status, answer, "openrouter.anthropic_thinking_block_missing",
                {"error": {"message": "Provider returned error", "code": 400,
                           "metadata": {"raw": raw, "provider_name": "Anthropic"}}})
        # thinking off: no thinking block is required
        status, _ = post(emu, history("anthropic/claude-opus-4.7", carriers=[{}]))
        assert status == 200


def test_a_broken_overlay_setting_claude_codec_none_with_thinking_on_fails_with_the_provider_text(
        corpus: Corpus, tmp_path: Path) -> None:
    plan = compiled_with_overlay(tmp_path, "claude-opus-4.7-openrouter",
                                 "presets:\n  claude_codec_off:\n    match: [\"anthropic/claude-opus-4.7\"]\n"
                                 "    reasoning_codec: none\n")
    with emulator(corpus, "openrouter") as emu:
        client = Client(plan, env={"OPENROUTER_API_KEY": "test-key"}, api_base=emu.base_url, sleep=lambda s: None)
        with pytest.raises(ProviderHTTPError):
            tool_loop(client, emu, steps=3, extra={"reasoning": {"mode": "budget", "budget_tokens": 2048}})
        assert emu.exchanges[-1].body["reasoning"] == {"max_tokens": 2048, "enabled": True}
        (violation,) = emu.exchanges[-1].violations
        assert violation.rule_id == "openrouter.anthropic_thinking_block_missing"
        assert "but found `tool_use`. When `thinking` is enabled" in violation.body["error"]["metadata"]["raw"]


# --- OpenAI ---------------------------------------------------------------------------------------------

STRICT_LOOSE = {"type": "function", "function": {"name": "lookup", "strict": True, "parameters": {
    "type": "object", "properties": {"q": {"type": "string"}, "where": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
        "additionalProperties": False}},
    "required": ["q", "where"]}}}


def test_openai_strict_tool_needs_additional_properties_false_at_every_level(corpus: Corpus) -> None:
    with emulator(corpus, "openai") as emu:
        status, answer = post(emu, {"model": "gpt-5", "tools": [STRICT_LOOSE],
                                    "messages": [{"role": "user", "content": "go"}]})
        refused(emu, status, answer, "openai.strict_additional_properties", {"error": {
            "message": "Invalid schema for function 'lookup': In context=(), 'additionalProperties' is required to "
                       "be supplied and to be false.",
            "type": "invalid_request_error", "param": "tools[0].function.parameters",
            "code": "invalid_function_parameters"}})
        nested = copy.deepcopy(STRICT_LOOSE)
        nested["function"]["parameters"]["additionalProperties"] = False
        del nested["function"]["parameters"]["properties"]["where"]["additionalProperties"]
        status, answer = post(emu, {"model": "gpt-5", "tools": [nested], "messages": [{"role": "user", "content": "go"}]})
        assert status == 400
        assert "In context=('properties', 'where'), 'additionalProperties'" in answer["error"]["message"]


def test_openai_strict_tool_needs_every_property_required(corpus: Corpus) -> None:
    with emulator(corpus, "openai") as emu:
        tool = copy.deepcopy(STRICT_LOOSE)
        tool["function"]["parameters"]["additionalProperties"] = False
        tool["function"]["parameters"]["required"] = ["where"]
        status, answer = post(emu, {"model": "gpt-5", "tools": [tool], "messages": [{"role": "user", "content": "go"}]})
        refused(emu, status, answer, "openai.strict_required", {"error": {
            "message": "Invalid schema for function 'lookup': In context=(), 'required' is required to be supplied "
                       "and to be an array including every key in properties. Missing 'q'.",
            "type": "invalid_request_error", "param": "tools[0].function.parameters",
            "code": "invalid_function_parameters"}})


def test_gpt5_bundled_plan_sends_a_strict_compliant_tool_through_a_tool_loop(corpus: Corpus) -> None:
    tool = copy.deepcopy(STRICT_LOOSE)
    tool["function"]["parameters"]["additionalProperties"] = False
    with emulator(corpus, "openai") as emu:
        client = client_for("gpt-5", emu)
        emu.script([Reply(tool_calls=(("lookup", {"q": "a", "where": {"city": "b"}}),)), Reply(text="ok")])
        messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
        first = client.generate({"messages": messages, "tools": [tool]})
        call = first.tool_calls[0]
        messages += [{"role": "assistant", "content": None, "tool_calls": [
            {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": json.dumps(call.arguments)}}]},
            {"role": "tool", "tool_call_id": call.id, "content": "a record"}]
        client.generate({"messages": messages, "tools": [tool]})
        accepted(emu, "openai.strict_additional_properties", requests=2)
        accepted(emu, "openai.strict_required", requests=2)
        assert emu.exchanges[-1].body["tools"][0]["function"]["strict"] is True


def test_gpt5_bundled_plan_never_sends_a_strict_tool_strict_mode_refuses(corpus: Corpus) -> None:
    """A `strict: true` tool whose object levels leave additionalProperties unset is refused before
    sending (a located tool-schema error), never sent for OpenAI to refuse."""
    loose = copy.deepcopy(STRICT_LOOSE)
    loose["function"]["parameters"]["additionalProperties"] = False
    del loose["function"]["parameters"]["properties"]["where"]["additionalProperties"]
    with emulator(corpus, "openai") as emu:
        emu.script([Reply(text="ok")])
        with pytest.raises(ToolSchemaError, match=r"tool 'lookup': /properties/where: .*additionalProperties: false"):
            client_for("gpt-5", emu).generate({"messages": [{"role": "user", "content": "go"}], "tools": [loose]})
        assert emu.exchanges == []


def test_openai_refuses_temperature_zero_on_gpt5_and_o_series(corpus: Corpus) -> None:
    with emulator(corpus, "openai") as emu:
        for model, value, shown in (("gpt-5", 0, "0"), ("o3", 0.0, "0.0"), ("gpt-5.4", 0.2, "0.2")):
            status, answer = post(emu, {"model": model, "temperature": value,
                                        "messages": [{"role": "user", "content": "go"}]})
            refused(emu, status, answer, "openai.temperature_default_only", {"error": {
                "message": f"Unsupported value: 'temperature' does not support {shown} with this model. Only the "
                           "default (1) value is supported.",
                "type": "invalid_request_error", "param": "temperature", "code": "unsupported_value"}})
        status, _ = post(emu, {"model": "gpt-4o", "temperature": 0, "messages": [{"role": "user", "content": "go"}]})
        assert status == 200


@pytest.mark.parametrize("plan_name", ["gpt-5", "o3"])
def test_gpt5_and_o3_bundled_plans_are_accepted_through_a_tool_loop_asked_for_temperature_zero(
        corpus: Corpus, plan_name: str) -> None:
    with emulator(corpus, "openai") as emu:
        tool_loop(client_for(plan_name, emu), emu, steps=3, extra={"temperature": 0.0, "max_tokens": 512})
        for rule in ("openai.temperature_default_only", "openai.max_tokens_unsupported",
                     "openai.argument_unrecognized"):
            accepted(emu, rule, requests=4)


def test_a_broken_overlay_forcing_sampling_on_gpt5_fails_with_the_provider_text(
        corpus: Corpus, tmp_path: Path) -> None:
    plan = compiled_with_overlay(tmp_path, "gpt-5", "presets:\n  gpt5_sampling_forced:\n    match: [\"gpt-5\"]\n"
                                 "    reasoning_codec: openai\n    params:\n      supports_sampling_params: true\n")
    with emulator(corpus, "openai") as emu:
        client = Client(plan, env={"OPENAI_API_KEY": "test-key"}, api_base=emu.base_url, sleep=lambda s: None)
        with pytest.raises(ProviderHTTPError, match=re.escape(
                "Unsupported value: 'temperature' does not support 0.0 with this model. Only the default (1) value "
                "is supported.")):
            client.generate({"messages": [{"role": "user", "content": "go"}], "temperature": 0.0})
        assert emu.exchanges[-1].violations[0].rule_id == "openai.temperature_default_only"


def test_openai_refuses_minimal_effort_on_gpt51_and_gpt54(corpus: Corpus) -> None:
    with emulator(corpus, "openai") as emu:
        status, answer = post(emu, {"model": "gpt-5.1", "reasoning_effort": "minimal",
                                    "messages": [{"role": "user", "content": "go"}]})
        refused(emu, status, answer, "openai.reasoning_effort_gpt51", {"error": {
            "message": "Unsupported value: 'reasoning_effort' does not support 'minimal' with this model. Supported "
                       "values are: 'none', 'low', 'medium', and 'high'.",
            "type": "invalid_request_error", "param": "reasoning_effort", "code": "unsupported_value"}})
        status, answer = post(emu, {"model": "gpt-5.4", "reasoning_effort": "minimal",
                                    "messages": [{"role": "user", "content": "go"}]})
        assert status == 400 and answer["error"]["message"].endswith("'none', 'low', 'medium', 'high', and 'xhigh'.")
        status, answer = post(emu, {"model": "gpt-5.1", "reasoning_effort": None,
                                    "messages": [{"role": "user", "content": "go"}]})
        assert status == 400 and answer["error"]["message"].startswith(
            "Unsupported value: 'reasoning_effort' does not support null with this model.")
        status, _ = post(emu, {"model": "gpt-5.1", "reasoning_effort": "xhigh",
                               "messages": [{"role": "user", "content": "go"}]})
        assert status == 400
        for model in ("gpt-5", "gpt-5.4-mini"):
            status, _ = post(emu, {"model": model, "reasoning_effort": "minimal",
                                   "messages": [{"role": "user", "content": "go"}]})
            assert status == 200


@pytest.mark.parametrize(("model", "effort"), [("openai/gpt-5.1", "high"), ("openai/gpt-5.4", "xhigh")])
def test_gpt51_and_gpt54_compiled_plans_send_a_supported_effort_through_a_tool_loop(
        corpus: Corpus, tmp_path: Path, model: str, effort: str) -> None:
    plan = compiled_with_overlay(tmp_path, model, "presets: {}\n")
    with emulator(corpus, "openai") as emu:
        client = Client(plan, env={"OPENAI_API_KEY": "test-key"}, api_base=emu.base_url, sleep=lambda s: None)
        tool_loop(client, emu, steps=3, extra={"temperature": 0.0, "max_tokens": 256,
                                               "reasoning": {"mode": "adaptive", "effort_hint": effort}})
        rule = "openai.reasoning_effort_gpt51" if model.endswith("5.1") else "openai.reasoning_effort_gpt54"
        for held in (rule, "openai.temperature_default_only", "openai.max_tokens_unsupported"):
            accepted(emu, held, requests=4)
        assert {x.body["reasoning_effort"] for x in emu.exchanges} == {effort}


@pytest.mark.xfail(strict=True, raises=KnownRefusal, reason=(
    "finding: plans compiled for openai/gpt-5.1 and openai/gpt-5.4 (the openai_gpt5 preset) forward "
    "reasoning_effort minimal, which OpenAI refuses on both: \"Unsupported value: 'reasoning_effort' does not "
    "support 'minimal' with this model. Supported values are: ...\". A preset per model with param_value_rules "
    "(reject minimal, and xhigh on 5.1) fixes it, but a bundled preset needs a catalogue model, and a catalogue "
    "model needs upstream-parity fixtures and a litellm wire identity (litellm 1.110.2 answers gpt-5.4 through "
    "another path), so the fix is left to the presets' owner"))
@pytest.mark.parametrize("model", ["openai/gpt-5.1", "openai/gpt-5.4"])
def test_gpt51_and_gpt54_compiled_plans_never_send_minimal_effort(corpus: Corpus, tmp_path: Path, model: str) -> None:
    plan = compiled_with_overlay(tmp_path, model, "presets: {}\n")
    with emulator(corpus, "openai") as emu:
        client = Client(plan, env={"OPENAI_API_KEY": "test-key"}, api_base=emu.base_url, sleep=lambda s: None)
        try:
            client.generate({"messages": [{"role": "user", "content": "go"}],
                             "reasoning": {"mode": "adaptive", "effort_hint": "minimal"}})
        except ProviderHTTPError:
            raise refused_only_by(emu, "openai.reasoning_effort_gpt51" if model.endswith("5.1")
                                  else "openai.reasoning_effort_gpt54") from None
        except Exception as exc:  # refused before a request exists (a value rule) keeps the rule
            assert emu.exchanges == [], exc
            return
        accepted(emu, "openai.argument_unrecognized", requests=1)


def test_openai_refuses_max_tokens_on_reasoning_models(corpus: Corpus) -> None:
    with emulator(corpus, "openai") as emu:
        status, answer = post(emu, {"model": "o3", "max_tokens": 100, "messages": [{"role": "user", "content": "go"}]})
        refused(emu, status, answer, "openai.max_tokens_unsupported", {"error": {
            "message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                       "'max_completion_tokens' instead.",
            "type": "invalid_request_error", "param": "max_tokens", "code": "unsupported_parameter"}})


def test_openai_refuses_an_undeclared_argument_and_reasoning_effort_on_gpt4o(corpus: Corpus) -> None:
    with emulator(corpus, "openai") as emu:
        status, answer = post(emu, {"model": "gpt-5", "thinking": {"type": "enabled"},
                                    "messages": [{"role": "user", "content": "go"}]})
        refused(emu, status, answer, "openai.argument_unrecognized", {"error": {
            "message": "Unrecognized request argument supplied: thinking", "type": "invalid_request_error",
            "param": None, "code": None}})
        status, answer = post(emu, {"model": "gpt-4o-mini", "reasoning_effort": "low",
                                    "messages": [{"role": "user", "content": "go"}]})
        refused(emu, status, answer, "openai.reasoning_effort_unrecognized", {"error": {
            "message": "Unrecognized request argument supplied: reasoning_effort", "type": "invalid_request_error",
            "param": None, "code": None}})


def test_gpt4o_bundled_plan_asked_to_think_sends_no_reasoning_argument(corpus: Corpus) -> None:
    with emulator(corpus, "openai") as emu:
        tool_loop(client_for("gpt-4o", emu), emu, steps=3,
                  extra={"reasoning": {"mode": "budget", "budget_tokens": 1024}})
        accepted(emu, "openai.reasoning_effort_unrecognized", requests=4)
        accepted(emu, "openai.argument_unrecognized", requests=4)

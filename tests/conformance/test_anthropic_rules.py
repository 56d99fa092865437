"""Anthropic Messages rules: each naive wire is refused with the provider's exact text, and the
bundled Claude plans are driven through capplan's real path (plan -> executor -> litellm) against
the loopback emulator, replaying each result's reasoning as the trial loop does.

One emulator per test (loopback, ephemeral port, stopped by the fixture). litellm is imported
once, by the first test that sends through the client.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from capplan.conformance.carriers import CarrierMint
from capplan.conformance.corpus import Corpus
from capplan.conformance.emulator import Exchange
from capplan.conformance.emulators import emulator_for
from capplan.conformance.emulators.anthropic import AnthropicMessagesEmulator, AnthropicReply
from capplan.executor.client import Client
from capplan.executor.messages import ChatRequest, ReasoningIn
from capplan.executor.plan import Plan
from tests.cli_runner import invoke

ROOT = Path(__file__).resolve().parents[2]
PLANS = {name: ROOT / "golden" / "plans" / f"{name}.json" for name in ("claude-opus-4.7", "claude-opus-5")}
WAIT_S = 30  # bound on every HTTP exchange with the emulator

SONNET = "claude-sonnet-4-5"
LOOKUP = {"type": "function", "function": {"name": "lookup", "description": "Find a record.",
                                           "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}}


@pytest.fixture(scope="module", autouse=True)
def _credentials() -> Iterator[None]:
    # litellm's Anthropic route reads the key from the environment; the cost map stays local
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ANTHROPIC_API_KEY", "test")
        mp.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        yield


@pytest.fixture
def emu(corpus: Corpus) -> Iterator[AnthropicMessagesEmulator]:
    with AnthropicMessagesEmulator(corpus.rules, route="anthropic") as emulator:
        yield emulator


def post(emulator: AnthropicMessagesEmulator, body: dict[str, Any], path: str = "/v1/messages") -> tuple[int, Any]:
    request = urllib.request.Request(emulator.base_url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=WAIT_S) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def message(answer: Any) -> str:
    assert answer["type"] == "error" and answer["error"]["type"] == "invalid_request_error", answer
    return str(answer["error"]["message"])


def rejected(emulator: AnthropicMessagesEmulator, body: dict[str, Any], rule_id: str) -> str:
    """Post ``body``; assert the 400 answers ``rule_id``; its message."""
    status, answer = post(emulator, body)
    assert status == 400, answer
    assert emulator.exchanges[-1].violations[0].rule_id == rule_id, emulator.exchanges[-1].violations
    return message(answer)


def thinking_block(emulator: AnthropicMessagesEmulator, model: str, text: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": text, "signature": emulator.mint.mint(model, text)}


def tool_use(call_id: str, q: str = "x") -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "lookup", "input": {"q": q}}


def tool_result(call_id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": "ok"}


def loop_body(model: str, assistant: list[dict[str, Any]], results: list[str], **extra: Any) -> dict[str, Any]:
    return {"model": model, "max_tokens": 8192, "messages": [
        {"role": "user", "content": "find it"},
        {"role": "assistant", "content": assistant},
        {"role": "user", "content": [tool_result(r) for r in results]},
    ], **extra}


THINKING = {"type": "enabled", "budget_tokens": 2048}


# --- the emulator itself -------------------------------------------------------------------------


def test_the_emulator_is_registered_and_every_rule_names_a_check_it_has(corpus: Corpus) -> None:
    assert emulator_for("anthropic-messages") is AnthropicMessagesEmulator
    ids = {rule.id for rule in corpus.rules if rule.protocol == "anthropic-messages"}
    assert {"anthropic.thinking_signature", "anthropic.latest_thinking_unmodified", "anthropic.thinking_at_loop_tail",
            "anthropic.cache_breakpoints", "anthropic.thinking_temperature", "anthropic.thinking_forced_tool_choice",
            "anthropic.thinking_max_tokens", "anthropic.thinking_budget_minimum"} <= ids
    assert all(rule.sources for rule in corpus.rules)


def test_success_is_a_messages_response_with_a_signed_thinking_block_first(emu: AnthropicMessagesEmulator) -> None:
    emu.script([AnthropicReply(tool_calls=(("lookup", {"q": "a"}), ("lookup", {"q": "b"})), reasoning="plan it", redacted=True)])
    status, answer = post(emu, {"model": SONNET, "max_tokens": 4096, "thinking": THINKING, "tools": [],
                                "messages": [{"role": "user", "content": "go"}]})
    assert status == 200
    assert [b["type"] for b in answer["content"]] == ["thinking", "redacted_thinking", "tool_use", "tool_use"]
    first = answer["content"][0]
    assert first["thinking"] == "plan it" and emu.mint.verify(first["signature"], SONNET, "plan it")
    assert not emu.mint.verify(first["signature"], "claude-opus-4.7", "plan it")
    assert emu.redacted_valid(answer["content"][1]["data"], SONNET)
    assert [b["id"] for b in answer["content"][2:]] == ["toolu_1", "toolu_2"]
    assert answer["stop_reason"] == "tool_use" and answer["type"] == "message" and answer["model"] == SONNET
    usage = answer["usage"]
    assert all(isinstance(usage[k], int) for k in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))


def test_without_thinking_the_answer_has_no_thinking_and_usage_follows_the_markers(emu: AnthropicMessagesEmulator) -> None:
    marked = {"type": "ephemeral"}
    body: dict[str, Any] = {"model": SONNET, "max_tokens": 100,
            "system": [{"type": "text", "text": "s" * 400, "cache_control": marked}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "u" * 400, "cache_control": marked}]}]}
    status, answer = post(emu, body)
    assert status == 200 and [b["type"] for b in answer["content"]] == ["text"]
    assert answer["stop_reason"] == "end_turn"
    usage = answer["usage"]
    assert usage["cache_read_input_tokens"] > 0 and usage["cache_creation_input_tokens"] > 0
    again = post(emu, body)[1]["usage"]
    assert again == usage  # a pure function of the body


def test_other_paths_are_not_found(emu: AnthropicMessagesEmulator) -> None:
    status, answer = post(emu, {"model": SONNET, "messages": []}, path="/v1/v1/messages/x")
    assert status == 404 and answer["error"]["type"] == "not_found_error"


# --- each rule: a naive request is refused with the provider's exact text ------------------------


@pytest.mark.parametrize("how", ["edited text", "changed signature", "another model", "another route"])
def test_a_thinking_block_that_does_not_verify_is_refused(emu: AnthropicMessagesEmulator, how: str) -> None:
    block = thinking_block(emu, SONNET, "think")
    if how == "edited text":
        block["thinking"] = "think harder"
    elif how == "changed signature":
        block["signature"] = block["signature"][:-2] + "AA"
    elif how == "another model":
        block = thinking_block(emu, "claude-opus-4.7", "think")
    else:
        block["signature"] = CarrierMint("anthropic").mint(SONNET, "think")  # another emulator's key
    body = loop_body(SONNET, [block, tool_use("toolu_9")], ["toolu_9"], thinking=THINKING)
    assert rejected(emu, body, "anthropic.thinking_signature") == "messages.1.content.0: Invalid `signature` in `thinking` block"
    intact = loop_body(SONNET, [thinking_block(emu, SONNET, "think"), tool_use("toolu_9")], ["toolu_9"], thinking=THINKING)
    assert post(emu, intact)[0] == 200


def test_the_latest_assistant_messages_thinking_cannot_be_modified(emu: AnthropicMessagesEmulator) -> None:
    emu.script([AnthropicReply(tool_calls=(("lookup", {"q": "a"}),), reasoning="r", redacted=True)])
    first = post(emu, {"model": SONNET, "max_tokens": 4096, "thinking": THINKING, "messages": [{"role": "user", "content": "go"}]})[1]
    content = first["content"]
    tampered = [content[0], {**content[1], "data": content[1]["data"][:-3] + "xyz"}, content[2]]
    assert rejected(emu, loop_body(SONNET, tampered, ["toolu_1"], thinking=THINKING), "anthropic.latest_thinking_unmodified") == (
        "messages.1.content.1: `thinking` or `redacted_thinking` blocks in the latest assistant message cannot be modified. "
        "These blocks must remain as they were in the original response.")
    dropped = [content[0], content[2]]  # the redacted block left out of the message it came in
    assert rejected(emu, loop_body(SONNET, dropped, ["toolu_1"], thinking=THINKING), "anthropic.latest_thinking_unmodified").startswith(
        "messages.1.content.0: `thinking` or `redacted_thinking` blocks in the latest")
    assert post(emu, loop_body(SONNET, content, ["toolu_1"], thinking=THINKING))[0] == 200


def test_thinking_on_the_turn_a_tool_loop_continues_must_start_with_thinking(emu: AnthropicMessagesEmulator) -> None:
    body = loop_body(SONNET, [tool_use("toolu_9")], ["toolu_9"], thinking=THINKING)
    assert rejected(emu, body, "anthropic.thinking_at_loop_tail") == (
        "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is "
        "enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` "
        "and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, "
        "disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking")
    # thinking off, or a finished turn followed by a new user message: nothing is required
    assert post(emu, loop_body(SONNET, [tool_use("toolu_9")], ["toolu_9"]))[0] == 200
    finished = loop_body(SONNET, [tool_use("toolu_9")], ["toolu_9"], thinking=THINKING)
    finished["messages"] += [{"role": "assistant", "content": "done"}, {"role": "user", "content": "next"}]
    assert post(emu, finished)[0] == 200


def test_an_assistant_message_with_thinking_starts_with_it(emu: AnthropicMessagesEmulator) -> None:
    body = loop_body(SONNET, [{"type": "text", "text": "let me look"}, thinking_block(emu, SONNET, "t"), tool_use("toolu_9")], ["toolu_9"])
    assert rejected(emu, body, "anthropic.thinking_block_first") == (
        "messages.1.content.0: If an assistant message contains any thinking blocks, the first block must be thinking "
        "or redacted_thinking. Found text.")


def test_an_earlier_assistant_message_cannot_end_with_thinking(emu: AnthropicMessagesEmulator) -> None:
    body = {"model": SONNET, "max_tokens": 100, "messages": [
        {"role": "user", "content": "a"}, {"role": "assistant", "content": [thinking_block(emu, SONNET, "t")]},
        {"role": "user", "content": "b"}]}
    assert rejected(emu, body, "anthropic.thinking_not_final_block") == "messages.1: The final block in an assistant message cannot be `thinking`."


def test_parallel_tool_calls_are_all_answered_in_the_next_message(emu: AnthropicMessagesEmulator) -> None:
    body = loop_body(SONNET, [tool_use("toolu_a"), tool_use("toolu_b"), tool_use("toolu_c")], ["toolu_a"])
    assert rejected(emu, body, "anthropic.tool_result_follows_tool_use") == (
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_b, toolu_c. "
        "Each `tool_use` block must have a corresponding `tool_result` block in the next message.")


def test_more_than_four_cache_markers_in_the_whole_request_are_refused(emu: AnthropicMessagesEmulator) -> None:
    mark = {"cache_control": {"type": "ephemeral"}}
    body: dict[str, Any] = {"model": SONNET, "max_tokens": 100,
            "system": [{"type": "text", "text": "a", **mark}, {"type": "text", "text": "b", **mark}],
            "tools": [{"name": "lookup", "input_schema": {"type": "object"}, **mark}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "c", **mark}, {"type": "text", "text": "d", **mark}]}]}
    assert rejected(emu, body, "anthropic.cache_breakpoints") == "A maximum of 4 blocks with cache_control may be provided. Found 5."
    del body["tools"][0]["cache_control"]
    assert post(emu, body)[0] == 200


def test_thinking_takes_only_temperature_1(emu: AnthropicMessagesEmulator) -> None:
    body = {"model": SONNET, "max_tokens": 4096, "thinking": THINKING, "temperature": 0, "messages": [{"role": "user", "content": "a"}]}
    assert rejected(emu, body, "anthropic.thinking_temperature") == (
        "`temperature` may only be set to 1 when thinking is enabled. Please consult our documentation at "
        "https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking#important-considerations-when-using-extended-thinking")
    adaptive = {**body, "thinking": {"type": "adaptive"}}
    assert rejected(emu, adaptive, "anthropic.thinking_temperature_adaptive") == (
        "temperature may only be set to 1 when thinking is enabled or in adaptive mode")
    assert post(emu, {**body, "temperature": 1})[0] == 200
    assert post(emu, {k: v for k, v in body.items() if k != "thinking"})[0] == 200


@pytest.mark.parametrize("choice", [{"type": "any"}, {"type": "tool", "name": "lookup"}])
def test_thinking_with_a_forced_tool_is_refused(emu: AnthropicMessagesEmulator, choice: dict[str, Any]) -> None:
    body = {"model": SONNET, "max_tokens": 4096, "thinking": THINKING, "tool_choice": choice,
            "tools": [{"name": "lookup", "input_schema": {"type": "object"}}], "messages": [{"role": "user", "content": "a"}]}
    assert rejected(emu, body, "anthropic.thinking_forced_tool_choice") == "Thinking may not be enabled when tool_choice forces tool use."
    assert post(emu, {**body, "tool_choice": {"type": "auto"}})[0] == 200


def test_max_tokens_must_exceed_the_thinking_budget(emu: AnthropicMessagesEmulator) -> None:
    body = {"model": SONNET, "max_tokens": 2048, "thinking": THINKING, "messages": [{"role": "user", "content": "a"}]}
    assert rejected(emu, body, "anthropic.thinking_max_tokens") == (
        "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at "
        "https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size")


def test_a_budget_under_1024_is_refused_on_bedrock(corpus: Corpus) -> None:
    body = {"model": SONNET, "max_tokens": 4096, "thinking": {"type": "enabled", "budget_tokens": 512},
            "messages": [{"role": "user", "content": "a"}]}
    with AnthropicMessagesEmulator(corpus.rules, route="bedrock") as bedrock:
        assert rejected(bedrock, body, "anthropic.thinking_budget_minimum") == (
            "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
        assert post(bedrock, {**body, "thinking": THINKING})[0] == 200


@pytest.mark.parametrize("model", ["claude-opus-4.7", "claude-opus-4-7-20260416"])
def test_opus_4_7_refuses_budget_thinking_and_temperature(emu: AnthropicMessagesEmulator, model: str) -> None:
    base = {"model": model, "max_tokens": 4096, "messages": [{"role": "user", "content": "a"}]}
    assert rejected(emu, {**base, "thinking": THINKING}, "anthropic.adaptive_thinking_only") == (
        '"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" and '
        '"output_config.effort" to control thinking behavior.')
    assert rejected(emu, {**base, "temperature": 0.0}, "anthropic.temperature_deprecated") == "`temperature` is deprecated for this model."
    assert post(emu, {**base, "thinking": {"type": "adaptive"}, "output_config": {"effort": "high"}})[0] == 200
    # the rules hold for their models only: an older Claude takes both
    assert post(emu, {**base, "model": SONNET, "thinking": THINKING, "temperature": 1})[0] == 200
    assert post(emu, {**base, "model": SONNET, "temperature": 0.0})[0] == 200


# --- capplan's real path: bundled plans through litellm ----------------------------------------


THINKING_ON: dict[str, dict[str, Any]] = {"claude-opus-4.7": {"mode": "budget", "budget_tokens": 4000},
               "claude-opus-5": {"mode": "adaptive", "effort_hint": "high"}}


def assistant_turn(result: Any) -> dict[str, Any]:
    """The assistant message the trial loop appends (trials/loop/tool_loop.py ``_accept``)."""
    turn: dict[str, Any] = {"role": "assistant", "content": result.text or None}
    if result.tool_calls:
        turn["tool_calls"] = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                              for c in result.tool_calls]
    if result.reasoning is not None:
        turn["reasoning"] = ReasoningIn.from_structured(result.reasoning).model_dump(mode="json", exclude_none=True)
    return turn


def run_loop(client: Client, emulator: AnthropicMessagesEmulator, user_turns: list[list[AnthropicReply]],
             reasoning: dict[str, Any] | None, *, temperature: float | None = None) -> list[dict[str, Any]]:
    """Each user turn's scripted steps through ``client.generate``, results fed back as the loop does."""
    messages: list[dict[str, Any]] = []
    for number, replies in enumerate(user_turns):
        messages.append({"role": "user", "content": f"request {number}"})
        emulator.script(replies)
        for _ in replies:
            request: dict[str, Any] = {"system": "You look things up.", "messages": messages, "tools": [LOOKUP]}
            if reasoning is not None:
                request["reasoning"] = reasoning
            if temperature is not None:
                request["temperature"] = temperature
            result = client.generate(ChatRequest.model_validate(request))
            messages.append(assistant_turn(result))
            messages += [{"role": "tool", "tool_call_id": c.id, "content": f"result for {c.arguments}"} for c in result.tool_calls]
    return messages


def two_turn_script() -> list[list[AnthropicReply]]:
    return [
        [AnthropicReply(tool_calls=(("lookup", {"q": "a"}),), reasoning="first, a", redacted=True),
         AnthropicReply(tool_calls=(("lookup", {"q": "b"}), ("lookup", {"q": "c"})), reasoning="then b and c together"),
         AnthropicReply(tool_calls=(("lookup", {"q": "d"}),), reasoning="one more"),
         AnthropicReply(text="found a, b, c and d", reasoning="done")],
        [AnthropicReply(tool_calls=(("lookup", {"q": "e"}),), reasoning="again", redacted=True),
         AnthropicReply(tool_calls=(("lookup", {"q": "f"}), ("lookup", {"q": "g"})), reasoning="two at once"),
         AnthropicReply(text="found e, f and g", reasoning="done again")],
    ]


def assert_all_accepted(exchanges: list[Exchange], count: int) -> None:
    assert len(exchanges) == count
    for exchange in exchanges:
        assert exchange.path == "/v1/messages"
        assert exchange.status == 200 and exchange.violations == (), [v.message for v in exchange.violations]
        assert "anthropic.cache_breakpoints" in exchange.rules


@pytest.mark.parametrize("name", sorted(THINKING_ON))
def test_bundled_plan_tool_loops_with_thinking_are_accepted(emu: AnthropicMessagesEmulator, name: str) -> None:
    client = Client(Plan.load(PLANS[name]), env={"ANTHROPIC_API_KEY": "test"}, api_base=emu.base_url)
    run_loop(client, emu, two_turn_script(), THINKING_ON[name])
    assert_all_accepted(emu.exchanges, 7)
    # every signed block and every redacted payload came back verbatim, where it was returned
    issued = [block for ex in emu.exchanges for block in ex.answer["content"] if block["type"] in ("thinking", "redacted_thinking")]
    last = emu.exchanges[-1].body["messages"]
    replayed = [block for m in last if m["role"] == "assistant" and isinstance(m["content"], list)
                for block in m["content"] if block["type"] in ("thinking", "redacted_thinking")]
    assert replayed and all(block in issued for block in replayed)
    assert any(block["type"] == "redacted_thinking" for block in replayed)
    if name == "claude-opus-4.7":
        # litellm sends adaptive thinking without `display`: Opus 4.7 omits the text, and the
        # empty-text blocks still replay with their signatures
        assert all(block["thinking"] == "" for block in issued if block["type"] == "thinking")
    assert all(ex.body.get("thinking", {}).get("type") in ("enabled", "adaptive") for ex in emu.exchanges)


@pytest.mark.parametrize("name", sorted(THINKING_ON))
def test_bundled_plan_tool_loops_with_thinking_off_are_accepted(emu: AnthropicMessagesEmulator, name: str) -> None:
    client = Client(Plan.load(PLANS[name]), env={"ANTHROPIC_API_KEY": "test"}, api_base=emu.base_url)
    run_loop(client, emu, two_turn_script(), {"mode": "off"})
    assert_all_accepted(emu.exchanges, 7)
    assert all("thinking" not in ex.body for ex in emu.exchanges)


@pytest.mark.parametrize("name", sorted(PLANS))
def test_a_temperature_the_caller_asks_for_is_never_sent_to_these_models(
        emu: AnthropicMessagesEmulator, name: str) -> None:
    """Opus 4.7 and 5 answer "`temperature` is deprecated for this model." (their presets say
    supports_sampling_params: false): a request asking for one loops, thinking on and off, without it."""
    client = Client(Plan.load(PLANS[name]), env={"ANTHROPIC_API_KEY": "test"}, api_base=emu.base_url)
    run_loop(client, emu, two_turn_script(), THINKING_ON[name], temperature=0.0)
    run_loop(client, emu, two_turn_script(), {"mode": "off"}, temperature=0.0)
    assert_all_accepted(emu.exchanges, 14)
    assert all("temperature" not in ex.body for ex in emu.exchanges)
    assert sum("thinking" in ex.body for ex in emu.exchanges) == 7


def test_the_plans_cache_markers_stay_within_the_limit_across_the_loop(emu: AnthropicMessagesEmulator) -> None:
    client = Client(Plan.load(PLANS["claude-opus-4.7"]), env={"ANTHROPIC_API_KEY": "test"}, api_base=emu.base_url)
    run_loop(client, emu, two_turn_script(), THINKING_ON["claude-opus-4.7"])
    counts = [json.dumps(ex.body).count('"cache_control"') for ex in emu.exchanges]
    assert counts and all(2 <= count <= 4 for count in counts), counts
    # from the second request on, the earlier prefix is reported read from cache
    assert all(ex.answer["usage"]["cache_read_input_tokens"] > 0 for ex in emu.exchanges[1:])


def test_a_request_cannot_carry_its_own_cache_markers() -> None:
    """Caller-supplied markers: the request format has no place for them, and one is refused
    with its location rather than dropped, so the plan's policy counts every marker sent."""
    with pytest.raises(Exception) as info:
        ChatRequest.model_validate({"messages": [{"role": "user", "content": [
            {"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}}]}]})
    assert "cache_control" in str(info.value)


def test_markers_a_caller_brought_are_counted_against_the_whole_request(emu: AnthropicMessagesEmulator) -> None:
    """A list system prompt with the caller's own markers, through the plan's cache policy and
    litellm: the policy leaves the message anchors what remains of the four; marking them as if
    the caller's markers were not there is what Anthropic refuses."""
    import litellm

    from capplan.executor.policies.cache_policy import EPHEMERAL, AnthropicEphemeralCache

    policy = AnthropicEphemeralCache()
    caller: list[dict[str, Any]] = [{"type": "text", "text": "rules", "cache_control": dict(EPHEMERAL)},
              {"type": "text", "text": "glossary", "cache_control": dict(EPHEMERAL)}, {"type": "text", "text": "today"}]
    system, tools, _ = policy.apply(caller, [LOOKUP], [])
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "find a"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "toolu_x", "type": "function",
                                                                "function": {"name": "lookup", "arguments": '{"q": "a"}'}}]},
        {"role": "tool", "tool_call_id": "toolu_x", "content": "a is here"},
    ]
    messages = policy.apply_messages([{"role": "system", "content": system}, *history])
    litellm.completion(model=f"anthropic/{SONNET}", messages=messages, tools=tools, api_base=emu.base_url, api_key="test")
    sent = emu.exchanges[-1]
    assert sent.status == 200 and json.dumps(sent.body).count('"cache_control"') == 4

    unbudgeted = [{"role": "system", "content": system}, {**history[0], "content": [{"type": "text", "text": "find a", "cache_control": dict(EPHEMERAL)}]},
                  history[1], {**history[2], "content": [{"type": "text", "text": "a is here", "cache_control": dict(EPHEMERAL)}]}]
    with pytest.raises(Exception) as info:
        litellm.completion(model=f"anthropic/{SONNET}", messages=unbudgeted, tools=tools, api_base=emu.base_url, api_key="test")
    assert "A maximum of 4 blocks with cache_control may be provided. Found 6." in str(info.value)
    assert emu.exchanges[-1].violations[0].rule_id == "anthropic.cache_breakpoints"


# --- a broken overlay is refused with the provider's text --------------------------------------


OVERLAY = """\
presets:
  claude_without_codec:
    match:
      - "claude-opus-4.7*"
    content_policy: anthropic
    reasoning_codec: none
    cache_policy: anthropic_ephemeral
    params:
      supports_seed: false
      reasoning_via_thinking_kwarg: true
      drop_sampling_when_thinking: true
      reasoning_budget_default: 8000
"""


def test_claude_with_codec_none_and_thinking_on_is_refused_with_the_providers_text(emu: AnthropicMessagesEmulator, tmp_path: Path) -> None:
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(OVERLAY, encoding="utf-8")
    out = tmp_path / "plans"
    compiled = invoke("compile", "--model", "claude-opus-4.7", "--presets-file", str(overlay), "--out", str(out))
    assert compiled.exit_code == 0, compiled.output
    plan = Plan.load(out / "claude-opus-4.7.json")
    assert plan.policies["reasoning_codec"].name == "none"
    client = Client(plan, env={"ANTHROPIC_API_KEY": "test"}, api_base=emu.base_url)
    with pytest.raises(Exception) as info:
        run_loop(client, emu, [[AnthropicReply(tool_calls=(("lookup", {"q": "a"}),), reasoning="r"),
                                AnthropicReply(text="never reached")]], THINKING_ON["claude-opus-4.7"])
    assert getattr(info.value, "status_code", None) == 400
    refused = emu.exchanges[-1]
    assert refused.status == 400 and refused.violations[0].rule_id == "anthropic.thinking_at_loop_tail"
    assert refused.violations[0].message.startswith(
        "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is enabled")
    assert refused.violations[0].message in str(info.value)

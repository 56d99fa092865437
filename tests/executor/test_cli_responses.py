"""`capplan preview` and `capplan send` on a Responses plan (the bundled gpt-5, `openai-responses`).

`send` talks to capplan's strict Responses emulator on loopback (route "openai"); an answer with an
output item capplan does not interpret comes from a small recording server. Bad input is one located
line and exit 2.
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
from capplan.executor.plan import Plan
from capplan.executor.plan_cache import clear_plan_cache
from tests.cli_runner import invoke
from tests.responses_plan import GPT5, plan_on
from tests.fake_provider import FakeProvider, on_body

REPO = Path(__file__).resolve().parents[2]
KEY = "sk-test-responses-cli-0123456789"
ENV: dict[str, str | None] = {"OPENAI_API_KEY": KEY, "LLM_PROXY_BASE_URL": None, "LLM_PROXY_API_KEY": None,
                              "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
ORIGIN = {"protocol": "openai-responses", "route": "openai", "model": "openai/gpt-5"}
ADD = {"type": "function", "function": {"name": "add", "description": "Add to the counter.", "parameters": {
    "type": "object", "properties": {"amount": {"type": "integer"}}, "required": ["amount"]}}}
REQUEST: dict[str, Any] = {"system": "You keep a counter.", "messages": [{"role": "user", "content": "add 2"}],
                           "tools": [ADD]}
#: an earlier turn that called `add` after reasoning (an encrypted item this route made)
HISTORY: dict[str, Any] = {**REQUEST, "messages": [
    {"role": "user", "content": "add 2"},
    {"role": "assistant", "content": None,
     "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"amount": 2}'}}],
     "reasoning": {"blocks": [{"type": "encrypted", "encrypted_data": "opaque-payload-0123456789",
                               "extras": {"id": "rs_1", "summary": [{"type": "summary_text", "text": "Add it."}],
                                          "follower": {"type": "function_call", "id": "fc_1", "call_id": "call_1"}},
                               "origin": ORIGIN}]}},
    {"role": "tool", "tool_call_id": "call_1", "content": '{"value": 2}'},
]}



def write(tmp_path: Path, request: dict[str, Any], name: str = "request.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(request, indent=2), encoding="utf-8")
    return path


@pytest.fixture
def emulator() -> Iterator[ResponsesEmulator]:
    emu = ResponsesEmulator(load_corpus().rules, route="openai").start()
    yield emu
    emu.stop()


# --- preview ---------------------------------------------------------------------------------------

def test_preview_prints_the_responses_request(tmp_path: Path) -> None:
    result = invoke("preview", "--plan", GPT5, write(tmp_path, HISTORY), env=ENV)
    assert result.exit_code == 0, result.output
    kwargs = json.loads(result.stdout)
    assert "messages" not in kwargs and KEY not in result.output
    assert kwargs["instructions"] == "You keep a counter."
    assert (kwargs["store"], kwargs["include"], kwargs["reasoning"]) == (
        False, ["reasoning.encrypted_content"], {"effort": "medium"})
    assert kwargs["tools"] == [{"type": "function", "name": "add", "description": "Add to the counter.",
                                "parameters": ADD["function"]["parameters"], "strict": False}]
    assert [item["type"] for item in kwargs["input"]] == ["message", "reasoning", "function_call",
                                                          "function_call_output"]
    assert kwargs["input"][1] == {"type": "reasoning", "id": "rs_1", "encrypted_content": "opaque-payload-0123456789",
                                  "summary": [{"type": "summary_text", "text": "Add it."}]}


def test_preview_text_describes_each_input_item(tmp_path: Path) -> None:
    result = invoke("preview", "--plan", GPT5, "--format", "text", write(tmp_path, HISTORY), env=ENV)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "model: openai/gpt-5"
    assert 'include: ["reasoning.encrypted_content"]' in lines and "store: false" in lines
    assert "tools (1): add" in lines and "instructions: You keep a counter." in lines
    at = lines.index("[0] user: add 2")
    assert lines[at + 1:] == [
        "[1] reasoning rs_1 (encrypted_content 25 chars); summary: Add it.",
        '[2] function_call call_1 add: {"amount": 2}  [id=fc_1]',
        '[3] function_call_output call_1: {"value": 2}',
    ]
    assert not any(line.startswith(("messages", "input:")) for line in lines)  # shown item by item, not as JSON


# --- send --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("transport", ["direct", "litellm"])
def test_send_prints_the_answer_and_the_next_turn_replays_its_reasoning(tmp_path: Path, transport: str,
                                                                        emulator: ResponsesEmulator) -> None:
    base = emulator.base_url + "/v1"
    plan = plan_on(transport, tmp_path)
    emulator.script([Reply(tool_calls=(("add", {"amount": 2}),)), Reply(text="The counter is 2.")])
    first = invoke("send", "--plan", plan, "--api-base", base, "--format", "json", write(tmp_path, REQUEST), env=ENV)
    assert first.exit_code == 0, first.output
    result = json.loads(first.stdout)
    [call] = result["tool_calls"]
    [block] = result["reasoning"]["blocks"]
    assert (block["type"], block["origin"]) == ("encrypted", {**ORIGIN, "upstream": None})
    minted = emulator.exchanges[0].answer["output"]
    assert block["encrypted_data"] == minted[0]["encrypted_content"] and call["id"] == minted[1]["call_id"]
    assert result["usage"]["reasoning_tokens"] == emulator.exchanges[0].answer["usage"]["output_tokens_details"][
        "reasoning_tokens"]

    # the next turn, built from the printed result as a caller would, goes back in text format
    history = {**REQUEST, "messages": [
        *REQUEST["messages"],
        {"role": "assistant", "content": None, "reasoning": result["reasoning"],
         "tool_calls": [{"id": call["id"], "type": "function",
                         "function": {"name": "add", "arguments": call["arguments"]}}]},
        {"role": "tool", "tool_call_id": call["id"], "content": '{"value": 2}'}]}
    second = invoke("send", "--plan", plan, "--api-base", base, write(tmp_path, history, "turn2.json"), env=ENV)
    assert second.exit_code == 0, second.output
    lines = second.stdout.splitlines()
    assert lines[0] == "text: The counter is 2."
    assert "reasoning: 1 block(s), 0 signed; summary: None" in lines and "finish_reason: stop" in lines
    assert any(line.startswith("usage: ") and "reasoning_tokens=" in line for line in lines)
    assert [(e.path, e.status, e.violations) for e in emulator.exchanges] == [("/v1/responses", 200, ())] * 2
    items = emulator.exchanges[1].body["input"]
    at = items.index(minted[0])  # the reasoning item exactly as minted, right before its function_call
    assert items[at + 1]["type"] == "function_call" and items[at + 1]["id"] == minted[1]["id"]
    assert KEY not in first.output + second.output


@pytest.mark.parametrize("transport", ["direct", "litellm"])
def test_send_an_answer_with_an_unknown_output_item_is_exit_2_with_the_item_quoted(tmp_path: Path,
                                                                                   transport: str) -> None:
    item = {"type": "web_search_call", "id": "ws_1", "status": "completed",
            "action": {"type": "search", "query": f"counter {KEY}"}}
    answer = {"id": "resp_1", "object": "response", "created_at": 1, "status": "completed", "model": "gpt-5",
              "output": [item], "usage": {"input_tokens": 5, "output_tokens": 3, "total_tokens": 8}}
    request = write(tmp_path, REQUEST)
    with FakeProvider(on_body(lambda body: (200, answer))) as server:
        result = invoke("send", "--plan", plan_on(transport, tmp_path), "--api-base", server.base, request, env=ENV)
        assert len(server.bodies()) == 1 and "input" in server.bodies()[0]
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and KEY not in result.output
    assert result.stderr.startswith(f"{request}: error[RESPONSE_ITEM]: UnknownOutputItemError: openai: output[0] is "
                                    "an item of type 'web_search_call'")
    assert '"query": "counter <redacted>"' in result.stderr  # the item is quoted, never dropped
    assert "remove it: capplan runs function tools only" in result.stderr


# --- bad input ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("patch", "named"), [
    ({"stop": ["END"]}, "stop"),
    ({"response_format": {"type": "json_object"}}, "response_format"),
    ({"messages": [{"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "AAAA",
                                                                                        "format": "wav"}}]}]},
     "input_audio"),
    ({"tools": [{"type": "web_search"}]}, "tools.0"),
])
@pytest.mark.parametrize("command", ["preview", "send"])
def test_a_chat_only_field_in_the_request_is_refused_located_before_sending(
        tmp_path: Path, command: str, patch: dict[str, Any], named: str) -> None:
    # the request model refuses what no capplan request carries, on any plan: nothing reaches a wire
    request = write(tmp_path, {**REQUEST, **patch})
    result = invoke(command, "--plan", GPT5, "--api-base", "http://127.0.0.1:9/v1", request, env=ENV)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert result.stderr.startswith(f"{request}:") and named in result.stderr


def test_a_seed_is_dropped_by_the_plan_with_a_note_and_never_sent(tmp_path: Path, emulator: ResponsesEmulator,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    # the note is said once per plan's policies in a process: start from fresh ones, whatever ran before
    clear_plan_cache()
    result = invoke("send", "--plan", GPT5, "--api-base", emulator.base_url + "/v1",
                    write(tmp_path, {**REQUEST, "seed": 7}), env=ENV)
    assert result.exit_code == 0, result.output
    assert "this route takes no seed (supports_seed: false); seed 7 not sent" in caplog.text
    [exchange] = emulator.exchanges
    assert "seed" not in exchange.body and exchange.status == 200


def test_a_chat_only_kwarg_the_plan_builds_is_a_located_responses_request_error(tmp_path: Path) -> None:
    # a plan whose params policy sends reasoning as a `thinking` budget (what chat routes to Claude take)
    # builds a key the Responses API has no counterpart for: refused before anything is sent
    body = Plan.load(GPT5).body()
    params = body["policies"]["params_policy"]["params"]
    body["policies"]["params_policy"]["params"] = {**params, "reasoning_via_thinking_kwarg": True}
    plan = tmp_path / "gpt-5-thinking.json"
    plan.write_bytes(Plan.seal(body).to_bytes())
    request = write(tmp_path, {**REQUEST, "reasoning": {"mode": "budget", "budget_tokens": 2048}})
    for command in ("preview", "send"):
        result = invoke(command, "--plan", plan, "--api-base", "http://127.0.0.1:9/v1", request, env=ENV)
        assert result.exit_code == 2, result.output
        assert "Traceback" not in result.output
        assert result.stderr.startswith(f"{request}: error[RESPONSES_REQUEST]: request field 'thinking' cannot be "
                                        "sent on a Responses route"), result.stderr
        assert "use reasoning mode adaptive" in result.stderr and "Remove it from the request" in result.stderr


def test_preview_on_another_model_leaves_the_encrypted_reasoning_out_and_says_why(tmp_path: Path) -> None:
    # the history's reasoning was made by gpt-5: its payload verifies only there, so o3's request drops it
    o3 = REPO / "golden" / "plans" / "o3.json"
    request = write(tmp_path, HISTORY)
    result = invoke("preview", "--plan", o3, request, env=ENV)
    assert result.exit_code == 0, result.output
    kwargs = json.loads(result.stdout)
    assert [item["type"] for item in kwargs["input"]] == ["message", "function_call", "function_call_output"]
    assert "id" not in kwargs["input"][1]  # by its id the call would need the reasoning item left out
    [note] = [line for line in result.stderr.splitlines() if "not replayed" in line]
    assert note.startswith(f"{request}: note: messages[1].reasoning.blocks[0] (encrypted) not replayed:")

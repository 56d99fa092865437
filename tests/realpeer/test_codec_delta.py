"""capplan's reasoning_content codec against llama-server: it costs exactly what the raw field costs.

The same tool-loop history goes to a real llama-server three ways: raw stdlib HTTP with and without
``assistant.reasoning_content``; through capplan (real litellm) with the reasoning_content codec,
with and without the turn's reasoning; and through the codec the DeepSeek V4 preset used before,
whose ``reasoning_details`` llama.cpp drops. The prompt-token delta of the codec must equal the
raw field's; the old replay's must be 0.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from capplan.executor.client import Client
from tests.executor.plans import make_plan
from tests.realpeer.peer import LlamaServer

pytestmark = pytest.mark.realpeer

TRACE = ("The user wants the weather in Paris. The get_weather tool takes a city, so I call it with "
         "Paris and then report the temperature and the sky. ") * 6
TOOL = {"type": "function", "function": {"name": "get_weather", "description": "Current weather of a city.",
                                         "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                        "required": ["city"]}}}
CALL = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}


def history(reasoning: dict[str, Any] | None, *, cross_turn: bool) -> list[dict[str, Any]]:
    assistant: dict[str, Any] = {"role": "assistant", "content": "", "tool_calls": [CALL], **(reasoning or {})}
    out = [{"role": "system", "content": "You are a weather assistant."},
           {"role": "user", "content": "What is the weather in Paris?"}, assistant,
           {"role": "tool", "tool_call_id": "call_1", "content": '{"temp_c": 14, "sky": "overcast"}'}]
    if cross_turn:
        out += [{"role": "assistant", "content": "It is 14 C and overcast in Paris."},
                {"role": "user", "content": "And what did you think before calling the tool?"}]
    return out


@pytest.fixture(scope="module")
def server() -> Iterator[LlamaServer]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_API_KEY", "sk-local-llama-server-0000")
        mp.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        with LlamaServer("deepseek-v4") as srv:
            yield srv


def raw_prompt_tokens(server: LlamaServer, messages: list[dict[str, Any]]) -> int:
    body = {"model": "deepseek-v4", "messages": messages, "tools": [TOOL], "max_tokens": 1, "temperature": 0}
    tokens: int = server.chat(body)["usage"]["prompt_tokens"]
    return tokens


def capplan_prompt_tokens(server: LlamaServer, codec: str, messages: list[dict[str, Any]]) -> int:
    plan = make_plan("openai", "deepseek-v4", policies={"reasoning_codec": codec})
    result = Client(plan, api_base=server.base).generate(
        {"system": messages[0]["content"], "messages": messages[1:], "tools": [TOOL], "max_tokens": 1,
         "temperature": 0})
    return result.usage.prompt_tokens


@pytest.mark.parametrize("cross_turn", [False, True], ids=["in_loop", "cross_turn"])
def test_the_codec_delta_equals_the_raw_reasoning_content_delta(server: LlamaServer, cross_turn: bool) -> None:
    raw = (raw_prompt_tokens(server, history({"reasoning_content": TRACE}, cross_turn=cross_turn))
           - raw_prompt_tokens(server, history(None, cross_turn=cross_turn)))
    thought = {"reasoning": {"blocks": [{"type": "reasoning_text", "text": TRACE}]}}
    codec = (capplan_prompt_tokens(server, "reasoning_content", history(thought, cross_turn=cross_turn))
             - capplan_prompt_tokens(server, "reasoning_content", history(None, cross_turn=cross_turn)))
    old = (capplan_prompt_tokens(server, "openai_summary_replay", history(thought, cross_turn=cross_turn))
           - capplan_prompt_tokens(server, "openai_summary_replay", history(None, cross_turn=cross_turn)))
    assert raw > len(TRACE) // 2  # the DeepSeek V4 template renders the trace on every turn
    assert codec == raw
    assert old == 0  # reasoning_details: accepted with a 200 and dropped



def test_the_reasoning_llama_server_returns_reaches_the_result_and_the_next_request(server: LlamaServer) -> None:
    # the DeepSeek V4 template opens <think>; the model writes one reasoning token and closes it
    plan = make_plan("openai", "deepseek-v4", policies={"reasoning_codec": "reasoning_content"})
    client = Client(plan, api_base=server.base)
    first = client.generate({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 16, "temperature": 0})
    assert first.reasoning is not None and [(b.type, b.text) for b in first.reasoning.blocks] == [("reasoning_text", "R")]
    # replayed on the next request: the template renders it, so the prompt grows by its tokens
    turn = {"role": "assistant", "content": "ok", "reasoning": {"blocks": [{"type": "reasoning_text", "text": "R"}]}}
    history = [{"role": "user", "content": "hi"}, turn, {"role": "user", "content": "again"}]
    built = client.build({"messages": history, "max_tokens": 1})
    assert built.kwargs["messages"][1]["reasoning_content"] == "R"
    with_reasoning = client.generate({"messages": history, "max_tokens": 1, "temperature": 0}).usage.prompt_tokens
    without = client.generate({"messages": [history[0], {"role": "assistant", "content": "ok"}, history[2]],
                               "max_tokens": 1, "temperature": 0}).usage.prompt_tokens
    raw = raw_prompt_tokens(server, [history[0], {"role": "assistant", "content": "ok", "reasoning_content": "R"},
                                     history[2]]) - raw_prompt_tokens(server, [history[0], {"role": "assistant",
                                                                                             "content": "ok"}, history[2]])
    assert with_reasoning - without == raw > 0

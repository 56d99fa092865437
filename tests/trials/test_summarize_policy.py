"""The summarise step as a policy seam: the default LLM summariser and a policy of one's own, through the
real client against the loopback agent server."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import pytest

from capplan.executor.client import Client
from capplan.executor.result import GenerationResult
from capplan.trials.loop import handoff
from tests.fake_provider import FakeProvider, agent, agent_completion
from tests.trials.helpers import openai_plan

HISTORY = [{"role": "user", "content": "book flight 7"},
           {"role": "assistant", "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "book", "arguments": "{\"id\": 7}"}}]},
           {"role": "tool", "tool_call_id": "c1", "content": "booked: PNR QX7"}]


@pytest.fixture
def generate(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-summarize-policy-test")
    monkeypatch.delenv("LLM_PROXY_BASE_URL", raising=False)
    with FakeProvider(agent) as server:
        client = Client(openai_plan(), api_base=server.base)
        yield server, functools.partial(client.generate, role="summarize")


def test_the_default_policy_recaps_the_transcript_with_the_trials_model(generate: Any) -> None:
    server, gen = generate
    server.queue(agent_completion("The user booked flight 7 (PNR QX7)."))
    recap, result = handoff.summarize(gen, "You book flights.", HISTORY)
    assert recap == "The user booked flight 7 (PNR QX7)." and result.usage.prompt_tokens == 20
    [body] = server.bodies()
    assert body["messages"][0] == {"role": "system", "content": handoff.SUMMARIZER_SYSTEM}
    prompt = body["messages"][1]["content"]
    assert "You book flights." in prompt and "[calls book with {\"id\": 7}]" in prompt and "booked: PNR QX7" in prompt


def test_a_policy_of_ones_own_decides_how_the_recap_is_written(generate: Any) -> None:
    server, gen = generate
    server.queue(agent_completion("- flight 7 booked"))

    class Bullets:
        def summarize(self, generate: handoff.Generate, system_prompt: str,
                      messages: Sequence[dict[str, Any]]) -> tuple[str, GenerationResult]:
            result = generate({"system": "Recap as bullets.", "messages": [dict(m) for m in messages[:1]]})
            return "Recap:\n" + result.text, result

    recap, _ = handoff.summarize(gen, "You book flights.", HISTORY, policy=Bullets())
    assert recap == "Recap:\n- flight 7 booked"
    [body] = server.bodies()
    assert body["messages"] == [{"role": "system", "content": "Recap as bullets."}, HISTORY[0]]
    server.queue(agent_completion("ignored"))
    recap, _ = handoff.summarize(gen, "x", HISTORY, policy=handoff.LlmSummarizer(instructions="Be brief."))
    assert server.bodies()[-1]["messages"][0] == {"role": "system", "content": "Be brief."}


def test_an_empty_recap_fails_loudly_whatever_the_policy(generate: Any) -> None:
    server, gen = generate
    server.queue(agent_completion("   "))
    with pytest.raises(handoff.SummarizerFailedError, match="empty recap"):
        handoff.summarize(gen, "x", HISTORY)


def test_a_runs_policy_writes_the_recap_the_loop_hands_over(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    from capplan.trials.runner import RunContext, run_trial
    from tests.fake_provider import tool_call
    from tests.trials.helpers import spec_for, write_task

    monkeypatch.setenv("OPENAI_API_KEY", "sk-summarize-policy-test")
    monkeypatch.delenv("LLM_PROXY_BASE_URL", raising=False)
    task = write_task(tmp_path / "pack", turns=["add one please"])
    policy = handoff.LlmSummarizer(instructions="Recap in one line.")
    plan = openai_plan(loop={"max_context_tokens": 1000, "context_watermark": 100})
    with FakeProvider(agent) as server:
        server.queue(agent_completion(None, [tool_call("c1", "add", {"amount": 1})], prompt_tokens=950))  # over the mark
        server.queue(agent_completion("added one"))
        server.queue(agent_completion("The counter is 1."))
        records = run_trial(spec_for(task, plan, api_base=server.base), RunContext(summarize_policy=policy))
        summarise, after = server.bodies()[1], server.bodies()[2]
    assert summarise["messages"][0] == {"role": "system", "content": "Recap in one line."}
    assert after["messages"][-1] == {"role": "user", "content": "Summary of the conversation so far:\nadded one"}
    assert records.trajectory["summarize_events"][0]["recap"] == "added one"
    assert [c["role"] for c in records.metrics["calls"]] == ["agent", "summarize", "agent"]

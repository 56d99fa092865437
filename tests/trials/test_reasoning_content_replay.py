"""The ``reasoning_content`` codec end to end: real litellm, a loopback server, a real trial.

The server plays an OpenAI-compatible self-hosted endpoint (llama.cpp, vLLM) that returns the
model's reasoning as ``message.reasoning_content``. Each test asserts on the recorded wire
bodies (which assistant turns carry ``reasoning_content`` back) and on the trial's records (the
reasoning reaches the trajectory), for each replay scope the evidence can set.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from capplan.executor.plan import Plan
from capplan.trials.outcome import TerminationReason
from capplan.trials.runner import RunContext, run_trial
from capplan.trials.spec import TrialRecords
from tests.executor.plans import make_plan
from tests.fake_provider import FakeProvider, agent_completion, serve_agent, tool_call
from tests.trials.helpers import spec_for, write_task


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProvider]:
    yield from serve_agent("sk-test-reasoning-key-0123456789")


@pytest.fixture(autouse=True)
def _fresh(server: FakeProvider) -> None:
    server.reset()


def plan(replay: str) -> Plan:
    return make_plan("openai", "qwen3-8b", key="agent",
                     policies={"reasoning_codec": ("reasoning_content", {"replay": replay})})


def thinking(content: str | None, reasoning: str, calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    body = agent_completion(content, calls)
    body["choices"][0]["message"]["reasoning_content"] = reasoning
    return body


def script(server: FakeProvider) -> None:
    """Two user turns: the first one runs a tool loop of two calls, each with its own reasoning."""
    server.queue(thinking(None, "R1: add two first.", [tool_call("call_a", "add", {"amount": 2})]))
    server.queue(thinking(None, "R2: now add three.", [tool_call("call_b", "add", {"amount": 3})]))
    server.queue(thinking("The counter is 5.", "R3: report it."))
    server.queue(thinking("You're welcome.", "R4: be polite."))


def run(server: FakeProvider, task: Path, replay: str) -> TrialRecords:
    return run_trial(spec_for(task, plan(replay), api_base=server.base), RunContext(sleep=lambda _s: None))


def replayed(server: FakeProvider, i: int) -> list[str | None]:
    """Each assistant message of request ``i``: the reasoning_content it carried, or None."""
    return [m.get("reasoning_content") for m in server.bodies()[i]["messages"] if m["role"] == "assistant"]


@pytest.fixture
def task(tmp_path: Path) -> Path:
    return write_task(tmp_path / "pack", turns=["please add 2 then 3", "thanks"])


def test_all_turns_replays_every_assistant_turn_and_records_the_reasoning(server: FakeProvider, task: Path) -> None:
    script(server)
    records = run(server, task, "all_turns")
    assert records.termination_reason is TerminationReason.USER_STOP
    assert len(server.bodies()) == 4
    assert replayed(server, 1) == ["R1: add two first."]
    assert replayed(server, 2) == ["R1: add two first.", "R2: now add three."]
    assert replayed(server, 3) == ["R1: add two first.", "R2: now add three.", "R3: report it."]
    # what the endpoint returned reaches the trajectory, on the turns that produced it
    assistant = [m for m in records.trajectory["messages"] if m["role"] == "assistant"]
    assert [m["reasoning"]["blocks"][0]["text"] for m in assistant] == [
        "R1: add two first.", "R2: now add three.", "R3: report it.", "R4: be polite."]


def test_in_loop_replays_every_step_of_the_current_tool_loop(server: FakeProvider, task: Path) -> None:
    script(server)
    records = run(server, task, "in_loop")
    assert records.termination_reason is TerminationReason.USER_STOP
    assert replayed(server, 1) == ["R1: add two first."]
    # the loop's earlier step too: a template that keeps the current turn's reasoning reads both
    assert replayed(server, 2) == ["R1: add two first.", "R2: now add three."]
    # a new user turn: no tool loop continues, so nothing is replayed
    assert replayed(server, 3) == [None, None, None]
    assistant = [m for m in records.trajectory["messages"] if m["role"] == "assistant"]
    assert assistant[0]["reasoning"]["blocks"][0]["text"] == "R1: add two first."


def test_never_replays_nothing_but_still_records_the_reasoning(server: FakeProvider, task: Path) -> None:
    script(server)
    records = run(server, task, "never")
    assert records.termination_reason is TerminationReason.USER_STOP
    assert all(value is None for i in range(4) for value in replayed(server, i))
    assistant = [m for m in records.trajectory["messages"] if m["role"] == "assistant"]
    assert assistant[-1]["reasoning"]["blocks"][0]["text"] == "R4: be polite."


def test_a_length_cut_spent_on_reasoning_is_an_empty_completion_that_says_so(server: FakeProvider, task: Path) -> None:
    # the spec: text == "" with no tool calls is the empty-completion class, finish_reason
    # "length" included (the output-length retry is for content-carrying cuts only)
    cut = thinking("", "R: weighing every option at great length")
    cut["choices"][0]["finish_reason"] = "length"
    server.queue(cut)
    records = run(server, task, "all_turns")
    assert records.termination_reason is TerminationReason.EMPTY_COMPLETION
    detail = records.trajectory["termination"]["detail"]
    assert detail.startswith("empty completion after 0 resample(s); finish_reason=length with reasoning and no text")
    assert "reasoning-budget exhaustion" in detail and "raise max_tokens" in detail
    assert len(server.bodies()) == 1


def test_a_length_cut_spent_on_reasoning_is_resampled_under_the_empty_budget(server: FakeProvider, task: Path) -> None:
    cut = thinking("", "R: weighing every option at great length")
    cut["choices"][0]["finish_reason"] = "length"
    server.queue(cut)
    script(server)
    body = plan("all_turns").body()
    body["loop"] = {**body["loop"], "empty_retry_count": 1}
    records = run_trial(spec_for(task, Plan.seal(body), api_base=server.base), RunContext(sleep=lambda _s: None))
    assert records.termination_reason is TerminationReason.USER_STOP
    (retry,) = records.trajectory["retries"]
    assert retry["retry_class"] == "empty_completion" and "reasoning-budget exhaustion" in retry["detail"]
    # the discarded cut is never sent back: the resample sees the same prefix
    assert server.bodies()[1]["messages"] == server.bodies()[0]["messages"]

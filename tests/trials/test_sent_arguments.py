"""Tool arguments that are not JSON: the call runs repaired, the record keeps what the model sent, graders read that.

Through real litellm against a loopback server: the recorded assistant message carries
``sent_arguments`` (the text exactly as sent) beside the repaired JSON the call ran with, the next
request's wire carries the repaired JSON and no record-only key, and the per-turn grader's
``requires_calls`` judges the completion as sent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from capplan.trials.grading.sent_calls import SentCall, sent_calls, undecodable
from capplan.trials.outcome import TerminationReason
from capplan.trials.runner import RunContext, run_trial
from tests.fake_provider import FakeProvider, agent_completion, serve_agent, tool_call
from tests.trials.helpers import openai_plan, spec_for, write_task

#: single-quoted strings with an escaped newline: Python's repr, not JSON
SINGLE_QUOTED = "{'text': 'line one\\nline two'}"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProvider]:
    yield from serve_agent("sk-test-trial-key-0123456789")


@pytest.fixture(autouse=True)
def _fresh(server: FakeProvider) -> None:
    server.reset()


def _per_turn(requires_calls: bool) -> str:
    return f"grader:\n  per_turn:\n    - {{requires_calls: {str(requires_calls).lower()}}}\n"


@pytest.mark.parametrize("sent", [SINGLE_QUOTED, '{"text": "plain",}'])
def test_a_repaired_call_runs_and_is_recorded_and_graded_as_sent(server: FakeProvider, tmp_path: Path,
                                                                  sent: str) -> None:
    task = write_task(tmp_path / "pack", turns=["note it"], extra=_per_turn(True))
    server.queue(agent_completion(None, [tool_call("c1", "note", sent)]))
    server.queue(agent_completion("Noted."))
    records = run_trial(spec_for(task, openai_plan(), api_base=server.base), RunContext(sleep=lambda s: None))
    assert records.termination_reason is TerminationReason.USER_STOP
    trajectory = records.trajectory
    [call] = trajectory["tool_calls"]
    assert call["error"] is None and trajectory["final_state"]["notes"]  # the repaired call ran
    [assistant] = [m for m in trajectory["messages"] if m.get("tool_calls")]
    [wire_call] = assistant["tool_calls"]
    assert assistant["sent_arguments"] == {wire_call["id"]: sent}
    assert json.loads(wire_call["function"]["arguments"]) == call["arguments"]
    # the next request carries the repaired JSON the call ran with, and no record-only key
    second = server.bodies()[1]["messages"]
    [on_wire] = [m for m in second if m.get("tool_calls")]
    assert "sent_arguments" not in on_wire
    assert on_wire["tool_calls"][0]["function"]["arguments"] == wire_call["function"]["arguments"]
    [repair] = trajectory["parser_errors"]
    assert repair["raw_arguments"] == sent and repair["accepted"] and "sent_arguments" in repair["reason"]
    # graded as sent: the turn's only completion is one a JSON decoder refuses
    [per_turn] = records.metrics["grade"]["graders"]
    assert per_turn["passed"] is False and "not a JSON object" in per_turn["reasons"][0]


def test_json_arguments_record_nothing_more_and_pass(server: FakeProvider, tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack", turns=["note it"], extra=_per_turn(True))
    server.queue(agent_completion(None, [tool_call("c1", "note", '{"text":  "plain"}')]))
    server.queue(agent_completion("Noted."))
    records = run_trial(spec_for(task, openai_plan(), api_base=server.base), RunContext(sleep=lambda s: None))
    assert not any("sent_arguments" in m for m in records.trajectory["messages"])
    assert records.metrics["grade"]["passed"] is True


@pytest.mark.parametrize("requires_calls", [True, False])
def test_a_turn_that_must_make_calls_and_made_none_fails(server: FakeProvider, tmp_path: Path,
                                                        requires_calls: bool) -> None:
    task = write_task(tmp_path / "pack", turns=["note it"], extra=_per_turn(requires_calls))
    server.queue(agent_completion("Nothing to do."))
    records = run_trial(spec_for(task, openai_plan(), api_base=server.base), RunContext(sleep=lambda s: None))
    [per_turn] = records.metrics["grade"]["graders"]
    assert per_turn["passed"] is not requires_calls
    if requires_calls:
        assert per_turn["reasons"] == ["user turn 0: the agent made no tool call (this turn's calls are required)"]


def test_sent_calls_group_completions_by_user_turn_and_read_the_sent_text() -> None:
    trajectory = {"messages": [
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": None, "sent_arguments": {"b": "{'x': 1}"}, "tool_calls": [
            {"id": "a", "function": {"name": "f", "arguments": '{"x": 1}'}},
            {"id": "b", "function": {"name": "g", "arguments": '{"x": 1}'}}]},
        {"role": "user", "content": "feedback", "origin": "parser_feedback"},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "two"},
    ]}
    turns = sent_calls(trajectory)
    assert turns == [[[SentCall("f", '{"x": 1}'), SentCall("g", "{'x': 1}")]], []]
    assert undecodable(turns[0][0]) == SentCall("g", "{'x': 1}")
    assert undecodable([SentCall("f", "[1]")]) is not None  # an array is not an arguments object

"""The loop through real litellm against a loopback server that scripts the agent.

Every retry class and every terminal has its own test; each asserts on what the server
received (feedback turns, that an empty or truncated reply was never sent back, the compacted
wire view after a summarise) and on the records the trial returns.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fake_provider import FakeProvider, agent, agent_completion, serve_agent, tool_call
from tests.trials.helpers import openai_plan, spec_for, write_task
from capplan.trials.loop.handoff import SUMMARIZER_SYSTEM
from capplan.trials.outcome import TerminationReason, TrialStatus
from capplan.trials.loop.retry_classes import OUTPUT_LENGTH_FEEDBACK
from capplan.trials.runner import RunContext, run_trial
from capplan.trials.spec import TrialRecords

CONTEXT_ERROR = "This model's maximum context length is 1000 tokens. However, your messages resulted in 1500 tokens."


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProvider]:
    yield from serve_agent("sk-test-trial-key-0123456789")


@pytest.fixture(autouse=True)
def _fresh(server: FakeProvider) -> None:
    server.reset()


@pytest.fixture
def pack(tmp_path: Path) -> Path:
    return tmp_path / "pack"


def run(server: FakeProvider, task: Path, *, loop: dict[str, Any] | None = None, **kwargs: Any) -> TrialRecords:
    slept: list[float] = []
    context = RunContext(sleep=slept.append)
    return run_trial(spec_for(task, openai_plan(loop=loop), api_base=server.base, **kwargs), context)


def messages(server: FakeProvider, i: int) -> list[dict[str, Any]]:
    body_messages: list[dict[str, Any]] = server.bodies()[i]["messages"]
    return [m for m in body_messages if m["role"] != "system"]


def test_tool_turns_then_user_turns_until_the_script_ends(server: FakeProvider, pack: Path) -> None:
    task = write_task(pack, extra="grader:\n  expected_actions: [{name: add, arguments: {amount: 2}}]\n"
                                  "  expected_state: {value: 2}\n")
    server.queue(agent_completion(None, [tool_call("call_a", "add", {"amount": 2})]))
    server.queue(agent_completion("The counter is 2."))
    server.queue(agent_completion("You're welcome."))
    records = run(server, task)
    assert records.termination_reason is TerminationReason.USER_STOP
    assert records.status is TrialStatus.COMPLETED
    assert len(server.bodies()) == 3
    second = messages(server, 1)
    assert second[-1] == {"role": "tool", "tool_call_id": "call_a", "content": '{"value": 2}'}
    assert messages(server, 2)[-1] == {"role": "user", "content": "thanks"}
    assert records.trajectory["final_state"] == {"notes": [], "value": 2}
    assert records.metrics["grade"]["passed"] is True
    assert records.metrics["usage"]["prompt_tokens"] == 60 and records.metrics["n_calls"] == 3
    assert "sk-test-trial-key" not in json.dumps([records.trajectory, records.metrics])


def test_empty_completion_is_resampled_and_never_sent_back(server: FakeProvider, pack: Path) -> None:
    task = write_task(pack, turns=["hello"])
    server.queue(agent_completion(""))
    server.queue(agent_completion("Hi!"))
    records = run(server, task, loop={"empty_retry_count": 1})
    assert records.termination_reason is TerminationReason.USER_STOP
    assert messages(server, 1) == messages(server, 0)  # the resample sees the same prefix: nothing appended
    calls = records.metrics["calls"]
    assert [(c["outcome"], c["retry_class"]) for c in calls] == [("resampled", "empty_completion"), ("accepted", None)]
    assert records.trajectory["retries"][0]["retry_class"] == "empty_completion"
    assert records.metrics["turns"] == 1  # a resample does not advance the turn counter


def test_empty_completion_exhausted_terminates(server: FakeProvider, pack: Path) -> None:
    task = write_task(pack, turns=["hello"])
    server.queue(agent_completion(""))
    server.queue(agent_completion(""))
    records = run(server, task, loop={"empty_retry_count": 1})
    assert records.termination_reason is TerminationReason.EMPTY_COMPLETION
    assert records.status is TrialStatus.FAILED
    assert len(server.bodies()) == 2 and records.metrics["n_calls"] == 2
    assert not any(m["role"] == "assistant" for m in records.trajectory["messages"])


def test_output_length_gets_a_user_feedback_turn_and_a_resample(server: FakeProvider, pack: Path) -> None:
    task = write_task(pack, turns=["write it all"])
    server.queue(agent_completion("a very long answer that got cu", finish="length"))
    server.queue(agent_completion("Short answer."))
    records = run(server, task, loop={"output_length_retry_count": 1})
    resample = messages(server, 1)
    assert resample[-1] == {"role": "user", "content": OUTPUT_LENGTH_FEEDBACK}
    assert all("got cu" not in json.dumps(m) for m in resample)  # the truncated reply was discarded
    assert records.metrics["calls"][0]["retry_class"] == "output_length"
    assert records.trajectory["messages"][-1] == {"role": "assistant", "content": "Short answer."}


def test_output_length_exhausted_accepts_and_continues(server: FakeProvider, pack: Path) -> None:
    task = write_task(pack, turns=["write it all", "ok"])
    server.queue(agent_completion("cut sho", finish="length"))
    server.queue(agent_completion("fine"))
    records = run(server, task)  # default budget 0: accept the truncated reply as the turn
    assert records.termination_reason is TerminationReason.USER_STOP
    assert {"role": "assistant", "content": "cut sho"} in messages(server, 1)
    assert records.trajectory["retries"] == []


def test_parser_error_feedback_names_the_tool_and_quotes_the_excerpt(server: FakeProvider, pack: Path) -> None:
    task = write_task(pack, turns=["add three"])
    server.queue(agent_completion(None, [tool_call("call_bad", "add", "{amount: [3,,")]))
    server.queue(agent_completion(None, [tool_call("call_ok", "add", {"amount": 3})]))
    server.queue(agent_completion("Added 3."))
    records = run(server, task, loop={"parser_error_retry_count": 1})
    feedback = messages(server, 1)[-1]
    assert feedback["role"] == "user"
    assert "`add`" in feedback["content"] and "{amount: [3,," in feedback["content"]
    assert "Available tools: add, note, explode" in feedback["content"]
    assert all("call_bad" not in json.dumps(m) for m in messages(server, 1))
    assert records.trajectory["final_state"]["value"] == 3
    assert records.trajectory["parser_errors"][0]["accepted"] is False


def test_parser_error_exhausted_accepts_the_coerced_call_as_invalid_arguments(server: FakeProvider, pack: Path) -> None:
    task = write_task(pack, turns=["add three"])
    server.queue(agent_completion(None, [tool_call("call_bad", "add", "{amount: [3,,")]))
    server.queue(agent_completion("Sorry."))
    records = run(server, task)
    tool_message = messages(server, 1)[-1]
    assert tool_message["role"] == "tool" and tool_message["content"].startswith("INVALID_ARGUMENTS: ")
    assert "'amount' is a required property" in tool_message["content"]
    call = records.trajectory["tool_calls"][0]
    assert call["error"] == "invalid_arguments" and call["arguments"] == {}
    assert records.trajectory["parser_errors"][0]["accepted"] is True
    assert records.trajectory["final_state"]["value"] == 0


def test_schema_violation_is_invalid_arguments_and_a_raising_tool_is_an_error_result(server: FakeProvider, pack: Path) -> None:
    task = write_task(pack, turns=["go"])
    server.queue(agent_completion(None, [tool_call("c1", "add", {"amount": "two"}), tool_call("c2", "explode", {})]))
    server.queue(agent_completion("Both failed."))
    records = run(server, task)
    tool_messages = [m for m in messages(server, 1) if m["role"] == "tool"]
    assert tool_messages[0]["content"].startswith("INVALID_ARGUMENTS: amount: 'two' is not of type 'integer'")
    assert tool_messages[1]["content"] == "Error: RuntimeError: the fuse blew"
    assert records.termination_reason is TerminationReason.USER_STOP


def test_tool_output_is_capped_for_the_model_and_whole_in_the_record(server: FakeProvider, pack: Path) -> None:
    task = write_task(pack, turns=["note it"])
    text = "B" * 30 + "m" * 200 + "E" * 30
    server.queue(agent_completion(None, [tool_call("c1", "note", {"text": text})]))
    server.queue(agent_completion("Noted."))
    records = run(server, task, loop={"tool_output_max_chars": 1000})  # the task's cap of 40 is tighter
    shown = messages(server, 1)[-1]["content"]
    full = "noted " + text
    assert shown == full[:20] + f"\n...[{len(full) - 40} chars omitted]...\n" + full[-20:]
    call = records.trajectory["tool_calls"][0]
    assert call["output"] == full and call["truncated"] is True and call["prompt_chars"] == len(shown)


def test_an_error_result_goes_through_the_same_cap(server: FakeProvider, pack: Path) -> None:
    task = write_task(pack, turns=["boom"])
    server.queue(agent_completion(None, [tool_call("c1", "explode", {})]))
    server.queue(agent_completion("It failed."))
    run(server, task, loop={"tool_output_max_chars": 10})
    shown = messages(server, 1)[-1]["content"]
    assert shown == _capped("Error: RuntimeError: the fuse blew", 10)
    assert shown.startswith("Error") and shown.endswith("blew")


def _capped(text: str, cap: int) -> str:
    return text[: cap // 2] + f"\n...[{len(text) - cap}" + " chars omitted]...\n" + text[-(cap // 2):]


def test_repeated_provider_ids_are_made_unique_on_both_sides(server: FakeProvider, pack: Path) -> None:
    task = write_task(pack, turns=["add twice"])
    server.queue(agent_completion(None, [tool_call("add:0", "add", {"amount": 1})]))
    server.queue(agent_completion(None, [tool_call("add:0", "add", {"amount": 1})]))
    server.queue(agent_completion("Done."))
    records = run(server, task)
    third = messages(server, 2)
    assistant_ids = [c["id"] for m in third if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    tool_ids = [m["tool_call_id"] for m in third if m["role"] == "tool"]
    assert assistant_ids == tool_ids == ["add:0", "add:0#1"]
    assert [(c["id"], c["provider_id"]) for c in records.trajectory["tool_calls"]] == [("add:0", "add:0"), ("add:0#1", "add:0")]


def test_turn_budget_ends_the_trial(server: FakeProvider, pack: Path) -> None:
    task = write_task(pack, turns=["loop"], extra="max_turns: 5\n")
    for _ in range(5):
        server.queue(agent_completion(None, [tool_call("c", "add", {"amount": 1})]))
    records = run(server, task, max_turns_cap=2)
    assert records.termination_reason is TerminationReason.MAX_TURNS
    assert records.status is TrialStatus.FAILED  # the budget ran out before the conversation ended: the agent's failure
    assert len(server.bodies()) == 2 and records.metrics["max_turns"] == 2
    assert records.trajectory["messages"][-1]["role"] == "system"


def test_api_error_is_replayed_in_place_once(server: FakeProvider, pack: Path) -> None:
    task = write_task(pack, turns=["hi"])
    server.queue_error(500, "upstream exploded", times=5)  # the client's own controller spends five attempts
    server.queue(agent_completion("Hello."))
    records = run(server, task)
    assert records.termination_reason is TerminationReason.USER_STOP
    assert len(server.bodies()) == 6
    assert all(server.bodies()[i]["messages"] == server.bodies()[0]["messages"] for i in range(6))
    assert [r["retry_class"] for r in records.trajectory["retries"]] == ["api_error"]
    # one record per provider attempt: the controller's five, then the replay that answered, numbered on
    assert [c["outcome"] for c in records.metrics["calls"]] == ["failed"] * 5 + ["accepted"]
    assert [c["attempt"] for c in records.metrics["calls"]] == [1, 2, 3, 4, 5, 6]


def test_api_error_exhausted_fails_the_trial_and_counts(server: FakeProvider, pack: Path) -> None:
    task = write_task(pack, turns=["hi"])
    server.queue_error(500, "upstream exploded", times=10)
    records = run(server, task)
    assert records.termination_reason is TerminationReason.API_ERROR
    assert records.status is TrialStatus.FAILED and records.metrics["counts_against_model"] is True
    assert len(server.bodies()) == 10


def test_rate_limit_burst_aborts_without_counting_against_the_model(server: FakeProvider, pack: Path) -> None:
    task = write_task(pack, turns=["hi"])
    server.queue_error(429, "Rate limit reached for requests", code="rate_limit_exceeded", times=5)
    records = run(server, task)
    assert records.termination_reason is TerminationReason.RATE_LIMIT
    assert records.status is TrialStatus.ABORTED
    assert records.metrics["counts_against_model"] is False and records.run_line["passed"] is None
    assert records.trajectory["retries"] == []  # rate limits are never replayed at the loop level


def test_connection_refused_is_an_infrastructure_abort(pack: Path) -> None:
    task = write_task(pack, turns=["hi"])
    with FakeProvider(agent) as gone:
        base = gone.base
    records = run_trial(spec_for(task, openai_plan(), api_base=base), RunContext(sleep=lambda s: None))
    assert records.termination_reason is TerminationReason.INFRA_ERROR
    assert records.status is TrialStatus.ABORTED


def test_context_window_error_without_the_seam_is_a_typed_terminal(server: FakeProvider, pack: Path) -> None:
    task = write_task(pack, turns=["hi"])
    server.queue_error(400, CONTEXT_ERROR, code="context_length_exceeded")
    records = run(server, task)
    assert records.termination_reason is TerminationReason.CONTEXT_WINDOW_EXCEEDED
    assert records.status is TrialStatus.FAILED and len(server.bodies()) == 1


ARMED = {"max_context_tokens": 1000, "context_watermark": 100}


def test_watermark_summarises_before_the_turn_and_compacts_only_the_wire(server: FakeProvider, pack: Path) -> None:
    task = write_task(pack, turns=["add one please"])
    server.queue(agent_completion(None, [tool_call("c1", "add", {"amount": 1})], prompt_tokens=950))
    server.queue(agent_completion("RECAP: the user asked to add one; the counter is now 1."))
    server.queue(agent_completion("The counter is 1."))
    records = run(server, task, loop=ARMED)
    summarise = server.bodies()[1]
    assert summarise["messages"][0] == {"role": "system", "content": SUMMARIZER_SYSTEM}
    assert "tools" not in summarise
    assert messages(server, 2) == [
        {"role": "user", "content": "add one please"},
        {"role": "user", "content": "Summary of the conversation so far:\nRECAP: the user asked to add one; the counter is now 1."},
    ]
    recorded = records.trajectory["messages"]
    assert [m["role"] for m in recorded] == ["user", "assistant", "tool", "system", "assistant"]
    assert recorded[3]["content"].startswith("Context summarized before turn 1")
    event = records.trajectory["summarize_events"][0]
    assert event["trigger"] == "watermark" and event["prompt_tokens"] == 950 and event["message_index"] == 3
    assert [c["role"] for c in records.metrics["calls"]] == ["agent", "summarize", "agent"]


def test_context_window_error_with_the_seam_summarises_and_retries_once(server: FakeProvider, pack: Path) -> None:
    task = write_task(pack, turns=["hi"])
    server.queue_error(400, CONTEXT_ERROR, code="context_length_exceeded")
    server.queue(agent_completion("RECAP: user said hi."))
    server.queue(agent_completion("Hello!"))
    records = run(server, task, loop=ARMED)
    assert records.termination_reason is TerminationReason.USER_STOP
    assert records.trajectory["summarize_events"][0]["trigger"] == "context_window_error"
    assert messages(server, 2)[-1]["content"].endswith("RECAP: user said hi.")


@pytest.mark.parametrize(
    ("answers", "needle"),
    [
        ([("err",), ("ok", "")], "summarise failed"),  # empty recap
        ([("err",), ("err",)], "summarise call raised"),  # the summariser's own call overflows
        ([("err",), ("ok", "RECAP"), ("err",)], "after a summarise"),  # still too long after compaction
    ],
    ids=["empty-recap", "summariser-overflows", "retry-overflows"],
)
def test_the_three_loud_failures_end_as_context_window_exceeded(
    server: FakeProvider, pack: Path, answers: list[tuple[str, ...]], needle: str
) -> None:
    task = write_task(pack, turns=["hi"])
    for answer in answers:
        if answer[0] == "err":
            server.queue_error(400, CONTEXT_ERROR, code="context_length_exceeded")
        else:
            server.queue(agent_completion(answer[1]))
    records = run(server, task, loop=ARMED)
    assert records.termination_reason is TerminationReason.CONTEXT_WINDOW_EXCEEDED
    assert records.status is TrialStatus.FAILED
    assert needle in records.trajectory["termination"]["detail"]
    assert len(server.bodies()) == len(answers)  # one summarise per event, never iterated


def test_llm_user_runs_through_the_guard_and_stops(server: FakeProvider, pack: Path) -> None:
    user = "user:\n  mode: llm\n  backstory: You want the counter raised by one.\n"
    task = write_task(pack, user=user)
    server.queue(agent_completion("As an AI language model, I cannot do that."))  # flagged: discarded whole
    server.queue(agent_completion("Please add one to my counter."))
    server.queue(agent_completion(None, [tool_call("c1", "add", {"amount": 1})]))
    server.queue(agent_completion("Done, it is 1."))
    server.queue(agent_completion("Thanks! ###STOP###"))
    records = run(server, task, user_plan=openai_plan(key="user-sim"))
    assert records.termination_reason is TerminationReason.USER_STOP
    assert messages(server, 2)[0] == {"role": "user", "content": "Please add one to my counter."}
    assert all("As an AI" not in json.dumps(body) for body in server.bodies()[2:])
    events = records.trajectory["user_reply_guard_events"]
    assert events[0]["outcome"] == "delivered" and events[0]["rejections"][0]["detector"] == "fourth_wall"
    outcomes = [(c["role"], c["outcome"]) for c in records.metrics["calls"]]
    assert outcomes == [("user", "guard_rejected"), ("user", "accepted"), ("agent", "accepted"),
                        ("agent", "accepted"), ("user", "accepted")]
    assert records.trajectory["messages"][-1] == {"role": "user", "content": "Thanks! ###STOP###"}
    assert records.metrics["user_usage"]["prompt_tokens"] == 60

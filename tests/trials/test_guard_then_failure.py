"""A user-simulator call that fails after the reply guard discarded attempts: the trial's termination
detail keeps the guard's note, and the trajectory has the event, through the real loop and litellm."""

from __future__ import annotations

from pathlib import Path

from capplan.trials.outcome import TerminationReason
from tests.fake_provider import FakeProvider, agent_completion, error_answer
from tests.trials.helpers import openai_plan, write_task
from tests.trials.test_call_records import USER_TASK, Scripted, run, script, upstream  # noqa: F401 - fixtures


def test_the_guards_discards_before_a_failed_simulator_call_are_in_detail_and_events(
        upstream: FakeProvider, script: Scripted, tmp_path: Path) -> None:  # noqa: F811
    task = write_task(tmp_path / "pack", user=USER_TASK)
    script.push((200, agent_completion("As an AI language model, I cannot do that.")),  # the opening, flagged
                error_answer(400, "the simulator's request was refused"))  # its regeneration fails (not retried)
    records = run(upstream, task, user_plan=openai_plan(key="user-sim"))
    assert records.termination_reason is TerminationReason.ERROR
    detail = records.trajectory["termination"]["detail"]
    assert detail.startswith("user simulator call: BadRequestError")
    assert detail.endswith("; user reply guard: 1 generation attempt(s) were discarded before this error: "
                           "fourth_wall:self_identified_as_model")
    [event] = records.trajectory["user_reply_guard_events"]
    assert event["outcome"] == "provider_failed" and event["message_index"] == 0
    assert [r["reason"] for r in event["rejections"]] == ["self_identified_as_model"]
    user = [(c["status"], c["outcome"]) for c in records.metrics["calls"] if c["role"] == "user"]
    assert user == [("ok", "guard_rejected"), ("error", "failed")]

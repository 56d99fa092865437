"""The small seams of the loop, each on its own: truncation, turn budget, ids, statuses, classification."""

from __future__ import annotations

import pickle

import pytest

from capplan.executor.loop_errors import LoopErrorDecision, LoopErrorReason
from capplan.trials.loop.classify import classifier
from capplan.trials.outcome import TerminationReason, TrialStatus, counts_against_model, status_for
from capplan.trials.spec import TrialSpec
from capplan.trials.loop.tool_call_ids import ToolCallIds
from capplan.trials.loop.truncation import effective_cap, keep_head_and_tail
from capplan.trials.loop.turn_budget import DEFAULT_MAX_TURNS, resolve_max_turns


def test_truncation_keeps_head_and_tail_with_the_omitted_count() -> None:
    text = "A" * 10 + "x" * 100 + "Z" * 10
    out = keep_head_and_tail(text, 20)
    assert out == "A" * 10 + "\n...[100 chars omitted]...\n" + "Z" * 10
    assert keep_head_and_tail(text, None) == text
    assert keep_head_and_tail(text, len(text)) == text


def test_the_tighter_cap_wins_and_none_means_no_cap() -> None:
    assert effective_cap(400, 300) == 300
    assert effective_cap(None, 300) == 300
    assert effective_cap(400, None) == 400
    assert effective_cap(None, None) is None


@pytest.mark.parametrize(
    ("task", "cap", "plan", "expected"),
    [
        (10, None, 90, 10),  # a task's own budget is authoritative over the plan default
        (10, 5, 90, 5),  # the run cap ceilings it
        (10, 20, None, 10),
        (None, None, 90, 90),  # plan default as base
        (None, 30, 90, 30),
        (None, None, None, DEFAULT_MAX_TURNS),
        (None, 70, None, DEFAULT_MAX_TURNS),
    ],
)
def test_turn_budget_precedence(task: int | None, cap: int | None, plan: int | None, expected: int) -> None:
    assert resolve_max_turns(task, cap, plan) == expected


def test_tool_call_ids_keep_fresh_ids_and_suffix_repeats() -> None:
    ids = ToolCallIds()
    assert [ids.assign(i) for i in ["search:0", "search:0", "book:0", "search:0", "call_x", ""]] == [
        "search:0", "search:0#1", "book:0", "search:0#2", "call_x", "call",
    ]
    # an id that happens to equal an assigned suffix is still made unique
    assert ids.assign("search:0#1") not in {"search:0", "search:0#1", "search:0#2"}


def test_infrastructure_aborts_do_not_count_against_the_model() -> None:
    for reason in (TerminationReason.RATE_LIMIT, TerminationReason.API_TIMEOUT, TerminationReason.INFRA_ERROR):
        assert status_for(reason) is TrialStatus.ABORTED
        assert not counts_against_model(status_for(reason))
    for reason in (TerminationReason.EMPTY_COMPLETION, TerminationReason.CONTEXT_WINDOW_EXCEEDED,
                   TerminationReason.API_ERROR):
        assert status_for(reason) is TrialStatus.FAILED
        assert counts_against_model(status_for(reason))
    assert status_for(TerminationReason.ERROR) is TrialStatus.ERROR
    assert counts_against_model(TrialStatus.ERROR)  # a harness defect is ours, but in the denominator
    assert set(TerminationReason) == {r for r in TerminationReason if status_for(r) is not None}


def test_connection_failures_are_infrastructure_before_the_executor_decides() -> None:
    decided: list[BaseException] = []

    def decide(exc: BaseException) -> LoopErrorDecision:
        decided.append(exc)
        return LoopErrorDecision(LoopErrorReason.RATE_LIMIT, "typed 429", excluded=True)

    classify = classifier(decide)
    wrapped = RuntimeError("call failed")
    wrapped.__cause__ = ConnectionResetError("peer reset")
    assert classify(wrapped) is TerminationReason.INFRA_ERROR
    assert decided == [wrapped]  # asked first only whether the setup is wrong
    assert classify(RuntimeError("x")) is TerminationReason.RATE_LIMIT
    # an answer that says the setup is wrong wins over litellm's connection-error wrapping of it
    setup = classifier(lambda e: LoopErrorDecision(LoopErrorReason.CONFIGURATION_ERROR, "", excluded=True,
                                                   problem="infrastructure: an HTML page"))
    assert setup(wrapped) is TerminationReason.CONFIGURATION_ERROR
    for reason in LoopErrorReason:  # every executor decision has a runner reason
        assert classifier(lambda e, r=reason: LoopErrorDecision(r, ""))(RuntimeError()).value == reason.value


def test_a_trial_spec_pickles() -> None:
    spec = TrialSpec(plan_json="{}", plan_fingerprint="f" * 64, plan_key="m", task_path="/t.yaml", task_text="id: t\n",
                     task_id="t", task_pack="p", index=3, max_turns_cap=7)
    again = pickle.loads(pickle.dumps(spec))
    assert again == spec
    assert str(again.key) == "m/t/3" and again.key.relpath == "trials/m/t/3"

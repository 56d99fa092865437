"""Money and summary statistics: unknown cost stays unknown, agent and user are apart, the numbers are right.

The interval and pass^k values are computed by hand in the comments; the end-to-end runs use
real litellm against the loopback agent server.
"""

from __future__ import annotations

import dataclasses
import io
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from capplan.executor.cost import response_cost
from capplan.executor.plan import PricingEntry
from capplan.executor.usage import UsageExtractor
from capplan.trials.backends.local import LocalBackend
from capplan.trials.driver import RunRequest, build_specs, drive
from capplan.trials.outcome import TerminationReason, TrialStatus
from capplan.trials.report.progress import Progress
from capplan.trials.run_folder.records import RunLine, Summary, SummaryRow
from capplan.trials.run_folder.folder import RunFolder
from capplan.trials.runner import RunContext, run_trial
from capplan.trials.spec import TrialRecords
from capplan.trials.run_folder.summary import (
    pass_hat_k,
    percentile,
    render_json,
    render_markdown,
    summarize,
    wilson_interval,
)
from tests.fake_provider import FakeProvider, agent, agent_answer, agent_completion, on_body
from tests.trials.helpers import openai_plan, write_task
from tests.cli_runner import invoke

PRICING = {"key": "openai/agent-model", "input": 1.0, "output": 1.0}
LLM_USER = "user:\n  mode: llm\n  backstory: You want the counter raised by one.\n"


def test_wilson_interval_matches_hand_computed_values() -> None:
    # 8 of 10, z = 1.96: centre (0.8 + z²/20) / (1 + z²/10) = 0.71674, half-width
    # z·sqrt(0.016 + z²/400) / (1 + z²/10) = 0.22658
    low, high = wilson_interval(8, 10)  # type: ignore[misc]
    assert (low, high) == (pytest.approx(0.49016, abs=1e-5), pytest.approx(0.94331, abs=1e-5))
    # 0 of 5: [0, z²/5 / (1 + z²/5)] = [0, 0.43449]; 5 of 5 mirrors it
    assert wilson_interval(0, 5) == (0.0, pytest.approx(0.43449, abs=1e-5))
    assert wilson_interval(5, 5) == (pytest.approx(0.56551, abs=1e-5), 1.0)
    assert wilson_interval(0, 0) is None


def test_pass_hat_k_is_tau_benchs_definition() -> None:
    # task A passes 3 of 4, task B 1 of 4
    tasks = [(3, 4), (1, 4)]
    assert pass_hat_k(tasks, 1) == pytest.approx((3 / 4 + 1 / 4) / 2)  # pass^1 is the pass rate
    assert pass_hat_k(tasks, 2) == pytest.approx((3 / 6 + 0 / 6) / 2)  # C(3,2)/C(4,2), C(1,2)/C(4,2)
    assert pass_hat_k(tasks, 3) == pytest.approx((1 / 4 + 0) / 2)  # C(3,3)/C(4,3)
    assert pass_hat_k(tasks, 4) == 0.0
    assert pass_hat_k(tasks, 5) is None


def test_percentiles_interpolate() -> None:
    values = [1.0, 2.0, 3.0, 4.0, 10.0]
    assert percentile(values, 0.5) == 3.0
    assert percentile(values, 0.95) == pytest.approx(4.0 + 0.8 * 6.0)
    assert percentile([], 0.5) is None


def line(task: str, index: int, *, status: str = "completed", passed: bool | None = True,
         cost: float | None = 0.1, user_cost: float | None = 0.0, latency: float = 1.0,
         retries: dict[str, int] | None = None, reason: str = "user_stop") -> dict[str, Any]:
    return RunLine(
        key=f"m/{task}/{index}", attempt=1, plan_key="m", plan_fingerprint="a" * 64, effective_preset="p",
        task_id=task, task_pack="pack", task_sha256="b" * 64, index=index, status=status,  # type: ignore[arg-type]
        termination_reason=reason, counts_against_model=status != "aborted", passed=passed,  # type: ignore[arg-type]
        cost_usd=cost, cost_source="pricing" if cost is not None else "unknown", user_cost_usd=user_cost,
        user_cost_source="pricing" if user_cost else "none", total_tokens=30, user_total_tokens=5,
        usage={"prompt_tokens": 20, "completion_tokens": 10, "reasoning_tokens": 4, "cache_read_tokens": 8,
               "cache_write_tokens": 2},  # type: ignore[arg-type]
        user_usage={"prompt_tokens": 4, "completion_tokens": 1},  # type: ignore[arg-type]
        n_calls=3, retries=retries or {}, latency_s=latency, turns=2, dir=f"trials/m/{task}/{index}",
    ).model_dump(mode="json")


def test_the_summary_does_not_depend_on_the_order_the_trials_finished_in() -> None:
    # with worker processes runs.jsonl's order changes from run to run; a plain float sum of these eight
    # costs gives a mean of 6.0938e-05 in one order and 6.0937e-05 in another once rounded to nine places
    costs = [8.4e-05, 4.8e-05, 1.2e-05, 9.6e-05, 4.5e-05, 0.000135, 5.4e-05, 1.35e-05]
    assert len({round(sum(order) / len(order), 9) for order in (costs, costs[::-1], sorted(costs))}) > 1
    lines = [line("a", i, cost=cost) for i, cost in enumerate(costs)]
    summaries = {render_json(summarize(order)) for order in (lines, lines[::-1], sorted(lines, key=lambda x: x["cost_usd"]))}
    assert len(summaries) == 1
    [row] = summarize(lines).rows
    assert row.agent_cost.mean_usd == 6.0937e-05  # the exact mean, rounded


def test_summary_counts_costs_tokens_and_reliability() -> None:
    lines = [
        line("a", 0, latency=1.0), line("a", 1, latency=2.0, retries={"parser_error": 1}),
        line("a", 2, passed=False, latency=3.0), line("a", 3, latency=4.0, cost=None),
        line("b", 0, passed=False, latency=5.0, user_cost=0.2), line("b", 1, status="error", passed=False, latency=6.0),
        line("b", 2, latency=7.0, retries={"parser_error": 2, "api_error": 1}),
        line("b", 3, status="aborted", passed=None, reason="rate_limit", latency=8.0),
    ]
    summary = summarize(lines, unfinished_cost_usd=0.05)
    [row] = summary.rows
    assert (row.trials, row.counted, row.passed, row.failed, row.error, row.aborted, row.graded) == (8, 7, 4, 2, 1, 1, 7)
    assert row.pass_rate == pytest.approx(4 / 7)
    interval = wilson_interval(4, 7)
    assert row.pass_rate_ci95 == (pytest.approx(interval[0]), pytest.approx(interval[1]))  # type: ignore[index]
    # a: 3 of 4 pass; b: 1 of 3 graded (the error counts as not passed, the aborted one not at all)
    # k = 4 averages over a alone: b has 3 graded trials, too few to say whether 4 in a row pass
    assert row.pass_hat_k == {"1": pytest.approx((3 / 4 + 1 / 3) / 2), "2": pytest.approx((3 / 6 + 0 / 3) / 2),
                              "3": pytest.approx((1 / 4 + 0 / 1) / 2), "4": 0.0}
    assert row.pass_hat_k_tasks == {"1": 2, "2": 2, "3": 2, "4": 1}
    assert row.agent_cost is not None and row.user_cost is not None
    assert row.agent_cost.unknown_trials == 1 and row.agent_cost.total_usd == pytest.approx(0.7)
    assert row.agent_cost.mean_usd == pytest.approx(0.1)
    assert row.user_cost.total_usd == pytest.approx(0.2) and row.user_cost.unknown_trials == 0
    assert row.agent_tokens is not None and row.agent_tokens.reasoning == 32 and row.agent_tokens.cache_read == 64
    assert row.mean_agent_tokens is not None and row.mean_agent_tokens.cache_write == 2
    assert row.user_tokens is not None and row.user_tokens.prompt == 32
    assert (row.total_calls, row.mean_calls, row.mean_turns) == (24, 3, 2)
    assert row.retries == {"api_error": 1, "parser_error": 3}
    assert row.latency_p50_s == pytest.approx(4.5) and row.latency_p95_s == pytest.approx(7.65)
    assert summary.agent_cost_usd == pytest.approx(0.7) and summary.user_cost_usd == pytest.approx(0.2)
    assert summary.total_cost_usd == pytest.approx(0.95) and summary.unknown_cost_trials == 1
    data = json.loads(json.dumps(summary.model_dump(mode="json")))
    assert Summary.model_validate(data) == summary  # summary.json reads back whole


def test_an_aborted_trial_leaves_only_its_task_out_of_pass_hat_k() -> None:
    # two trials per task; c's second trial aborted: c has one graded trial, a and b two
    lines = [line("a", 0), line("a", 1, passed=False), line("b", 0), line("b", 1), line("c", 0),
             line("c", 1, status="aborted", passed=None, reason="rate_limit")]
    [row] = summarize(lines).rows
    # ^1 over a, b, c: (1/2 + 2/2 + 1/1) / 3; ^2 over a and b: (C(1,2)/C(2,2) + C(2,2)/C(2,2)) / 2
    assert row.pass_hat_k == {"1": round(2.5 / 3, 9), "2": 0.5}
    assert row.pass_hat_k_tasks == {"1": 3, "2": 2}
    assert "| ^1 83.3%, ^2 50.0% (2 of 3 tasks) |" in render_markdown(summarize(lines))
    # one trial per task: no pass^k beyond the pass rate
    assert summarize([line("a", 0), line("b", 0, passed=False)]).rows[0].pass_hat_k is None


def test_amounts_are_rounded_to_a_billionth() -> None:
    summary = summarize([line("a", 0, cost=0.1), line("a", 1, cost=0.2)])
    assert summary.total_cost_usd == 0.3  # 0.1 + 0.2 is 0.30000000000000004 unrounded
    assert summary.rows[0].agent_cost is not None and summary.rows[0].agent_cost.total_usd == 0.3


def test_all_unknown_cost_shows_unknown_in_markdown() -> None:
    summary = summarize([line("a", 0, cost=None), line("a", 1, cost=None)])
    assert summary.rows[0].agent_cost is not None and summary.rows[0].agent_cost.total_usd is None
    markdown = render_markdown(summary)
    assert "total cost unknown (2 trial(s) of unknown cost)" in markdown
    assert "| unknown |" in markdown and "$0.0000." not in markdown


def test_markdown_escapes_pipes_in_names() -> None:
    row = SummaryRow(plan_key="m|x", task_pack="p|q", trials=0, counted=0, passed=0, graded=0, pass_rate=None,
                     mean_cost_usd=None, mean_tokens=None, termination_reasons={})
    text = render_markdown(Summary(rows=[row], total_cost_usd=0.0, trials=0))
    [table_row] = [t for t in text.splitlines() if t.startswith(r"| m\|")]
    assert table_row.startswith(r"| m\|x | p\|q |")
    assert len(table_row.replace(r"\|", "").split("|")) == len(text.splitlines()[4].split("|"))


def test_old_lines_with_numbers_still_read() -> None:
    old = {"key": "m/a/0", "plan_key": "m", "plan_fingerprint": "a" * 64, "effective_preset": "p", "task_id": "a",
           "task_pack": "pack", "task_sha256": "b" * 64, "index": 0, "status": "completed",
           "termination_reason": "user_stop", "counts_against_model": True, "passed": True, "cost_usd": 0.25,
           "total_tokens": 10, "turns": 1, "dir": "trials/m/a/0"}
    RunLine.model_validate_json(json.dumps(old))
    summary = summarize([old])
    assert summary.total_cost_usd == 0.25 and summary.unknown_cost_trials == 0


def test_a_response_without_usage_is_never_priced_at_zero() -> None:
    price = PricingEntry(key="k", input=1.0, output=1.0)
    for response in ({"choices": []}, {"usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}):
        usage = UsageExtractor().extract(response)
        assert response_cost(response, usage, price) == (None, "unknown")


# --- end to end ---------------------------------------------------------------------------


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-summary-stats-0123456789")
    monkeypatch.delenv("LLM_PROXY_BASE_URL", raising=False)


def run(tmp_path: Path, task: Path, plan: Path, server: FakeProvider, *extra: str) -> Any:
    return invoke("trial", "run", str(task), "--plan", str(plan), "--out", str(tmp_path / "run"),
                  "--api-base", server.base, "--user-api-base", server.base, *extra)


def files(out: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any], str]:
    lines = [json.loads(t) for t in (out / "runs.jsonl").read_bytes().splitlines()]
    metrics = [yaml.safe_load((out / line["dir"] / "metrics.yaml").read_text()) for line in lines]
    return lines, metrics, json.loads((out / "summary.json").read_text()), (out / "summary.md").read_text()


def no_usage(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    status, payload = agent_answer(body)
    payload.pop("usage", None)
    return status, payload


def test_unknown_cost_is_null_in_every_file_and_unknown_in_the_summary(env: None, tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack")
    plan = tmp_path / "unpriced.json"
    plan.write_bytes(openai_plan().to_bytes())  # no pricing entry, and the server reports no cost
    with FakeProvider(agent) as server:
        result = run(tmp_path, task, plan, server)
    assert result.exit_code == 0, result.output
    [line], [metrics], summary, markdown = files(tmp_path / "run")
    assert line["cost_usd"] is None and line["cost_source"] == "unknown"
    assert metrics["cost_usd"] is None and metrics["cost_source"] == "unknown"
    assert all(c["cost_usd"] is None and c["cost_source"] == "unknown" for c in metrics["calls"])
    row = summary["rows"][0]
    assert row["agent_cost"] == {"total_usd": None, "mean_usd": None, "unknown_trials": 1}
    assert row["mean_cost_usd"] is None and summary["unknown_cost_trials"] == 1
    assert "total cost unknown (1 trial(s) of unknown cost)" in markdown and "| unknown |" in markdown


def test_a_provider_without_usage_is_unknown_not_priced_at_zero(env: None, tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack")
    plan = tmp_path / "priced.json"
    plan.write_bytes(openai_plan(pricing=PRICING).to_bytes())
    with FakeProvider(on_body(no_usage)) as server:
        result = run(tmp_path, task, plan, server)
    assert result.exit_code == 0, result.output
    [line], [metrics], _, _ = files(tmp_path / "run")
    assert {c["cost_source"] for c in metrics["calls"]} == {"unknown"}
    assert line["cost_usd"] is None and metrics["cost_usd"] is None


def test_agent_and_user_cost_and_tokens_are_separate(env: None, tmp_path: Path) -> None:
    def answer(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if not body.get("tools"):  # the user simulator: one opening, then stop
            said = sum(1 for m in body["messages"] if m.get("role") == "assistant")
            text = "Please add one to the counter." if not said else "Thanks. ###STOP###"
            return 200, agent_completion(text, prompt_tokens=1000, completion_tokens=100)
        return agent_answer(body)

    task = write_task(tmp_path / "pack", user=LLM_USER)
    plan = tmp_path / "priced.json"
    plan.write_bytes(openai_plan(pricing=PRICING, max_tokens=100).to_bytes())
    with FakeProvider(on_body(answer)) as server:
        result = run(tmp_path, task, plan, server, "--user-plan", str(plan), "--max-cost", "1")
    assert result.exit_code == 0, result.output
    assert "cannot be enforced" not in result.output
    [line], [metrics], summary, markdown = files(tmp_path / "run")
    agent_calls = [c for c in metrics["calls"] if c["role"] == "agent"]
    user_calls = [c for c in metrics["calls"] if c["role"] == "user"]
    assert agent_calls and user_calls
    # $1 per 1M tokens: an agent call is 25 tokens, a simulator call 1100
    assert metrics["cost_usd"] == pytest.approx(25e-6 * len(agent_calls))
    assert metrics["user_cost_usd"] == pytest.approx(1100e-6 * len(user_calls))
    assert line["cost_usd"] == metrics["cost_usd"] and line["user_cost_usd"] == metrics["user_cost_usd"]
    assert line["total_tokens"] == 25 * len(agent_calls) and line["user_total_tokens"] == 1100 * len(user_calls)
    for amount in (line["cost_usd"], line["user_cost_usd"], *[c["cost_usd"] for c in metrics["calls"]]):
        assert amount == round(amount, 9)
    row = summary["rows"][0]
    assert row["agent_cost"]["total_usd"] == line["cost_usd"]
    assert row["user_cost"]["total_usd"] == line["user_cost_usd"]
    assert summary["total_cost_usd"] == pytest.approx(line["cost_usd"] + line["user_cost_usd"])
    assert f"{line['user_cost_usd']:.6f}" in markdown


class _InterruptsTheSecond:
    """Runs trials for real; the second comes back interrupted having spent $0.5, and the run stops."""

    name = "interrupts-the-second"

    def prepare(self, specs: Any, *, concurrency: int | None = None) -> None:
        pass

    def run(self, specs: Any, *, concurrency: int, stop: threading.Event) -> Iterator[TrialRecords]:
        for n, spec in enumerate(specs):
            if stop.is_set():
                return
            records = run_trial(spec, RunContext())
            if n == 1:
                stop.set()
                records = dataclasses.replace(records, status=TrialStatus.INTERRUPTED,
                                              termination_reason=TerminationReason.INTERRUPTED, cost_usd=0.5)
            yield records


def test_interrupted_spend_counts_toward_max_cost_and_the_total(env: None, tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack")
    plan = tmp_path / "priced.json"
    plan.write_bytes(openai_plan(pricing=PRICING).to_bytes())
    out = tmp_path / "run"
    with FakeProvider(agent) as server:
        specs = build_specs(RunRequest(tasks=[task], plans=[plan], out=out, trials=3, api_base=server.base))
        first = drive(specs, RunFolder(out), _InterruptsTheSecond(), concurrency=1, max_cost=None,
                      progress=Progress(io.StringIO()))
        [line] = [json.loads(t) for t in (out / "runs.jsonl").read_bytes().splitlines()]
        assert first.spent_usd == pytest.approx(line["cost_usd"] + 0.5)
        summary = json.loads((out / "summary.json").read_text())
        assert summary["unfinished_cost_usd"] == 0.5
        assert summary["total_cost_usd"] == pytest.approx(line["cost_usd"] + 0.5)
        # the resume's budget starts from what was spent, the interrupted half-dollar included
        again = drive(specs, RunFolder(out), LocalBackend(RunContext()), concurrency=1, max_cost=0.5,
                      progress=Progress(io.StringIO()))
    assert again.budget_stopped and again.finished == 0

"""Unknown cost and unknown tokens are never 0: at the call, the trial, the row, the run, and every view of them.

A loopback OpenAI-compatible server (tests/fake_provider.py) answers each task its own way,
picked by a marker in the task's user turn: properly (priced by the plan), always 500, a 200 whose
body is cut short, a 200 without ``usage``, properly after one 500 (``flaky``: its known calls
are a known part of an unknown cost), or too late for the plan's per-attempt timeout (``slow``). The run goes through the real driver, loop and
litellm (the retry controllers' sleeps are no-ops); every file the run leaves and every reader of
them (``trial report`` as text and CSV, the view's payload, ``load_run`` and ``to_pandas``) is
checked for unknown where a provider never reported usage or cost, and for the known values
where it did.
"""

from __future__ import annotations

import csv
import io
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from capplan.executor.attempts import AttemptLog
from capplan.executor.result import Attempt
from capplan.trials.api import load_run
from capplan.trials.backends.local import LocalBackend
from capplan.trials.run_folder.costs import cost_source, known_cost, known_usage
from capplan.trials.driver import RunRequest, build_specs, drive
from capplan.trials.report.progress import Progress
from capplan.trials.run_folder.recording import MetricsSink
from capplan.trials.run_folder.folder import RunFolder
from capplan.trials.runner import RunContext
from capplan.trials.report.view.payload import build_payload
from tests.fake_provider import FakeProvider, Reply, agent_answer, error_answer, on_body
from tests.trials.helpers import openai_plan, write_task
from tests.cli_runner import invoke

PRICING = {"key": "openai/agent-model", "input": 1.0, "output": 1.0}
#: the task whose provider answers properly; every other one has calls it never reported usage or cost for
GOOD = "good"
MODES = (GOOD, "fail500", "cut", "bare", "flaky")
UNKNOWN = MODES[1:]
#: how long a "slow" answer is held back, against the 0.2 s per-attempt timeout of the run that uses it
SLOW_S = 2.0
_flaked: set[str] = set()
_lock = threading.Lock()


def responder(body: dict[str, Any]) -> tuple[int, dict[str, Any]] | Reply:
    """The answer for the task named in the conversation's first user turn."""
    first = next((m.get("content") for m in body.get("messages", []) if m.get("role") == "user"), "") or ""
    mode = first.rsplit(" ", 1)[-1]
    if mode == "fail500":
        return error_answer(500, "upstream exploded")
    if mode == "slow":  # held back well past the plan's per-attempt timeout: every attempt times out
        time.sleep(SLOW_S)
    if mode.startswith("flaky"):  # one 500 per marker, then answers
        with _lock:
            once = mode not in _flaked
            _flaked.add(mode)
        if once:
            return error_answer(500, "upstream hiccup")
    status, payload = agent_answer(body)
    if mode == "cut":
        return Reply(payload, status, cut_short=True)
    if mode == "bare":
        payload.pop("usage", None)
    return status, payload


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProvider]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_API_KEY", "sk-test-unknown-cost-0123456789")
        mp.delenv("LLM_PROXY_BASE_URL", raising=False)
        with FakeProvider(on_body(responder)) as srv:
            yield srv


def run_modes(tmp: Path, server: FakeProvider, modes: tuple[str, ...], loop: dict[str, Any] | None = None) -> Path:
    """A run of one trial per mode, all in one task pack (one summary row); returns the run folder."""
    tasks = [write_task(tmp / "pack", task_id=mode, turns=[f"please add 2 {mode}", f"thanks {mode}"])
             for mode in modes]
    plan = tmp / "priced.json"
    plan.write_bytes(openai_plan(pricing=PRICING, loop=loop).to_bytes())
    out = tmp / "run"
    specs = build_specs(RunRequest(tasks=tasks, plans=[plan], out=out, trials=1, api_base=server.base))
    drive(specs, RunFolder(out), LocalBackend(RunContext(sleep=lambda s: None)), concurrency=2, max_cost=None,
          progress=Progress(io.StringIO()))
    return out


def lines_of(out: Path) -> dict[str, dict[str, Any]]:
    return {line["task_id"]: line for line in map(json.loads, (out / "runs.jsonl").read_bytes().splitlines())}


def metrics_of(out: Path, line: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((out / line["dir"] / "metrics.yaml").read_text())
    return data


@pytest.fixture(scope="module")
def mixed(server: FakeProvider, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_modes(tmp_path_factory.mktemp("mixed"), server, MODES)


def test_calls_the_provider_never_reported_have_unknown_cost_and_tokens(mixed: Path) -> None:
    lines = lines_of(mixed)
    for mode in UNKNOWN:
        calls = metrics_of(mixed, lines[mode])["calls"]
        assert calls, mode
        unknown = [c for c in calls if c["cost_usd"] is None]
        assert unknown, mode
        for call in unknown:
            assert call["cost_source"] == "unknown" and call["usage"] is None, (mode, call)
    # a 500 and a cut-short body are attempts that failed after they were sent: each one unknown, none 0
    for mode in ("fail500", "cut"):
        calls = metrics_of(mixed, lines[mode])["calls"]
        assert all(c["status"] == "error" and c["cost_usd"] is None and c["usage"] is None for c in calls), mode
    good = metrics_of(mixed, lines[GOOD])["calls"]
    assert all(c["cost_source"] == "pricing" and c["usage"]["prompt_tokens"] == 20 for c in good)


def test_a_trial_with_a_call_of_unknown_cost_is_unknown_in_metrics_and_runs_jsonl(mixed: Path) -> None:
    lines = lines_of(mixed)
    for mode in UNKNOWN:
        line, metrics = lines[mode], metrics_of(mixed, lines[mode])
        assert line["cost_usd"] is None and line["cost_source"] == "unknown", (mode, line)
        assert metrics["cost_usd"] is None and metrics["cost_source"] == "unknown", mode
        assert line["total_tokens"] is None and line["usage"] is None and metrics["usage"] is None, mode
        # no user simulator call: the simulator's part is known to be nothing
        assert line["user_cost_usd"] == 0.0 and line["user_total_tokens"] == 0
    line, metrics = lines[GOOD], metrics_of(mixed, lines[GOOD])
    calls = len(metrics["calls"])
    assert line["cost_usd"] == pytest.approx(25e-6 * calls) and line["cost_source"] == "pricing"
    assert line["total_tokens"] == 25 * calls and metrics["usage"]["prompt_tokens"] == 20 * calls
    # a record of known cost has no known-part field (its bytes are what they always were)
    assert "cost_known_usd" not in line and "cost_known_usd" not in metrics


def test_an_unknown_trial_cost_keeps_its_known_part(mixed: Path) -> None:
    lines = lines_of(mixed)
    flaky, metrics = lines["flaky"], metrics_of(mixed, lines["flaky"])
    answered = [c for c in metrics["calls"] if c["status"] == "ok"]
    assert answered and len(answered) < len(metrics["calls"])  # one 500, then the answers
    assert flaky["cost_usd"] is None and flaky["cost_known_usd"] == pytest.approx(25e-6 * len(answered))
    assert metrics["cost_known_usd"] == flaky["cost_known_usd"]
    for mode in ("fail500", "cut"):  # nothing known was spent: the known part is 0, the cost still unknown
        assert lines[mode]["cost_usd"] is None and lines[mode]["cost_known_usd"] == 0.0


def known_dollars(out: Path) -> float:
    """Every dollar the run's lines know was spent: known costs, and the known part of unknown ones."""
    return sum(float(line["cost_usd"] if line["cost_usd"] is not None else line["cost_known_usd"])
               for line in lines_of(out).values())


def test_the_summary_totals_known_costs_as_a_lower_bound_and_counts_the_unknown(mixed: Path) -> None:
    good, flaky = lines_of(mixed)[GOOD], lines_of(mixed)["flaky"]
    spent = known_dollars(mixed)
    assert spent == pytest.approx(good["cost_usd"] + flaky["cost_known_usd"]) and flaky["cost_known_usd"] > 0
    summary = json.loads((mixed / "summary.json").read_text())
    assert summary["total_cost_usd"] == pytest.approx(spent) and summary["unknown_cost_trials"] == 4
    assert summary["agent_cost_usd"] == pytest.approx(spent)
    [row] = summary["rows"]
    assert row["agent_cost"] == {"total_usd": pytest.approx(spent), "mean_usd": good["cost_usd"], "unknown_trials": 4}
    assert row["mean_cost_usd"] == good["cost_usd"]  # the mean over the one known trial, not over five
    assert row["mean_tokens"] == good["total_tokens"] and row["unknown_token_trials"] == 4
    assert row["agent_tokens"]["prompt"] == good["usage"]["prompt_tokens"]
    markdown = (mixed / "summary.md").read_text()
    assert f"total cost ≥ ${spent:.4f} (+ 4 unknown)" in markdown and f"agent ≥ ${spent:.4f} (+ 4 unknown)" in markdown
    assert f"| {good['total_tokens']} (4 unknown) |" in markdown


def test_trial_report_text_and_csv_show_unknown_never_zero(mixed: Path) -> None:
    text = invoke("trial", "report", str(mixed))
    assert text.exit_code == 0, text.output
    assert f"total cost ≥ ${known_dollars(mixed):.4f} (+ 4 unknown)" in text.output
    table = invoke("trial", "report", str(mixed), "--format", "csv")
    assert table.exit_code == 0, table.output
    rows = {r["task_id"]: r for r in csv.DictReader(io.StringIO(table.output))}
    for mode in UNKNOWN:
        # CSV's null is the empty cell: never 0 for a value nobody knows
        assert rows[mode]["cost_usd"] == "" and rows[mode]["total_tokens"] == "", rows[mode]
    assert float(rows[GOOD]["cost_usd"]) > 0 and int(rows[GOOD]["total_tokens"]) > 0
    # the known part of an unknown cost has its own column (empty where the cost is known)
    assert float(rows["flaky"]["cost_known_usd"]) == pytest.approx(lines_of(mixed)["flaky"]["cost_known_usd"])
    assert rows[GOOD]["cost_known_usd"] == ""


def test_the_view_payload_and_the_python_api_hold_null(mixed: Path) -> None:
    run = load_run(mixed)
    by_task = {t.task_id: t for t in run.trials}
    for mode in UNKNOWN:
        assert by_task[mode].cost_usd is None and by_task[mode].total_tokens is None
    assert by_task[GOOD].cost_usd is not None and by_task[GOOD].total_tokens
    assert by_task["flaky"].cost_known_usd == lines_of(mixed)["flaky"]["cost_known_usd"]
    frame = run.to_pandas().set_index("task_id")
    assert frame.loc[list(UNKNOWN), "cost_usd"].isna().all()
    assert frame.loc[list(UNKNOWN), "total_tokens"].isna().all()
    assert run.summary().total_cost_usd == pytest.approx(known_dollars(mixed))
    payload = build_payload([run], generated_by="test")
    fields = payload.index["trial_fields"]
    cost, tokens, key = fields.index("cost_usd"), fields.index("tokens"), fields.index("key")
    trials = {row[key].split("/")[1]: row for row in payload.index["trials"]}
    for mode in UNKNOWN:
        assert trials[mode][cost] is None and trials[mode][tokens] is None
    assert trials[GOOD][cost] == by_task[GOOD].cost_usd
    spend = payload.index["runs"][0]["spend"]
    assert spend["total_usd"] == pytest.approx(known_dollars(mixed)) and spend["unknown_cost_trials"] == 4


def test_a_run_whose_every_cost_is_unknown_totals_null_not_zero(server: FakeProvider, tmp_path: Path) -> None:
    out = run_modes(tmp_path, server, ("fail500", "cut"))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["total_cost_usd"] is None and summary["agent_cost_usd"] is None
    assert summary["unknown_cost_trials"] == 2
    [row] = summary["rows"]
    assert row["mean_cost_usd"] is None and row["mean_tokens"] is None and row["unknown_token_trials"] == 2
    markdown = (out / "summary.md").read_text()
    assert "total cost unknown (2 trial(s) of unknown cost) (agent unknown" in markdown
    assert "$0.0000 (" not in markdown and "| unknown |" in markdown


def test_a_trial_whose_calls_timed_out_is_unknown_not_zero(server: FakeProvider, tmp_path: Path) -> None:
    out = run_modes(tmp_path, server, ("slow",), loop={"api_call_timeout_s": 0.2})
    [line] = lines_of(out).values()
    calls = metrics_of(out, line)["calls"]
    assert calls and all(c["error_class"] == "timeout" and c["cost_usd"] is None and c["usage"] is None
                         for c in calls), calls
    assert line["cost_usd"] is None and line["cost_known_usd"] == 0.0 and line["total_tokens"] is None
    summary = json.loads((out / "summary.json").read_text())
    assert summary["total_cost_usd"] is None and summary["unknown_cost_trials"] == 1


def test_the_budget_stop_says_its_spend_is_a_lower_bound(server: FakeProvider, tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack", task_id="flaky-budget", turns=["please add 2 flaky-budget", "thanks"])
    plan = tmp_path / "priced.json"
    plan.write_bytes(openai_plan(pricing=PRICING, max_tokens=64).to_bytes())  # --max-cost bounds only a capped plan
    result = invoke("trial", "run", str(task), "--plan", str(plan), "--out", str(tmp_path / "run"),
                    "--trials", "2", "--concurrency", "1", "--max-cost", "0.000001",
                    "--api-base", server.base)
    assert result.exit_code == 1, result.output
    # the first call (a 500) committed the budget: the trial stops before its next send, its spend unknown
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    [stopped] = manifest["interrupted_spend"]
    assert stopped["cost_usd"] is None
    assert "budget stop: ≥ $0.0000 spent (+ 1 trial(s) of unknown cost) of --max-cost" in result.output


# --- the rule, call by call ----------------------------------------------------------------


def _sent_and_failed() -> Exception:
    exc = RuntimeError("503 from upstream")
    log = AttemptLog(clock=lambda: 0.0, sleep=lambda s: None)
    log.attempts.append(Attempt(status="error", wait_s=0.0, latency_s=0.5, error_class="server_error"))
    log.attach(exc)
    return exc


def test_a_call_that_raised_before_anything_was_sent_is_known_to_cost_nothing() -> None:
    sink = MetricsSink(log=None)
    sink.failed("agent", 0, RuntimeError("the request could not be built"))  # no attempt: nothing went out
    [call] = sink.calls
    assert (call.cost_usd, call.cost_source, call.usage is not None) == (0.0, "none", True)
    assert known_cost(sink.calls, ("agent",)) == 0.0 and cost_source(sink.calls, ("agent",)) == "none"
    assert known_usage(sink.calls, ("agent",)) is not None


def test_an_attempt_that_was_sent_and_failed_makes_the_total_unknown() -> None:
    sink = MetricsSink(log=None)
    sink.failed("agent", 0, _sent_and_failed())
    [call] = sink.calls
    assert call.cost_usd is None and call.cost_source == "unknown" and call.usage is None
    assert known_cost(sink.calls, ("agent",)) is None and cost_source(sink.calls, ("agent",)) == "unknown"
    assert known_usage(sink.calls, ("agent",)) is None and sink.usage("agent") is None
    # the user simulator made no call: its part stays known
    assert known_cost(sink.calls, ("user",)) == 0.0 and known_usage(sink.calls, ("user",)) is not None

"""calls.jsonl: a trial killed in flight (SIGKILL) leaves its paid calls, and report, resume, run.json and
--max-cost count them.

The agent is a loopback OpenAI-compatible server in this process that answers the first calls and
holds the next one open; capplan runs in a child process through real litellm, is killed once the
answered call is journalled, and the folder is then read back by the real commands. Every wait is
bounded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fake_provider import FakeProvider, agent, agent_answer, on_body
from tests.trials.helpers import openai_plan, write_task
from tests.cli_runner import invoke

#: $1 per 1M tokens each way; every answer is 20 + 5 tokens, so a call costs $0.000025
PRICING = {"key": "openai/agent-model", "input": 1.0, "output": 1.0}
CALL_USD = 0.000025
#: the plans' output cap: --max-cost needs one to bound a call
MAX_TOKENS = 5


class HoldAfter:
    """Answers ``answered`` calls with the default responder, then holds every further call until released."""

    def __init__(self, answered: int) -> None:
        self.answered = answered
        self.seen = 0
        self.release = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.seen += 1
            hold = self.seen > self.answered
        if hold:
            self.release.wait(timeout=60)  # bounded: teardown releases it
        return agent_answer(body)


def journal(out: Path) -> list[dict[str, Any]]:
    path = out / "calls.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_bytes().splitlines(keepends=True) if line.endswith(b"\n")]


def child_env() -> dict[str, str]:
    env = {**os.environ, "OPENAI_API_KEY": "sk-journal-test-key", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("LLM_PROXY_BASE_URL", None)
    return env


def run_args(task: Path, plan: Path, out: Path, base: str, *extra: str) -> list[str]:
    return ["trial", "run", str(task), "--plan", str(plan), "--out", str(out), "--trials", "2",
            "--concurrency", "1", "--api-base", base, *extra]


@pytest.fixture
def killed_run(tmp_path: Path) -> Any:
    """A run of two trials killed while trial 1 waits on its second call; yields (task, plan, out, server)."""
    task = write_task(tmp_path / "pack", turns=["add one"])  # a trial is two calls: a tool call, then an answer
    plan = tmp_path / "agent.json"
    plan.write_bytes(openai_plan(pricing=PRICING, max_tokens=MAX_TOKENS).to_bytes())
    out = tmp_path / "run"
    hold = HoldAfter(answered=3)  # trial 0's two calls and trial 1's first
    with FakeProvider(on_body(hold)) as srv:
        proc = subprocess.Popen([sys.executable, "-c", "from capplan.cli import main; main()",
                                 *run_args(task, plan, out, srv.base)], env=child_env(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 120
            while not (len([e for e in journal(out) if e["kind"] == "call"]) >= 3 and hold.seen >= 4):
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else "child exited"
                assert time.monotonic() < deadline, "the child journalled no call"
                time.sleep(0.05)
        finally:
            proc.kill()
            proc.wait(timeout=30)
            hold.release.set()
        srv.responder = agent
        yield task, plan, out, srv


def test_the_killed_trials_calls_are_journalled_with_their_record_fields(killed_run: Any) -> None:
    _, _, out, _ = killed_run
    entries = journal(out)
    run_id = json.loads((out / "run.json").read_text())["run_id"]
    calls = [e for e in entries if e["kind"] == "call"]
    assert [(e["key"], e["attempt"], e["call"]["role"], e["call"]["status"]) for e in calls] == [
        ("agent/count/0", 1, "agent", "ok"), ("agent/count/0", 1, "agent", "ok"), ("agent/count/1", 1, "agent", "ok")]
    assert all(e["run_id"] == run_id for e in calls)
    died = calls[2]
    assert died["call"]["cost_usd"] == pytest.approx(CALL_USD) and died["call"]["cost_source"] == "pricing"
    assert died["call"]["usage"]["prompt_tokens"] == 20 and died["call"]["turn"] == 0
    # trial 0 was closed before its runs.jsonl line; trial 1 never was
    ends = [e for e in entries if e["kind"] == "end"]
    assert [(e["key"], e["as"], e["attempt"]) for e in ends] == [("agent/count/0", "written", 1)]
    assert "sk-journal-test-key" not in (out / "calls.jsonl").read_text()


def test_report_counts_the_spend_of_the_trial_that_died(killed_run: Any) -> None:
    _, _, out, _ = killed_run
    result = invoke("trial", "report", str(out))
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["trials"] == 1
    assert summary["total_cost_usd"] == pytest.approx(3 * CALL_USD)  # trial 0's two calls + the died call
    markdown = (out / "summary.md").read_text()
    # the held call was sent and never answered: its role's total is unknown, its known dollars still count
    assert ("1 trial attempt(s) that died in flight $0.0000 (agent unknown, user $0.0000; 1 send(s) with no "
            "outcome recorded (sent; outcome and cost unknown) not in it)") in markdown


def test_resume_records_the_died_spend_and_max_cost_counts_it(killed_run: Any,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    task, plan, out, srv = killed_run
    monkeypatch.setenv("OPENAI_API_KEY", "sk-journal-test-key")
    monkeypatch.delenv("LLM_PROXY_BASE_URL", raising=False)
    srv.reset()
    # trial 0 cost 2 calls; only with the died call counted does the spend reach the budget of 2.5 calls
    budget = f"{2.5 * CALL_USD:.9f}"
    result = invoke(*run_args(task, plan, out, srv.base, "--max-cost", budget))
    assert result.exit_code == 1, result.output
    assert "budget stop" in result.output
    assert srv.bodies() == []  # trial 1 was not started again
    manifest = json.loads((out / "run.json").read_text())
    [died] = manifest["died_in_flight"]
    assert (died["key"], died["attempt"], died["calls"]) == ("agent/count/1", 1, 1)
    # its held second call was sent and never answered: the agent's total is unknown, the known dollar counts
    assert died["agent_cost_usd"] is None and died["user_cost_usd"] == 0.0 and died["unanswered_sends"] == 1
    assert died["unknown_cost_calls"] == 0 and manifest["died_in_flight_usd"] == pytest.approx(CALL_USD)

    # without the budget the trial runs again; the money its first execution spent stays in the total
    result = invoke(*run_args(task, plan, out, srv.base))
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["trials"] == 2
    assert summary["total_cost_usd"] == pytest.approx(5 * CALL_USD)
    manifest = json.loads((out / "run.json").read_text())
    assert [d["key"] for d in manifest["died_in_flight"]] == ["agent/count/1"]  # still one: the rerun was written

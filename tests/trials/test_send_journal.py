"""Every send is journalled before it goes out, every journalled dollar is counted once after a kill, and
--max-cost bounds what a concurrent run spends.

capplan runs in a child process (real litellm) against a loopback OpenAI-compatible server in this
process that counts requests and can hold them open, so a SIGKILL lands while requests are in flight;
the kill between a trial's journal end line and its runs.jsonl line is made by the child itself (its
runs.jsonl append is wrapped to SIGKILL the process first): no sleeps decide anything, every wait is
bounded.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fake_provider import FakeProvider, agent, on_body
from tests.trials.helpers import openai_plan, write_task
from tests.trials.test_call_journal import CALL_USD, MAX_TOKENS, PRICING, HoldAfter, child_env, journal
from tests.cli_runner import invoke

#: the child for a kill between the two files: SIGKILLs itself at its Nth runs.jsonl append (argv[1])
KILL_AT_RUN_LINE = """
import os, signal, sys
from capplan.trials.run_folder.folder import RunFolder
appended = RunFolder._append_run_line
at, count = int(sys.argv[1]), [0]
def append(self, data):
    count[0] += 1
    if count[0] == at:
        os.kill(os.getpid(), signal.SIGKILL)
    return appended(self, data)
RunFolder._append_run_line = append
sys.argv = ["capplan", *sys.argv[2:]]
from capplan.cli import main
main()
"""


def run_args(task: Path, plan: Path, out: Path, base: str, *extra: str) -> list[str]:
    return ["trial", "run", str(task), "--plan", str(plan), "--out", str(out), "--api-base", base, *extra]


def kinds(out: Path, kind: str) -> list[dict[str, Any]]:
    return [e for e in journal(out) if e["kind"] == kind]


def journalled_usd(out: Path) -> float:
    return sum(e["call"]["cost_usd"] or 0.0 for e in kinds(out, "call"))


def resume(args: list[str], monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-journal-test-key")
    monkeypatch.delenv("LLM_PROXY_BASE_URL", raising=False)
    return invoke(*args)


@pytest.fixture
def priced(tmp_path: Path) -> tuple[Path, Path]:
    task = write_task(tmp_path / "pack", turns=["add one"])  # a trial is two calls: a tool call, then an answer
    plan = tmp_path / "agent.json"
    plan.write_bytes(openai_plan(pricing=PRICING, max_tokens=MAX_TOKENS).to_bytes())
    return task, plan


def test_requests_in_flight_at_a_kill_are_journalled_sends_and_resume_counts_every_dollar_once(
        priced: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    task, plan = priced
    out = tmp_path / "run"
    args = run_args(task, plan, out, "", "--trials", "4", "--concurrency", "4")
    hold = HoldAfter(answered=3)  # 3 first calls answered; every other call is held open
    with FakeProvider(on_body(hold)) as srv:
        args[args.index("--api-base") + 1] = srv.base
        proc = subprocess.Popen([sys.executable, "-c", "from capplan.cli import main; main()", *args],
                                env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            # 4 trials: 3 answered first calls, then 4 calls in flight (3 second calls, 1 held first call)
            deadline = time.monotonic() + 120
            while hold.seen < 7:
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else "child exited"
                assert time.monotonic() < deadline, f"the provider saw {hold.seen} requests, not 7"
                time.sleep(0.05)
        finally:
            proc.kill()
            proc.wait(timeout=30)
            hold.release.set()
        served = len(srv.bodies())
        assert served == 7
        sends, calls = kinds(out, "send"), kinds(out, "call")
        assert len(sends) == served  # every request the provider saw was journalled before it was sent
        assert len(calls) == 3
        answered = {c["request_id"] for c in calls}
        assert answered < {s["send"]["request_id"] for s in sends}
        assert {(s["send"]["role"], s["send"]["attempt"]) for s in sends} == {("agent", 1)}
        assert all(s["send"]["max_usd"] is None for s in sends)  # no budget: nothing reserved
        assert "sk-journal-test-key" not in (out / "calls.jsonl").read_text()

        srv.responder = agent
        result = resume(args, monkeypatch)
        assert result.exit_code == 0, result.output
        assert len(srv.bodies()) == len(kinds(out, "send")) == 7 + 8  # the rerun's sends journalled too
    manifest = json.loads((out / "run.json").read_text())
    died = manifest["died_in_flight"]
    assert sorted(d["key"] for d in died) == [f"agent/count/{i}" for i in range(4)]
    assert sum(d["unanswered_sends"] for d in died) == 4  # sent, outcome unknown, cost unknown
    assert all(d["agent_cost_usd"] is None for d in died)  # a role with an unanswered send has no known total
    assert manifest["died_in_flight_usd"] == pytest.approx(3 * CALL_USD)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["trials"] == 4
    assert summary["total_cost_usd"] == pytest.approx(journalled_usd(out)) == pytest.approx(11 * CALL_USD)
    assert "4 send(s) with no outcome recorded (sent; outcome and cost unknown)" in (out / "summary.md").read_text()


@pytest.mark.parametrize("kill_at", [1, 2])
def test_a_kill_between_the_journal_end_line_and_the_runs_line_loses_no_dollar(
        priced: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kill_at: int) -> None:
    task, plan = priced
    out = tmp_path / "run"
    with FakeProvider(agent) as srv:
        args = run_args(task, plan, out, srv.base, "--trials", "2", "--concurrency", "1")
        # the trials up to the killed one are answered; the next one, which the backend may start while the
        # killed one's line is being written, is held at its first call however slow the writer is
        srv.hold_after(2 * kill_at)
        child = subprocess.run([sys.executable, "-c", KILL_AT_RUN_LINE, str(kill_at), *args], env=child_env(),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=300)
        srv.release()
        assert child.returncode == -9, child.stderr.decode()
        entries = journal(out)
        killed = f"agent/count/{kill_at - 1}"
        assert (entries[-1]["kind"], entries[-1]["as"], entries[-1]["key"]) == ("end", "written", killed)
        runs = out / "runs.jsonl"
        assert (len(runs.read_bytes().splitlines()) if runs.exists() else 0) == kill_at - 1
        # the next trial may have started while this one's line was being written: its first send is
        # journalled before its bytes go, so the provider may or may not have it yet; never the other way
        sends = len(kinds(out, "send"))
        assert 2 * kill_at <= sends <= 2 * kill_at + 1 and len(srv.bodies()) <= sends

        result = resume(args, monkeypatch)
        assert result.exit_code == 0, result.output
        assert len(srv.bodies()) <= len(kinds(out, "send")) <= len(srv.bodies()) + 1
    manifest = json.loads((out / "run.json").read_text())
    died, *started = manifest["died_in_flight"]
    assert (died["key"], died["attempt"], died["calls"], died["unanswered_sends"]) == (killed, 1, 2, 0)
    assert [(d["calls"], d["unanswered_sends"]) for d in started] == [(0, 1)] * (sends - 2 * kill_at)
    assert died["agent_cost_usd"] == pytest.approx(2 * CALL_USD)
    rerun = [json.loads(line) for line in (out / "runs.jsonl").read_bytes().splitlines()
             if json.loads(line)["key"] == killed]
    assert [line["attempt"] for line in rerun] == [2]  # numbered past the execution that died
    summary = json.loads((out / "summary.json").read_text())
    assert summary["trials"] == 2
    # trial 0, trial 1 and the killed execution's two calls: each journalled dollar once
    assert summary["total_cost_usd"] == pytest.approx(journalled_usd(out)) == pytest.approx(6 * CALL_USD)


#: output only is priced, and every answer is MAX_TOKENS tokens: a call's worst case is exactly its cost
OUTPUT_PRICED = {"key": "openai/agent-model", "input": 0.0, "output": 100.0}
CALL_WORST_USD = MAX_TOKENS * 100.0 / 1e6


def test_max_cost_ends_at_most_one_call_per_running_trial_past_the_budget(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    task = write_task(tmp_path / "pack", turns=["add one", "add two", "add three"])  # six calls a trial
    plan = tmp_path / "agent.json"
    plan.write_bytes(openai_plan(pricing=OUTPUT_PRICED, max_tokens=MAX_TOKENS).to_bytes())
    out = tmp_path / "run"
    budget, running = 2 * CALL_WORST_USD, 4
    with FakeProvider(agent) as srv:
        args = run_args(task, plan, out, srv.base, "--trials", "8", "--concurrency", str(running),
                        "--max-cost", f"{budget:.9f}")
        result = resume(args, monkeypatch)
        assert result.exit_code == 1, result.output
        assert "budget stop" in result.output
        billed = len(srv.bodies()) * CALL_WORST_USD
        # before: the four running trials finished all their calls ($0.012 for a $0.001 budget)
        assert billed <= budget + running * CALL_WORST_USD + 1e-12
        sends = kinds(out, "send")
        assert len(sends) == len(srv.bodies())
        assert all(s["send"]["max_usd"] == pytest.approx(CALL_WORST_USD) for s in sends)
        summary = json.loads((out / "summary.json").read_text())
        assert summary["total_cost_usd"] == pytest.approx(billed) == pytest.approx(journalled_usd(out))

        # the resume starts at or past the budget: nothing is sent
        before = len(srv.bodies())
        again = resume(args, monkeypatch)
        assert again.exit_code == 1, again.output
        assert "budget stop" in again.output and len(srv.bodies()) == before


@pytest.mark.parametrize("plan_kwargs, says", [
    ({"max_tokens": MAX_TOKENS}, "it has no pricing entry"),
    ({"pricing": PRICING}, "it has no default output cap (request_defaults.max_tokens)"),
])
def test_max_cost_is_refused_for_a_plan_it_cannot_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        plan_kwargs: dict[str, Any], says: str) -> None:
    task = write_task(tmp_path / "pack")
    plan = tmp_path / "agent.json"
    plan.write_bytes(openai_plan(**plan_kwargs).to_bytes())
    out = tmp_path / "run"
    result = resume(run_args(task, plan, out, "http://127.0.0.1:9/v1", "--max-cost", "1"), monkeypatch)
    assert result.exit_code == 2, result.output
    assert f"{plan}:1:1: error[max-cost-unbounded]: --max-cost cannot bound plan 'agent': {says}" in result.output
    assert "hint: " in result.output and "or run without --max-cost" in result.output
    assert "Traceback" not in result.output and not out.exists()


def test_max_cost_is_refused_on_the_ray_backend(tmp_path: Path) -> None:
    mock = Path(__file__).resolve().parents[2] / "golden" / "plans" / "mock-echo.json"
    out = tmp_path / "run"
    result = invoke("trial", "run", str(write_task(tmp_path / "pack")), "--plan", str(mock),
                    "--out", str(out), "--backend", "ray", "--max-cost", "1")
    assert result.exit_code == 2, result.output
    assert "--max-cost is enforced on the local backend only" in result.output and not out.exists()

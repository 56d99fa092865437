"""The real command in a subprocess: SIGKILL mid-run then resume, Ctrl-C then resume, the budget stop.

The agent is the loopback server in this process (with provider-like latency); capplan runs
in a child process through real litellm. Every wait is bounded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.fake_provider import FakeProvider, agent
from tests.trials.helpers import openai_plan, write_task
from tests.trials.interrupts import interrupt, traced_child
from tests.cli_runner import invoke

TRIALS = 10
#: requests answered before the server holds the rest: a trial makes four calls (two turns of a tool
#: call and an answer), so with two trials running at most 20 // 4 = 5 trials can finish and at least
#: (20 - 2 * 3) // 4 = 3 do; the run can never end on its own before the test has stopped it
ANSWERED = 20


@pytest.fixture(scope="module")
def slow_server() -> Iterator[FakeProvider]:
    with FakeProvider(agent, delay_s=0.15) as srv:
        yield srv


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path]:
    task = write_task(tmp_path / "pack", turns=["add one", "thanks"])
    plan = tmp_path / "agent.json"
    plan.write_bytes(openai_plan().to_bytes())
    return task, plan


def command(task: Path, plan: Path, out: Path, base: str) -> list[str]:
    return [sys.executable, "-c", "from capplan.cli import main; main()", "trial", "run", str(task), "--plan", str(plan),
            "--out", str(out), "--trials", str(TRIALS), "--concurrency", "2", "--api-base", base]


def child_env() -> dict[str, str]:
    env = {**os.environ, "OPENAI_API_KEY": "sk-child-test-key", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("LLM_PROXY_BASE_URL", None)
    return env


def lines(out: Path) -> list[dict[str, object]]:
    path = out / "runs.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_bytes().splitlines(keepends=True) if line.endswith(b"\n")]


def wait_for_lines(out: Path, n: int, proc: subprocess.Popen[bytes], timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while len(lines(out)) < n:
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else "child exited"
        assert time.monotonic() < deadline, "no progress from the child"
        time.sleep(0.05)


def assert_complete(out: Path) -> None:
    found = lines(out)
    keys = [str(line["key"]) for line in found]
    assert len(keys) == len(set(keys)) == TRIALS, keys
    for line in found:
        folder = out / str(line["dir"])
        assert yaml.safe_load((folder / "metrics.yaml").read_text())["trial"]["key"] == line["key"]
        assert yaml.safe_load((folder / "trajectory.yaml").read_text())["termination"]["reason"] == "user_stop"
    assert not list(out.rglob("*.tmp"))


def test_sigkill_mid_run_loses_and_duplicates_nothing(slow_server: FakeProvider, setup: tuple[Path, Path],
                                                      tmp_path: Path) -> None:
    task, plan = setup
    out = tmp_path / "run"
    slow_server.hold_after(ANSWERED)
    try:
        proc = subprocess.Popen(command(task, plan, out, slow_server.base), env=child_env(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            wait_for_lines(out, 3, proc)
        finally:
            proc.kill()
            proc.wait(timeout=30)
    finally:
        slow_server.release()
    before = (out / "runs.jsonl").read_bytes()
    assert 3 <= len(lines(out)) <= ANSWERED // 4
    done = subprocess.run(command(task, plan, out, slow_server.base), env=child_env(), capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    assert b"resuming:" in done.stderr
    finished_before = before[: before.rfind(b"\n") + 1]
    assert (out / "runs.jsonl").read_bytes().startswith(finished_before)  # what finished is kept as it was
    assert_complete(out)


def test_ctrl_c_marks_the_rest_interrupted_and_a_rerun_finishes_them(slow_server: FakeProvider,
                                                                      setup: tuple[Path, Path], tmp_path: Path) -> None:
    task, plan = setup
    out = tmp_path / "run"
    slow_server.hold_after(ANSWERED)
    try:
        with traced_child(command(task, plan, out, slow_server.base)[3:], "from capplan.cli import main; main()",
                          child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as (proc, handled):
            wait_for_lines(out, 2, proc)
            interrupt(proc, handled)  # the run stops taking trials before the held calls are answered
            slow_server.release()
            _, err = proc.communicate(timeout=120)
    finally:
        slow_server.release()
    assert proc.returncode == 130, err.decode()
    assert b"run the same command again to resume" in err
    manifest = json.loads((out / "run.json").read_text())
    finished = {str(line["key"]) for line in lines(out)}
    assert manifest["interrupted"] and not set(manifest["interrupted"]) & finished
    assert len(finished) + len(manifest["interrupted"]) == TRIALS
    done = subprocess.run(command(task, plan, out, slow_server.base), env=child_env(), capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads((out / "run.json").read_text())["interrupted"] == []
    assert_complete(out)


def test_max_cost_stops_starting_trials(setup: tuple[Path, Path], tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    task, _ = setup
    plan = tmp_path / "priced.json"
    # $1 per 1M tokens each way: a trial's four calls of 25 tokens (two tool turns, two answers) cost $0.0001
    plan.write_bytes(openai_plan(pricing={"key": "openai/agent-model", "input": 1.0, "output": 1.0},
                                 max_tokens=5).to_bytes())
    monkeypatch.setenv("OPENAI_API_KEY", "sk-budget-test-key")
    monkeypatch.delenv("LLM_PROXY_BASE_URL", raising=False)
    out = tmp_path / "run"
    with FakeProvider(agent) as srv:
        result = invoke("trial", "run", str(task), "--plan", str(plan), "--out", str(out),
                        "--trials", "8", "--concurrency", "1", "--max-cost", "0.00025",
                        "--api-base", srv.base)
    assert result.exit_code == 1, result.output
    assert "budget stop" in result.output
    found = lines(out)
    # every call is checked before it is sent: trial 2's third call would start at $0.00025 spent, so it is
    # not sent and trial 2 stops there (interrupted; it reruns on resume); nothing starts after that
    assert len(found) == 2
    assert all(line["cost_usd"] == pytest.approx(0.0001) for line in found)
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["interrupted"] == ["agent/count/2"]
    assert manifest["interrupted_spend_usd"] == pytest.approx(0.00005)
    assert json.loads((out / "summary.json").read_text())["total_cost_usd"] == pytest.approx(0.00025)

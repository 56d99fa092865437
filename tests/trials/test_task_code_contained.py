"""Task code cannot take a run down: ``capplan trial run`` in a subprocess against misbehaving task code.

Tools raising SystemExit, KeyboardInterrupt or GeneratorExit give the agent an ``Error:`` result;
a constructor or grader raising SystemExit is that trial's recorded error; the other trials run;
a resume afterwards skips them all. A hung tool ends at its timeout with its own error class and
the trial goes on; Ctrl-C ends a run whose tool hangs at once (a second one never waits either). The agent is a loopback server in this process;
every wait is bounded.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fake_provider import FakeProvider, agent, on_body
from tests.trials.desk_pack import told_responder, write_desk_task
from tests.trials.helpers import openai_plan
from tests.trials.interrupts import interrupt, traced_child
from tests.trials.test_resume_process import child_env


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProvider]:
    with FakeProvider(on_body(told_responder)) as srv:
        yield srv


ENTRY = "from capplan.cli import run; run()"


def command(tasks: Path, plan: Path, out: Path, base: str) -> list[str]:
    return [sys.executable, "-c", ENTRY, "trial", "run", str(tasks), "--plan", str(plan),
            "--out", str(out), "--concurrency", "2", "--api-base", base]


def plan_file(tmp_path: Path) -> Path:
    plan = tmp_path / "agent.json"
    plan.write_bytes(openai_plan().to_bytes())
    return plan


def lines(out: Path) -> dict[str, dict[str, Any]]:
    found = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    return {str(line["task_id"]): line for line in found}


def trajectory(out: Path, line: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((out / str(line["dir"]) / "trajectory.yaml").read_text())
    return data


def test_what_task_code_raises_is_recorded_and_the_run_goes_on(server: FakeProvider, tmp_path: Path) -> None:
    pack, flags = tmp_path / "pack", tmp_path / "flags"
    flags.mkdir()
    for name in ("leave", "interrupt", "close_gen", "mixed"):
        write_desk_task(pack, f"t-{name}", [f"call {name}", "call add", "thanks"], flags=flags)
    write_desk_task(pack, "t-broken", ["call add"], flags=flags, env_class="BrokenDesk")
    write_desk_task(pack, "t-grader", ["call add"], flags=flags,
                    extra="grader:\n  function: desk_env:grader_that_exits\n")
    write_desk_task(pack, "t-odd-grader", ["call add"], flags=flags,
                    extra="grader:\n  function: desk_env:grader_with_odd_detail\n")
    write_desk_task(pack, "t-hang", ["call hang", "call add", "thanks"], flags=flags, extra="tool_timeout_s: 0.5\n")
    out, plan = tmp_path / "run", plan_file(tmp_path)
    done = subprocess.run(command(pack, plan, out, server.base), env=child_env(), capture_output=True, timeout=300)
    err = done.stderr.decode()
    assert done.returncode == 1, err  # three trials ended error: the run says so, after running every trial
    assert "Traceback" not in err
    found = lines(out)
    assert sorted(found) == ["t-broken", "t-close_gen", "t-grader", "t-hang", "t-interrupt", "t-leave", "t-mixed",
                             "t-odd-grader"]

    expected = {"leave": "Error: SystemExit: 3", "interrupt": "Error: KeyboardInterrupt", "close_gen": "Error: GeneratorExit"}
    for name, text in expected.items():
        line = found[f"t-{name}"]
        assert line["status"] == "completed", line
        data = trajectory(out, line)
        first, second = data["tool_calls"]
        assert (first["name"], first["output"], first["error"]) == (name, text, "exception")
        assert (second["name"], second["output"], second["error"]) == ("add", '{"count": 1}', None)
        assert data["final_state"]["count"] == 1  # the environment lived on after the failure

    mixed = trajectory(out, found["t-mixed"])["tool_calls"][0]
    assert mixed["error"] is None
    assert json.loads(mixed["output"]) == {"1": "one", "two": 2, "(3, 4)": [5]}

    broken = found["t-broken"]
    assert (broken["status"], broken["turns"]) == ("error", 0)
    detail = trajectory(out, broken)["termination"]["detail"]
    assert "desk_env:BrokenDesk" in detail and "SystemExit" in detail and "refuses to start" in detail

    graded = found["t-grader"]
    assert graded["status"] == "error" and graded["passed"] is False
    termination = trajectory(out, graded)["termination"]
    assert termination["reason"] == "error" and "grader" in termination["detail"] and "SystemExit" in termination["detail"]
    odd = found["t-odd-grader"]
    assert odd["status"] == "error" and odd["passed"] is False
    assert "not JSON data" in trajectory(out, odd)["termination"]["detail"]

    hang = found["t-hang"]
    assert hang["status"] == "completed"
    hung, added = trajectory(out, hang)["tool_calls"]
    assert (hung["output"], hung["error"], hung["running_at_end"]) == ("Error: tool timed out after 0.5 s", "timeout", True)
    assert (added["output"], added["error"]) == ('{"count": 1}', None)  # later calls run on the same environment
    assert (flags / "hanging").exists()
    assert not list(pack.rglob("__pycache__"))

    before = (out / "runs.jsonl").read_bytes()
    again = subprocess.run(command(pack, plan, out, server.base), env=child_env(), capture_output=True, timeout=300)
    assert again.returncode == 1, again.stderr.decode()
    assert b"Traceback" not in again.stderr
    assert (out / "runs.jsonl").read_bytes() == before  # every trial was finished: the resume ran none again


def test_ctrl_c_ends_a_run_with_a_hung_tool_at_once_and_resume_finishes_it(server: FakeProvider,
                                                                               tmp_path: Path) -> None:
    pack, flags = tmp_path / "pack", tmp_path / "flags"
    flags.mkdir()
    write_desk_task(pack, "t-hang", ["call hang", "thanks"], flags=flags, extra="tool_timeout_s: 600\n")
    out, plan = tmp_path / "run", plan_file(tmp_path)
    with traced_child(command(pack, plan, out, server.base)[3:], ENTRY, child_env(),
                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as (proc, handled):
        deadline = time.monotonic() + 120
        while not (flags / "hanging").exists():
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else "child exited"
            assert time.monotonic() < deadline, "the tool never started"
            time.sleep(0.05)
        interrupt(proc, handled)
        # one Ctrl-C is enough: the trial stops waiting for its hung tool (which would hang ten minutes)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err.decode()
    manifest = json.loads((out / "run.json").read_text())
    assert [str(key) for key in manifest["interrupted"]] == ["agent/t-hang/0"]
    (flags / "release").write_text("go")
    done = subprocess.run(command(pack, plan, out, server.base), env=child_env(), capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    line = lines(out)["t-hang"]
    assert line["status"] == "completed"
    assert trajectory(out, line)["tool_calls"][0]["output"] == "released"


def test_a_second_ctrl_c_exits_at_once_with_provider_calls_in_flight(tmp_path: Path) -> None:
    from tests.trials.helpers import write_task

    task = write_task(tmp_path / "pack")
    out, plan = tmp_path / "run", plan_file(tmp_path)
    with FakeProvider(agent) as slow:
        slow.hold_after(0)  # no call is answered while the test is at it
        argv = [*command(task, plan, out, slow.base)[3:], "--trials", "2"]
        with traced_child(argv, ENTRY, child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as (proc, handled):
            deadline = time.monotonic() + 120
            while len(slow.bodies()) < 2:
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else "child exited"
                assert time.monotonic() < deadline, "no call reached the server"
                time.sleep(0.05)
            interrupt(proc, handled)  # both trials wait on their calls: the run goes on
            assert proc.poll() is None
            interrupt(proc, handled)
            _, err = proc.communicate(timeout=60)  # no call was answered: it did not wait for them
    assert proc.returncode == 130, err.decode()
    assert b"interrupted" in err
    manifest = json.loads((out / "run.json").read_text())
    assert sorted(str(key) for key in manifest["interrupted"]) == ["agent/count/0", "agent/count/1"]
    assert not (out / "runs.jsonl").exists() or not (out / "runs.jsonl").read_text().strip()

"""Grading rules and the exit status of `capplan trial run`.

Real litellm against the loopback agent server: a trial whose agent never got a completion is
never passed (its grader would have passed on the untouched initial state); an empty opening
from the LLM user is a harness error, kept in the denominator as not passed; the run exits 1
when any trial ended error or aborted, unless --fail-on-error tolerates them.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from capplan.cli.trial_cmd import tolerated
from capplan.trials import runner as runner_module
from capplan.trials.backends import local as local_backend
from capplan.trials.backends.local import LocalBackend
from capplan.trials.driver import RunRequest, build_specs, drive
from capplan.trials.report.progress import Progress
from capplan.trials.run_folder.folder import RunFolder
from capplan.trials.runner import RunContext
from tests.fake_provider import FakeProvider, agent, agent_answer, agent_completion, on_body
from tests.trials.helpers import openai_plan, write_task
from tests.cli_runner import invoke

#: a grader that the environment's initial state satisfies: only the rules can keep it from passing
UNTOUCHED = "grader:\n  expected_state: {value: 0}\n"
LLM_USER = "user:\n  mode: llm\n  backstory: You want the counter raised by one.\n"


def silent_simulator(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """The agent's calls carry tools; the user simulator's do not, and get an empty opening."""
    if not body.get("tools"):
        return 200, agent_completion("   ")
    return agent_answer(body)


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-grading-rules-0123456789")
    monkeypatch.delenv("LLM_PROXY_BASE_URL", raising=False)
    # the retry controller's waits (4-60 s) are real sleeps otherwise
    monkeypatch.setattr(local_backend, "RunContext", lambda: RunContext(sleep=lambda s: None))
    monkeypatch.setattr(runner_module, "_DEFAULT", None)


def lines(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "runs.jsonl").read_bytes().splitlines()]


def metrics(out: Path, line: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((out / line["dir"] / "metrics.yaml").read_text())
    return data


def plan_file(tmp_path: Path) -> Path:
    path = tmp_path / "agent.json"
    path.write_bytes(openai_plan().to_bytes())
    return path


def test_a_trial_whose_agent_got_no_completion_is_never_passed(env: None, tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack", extra=UNTOUCHED)
    plan = plan_file(tmp_path)
    out = tmp_path / "run"
    with FakeProvider(agent) as server:
        server.queue_error(500, "upstream exploded", times=100)  # every attempt, every replay
        specs = build_specs(RunRequest(tasks=[task], plans=[plan], out=out, api_base=server.base))
        drive(specs, RunFolder(out), LocalBackend(RunContext(sleep=lambda s: None)), concurrency=1, max_cost=None,
              progress=Progress(io.StringIO()))
        assert server.bodies(), "nothing reached the server"
    [line] = lines(out)
    assert (line["status"], line["termination_reason"]) == ("failed", "api_error")
    assert line["passed"] is False
    grade = metrics(out, line)["grade"]
    assert grade["passed"] is False and grade["graders"] == []
    assert "no completion" in grade["note"]
    row = json.loads((out / "summary.json").read_text())["rows"][0]
    assert (row["passed"], row["failed"], row["graded"], row["pass_rate"]) == (0, 1, 1, 0.0)


def test_empty_opening_is_a_harness_error_in_the_denominator(env: None, tmp_path: Path) -> None:
    pack = tmp_path / "pack"
    scripted = write_task(pack, task_id="scripted", extra="grader:\n  expected_state: {value: 2}\n")
    silent = write_task(pack, task_id="silent", user=LLM_USER, extra=UNTOUCHED)
    plan = plan_file(tmp_path)
    out = tmp_path / "run"
    with FakeProvider(on_body(silent_simulator)) as server:
        result = invoke("trial", "run", str(scripted), str(silent), "--plan", str(plan),
                        "--user-plan", str(plan), "--out", str(out), "--api-base", server.base,
                        "--user-api-base", server.base)
        agent_calls = [r for r in server.bodies() if r.get("tools")]
    assert result.exit_code == 1, result.output
    assert "1 error trial(s) of 2" in result.output
    by_task = {line["task_id"]: line for line in lines(out)}
    assert (by_task["silent"]["status"], by_task["silent"]["termination_reason"]) == ("error", "error")
    assert by_task["silent"]["turns"] == 0 and by_task["silent"]["counts_against_model"] is True
    assert by_task["silent"]["passed"] is False  # in the denominator, not passed, never graded
    grade = metrics(out, by_task["silent"])["grade"]
    assert grade["graders"] == [] and "harness error" in grade["note"]
    trajectory = yaml.safe_load((out / by_task["silent"]["dir"] / "trajectory.yaml").read_text())
    assert "opening turn is empty" in trajectory["termination"]["detail"]
    assert by_task["scripted"]["passed"] is True
    # every agent call is the scripted task's: the silent task's agent was never called
    assert agent_calls and all(r["messages"][1]["content"] == "please add 2" for r in agent_calls)
    row = json.loads((out / "summary.json").read_text())["rows"][0]
    assert (row["passed"], row["failed"], row["error"], row["aborted"], row["graded"]) == (1, 0, 1, 0, 2)
    assert row["pass_rate"] == 0.5
    markdown = (out / "summary.md").read_text()
    assert "| 50.0% |" in markdown and "| 1 / 2 | 0 | 1 | 0 |" in markdown


@pytest.mark.parametrize(("tolerance", "expect"), [(None, 1), ("1", 0), ("0.5", 0), ("0.4", 1), ("0", 1)])
def test_fail_on_error_tolerates_a_count_or_a_fraction(env: None, tmp_path: Path, tolerance: str | None,
                                                       expect: int) -> None:
    pack = tmp_path / "pack"
    scripted = write_task(pack, task_id="scripted")
    silent = write_task(pack, task_id="silent", user=LLM_USER)
    plan = plan_file(tmp_path)
    out = tmp_path / "run"
    extra = ["--fail-on-error", tolerance] if tolerance is not None else []
    with FakeProvider(on_body(silent_simulator)) as server:
        result = invoke("trial", "run", str(scripted), str(silent), "--plan", str(plan),
                        "--user-plan", str(plan), "--out", str(out), "--api-base", server.base,
                        "--user-api-base", server.base,
                        *extra)
    assert result.exit_code == expect, result.output
    assert "Traceback" not in result.output
    if expect == 0:
        assert "within --fail-on-error" in result.output


def test_every_trial_answerable_exits_0(env: None, tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack", extra="grader:\n  expected_state: {value: 2}\n")
    plan = plan_file(tmp_path)
    out = tmp_path / "run"
    with FakeProvider(agent) as server:
        result = invoke("trial", "run", str(task), "--plan", str(plan), "--out", str(out),
                        "--api-base", server.base, "--trials", "2")
    assert result.exit_code == 0, result.output
    assert [line["passed"] for line in lines(out)] == [True, True]


@pytest.mark.parametrize("bad", ["-1", "1.5", "abc", "nan", "inf", ""])
def test_fail_on_error_refuses_what_is_neither_a_count_nor_a_fraction(tmp_path: Path, bad: str) -> None:
    result = invoke("trial", "run", str(tmp_path / "t.yaml"), "--plan", str(tmp_path / "p.json"),
                    "--out", str(tmp_path / "run"), "--fail-on-error", bad)
    assert result.exit_code == 2, result.output
    assert "--fail-on-error" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "run").exists()


def test_tolerance_arithmetic() -> None:
    assert tolerated(0, 4, 0) and not tolerated(1, 4, 0)
    assert tolerated(1, 4, 1) and not tolerated(2, 4, 1)
    assert tolerated(2, 4, 0.5) and not tolerated(3, 4, 0.5)
    assert tolerated(0, 0, 0.5) and tolerated(0, 0, 0)

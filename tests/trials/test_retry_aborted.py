"""`capplan trial run --retry-aborted`: aborted trials run again on resume, the new line supersedes the old.

Real litellm against a loopback server that answers 429 to the first run's calls, then
normally. The first run goes through the driver with a no-op sleep (the retry controller's
rate-limit waits are 4-60 s); the resumes are the real command, built from the same request,
so the trial keys are the ones the first run wrote.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fake_provider import FakeProvider, agent
from tests.trials.helpers import openai_plan, write_task
from capplan.trials.backends.local import LocalBackend
from capplan.trials.driver import RunRequest, build_specs, drive
from capplan.trials.report.progress import Progress
from capplan.trials.run_folder.folder import RunFolder
from capplan.trials.runner import RunContext
from tests.cli_runner import invoke

#: the default retry controller's attempts: a trial whose first call meets this many 429s aborts
ATTEMPTS = 5


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-retry-aborted-0123456789")
    monkeypatch.delenv("LLM_PROXY_BASE_URL", raising=False)
    with FakeProvider(agent) as srv:
        yield srv


def raw_lines(out: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (out / "runs.jsonl").read_bytes().splitlines()]


def test_aborted_trial_is_skipped_on_resume_and_rerun_with_retry_aborted(server: FakeProvider, tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack", turns=["add one", "thanks"],
                      extra="grader:\n  expected_state: {value: 2}\n")
    plan = tmp_path / "agent.json"
    plan.write_bytes(openai_plan().to_bytes())
    out = tmp_path / "run"
    args = [str(task), "--plan", str(plan), "--out", str(out), "--trials", "2", "--concurrency", "1",
            "--api-base", server.base]

    # first run: trial 0 meets a burst of 429s and aborts, trial 1 runs normally
    server.queue_error(429, "Rate limit reached for requests", code="rate_limit_exceeded", times=ATTEMPTS)
    specs = build_specs(RunRequest(tasks=[task], plans=[plan], out=out, trials=2, concurrency=1,
                                   api_base=server.base))
    drive(specs, RunFolder(out), LocalBackend(RunContext(sleep=lambda s: None)), concurrency=1, max_cost=None,
          progress=Progress(io.StringIO()))
    first = raw_lines(out)
    assert [(line["index"], line["status"], line["termination_reason"]) for line in first] == [
        (0, "aborted", "rate_limit"), (1, "completed", "user_stop")]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["rows"][0]["counted"] == 1 and summary["rows"][0]["passed"] == 1
    before = (out / "runs.jsonl").read_bytes()

    # a plain resume counts the aborted trial as finished: nothing is sent, nothing appended
    server.reset()
    plain = invoke("trial", "run", *args)
    # the run still holds an aborted trial: no outcome the model is answerable for, so exit 1
    assert plain.exit_code == 1, plain.output
    assert "1 aborted trial(s) of 2" in plain.output
    assert "resuming: 2 of 2 trial(s) already finished" in plain.output
    assert server.bodies() == []
    assert (out / "runs.jsonl").read_bytes() == before

    # --retry-aborted runs trial 0 again (the server now answers normally), and only it
    retried = invoke("trial", "run", *args, "--retry-aborted")
    assert retried.exit_code == 0, retried.output
    assert "retrying: 1 aborted trial(s) run again (--retry-aborted)" in retried.output
    assert server.bodies(), "the aborted trial was not sent again"
    after = (out / "runs.jsonl").read_bytes()
    assert after.startswith(before)  # append-only: the aborted line is still there, unchanged
    lines = raw_lines(out)
    assert len(lines) == 3
    assert (lines[2]["index"], lines[2]["status"], lines[2]["passed"]) == (0, "completed", True)
    assert lines[2]["key"] == first[0]["key"]

    # the summary and the report read the latest line per trial: two trials, both counted, never three
    summary = json.loads((out / "summary.json").read_text())
    assert summary["trials"] == 2
    row = summary["rows"][0]
    assert (row["trials"], row["counted"], row["passed"], row["pass_rate"]) == (2, 2, 2, 1.0)
    assert row["termination_reasons"] == {"user_stop": 2}
    report = invoke("trial", "report", str(out))
    assert report.exit_code == 0 and "2 finished trial(s)" in report.output
    assert RunFolder(out).finished()[str(first[0]["key"])]["status"] == "completed"

    # nothing aborted is left: a further --retry-aborted resume sends nothing
    server.reset()
    again = invoke("trial", "run", *args, "--retry-aborted")
    assert again.exit_code == 0, again.output
    assert server.bodies() == [] and (out / "runs.jsonl").read_bytes() == after


def run_line(**fields: object) -> dict[str, object]:
    """A runs.jsonl line of trial a/t/0 (as a run writes it), with ``fields`` changed."""
    line: dict[str, object] = {
        "key": "a/t/0", "attempt": 1, "plan_key": "a", "plan_fingerprint": "0" * 64, "effective_preset": "default",
        "task_id": "t", "task_pack": "pack", "task_sha256": "1" * 64, "index": 0, "status": "aborted",
        "termination_reason": "rate_limit", "counts_against_model": False, "passed": None, "cost_usd": 0.5,
        "total_tokens": 10, "turns": 1, "dir": "trials/a/t/0"}
    return {**line, **fields}


def test_budget_counts_superseded_attempts_and_a_repeated_line_once(tmp_path: Path) -> None:
    aborted = run_line()
    retried = run_line(attempt=2, status="completed", termination_reason="user_stop", counts_against_model=True,
                       cost_usd=0.25)
    tmp_path.joinpath("runs.jsonl").write_text(
        "".join(json.dumps(x) + "\n" for x in (aborted, retried, aborted)))  # the aborted line repeated at the end
    folder = RunFolder(tmp_path)
    assert folder.finished()["a/t/0"]["status"] == "completed"  # the highest attempt, not the last line
    assert folder.spent_usd() == 0.75

"""The run folder: atomic trial files, runs.jsonl as the commit marker, resume, mismatch refusal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.trials.helpers import mock_plan, spec_for, write_task
from capplan.trials.outcome import TerminationReason, TrialStatus
from capplan.trials.run_folder.folder import RunFolder, RunFolderMismatch
from capplan.trials.runner import RunContext, run_trial


def test_run_trial_returns_records_and_writes_nothing(tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    records = run_trial(spec_for(task, mock_plan()), RunContext())
    assert sorted(p.name for p in tmp_path.rglob("*") if "__pycache__" not in p.parts) == [
        p for p in before if p != "__pycache__"]
    assert records.status is TrialStatus.COMPLETED
    assert records.termination_reason is TerminationReason.USER_STOP
    assert records.run_line["key"] == "mock-agent/count/0"
    json.dumps([records.trajectory, records.metrics, records.run_line])  # JSON-safe throughout


def test_write_then_resume_skips_finished_and_sets_a_torn_line_aside(tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack")
    plan = mock_plan()
    specs = [spec_for(task, plan, index=i) for i in range(3)]
    folder = RunFolder(tmp_path / "run")
    assert folder.open(specs) == {}
    for spec in specs[:2]:
        folder.write(run_trial(spec, RunContext()))
    with open(folder.runs, "ab") as fh:  # a kill in the middle of the third append
        fh.write(b'{"key": "mock-agent/count/2", "plan_fi')
    complete = folder.runs.read_bytes()[: folder.runs.read_bytes().rfind(b"\n") + 1]
    folder.release()  # the run that was killed is over: its lock went with it
    notes: list[str] = []
    finished = RunFolder(tmp_path / "run", notify=notes.append).open(specs)
    assert sorted(finished) == ["mock-agent/count/0", "mock-agent/count/1"]
    assert folder.runs.read_bytes() == complete  # the torn tail is gone before anything is appended
    assert (tmp_path / "run" / "runs.jsonl.torn-1").read_bytes() == b'{"key": "mock-agent/count/2", "plan_fi'
    assert len(notes) == 1 and "runs.jsonl:3:1: warning[run-line-torn]" in notes[0]
    for name in ("trajectory.yaml", "metrics.yaml"):
        assert (tmp_path / "run" / "trials/mock-agent/count/0" / name).is_file()
    assert not list((tmp_path / "run").rglob("*.tmp"))


def test_resume_refuses_a_different_task_under_the_same_key(tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack")
    plan = mock_plan()
    folder = RunFolder(tmp_path / "run")
    spec = spec_for(task, plan)
    folder.open([spec])
    folder.write(run_trial(spec, RunContext()))
    task.write_text(task.read_text() + "max_turns: 3\n")
    with pytest.raises(RunFolderMismatch, match="another plan or task file"):
        folder.open([spec_for(task, plan)])

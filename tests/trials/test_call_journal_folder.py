"""The run folder reading calls.jsonl back: what counts as died in flight, torn and damaged lines,
interrupted trials, unknown cost, superseded attempts; and the local backend journalling real trials."""

from __future__ import annotations

import dataclasses
import json
import threading
from pathlib import Path

import pytest

from capplan.trials.backends.local import LocalBackend
from capplan.trials.run_folder.call_journal import CallBuffer, journalled
from capplan.trials.driver import write_summary
from capplan.trials.run_folder.records import CallRecord, UsageRecord
from capplan.trials.run_folder.recording import MetricsSink
from capplan.trials.run_folder.folder import RunFolder, RunFolderError
from capplan.trials.runner import RunContext, run_trial
from capplan.trials.spec import TrialSpec
from tests.trials.helpers import opened_run_folder


def call(cost: float | None, *, role: str = "agent", status: str = "ok") -> CallRecord:
    failed = status == "error"
    return CallRecord(role=role, turn=0, outcome="failed" if failed else "accepted", status=status,  # type: ignore[arg-type]
                      usage=UsageRecord(prompt_tokens=10, completion_tokens=2), cost_usd=None if failed else cost,
                      cost_source="unknown" if cost is None or failed else "pricing", latency_s=0.01)


@pytest.fixture
def opened(tmp_path: Path) -> tuple[RunFolder, list[TrialSpec]]:
    return opened_run_folder(tmp_path, trials=2)


def test_an_unclosed_execution_is_died_in_flight_with_its_split_and_unknown_cost(
        opened: tuple[RunFolder, list[TrialSpec]]) -> None:
    folder, specs = opened
    assert folder.journal is not None
    log = folder.journal.begin(str(specs[0].key))
    log.record(call(0.002))
    log.record(call(None, role="user"))  # answered, nobody priced it
    log.record(call(None, status="error"))  # sent and failed: the provider reported no cost, so it is unknown
    [died] = RunFolder(folder.root).died_in_flight()
    assert (died.key, died.attempt, died.calls) == (str(specs[0].key), 1, 3)
    assert died.agent_cost_usd is None and died.user_cost_usd is None
    # the known part still counts: the agent's priced call was spent whatever the failed one cost
    assert died.unknown_cost_calls == 2 and died.known_usd == pytest.approx(0.002)
    again = RunFolder(folder.root)
    assert again.unfinished_spent_usd() == pytest.approx(0.002)
    note = again.spend_note()
    assert "1 trial attempt(s) that died in flight $0.0020 (agent unknown, user unknown; 2 call(s) of unknown cost" \
        in note


def test_a_written_trial_and_an_interrupted_one_are_accounted_for(opened: tuple[RunFolder, list[TrialSpec]]) -> None:
    folder, specs = opened
    assert folder.journal is not None
    finished, stopped = (folder.journal.begin(str(s.key)) for s in specs)
    with journalled(finished):
        records = run_trial(specs[0], RunContext())  # the mock provider's calls go to the journal
    stopped.record(call(0.001))
    folder.write(records)
    folder.mark_interrupted([specs[1].key], {str(specs[1].key): 0.001})
    lines = [json.loads(line) for line in (folder.root / "calls.jsonl").read_text().splitlines()]
    # the journal holds each call exactly as metrics.yaml does
    assert [e["call"] for e in lines if e["kind"] == "call" and e["key"] == str(specs[0].key)] == \
        records.metrics["calls"] and records.metrics["calls"]
    assert [(e["key"], e["as"]) for e in lines if e["kind"] == "end"] == [
        (str(specs[0].key), "written"), (str(specs[1].key), "interrupted")]
    reread = RunFolder(folder.root)
    assert reread.died_in_flight() == []
    manifest = json.loads((folder.root / "run.json").read_text())
    assert manifest["died_in_flight"] == [] and manifest["interrupted_spend_usd"] == pytest.approx(0.001)


def test_an_end_line_without_its_runs_line_is_still_died(opened: tuple[RunFolder, list[TrialSpec]]) -> None:
    folder, specs = opened
    assert folder.journal is not None
    folder.journal.begin(str(specs[0].key)).record(call(0.003))
    folder.journal.written(str(specs[0].key), 1)  # the process died before runs.jsonl got the line
    assert [d.key for d in RunFolder(folder.root).died_in_flight()] == [str(specs[0].key)]


def test_a_torn_last_line_is_cut_on_resume_and_a_damaged_one_is_a_located_error(
        opened: tuple[RunFolder, list[TrialSpec]]) -> None:
    folder, specs = opened
    assert folder.journal is not None
    folder.journal.begin(str(specs[0].key)).record(call(0.004))
    path = folder.root / "calls.jsonl"
    complete = path.read_bytes()
    with open(path, "ab") as fh:  # a kill in the middle of an append
        fh.write(b'{"kind":"call","execution":"ab')
    folder.release()  # the run that was killed is over: its lock went with it
    notes: list[str] = []
    resumed = RunFolder(folder.root, notify=notes.append)
    resumed.open(specs)
    assert path.read_bytes() == complete
    assert any("calls.jsonl:2:1: warning[call-journal-torn]" in n for n in notes)
    assert RunFolder(folder.root).died_in_flight()[0].agent_cost_usd == pytest.approx(0.004)
    with open(path, "ab") as fh:
        fh.write(b"not json\n")
    with pytest.raises(RunFolderError, match=r"calls.jsonl:2:1: error\[call-journal-invalid\]"):
        RunFolder(folder.root).check(specs)


def test_the_summary_total_includes_superseded_attempts(opened: tuple[RunFolder, list[TrialSpec]]) -> None:
    folder, specs = opened
    records = run_trial(specs[0], RunContext())
    priced = {"cost_usd": 0.01, "cost_source": "pricing", "user_cost_usd": 0.0, "user_cost_source": "none"}
    aborted = dataclasses.replace(records, run_line={**records.run_line, **priced, "status": "aborted",
                                                     "termination_reason": "rate_limit",
                                                     "counts_against_model": False, "passed": None})
    folder.write(aborted)
    folder.write(dataclasses.replace(records, run_line={**records.run_line, **priced}))  # the rerun supersedes it
    assert folder.superseded_spent_usd() == pytest.approx(0.01)
    write_summary(folder)
    summary = json.loads((folder.root / "summary.json").read_text())
    assert summary["trials"] == 1 and summary["total_cost_usd"] == pytest.approx(0.02)
    assert "superseded attempts of rerun trials $0.0100" in (folder.root / "summary.md").read_text()


def test_the_local_backend_journals_each_trial_under_its_own_execution(
        opened: tuple[RunFolder, list[TrialSpec]]) -> None:
    folder, specs = opened
    backend = LocalBackend(RunContext())
    backend.attach_journal(folder.journal)
    for records in backend.run(iter(specs), concurrency=2, stop=threading.Event()):
        folder.write(records)
    lines = [json.loads(line) for line in (folder.root / "calls.jsonl").read_text().splitlines()]
    executions = {e["key"]: e["execution"] for e in lines if e["kind"] == "call"}
    assert sorted(executions) == sorted(str(s.key) for s in specs) and len(set(executions.values())) == 2
    assert RunFolder(folder.root).died_in_flight() == []


def test_a_ray_workers_buffer_hands_each_call_over_once() -> None:
    buffer = CallBuffer()
    first, second = buffer.begin("a/t/0"), buffer.begin("a/t/1")
    sink = MetricsSink(log=first)
    sink.failed("agent", 0)
    second.record(call(0.1))
    first.record(call(0.2))
    drained = buffer.drain()
    assert [(e["key"], e["call"]["status"]) for e in drained] == [("a/t/0", "error"), ("a/t/1", "ok"), ("a/t/0", "ok")]
    first.record(call(0.3))
    second.record(call(0.4))
    assert [e["call"]["cost_usd"] for e in buffer.take(first.execution)] == [0.3]
    assert [e["call"]["cost_usd"] for e in buffer.drain()] == [0.4] and buffer.drain() == []


def test_an_older_line_without_a_user_cost_reads_as_split_unknown(
        opened: tuple[RunFolder, list[TrialSpec]]) -> None:
    folder, specs = opened
    records = run_trial(specs[0], RunContext())
    old = {k: v for k, v in records.run_line.items() if k not in ("user_cost_usd", "user_cost_source")}
    folder.write(dataclasses.replace(records, run_line={**old, "cost_usd": 0.03, "cost_source": "pricing"}))
    write_summary(folder)
    summary = json.loads((folder.root / "summary.json").read_text())
    assert summary["total_cost_usd"] == pytest.approx(0.03)  # spent: in the total
    assert summary["agent_cost_usd"] == 0.0 and summary["unknown_cost_trials"] == 0  # but not read as the agent's
    [row] = summary["rows"]
    assert row["agent_cost"]["total_usd"] is None and row["agent_cost"]["unknown_trials"] == 1
    assert row["mean_cost_usd"] == pytest.approx(0.03)
    assert "**Split unknown**: 1 trial(s) were recorded by an older capplan" in (folder.root / "summary.md").read_text()


def test_a_ray_drain_delivered_after_the_end_line_keeps_its_execution_and_attempt(
        opened: tuple[RunFolder, list[TrialSpec]]) -> None:
    """A drain the driver issued before a trial ended can come back after the trial was written."""
    folder, specs = opened
    assert folder.journal is not None
    key = str(specs[0].key)
    records = run_trial(specs[0], RunContext())
    buffer = CallBuffer()  # the worker's side
    log = buffer.begin(key)
    log.record(call(0.001))
    late = buffer.drain()  # drained on the worker, still on its way to the driver ...
    log.record(call(0.002))
    folder.journal.extend(buffer.take(log.execution))  # ... while the trial's records come back first
    folder.write(records)
    folder.journal.extend(late)  # and arrives after the end line
    lines = [json.loads(line) for line in (folder.root / "calls.jsonl").read_text().splitlines()]
    mine = [e for e in lines if e.get("execution") == log.execution]
    [end] = [e for e in mine if e["kind"] == "end"]
    assert [e["attempt"] for e in mine if e["kind"] == "call"] == [end["attempt"], end["attempt"]]
    assert RunFolder(folder.root).died_in_flight() == []

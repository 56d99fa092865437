"""The trial runner's progress display: one width-fitted live line on a terminal, lines elsewhere."""

from __future__ import annotations

import io
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from capplan.core.redaction import register_secrets
from capplan.trials.backends import local
from capplan.trials.backends.local import LocalBackend
from capplan.trials.driver import drive
from capplan.trials.outcome import TerminationReason, TrialStatus
from capplan.trials.report.progress import Progress
from capplan.trials.spec import TrialKey, TrialRecords, TrialSpec
from tests.trials.terminal_screen import Screen

LONG_TASK = "reconcile-the-quarterly-inventory-ledger-against-the-warehouse-scanner-export"  # 77 chars


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _records(task: str, index: int, status: TrialStatus = TrialStatus.COMPLETED, *,
             passed: bool | None = True, node: str | None = None) -> TrialRecords:
    reason = TerminationReason.USER_STOP if status is TrialStatus.COMPLETED else TerminationReason.API_ERROR
    return TrialRecords(key=TrialKey("openai-gpt-4o-mini-2024-07-18", task, index), status=status,
                        termination_reason=reason, cost_usd=0.000125, trajectory={}, metrics={},
                        run_line={"passed": passed}, node=node)


def _console(buffer: io.StringIO, *, terminal: bool) -> Console:
    return Console(file=buffer, width=80, force_terminal=terminal, color_system=None, markup=False,
                   highlight=False, emoji=False)


def _visible_lines(raw: str) -> list[str]:
    """Every stretch of text between line breaks and carriage returns, control sequences removed."""
    plain = re.sub(r"\x1b\[\??[0-9;]*[A-Za-z]", "", raw)
    return [part for line in plain.split("\n") for part in line.split("\r")]


def _run(progress: Progress, clock: FakeClock, outcomes: list[TrialRecords]) -> None:
    progress.begin(total=len(outcomes), already=0, spent=0.0)
    spent = 0.0
    for records in outcomes:
        progress.started()
        clock.now += 6.0
        progress.ended()
        spent += records.cost_usd
        progress.finished(records, written=True, spent=spent)
    progress.end()


def test_on_an_80_column_terminal_nothing_wraps_and_no_live_line_is_left_behind() -> None:
    buffer, clock = io.StringIO(), FakeClock()
    progress = Progress(console=_console(buffer, terminal=True), clock=clock)
    assert progress.live
    outcomes = [_records(f"{LONG_TASK}-{i}", i, node=f"worker-node-{i % 3}-with-a-long-name")
                for i in range(10)]
    _run(progress, clock, outcomes)

    raw = buffer.getvalue()
    assert max(len(line) for line in _visible_lines(raw)) <= 80
    screen = Screen(80).feed(raw)
    assert screen.wraps == 0
    shown = screen.lines()
    # what stays: each finished trial (folded by rich at the width) and the summary, no live line
    assert not any(line.startswith("[#") or line.startswith("[.") for line in shown), shown
    summary = [line for line in shown if " running · " in line]
    assert len(summary) == 1 and summary[0].startswith(
        f"trials 10/10 done · 0 running · 0 failed · 10.0/min · ${sum(r.cost_usd for r in outcomes):.4f} spent")
    joined = screen.text()
    for records in outcomes:
        assert f"completed   {records.key}  user_stop  passed  $0.000125" in joined


def test_the_live_line_fits_the_width_and_draws_the_bar_only_where_it_fits() -> None:
    buffer, clock = io.StringIO(), FakeClock()
    progress = Progress(console=_console(buffer, terminal=True), clock=clock)
    progress.begin(total=4, already=0, spent=0.0)
    progress.started()
    live = Screen(80).feed(buffer.getvalue()).lines()[-1]
    assert live.startswith("[") and "] trials 0/4 done · 1 running" in live and len(live) < 80
    progress.by_node["a-node-name-long-enough-to-crowd-the-bar-out-of-the-line"] = 1
    progress.started()
    live = Screen(80).feed(buffer.getvalue()).lines()[-1]
    assert live.startswith("trials 0/4 done · 2 running") and live.endswith("…") and len(live) == 79


def test_a_failure_is_printed_above_the_live_line_and_stays() -> None:
    buffer, clock = io.StringIO(), FakeClock()
    progress = Progress(console=_console(buffer, terminal=True), clock=clock)
    progress.begin(total=3, already=0, spent=0.0)
    for _ in range(3):
        progress.started()
    clock.now += 60
    progress.ended()
    progress.finished(_records("count", 0, TrialStatus.FAILED, passed=False), written=True, spent=0.1)
    shown = Screen(80).feed(buffer.getvalue()).lines()
    assert shown[-3:-1] == ["failed      openai-gpt-4o-mini-2024-07-18/count/0  api_error  not passed  $0.00",
                            "0125"]  # 82 characters: broken at the width, none lost
    assert shown[-1].startswith("[") and "1/3 done · 2 running · 1 failed" in shown[-1]
    progress.ended()
    progress.finished(_records("count", 1), written=True, spent=0.2)
    shown = Screen(80).feed(buffer.getvalue()).lines()
    assert shown[-4].startswith("failed      openai-gpt-4o-mini-2024-07-18/count/0")
    assert shown[-2].startswith("completed   openai-gpt-4o-mini-2024-07-18/count/1")
    assert "2/3 done · 1 running · 1 failed" in shown[-1]


def test_off_a_terminal_one_line_per_finished_trial_and_the_summary() -> None:
    buffer, clock = io.StringIO(), FakeClock()
    progress = Progress(console=_console(buffer, terminal=False), clock=clock)
    assert not progress.live
    progress.begin(total=3, already=1, spent=0.5, again=1)
    progress.started()
    progress.ended()
    progress.finished(_records(LONG_TASK, 0, TrialStatus.ERROR, passed=None), written=True, spent=0.6)
    progress.started()
    clock.now += 60
    progress.ended()
    progress.finished(_records("count", 1), written=True, spent=0.7)
    progress.end()
    out = buffer.getvalue()
    assert "\x1b" not in out and "\r" not in out
    assert out.splitlines() == [
        "resuming: 1 of 3 trial(s) already finished",
        "retrying: 1 aborted trial(s) run again (--retry-aborted)",
        f"error       openai-gpt-4o-mini-2024-07-18/{LONG_TASK}/0  api_error  ungraded  $0.000125",  # not wrapped
        "completed   openai-gpt-4o-mini-2024-07-18/count/1  user_stop  passed  $0.000125",
        "trials 3/3 done · 0 running · 1 failed · 2.0/min · $0.7000 spent",
    ]


def test_a_pipe_is_not_a_terminal_even_when_force_color_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")  # some CI runners set it; rich alone would draw a live line
    assert not Progress(io.StringIO()).live


def test_what_the_display_prints_passes_the_process_redactor() -> None:
    canary = "canary-secret-value-7f3a91"
    register_secrets([canary])
    buffer = io.StringIO()
    progress = Progress(console=_console(buffer, terminal=True), clock=FakeClock())
    progress.begin(total=1, already=0, spent=0.0)
    progress.by_node[canary] = 1
    progress.started()
    progress.ended()
    progress.finished(_records(f"task-{canary}", 0), written=True, spent=0.0)
    progress.end()
    assert canary not in buffer.getvalue()
    assert "<redacted>" in buffer.getvalue()


class _Folder:
    """A run folder that takes as long to write a trial as a disk does, and keeps nothing."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.journal = None  # no call journal: this folder keeps nothing

    def open(self, specs: object, **identity: object) -> dict[str, Any]:  # the run's settings, command line
        return {}

    def spent_usd(self) -> float:
        return 0.0

    def interrupted_spent_usd(self) -> float:
        return 0.0

    def died_in_flight(self) -> list[Any]:
        return []

    def unfinished_spent_usd(self, died: object = None) -> float:
        return 0.0

    def superseded_spent_usd(self) -> float:
        return 0.0

    def spend_note(self, died: object = None, finished: object = None) -> str:
        return ""

    def write(self, records: TrialRecords, renderer: object = None) -> None:
        time.sleep(0.03)

    def finished(self) -> dict[str, Any]:
        return {}

    def mark_interrupted(self, keys: object, spend: object = None, known: object = None) -> None:
        raise AssertionError("nothing is interrupted")

    def unanswered_reserved_usd(self) -> float:
        return 0.0

    def release(self) -> None:  # the writer lock a real folder holds for the drive
        pass

    def clear_interrupted(self) -> None:
        pass


def test_running_never_exceeds_the_concurrency(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At --concurrency 4 over 10 trials the live line never says more than 4 running.

    The backend starts the next trial as soon as the driver takes a finished one, while that one
    is still being written: counted down only after the write, it read "5 running".
    """
    active, most = 0, 0
    lock = threading.Condition()

    def fake_trial(spec: TrialSpec, context: object) -> TrialRecords:
        nonlocal active, most
        with lock:
            active += 1
            most = max(most, active)
            lock.notify_all()
            if spec.index < 4:  # the first four run at once, however the threads are scheduled
                lock.wait_for(lambda: active >= 4, timeout=60)
        time.sleep(0.01 + 0.01 * (spec.index % 3))
        with lock:
            active -= 1
        return _records(spec.task_id, spec.index)

    monkeypatch.setattr(local, "run_trial", fake_trial)
    specs = [TrialSpec(plan_json="{}", plan_fingerprint="f" * 64, plan_key="openai-gpt-4o-mini-2024-07-18",
                       task_path="t.yaml", task_text="", task_id="count", task_pack="pack", index=i)
             for i in range(10)]
    buffer = io.StringIO()
    progress = Progress(console=_console(buffer, terminal=True))
    outcome = drive(specs, _Folder(tmp_path), LocalBackend(), concurrency=4, max_cost=None,  # type: ignore[arg-type]
                    progress=progress)
    assert outcome.finished == 10 and most == 4
    counts = [int(n) for n in re.findall(r"(\d+) running", buffer.getvalue())]
    assert max(counts) == 4, counts
    assert progress.running == 0 and progress.done == 10
    assert Screen(80).feed(buffer.getvalue()).lines()[-1].startswith("trials 10/10 done · 0 running · 0 failed")


def test_a_trial_of_unknown_cost_is_shown_as_unknown_never_as_zero() -> None:
    buffer, clock = io.StringIO(), FakeClock()
    progress = Progress(console=_console(buffer, terminal=False), clock=clock)
    progress.begin(total=2, already=0, spent=0.0)
    unpriced = TrialRecords(key=TrialKey("self-hosted", "count", 0), status=TrialStatus.COMPLETED,
                            termination_reason=TerminationReason.USER_STOP, cost_usd=0.0, trajectory={},
                            metrics={}, run_line={"passed": True, "cost_usd": None})
    for records, spent in ((unpriced, 0.0), (_records("count", 1), 0.000125)):
        progress.started()
        clock.now += 30
        progress.ended()
        progress.finished(records, written=True, spent=spent)
    progress.end()
    lines = buffer.getvalue().splitlines()
    assert lines[0] == "completed   self-hosted/count/0  user_stop  passed  cost unknown"
    assert lines[-1] == "trials 2/2 done · 0 running · 0 failed · 2.0/min · ≥ $0.0001 spent (+ 1 trial(s) of unknown cost)"


def test_a_trial_of_unknown_cost_with_a_known_part_is_a_lower_bound() -> None:
    buffer = io.StringIO()
    progress = Progress(console=_console(buffer, terminal=False), clock=FakeClock())
    progress.begin(total=1, already=0, spent=0.0)
    # one call answered and priced, one attempt sent and failed: the cost is unknown, its known part is not 0
    calls = [{"cost_usd": 0.0001}, {"cost_usd": None}]
    partly = TrialRecords(key=TrialKey("agent", "count", 0), status=TrialStatus.COMPLETED,
                          termination_reason=TerminationReason.USER_STOP, cost_usd=0.0001, trajectory={},
                          metrics={"calls": calls}, run_line={"passed": True, "cost_usd": None, "user_cost_usd": 0.0})
    progress.started()
    progress.ended()
    progress.finished(partly, written=True, spent=0.0001)
    progress.end()
    lines = buffer.getvalue().splitlines()
    assert lines[0] == "completed   agent/count/0  user_stop  passed  cost ≥ $0.000100 (+ 1 call(s) unknown)"
    assert "≥ $0.0001 spent (+ 1 trial(s) of unknown cost)" in lines[-1]

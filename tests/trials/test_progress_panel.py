"""Progress that does not flood: a bounded log off a terminal, a width-fitted live panel on one.

Every test drives :class:`Progress` with an injected clock, so what is printed depends only on the
sequence of events, never on how fast this machine is.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from capplan.trials import driver
from capplan.trials.backends import local
from capplan.trials.backends.local import LocalBackend
from capplan.trials.driver import drive
from capplan.trials.outcome import TerminationReason, TrialStatus
from capplan.trials.report.progress import FAILURE_LINES, Progress, duration
from capplan.trials.spec import TrialKey, TrialRecords, TrialSpec
from tests.trials.terminal_screen import Screen
from tests.trials.test_progress import _Folder

MODEL = "openai-gpt-4o-mini-2024-07-18"
LONG_TASK = "reconcile-the-quarterly-inventory-ledger-against-the-warehouse-scanner-export"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _records(task: str, index: int, status: TrialStatus = TrialStatus.COMPLETED) -> TrialRecords:
    reason = TerminationReason.USER_STOP if status is TrialStatus.COMPLETED else TerminationReason.API_ERROR
    return TrialRecords(key=TrialKey(MODEL, task, index), status=status, termination_reason=reason,
                        cost_usd=0.000125, trajectory={}, metrics={},
                        run_line={"passed": status is TrialStatus.COMPLETED})


def _console(buffer: io.StringIO, *, terminal: bool) -> Console:
    return Console(file=buffer, width=80, force_terminal=terminal, color_system=None, markup=False,
                   highlight=False, emoji=False)


def _simulate(progress: Progress, clock: FakeClock, total: int, *, concurrency: int, step_s: float,
              fails_every: int = 0) -> None:
    """The driver's calls for ``total`` trials, ``concurrency`` at once, one ending every ``step_s`` seconds."""
    progress.begin(total=total, already=0, spent=0.0)
    keys = [TrialKey(MODEL, f"task-{i % 50}", i // 50) for i in range(total)]
    for key in keys[:concurrency]:
        progress.started(key)
    spent = 0.0
    for i, key in enumerate(keys):
        clock.now += step_s
        progress.ended(key)
        failed = bool(fails_every) and i % fails_every == fails_every - 1
        records = _records(key.task_id, key.index, TrialStatus.FAILED if failed else TrialStatus.COMPLETED)
        spent += records.cost_usd
        progress.finished(records, written=True, spent=spent)
        if i + concurrency < total:
            progress.started(keys[i + concurrency])
    progress.end()


def test_ten_thousand_trials_off_a_terminal_print_at_most_100_lines() -> None:
    buffer, clock = io.StringIO(), FakeClock()
    progress = Progress(console=_console(buffer, terminal=False), clock=clock)
    assert not progress.live
    # 10 000 trials, one ending every 0.1 s (a 5 % step is 50 s: the 30 s line comes in between), 1 in 97 failing
    _simulate(progress, clock, 10_000, concurrency=8, step_s=0.1, fails_every=97)
    lines = buffer.getvalue().splitlines()
    assert len(lines) <= 100, len(lines)
    assert progress.lines_printed == len(lines)
    ticks = [line for line in lines if line.startswith("[")]
    failures = [line for line in lines if line.startswith("failed ")]
    # every 5 % step has its line (the 100 % one included), and the 30 s ones in between
    assert [t for t in ticks if t.startswith("[  5%] 500/10000 ")] and ticks[-1].startswith("[100%] 10000/10000 ")
    assert 20 <= len(ticks) <= 45
    # failures one by one up to the cap, then counted: 103 failed, 25 listed, one note
    assert len(failures) == FAILURE_LINES and progress.failed == 10_000 // 97
    assert sum(1 for line in lines if line.startswith("… more failures")) == 1
    assert "· 103 failed ·" in lines[-1] and lines[-1].startswith("trials 10000/10000 done · 0 running · 103 failed")
    # a progress line fits 80 columns; the rate and ETA come from the clock (10 trials a second)
    assert all(len(t) <= 80 for t in ticks), max(ticks, key=len)
    half = next(t for t in ticks if t.startswith("[ 50%]"))
    assert half == "[ 50%] 5000/10000 · 7 running · 51 failed · 600.0/min · $0.6250 · ETA 8m20s", half


def test_off_a_terminal_a_line_every_30_seconds_when_the_run_is_slow() -> None:
    buffer, clock = io.StringIO(), FakeClock()
    progress = Progress(console=_console(buffer, terminal=False), clock=clock)
    # 1000 trials at 40 s each: no 5 % step for hours, a line at each trial's end after 30 s of silence
    progress.begin(total=1000, already=0, spent=0.0)
    for i in range(3):
        progress.started(TrialKey(MODEL, "slow", i))
        clock.now += 40
        progress.ended(TrialKey(MODEL, "slow", i))
        progress.finished(_records("slow", i), written=True, spent=0.000125 * (i + 1))
    lines = buffer.getvalue().splitlines()
    assert lines == ["[  0%] 1/1000 · 0 running · 1.5/min · $0.0001 · ETA 11h06m",
                     "[  0%] 2/1000 · 0 running · 1.5/min · $0.0003 · ETA 11h05m",
                     "[  0%] 3/1000 · 0 running · 1.5/min · $0.0004 · ETA 11h04m"]


def test_a_small_run_prints_every_trial_as_before() -> None:
    buffer, clock = io.StringIO(), FakeClock()
    progress = Progress(console=_console(buffer, terminal=False), clock=clock)
    _simulate(progress, clock, 20, concurrency=4, step_s=3.0)
    lines = buffer.getvalue().splitlines()
    assert len(lines) == 21 and all(line.startswith("completed   ") for line in lines[:-1])
    assert lines[-1] == "trials 20/20 done · 0 running · 0 failed · 20.0/min · $0.0025 spent"


def _screen(buffer: io.StringIO) -> Screen:
    screen = Screen(80).feed(buffer.getvalue())
    assert screen.wraps == 0
    assert all(len(row) <= 79 for row in screen.lines())
    return screen


def test_on_a_terminal_one_panel_fitted_to_80_columns_and_nothing_per_trial() -> None:
    buffer, clock = io.StringIO(), FakeClock()
    progress = Progress(console=_console(buffer, terminal=True), clock=clock)
    assert progress.live
    progress.begin(total=400, already=0, spent=0.0)
    keys = [TrialKey(MODEL, f"{LONG_TASK}-{i}" if i % 2 else f"task-{i}", 0) for i in range(12)]
    for key in keys[:6]:
        progress.started(key)
        clock.now += 5
    for i, key in enumerate(keys[:4]):
        progress.ended(key)
        status = TrialStatus.ERROR if i in (1, 2) else TrialStatus.COMPLETED
        progress.finished(_records(key.task_id, key.index, status), written=True, spent=0.001 * (i + 1))
    rows = _screen(buffer).lines()
    # the panel only: bar and counts, rate / spend / ETA, the running trials (longest first), the last failures
    assert len(rows) == 5, rows
    assert rows[0].startswith("[") and rows[0].endswith("] 1% · 4/400 done · 2 running · 2 failed")
    assert rows[1] == "8.0/min · $0.0040 spent · ETA 49m30s"
    assert rows[2] == f"running: {MODEL}/task-4/0 10s +1 more"  # the second one does not fit: counted
    assert rows[3].startswith(f"✗ error {MODEL}/reconcile-the-quarterly-") and rows[3].endswith("…")
    assert rows[4] == f"✗ error {MODEL}/task-2/0 api_error not passed $0.000125"
    progress.end()
    rows = _screen(buffer).lines()
    # the panel is gone; its last failures and the summary stay
    assert rows[0] == "last 2 of 2 failure(s):"
    assert rows[-1].startswith("trials 4/400 done · 2 running · 2 failed · 8.0/min · $0.0040 spent")
    assert not any(row.startswith(("[", "running:", "✗")) for row in rows)


def test_on_a_terminal_a_long_run_leaves_a_screen_not_a_scroll() -> None:
    buffer, clock = io.StringIO(), FakeClock()
    progress = Progress(console=_console(buffer, terminal=True), clock=clock)
    _simulate(progress, clock, 30, concurrency=8, step_s=0.5, fails_every=7)
    rows = _screen(buffer).lines()
    # 30 trials, 4 failures: the last three failures (broken at the width, none wrapped), their heading and
    # the summary, nothing else
    assert rows[0] == "last 3 of 4 failure(s):" and rows[-1].startswith("trials 30/30 done · 0 running · 4 failed")
    failures = "".join(rows[1:-1])
    assert re.findall(r"/(task-\d+/\d)  api_error", failures) == ["task-13/0", "task-20/0", "task-27/0"], failures
    assert len(rows) == 8 and not any(row.startswith(("[", "running:", "✗")) for row in rows)


def test_the_running_row_names_as_many_as_fit_then_counts_the_rest() -> None:
    clock = FakeClock()
    progress = Progress(io.StringIO(), live=False, clock=clock)
    progress.begin(total=100, already=0, spent=0.0)
    for i in range(9):
        progress.started(f"m/t{i}/0")
        clock.now += 1
    row = progress._running_row(60)
    assert row == "running: m/t0/0 9s, m/t1/0 8s, m/t2/0 7s, m/t3/0 6s +5 more", row
    progress.ended("m/t0/0")
    assert progress._running_row(60).startswith("running: m/t1/0 8s,") and progress.running == 8


@pytest.mark.parametrize(("seconds", "shown"), [(0.4, "0s"), (59, "59s"), (200, "3m20s"), (3720, "1h02m"),
                                                (183_600, "2d03h")])
def test_durations_read_short(seconds: float, shown: str) -> None:
    assert duration(seconds) == shown


def test_the_driver_names_the_running_trials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through a real drive: the panel lists trials by key while they run, and none once they have ended."""

    def trial(spec: TrialSpec, context: object) -> TrialRecords:
        return _records(spec.task_id, spec.index)

    monkeypatch.setattr(local, "run_trial", trial)
    monkeypatch.setattr(driver, "RENDER_MIN_TRIALS", 10**9)  # _Folder renders nothing: no render helper process
    specs = [TrialSpec(plan_json="{}", plan_fingerprint="f" * 64, plan_key=MODEL, task_path="t.yaml", task_text="",
                       task_id="count", task_pack="pack", index=i) for i in range(24)]
    buffer = io.StringIO()
    progress = Progress(console=_console(buffer, terminal=True))
    outcome = drive(specs, _Folder(tmp_path), LocalBackend(), concurrency=2, max_cost=None,  # type: ignore[arg-type]
                    progress=progress)
    assert outcome.finished == 24 and progress.running_since == {} and progress.running == 0
    assert re.search(rf"running: {MODEL}/count/\d+ \d+s", buffer.getvalue())

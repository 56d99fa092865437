"""The task-code runner's own contract: a call's value or failure comes back, a hung call is abandoned and
reported while it runs, a cancelled wait ends at once."""

from __future__ import annotations

import threading
import time

import pytest

from capplan.trials.tasks.task_code import (TaskCodeCancelled, TaskCodeFailed, TaskCodeRunner,
                                            TaskCodeTimedOut)


def test_values_and_failures_come_back_and_the_worker_is_reused() -> None:
    runner = TaskCodeRunner()
    threads = set()
    for n in range(3):
        assert runner.call("add", lambda x: (threads.add(threading.get_ident()), x + 1)[1], n, timeout_s=5) == n + 1
    assert len(threads) == 1
    with pytest.raises(TaskCodeFailed, match="boom raised SystemExit: 3"):
        runner.call("boom", lambda: (_ for _ in ()).throw(SystemExit(3)), timeout_s=5)
    assert runner.call("after", lambda: "ok", timeout_s=5) == "ok"
    runner.close()


def test_a_hung_call_is_abandoned_and_reported_until_it_returns() -> None:
    runner = TaskCodeRunner()
    release = threading.Event()
    with pytest.raises(TaskCodeTimedOut, match="hang timed out after 0.05 s"):
        runner.call("hang", release.wait, 30, timeout_s=0.05)
    assert runner.abandoned_running() == ["hang"]
    assert runner.call("next", lambda: "fresh worker", timeout_s=5) == "fresh worker"
    release.set()
    deadline = time.monotonic() + 60  # bounded; the call returns as soon as it is let go
    while runner.abandoned_running() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert runner.abandoned_running() == []
    runner.close()


def test_a_cancelled_run_stops_waiting_at_once() -> None:
    cancel = threading.Event()
    runner = TaskCodeRunner(cancel=cancel)
    release = threading.Event()
    threading.Timer(0.05, cancel.set).start()
    with pytest.raises(TaskCodeCancelled, match="during hang"):  # the cancel, not the 60 s timeout, ended it
        runner.call("hang", release.wait, 30, timeout_s=60)
    assert runner.abandoned_running() == ["hang"]
    release.set()
    runner.close()

"""The task-code runner's own contract: a call's value or failure comes back, a hung call is abandoned and
reported while it runs, a cancelled wait ends at once, and a closed runner's idle worker serves the next
runner (seam *task-code workers*), never an abandoned one, never in the reference mode or across a fork."""

from __future__ import annotations

import os
import threading
import time

import pytest

from capplan.trials.tasks import task_code
from capplan.trials.tasks.task_code import (TaskCodeCancelled, TaskCodeFailed, TaskCodeRunner,
                                            TaskCodeTimedOut)
from tests.mode_switch import mode


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


def _ident(runner: TaskCodeRunner) -> tuple[int, str]:
    return runner.call("where", lambda: (threading.get_ident(), threading.current_thread().name), timeout_s=5)


@mode(False)
def test_a_closed_runners_worker_serves_the_next_runner_under_its_name() -> None:
    first = TaskCodeRunner(name="task-code one")
    ident, _ = _ident(first)
    first.close()
    second = TaskCodeRunner(name="task-code two")
    assert _ident(second) == (ident, "task-code two-0")
    second.close()


@mode(False)
def test_an_abandoned_worker_is_never_handed_on() -> None:
    runner = TaskCodeRunner()
    release = threading.Event()
    hung: list[int] = []
    with pytest.raises(TaskCodeTimedOut):
        runner.call("hang", lambda: (hung.append(threading.get_ident()), release.wait(30)), timeout_s=0.05)
    fresh, _ = _ident(runner)
    runner.close()
    deadline = time.monotonic() + 60  # the abandoned call may start only now on a loaded machine
    while not hung and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        idle = {worker.thread.ident for worker in task_code._idle}
        assert fresh in idle and hung and hung[0] not in idle
        later = TaskCodeRunner()
        assert _ident(later)[0] == fresh
        later.close()
    finally:
        release.set()


@mode(True)
def test_the_reference_mode_starts_a_thread_for_every_runner() -> None:
    first = TaskCodeRunner()
    ident, _ = _ident(first)
    first.close()
    second = TaskCodeRunner()
    assert _ident(second)[0] != ident
    second.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks")
@mode(False)
def test_a_forked_child_starts_its_own_worker() -> None:
    runner = TaskCodeRunner()
    _ident(runner)
    runner.close()
    assert task_code._idle  # the parent keeps one idle; its thread does not exist in a child
    pid = os.fork()
    if pid == 0:  # the child: a parent's idle worker would never take the job, and the call would time out
        try:
            child = TaskCodeRunner()
            ok = not task_code._idle and child.call("in the child", lambda: "ran", timeout_s=5) == "ran"
        except BaseException:  # noqa: BLE001 - whatever happens, the child must exit here
            ok = False
        os._exit(0 if ok else 1)
    deadline = time.monotonic() + 60
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    if not done:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    assert done and os.waitstatus_to_exitcode(status) == 0


@mode(False)
def test_stopping_the_idle_workers_ends_their_threads() -> None:
    runner = TaskCodeRunner()
    runner.call("start", lambda: None, timeout_s=5)
    worker = runner._worker
    runner.close()
    assert worker is not None and worker in task_code._idle
    task_code.stop_idle_workers()
    assert task_code._idle == [] and not worker.thread.is_alive()

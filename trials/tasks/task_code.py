"""Running task code (environment construction and setup, tools, state, graders) contained.

Task code is whatever a task file names; it may raise anything (``SystemExit`` and
``KeyboardInterrupt`` included), return values nothing can print, or never return. Every call
into it goes through one :class:`TaskCodeRunner` per trial, which runs it on a daemon worker
thread of its own and waits with a timeout:

- whatever the call raises -- ``BaseException`` included -- comes back as :class:`TaskCodeFailed`
  carrying the exception's class name and message, never as the exception itself, so nothing
  task code raises can end the trial's thread, the run, or the process. Because task code never
  runs on the main thread, a ``KeyboardInterrupt`` it raises is always its own, never Ctrl-C;
- a call still running after its timeout raises :class:`TaskCodeTimedOut`; the worker is
  abandoned (a thread cannot be killed) and the next call starts on a fresh worker. The
  abandoned call keeps running on the same environment objects, alone, until it returns; its
  late result is discarded. :meth:`TaskCodeRunner.abandoned_running` says which abandoned
  calls are still running, so the trial can record them when it ends;
- while waiting, the trial's cancel event is checked a few times a second: when the run is
  interrupted, the wait stops with :class:`TaskCodeCancelled` at once, so a hung tool never
  holds a Ctrl-C'd run (the workers are daemon threads: the process exits without them).

A runner that closes hands its worker, idle, to the next runner in the process (seam *task-code
workers*): starting a thread cost about 0.16 ms of CPU per trial here, and a run of six-turn
trials at concurrency 1 took about 7% less CPU per turn without it (``benchmarks/trial_loop.py``'s
workload). A worker that was abandoned is never handed on, and
at most :data:`IDLE_WORKERS` wait. Task code that keeps something per thread (a
``threading.local``, a context variable it set) may therefore meet it again in a later trial, as
it meets its module globals; the reference mode starts a thread for every runner. A run stops
the idle workers as it ends (:func:`stop_idle_workers`).
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from capplan.core.reference_mode import reference_mode

T = TypeVar("T")

#: Seconds one call of a tool (or construction, setup, state, a grader) may take when neither the
#: task nor the tool says: long enough for any honest in-process tool, short enough that a hung
#: one costs a trial a minute, not the run.
DEFAULT_TIMEOUT_S = 60.0
#: How often a waiting trial looks at its cancel event (seconds).
CANCEL_POLL_S = 0.1


class TaskCodeFailed(Exception):
    """Task code raised; ``kind`` is the exception's class name, ``message`` its text."""

    def __init__(self, what: str, kind: str, message: str) -> None:
        super().__init__(f"{what} raised {kind}: {message}" if message else f"{what} raised {kind}")
        self.what = what
        self.kind = kind
        self.message = message


class TaskCodeTimedOut(Exception):
    """Task code did not return within its timeout (it is left running on an abandoned worker)."""

    def __init__(self, what: str, timeout_s: float) -> None:
        super().__init__(f"{what} timed out after {format_seconds(timeout_s)} s")
        self.what = what
        self.timeout_s = timeout_s


class TaskCodeCancelled(Exception):
    """The run was interrupted while task code was running."""


def format_seconds(seconds: float) -> str:
    """``60`` for 60.0, ``0.5`` for 0.5: how a timeout is written in results and records."""
    return f"{seconds:g}"


def _held_lock() -> threading.Lock:
    lock = threading.Lock()
    lock.acquire()
    return lock


@dataclass
class _Job:
    what: str
    function: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    #: held until the call returns: the worker releases it once, the waiting trial acquires it (a bare lock, not
    #: an Event, whose Condition makes and waits on one more lock per wait: every tool call waits here)
    done: threading.Lock = field(default_factory=_held_lock)
    finished: bool = False
    value: Any = None
    failure: tuple[str, str] | None = None


class _Worker:
    """One daemon thread taking jobs until told to stop or abandoned mid-job."""

    def __init__(self, name: str) -> None:
        self.jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.current: _Job | None = None
        self.thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            job = self.jobs.get()
            if job is None:
                return
            self.current = job
            try:
                job.value = job.function(*job.args, **job.kwargs)
            except BaseException as exc:  # task code: SystemExit, KeyboardInterrupt, GeneratorExit included
                job.failure = (type(exc).__name__, _message(exc))
            finally:
                job.finished = True
                job.done.release()
            self.current = None


def _message(exc: BaseException) -> str:
    """``str(exc)``, which is task code too: it may raise or be huge."""
    try:
        return str(exc)[:2000]
    except BaseException as inner:  # noqa: BLE001 - a broken __str__ is still a failure to report
        return f"<the exception's message could not be read: {type(inner).__name__}>"


#: idle workers kept for the runners to come (one waits between a trial's end and the next trial's start)
IDLE_WORKERS = 64
#: how long :func:`stop_idle_workers` waits, in all, for their threads to end
IDLE_STOP_S = 5.0
_idle: list[_Worker] = []
_idle_lock = threading.Lock()
# a forked child has none of its parent's threads: the workers listed would never take a job
os.register_at_fork(after_in_child=_idle.clear)


def stop_idle_workers() -> None:
    """Stop the idle workers and wait for their threads to end (idle, they end at once; the wait is bounded).

    A run calls it as it ends, so it leaves no thread of its own behind; so does a driver about to
    fork its worker processes, which it may do only while it runs one thread.
    """
    with _idle_lock:
        idle = list(_idle)
        _idle.clear()
    for worker in idle:
        worker.jobs.put(None)
    deadline = time.monotonic() + IDLE_STOP_S
    for worker in idle:
        worker.thread.join(max(0.0, deadline - time.monotonic()))


def _worker(name: str) -> _Worker:
    """An idle worker handed on by a runner that closed, renamed ``name``, or a new one."""
    if not reference_mode():
        with _idle_lock:
            worker = _idle.pop() if _idle else None
        if worker is not None:
            worker.thread.name = name
            return worker
    return _Worker(name)


def _hand_on(worker: _Worker) -> None:
    """``worker`` is idle and its runner closed: kept for the next runner, or stopped."""
    if not reference_mode():
        with _idle_lock:
            if len(_idle) < IDLE_WORKERS:
                _idle.append(worker)
                return
    worker.jobs.put(None)


class TaskCodeRunner:
    """Calls into one trial's task code on an abandonable worker (see the module docstring)."""

    def __init__(self, *, cancel: threading.Event | None = None, name: str = "task-code") -> None:
        self.cancel = cancel
        self.name = name
        self._worker: _Worker | None = None
        self._abandoned: list[tuple[_Worker, _Job]] = []

    def call(self, what: str, function: Callable[..., T], *args: Any, timeout_s: float, **kwargs: Any) -> T:
        """``function(*args, **kwargs)`` on the worker; ``what`` names the call in errors.

        Raises :class:`TaskCodeFailed`, :class:`TaskCodeTimedOut` or :class:`TaskCodeCancelled`,
        nothing else.
        """
        if self._worker is None:
            self._worker = _worker(f"{self.name}-{len(self._abandoned)}")
        worker = self._worker
        job = _Job(what, function, args, kwargs)
        worker.jobs.put(job)
        if not self._wait(job, timeout_s):
            # the worker is stuck in task code: leave it there, the next call gets a fresh one
            worker.jobs.put(None)  # it stops once (if ever) the call returns
            self._abandoned.append((worker, job))
            self._worker = None
            if self.cancel is not None and self.cancel.is_set():
                raise TaskCodeCancelled(f"the run was interrupted during {what}")
            raise TaskCodeTimedOut(what, timeout_s)
        if job.failure is not None:
            raise TaskCodeFailed(what, *job.failure)
        value: T = job.value
        return value

    def _wait(self, job: _Job, timeout_s: float) -> bool:
        """Whether the job finished in time; False on timeout or cancel."""
        if self.cancel is None:
            return job.done.acquire(timeout=timeout_s) or job.finished
        deadline = time.monotonic() + timeout_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return job.finished
            if job.done.acquire(timeout=min(CANCEL_POLL_S, remaining)):
                return True
            if self.cancel.is_set():
                return False

    def abandoned_running(self) -> list[str]:
        """What the calls that timed out and are still running were (``what`` of each), oldest first."""
        return [job.what for _, job in self._abandoned if not job.finished]

    def close(self) -> None:
        """Hand the live worker on, idle (abandoned ones stop on their own when their call returns)."""
        if self._worker is not None:
            _hand_on(self._worker)
            self._worker = None

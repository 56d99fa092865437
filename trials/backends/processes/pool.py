"""The driver's side of ``--workers N``: worker processes started, fed, journalled, restarted and stopped.

The driver's thread runs the scheduling loop (:meth:`ProcessPool.run`): a spec is pulled only when
a worker has a free slot (the least loaded worker gets it), so the budget stop still works by ending
the feed. One reader thread per worker handles what the worker sends: each send is journalled (and
reserved against ``--max-cost``) and answered before the worker lets it out, each call is appended
to ``calls.jsonl`` as it arrives, and a finished trial's records go to the loop through one queue,
after its calls (one socket keeps them in order).
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import capplan
from capplan.core.errors import ExitCode, UserError
from capplan.trials.backends.processes.channel import Channel
from capplan.trials.outcome import TerminationReason
from capplan.trials.run_folder.budget import BudgetSpent
from capplan.trials.run_folder.call_journal import CallJournal
from capplan.trials.run_folder.confined import ConfinedPathError
from capplan.trials.runner import unstarted_records
from capplan.trials.spec import TrialRecords, TrialSpec

#: how long the loop waits for any event before looking at the stop event again
_POLL_S = 0.2
#: a trial whose worker died this many times is recorded aborted (infra_error) instead of run again
MAX_LOST_ATTEMPTS = 3
#: how long a finished run waits for a worker to exit once its socket is closed, before killing it
_EXIT_S = 10.0


class WorkerStartError(UserError):
    """A worker process exited before it could take a trial (its own error is on stderr above)."""

    code = "WORKERS"
    exit_code = ExitCode.FINDINGS


@dataclass
class ProcessRunStats:
    """What the pool did, for the run's closing lines."""

    workers: int = 0
    lost_attempts: int = 0
    restarts: int = 0
    pids: list[int] = field(default_factory=list)
    #: seconds from the run's start until its first workers were all ready to take trials (None: some never were)
    start_s: float | None = None

    def report(self) -> list[str]:
        started = f"{self.start_s:.1f} s to start" if self.start_s is not None else "not all started"
        return [f"local: {self.workers} worker process(es), {started}; worker restarts: {self.restarts}; "
                f"lost attempts rerun: {self.lost_attempts}"]


@dataclass
class _Attempt:
    spec: TrialSpec
    worker: int
    execution: str  # "" when no journal is attached


class _Process:
    """One incarnation of worker ``index``: its process, its channel and the thread reading it."""

    def __init__(self, index: int, popen: subprocess.Popen[bytes], channel: Channel) -> None:
        self.index = index
        self.popen = popen
        self.channel = channel
        self.ready = False
        self.ready_at: float | None = None  # perf_counter() when its "ready" arrived
        self.load = 0
        self.reader: threading.Thread | None = None


@dataclass(frozen=True)
class PoolOptions:
    """How each worker is started: trial threads each, what its sends wait for, its sender."""

    workers: int
    slots: int
    journal: CallJournal | None
    #: ``module:attr`` of a callable from a plan to its completion (the benchmark's floor sender)
    completion_factory: str | None = None


class ProcessPool:
    """One run's worker processes; :meth:`run` is the backend's ``run`` for ``workers > 1``."""

    def __init__(self, options: PoolOptions, stats: ProcessRunStats) -> None:
        self.options = options
        self.journal = options.journal
        self.stats = stats
        self.stats.workers = options.workers
        self.events: queue.Queue[tuple[Any, ...]] = queue.Queue()
        self.processes: list[_Process] = []
        self.first: list[_Process] = []
        self.in_flight: dict[int, _Attempt] = {}
        self.lost: Counter[str] = Counter()
        self.retry: deque[TrialSpec] = deque()
        self.stop = threading.Event()  # the run's, from run()
        self._tokens = itertools.count(1)

    def run(self, specs: Iterator[TrialSpec], *, concurrency: int, stop: threading.Event) -> Iterator[TrialRecords]:
        exhausted = stopping = killed = False
        self.stop = stop
        began = time.perf_counter()
        try:
            for index in range(self.options.workers):
                self.processes.append(self._start(index))
            self.first = list(self.processes)  # the incarnations the start-up time is measured on
            while True:
                if stop.is_set() and not stopping:
                    stopping = True
                    self._broadcast(("stop",))
                while not stopping and len(self.in_flight) < concurrency and (worker := self._free()) is not None:
                    spec = self.retry.popleft() if self.retry else None
                    if spec is None and not exhausted:
                        spec = next(specs, None)
                        exhausted = spec is None
                    if spec is None:
                        break
                    self._submit(spec, worker)
                if not self.in_flight and (stopping or exhausted and not self.retry):
                    return
                try:
                    event = self.events.get(timeout=_POLL_S)
                except queue.Empty:
                    continue
                yield from self._handle(event, stopping)
        except KeyboardInterrupt:
            # a second Ctrl-C ends the run now: running trials are left behind (the driver records them unfinished)
            killed = True
            raise
        finally:
            self._shutdown(kill=killed)
            self.stats.start_s = self._start_s(began)

    def _start_s(self, began: float) -> float | None:
        ready = [at for p in self.first for at in [p.ready_at] if at is not None]
        return max(ready) - began if self.first and len(ready) == len(self.first) else None

    # -- workers --------------------------------------------------------------------------

    def _start(self, index: int) -> _Process:
        ours, theirs = socket.socketpair()
        journal = self.journal
        mode = "none" if journal is None else "budget" if journal.budget is not None else "journal"
        argv = [sys.executable, "-m", "capplan.trials.backends.processes.worker", str(theirs.fileno()),
                str(self.options.slots), mode]
        if self.options.completion_factory is not None:
            argv.append(self.options.completion_factory)
        # the child imports capplan from where this process did, whatever its working directory
        root = str(Path(capplan.__file__).resolve().parent.parent)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        try:
            # its own session: a Ctrl-C at the terminal reaches only the driver, which stops the run
            popen = subprocess.Popen(argv, pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, env=env,
                                     start_new_session=True)
        finally:
            theirs.close()
        process = _Process(index, popen, Channel(ours))
        process.reader = threading.Thread(target=self._read, args=(process,), name=f"capplan-worker-{index}",
                                          daemon=True)
        process.reader.start()
        self.stats.pids.append(popen.pid)
        return process

    def _free(self) -> int | None:
        best = min(self.processes, key=lambda p: p.load)
        return best.index if best.load < self.options.slots else None

    def _submit(self, spec: TrialSpec, worker: int) -> None:
        token = next(self._tokens)
        execution = self.journal.begin_execution(str(spec.key)) if self.journal is not None else ""
        self.in_flight[token] = _Attempt(spec, worker, execution)
        process = self.processes[worker]
        process.load += 1
        try:
            process.channel.send(("run", token, spec, execution))
        except OSError:
            pass  # it died: its reader reports that, and this attempt is lost with the others it held

    def _broadcast(self, message: tuple[Any, ...]) -> None:
        for process in self.processes:
            try:
                process.channel.send(message)
            except OSError:
                pass  # a dead worker has nothing running to stop

    # -- what the workers send, on each one's reader thread ------------------------------

    def _read(self, process: _Process) -> None:
        try:
            while True:
                try:
                    message = process.channel.recv()
                except (EOFError, OSError):
                    break
                kind = message[0]
                if kind == "send":
                    self._journal_send(process, message)
                elif kind == "call":
                    self._journal_call(message)
                elif kind == "ready":
                    process.ready_at = time.perf_counter()
                    process.ready = True
                else:  # done, failed: the loop's
                    self.events.put((kind, process, *message[1:]))
        except BaseException as exc:  # a defect here must stop the run, not hang it
            self.events.put(("broken", process, exc))
        self.events.put(("died", process))

    def _journal_send(self, process: _Process, message: tuple[Any, ...]) -> None:
        _, token, role, turn, request_id, attempt, worst = message
        answer: tuple[Any, ...] = ("granted", request_id)
        if self.stop.is_set():
            # as a trial thread here would see the stop event before its next turn: a send after the stop is
            # never made, however late the worker hears of it
            answer = ("stopped", request_id)
        elif self.journal is not None:
            trial = self.in_flight[token]
            try:
                self.journal.announce(str(trial.spec.key), trial.execution, role, turn, request_id, attempt, worst)
            except BudgetSpent as spent:
                answer = ("refused", request_id, spent.committed, spent.budget)
            except ConfinedPathError:
                pass  # kept as journal.failure; the driver stops the run with it
        try:
            process.channel.send(answer)
        except OSError:
            pass  # it died waiting: the reader sees its end next

    def _journal_call(self, message: tuple[Any, ...]) -> None:
        _, token, call, request_id = message
        if self.journal is not None:
            trial = self.in_flight[token]
            try:
                self.journal.record(str(trial.spec.key), trial.execution, call, request_id)
            except ConfinedPathError:
                pass  # kept as journal.failure; the driver stops the run with it

    # -- the loop's events ---------------------------------------------------------------

    def _handle(self, event: tuple[Any, ...], stopping: bool) -> Iterator[TrialRecords]:
        kind, process = event[0], event[1]
        if kind == "done":
            del self.in_flight[event[2]]
            process.load -= 1
            records: TrialRecords = event[3]
            lost = self.lost.pop(str(records.key), 0)
            yield records if not lost else _with_lost(records, lost)
        elif kind == "failed":
            trial = self.in_flight[event[2]]
            raise RuntimeError(f"trial {trial.spec.key} raised in worker process {process.popen.pid}: {event[3]}")
        elif kind == "broken":
            raise event[2]
        elif kind == "died" and self.processes[process.index] is process:
            yield from self._died(process, stopping)

    def _died(self, process: _Process, stopping: bool) -> Iterator[TrialRecords]:
        code = process.popen.wait()
        process.channel.close()
        if not process.ready:
            raise WorkerStartError(
                f"worker process {process.index} (pid {process.popen.pid}) exited with status {code} before it "
                "was ready; its error is printed above",
                hint="fix what it reports, or run the trials in this process with --workers 1")
        lost = [(token, trial) for token, trial in self.in_flight.items() if trial.worker == process.index]
        for token, trial in lost:
            del self.in_flight[token]
            key = str(trial.spec.key)
            if self.journal is not None:
                self.journal.lost(key)  # its calls stay in the journal, counted as died in flight
            self.lost[key] += 1
            self.stats.lost_attempts += 1
            if self.lost[key] >= MAX_LOST_ATTEMPTS:
                records = unstarted_records(
                    trial.spec, TerminationReason.INFRA_ERROR,
                    f"its worker process died {self.lost[key]} times while running it (last exit status {code})")
                yield _with_lost(records, self.lost.pop(key))
            elif not stopping:
                self.retry.append(trial.spec)
        if not stopping:
            self.stats.restarts += 1
            self.processes[process.index] = self._start(process.index)

    def _shutdown(self, *, kill: bool) -> None:
        for process in self.processes:
            if kill:
                process.popen.kill()
            else:
                process.channel.finish()  # the worker sees its input end and exits
        for process in self.processes:
            try:
                process.popen.wait(timeout=_EXIT_S)
            except subprocess.TimeoutExpired:
                process.popen.kill()
                process.popen.wait()
            if process.reader is not None:
                process.reader.join(timeout=_EXIT_S)
            process.channel.close()


def _with_lost(records: TrialRecords, lost: int) -> TrialRecords:
    return dataclasses.replace(records, metrics={**records.metrics, "lost_attempts": lost})

"""The driver's side of ``--workers N``: worker processes started, fed, journalled, restarted and stopped.

The driver's thread runs the scheduling loop (:meth:`ProcessPool.run`): a spec is pulled only when
a worker has a free slot (the least loaded worker gets it), so the budget stop still works by ending
the feed. One reader thread per worker handles what the worker sends: each send is journalled (and
reserved against ``--max-cost``) and answered before the worker lets it out, each call is appended
to ``calls.jsonl`` (the worker assembles both lines: seam *journal lines*), and a finished trial's
records go to the loop through one queue, after its calls (one socket keeps them in order). The
messages one receive brought are taken together: their lines go to the journal in one append, then
their sends' answers in one send, before the reader waits again or hands a trial's records on (seam
*reader batches*).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import queue
import socket
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from capplan.core.errors import ExitCode, UserError
from capplan.trials.backends.feed import Feed
from capplan.trials.backends.processes import spawn
from capplan.trials.backends.processes.channel import Channel
from capplan.trials.backends.processes.spawn import WorkerProcess
from capplan.trials.outcome import TerminationReason
from capplan.trials.run_folder.budget import BudgetSpent
from capplan.trials.run_folder.call_journal import CallJournal
from capplan.trials.run_folder.confined import ConfinedPathError
from capplan.trials.run_folder.journal_lines import LineHead
from capplan.trials.run_folder.recording import redact_records
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
    #: seconds from their start until the first workers were all ready to take trials (None: some never were)
    start_s: float | None = None
    #: whether the first workers were forks of the driver (else fresh interpreters: see ``spawn``)
    forked: bool = False

    def report(self) -> list[str]:
        how = "forked" if self.forked else "started"
        started = f"{how} in {self.start_s:.1f} s" if self.start_s is not None else "not all started"
        return [f"local: {self.workers} worker process(es), {started}; worker restarts: {self.restarts}; "
                f"lost attempts rerun: {self.lost_attempts}"]


@dataclass
class _Attempt:
    spec: TrialSpec
    worker: int
    head: LineHead | None  # its journal lines' head (None when no journal is attached)


class _Process:
    """One incarnation of worker ``index``: its process, its channel and the thread reading it."""

    def __init__(self, index: int, popen: WorkerProcess, channel: Channel) -> None:
        self.index = index
        self.popen = popen
        self.channel = channel
        self.ready = False
        self.ready_at: float | None = None  # perf_counter() when its "ready" arrived
        self.load = 0
        self.reader: threading.Thread | None = None


@dataclass(frozen=True)
class PoolOptions:
    """How many workers, what their sends wait for, their sender."""

    workers: int
    journal: CallJournal | None
    #: ``module:attr`` of a callable from a plan to its completion (the benchmark's floor sender)
    completion_factory: str | None = None


class ProcessPool:
    """One run's worker processes; :meth:`run` is the backend's ``run`` for ``workers > 1``."""

    def __init__(self, options: PoolOptions, stats: ProcessRunStats) -> None:
        """Nothing starts until :meth:`start`."""
        self.options = options
        self.journal = options.journal
        self.stats = stats
        self.stats.workers = options.workers
        self.events: queue.Queue[tuple[Any, ...]] = queue.Queue()
        self.processes: list[_Process] = []
        self.first: list[_Process] = []
        self.retired: list[_Process] = []  # started, then not needed at the run's concurrency
        self.slots = 1
        self._began = time.perf_counter()
        self.in_flight: dict[int, _Attempt] = {}
        self.lost: Counter[str] = Counter()
        self.feed = Feed(iter(()))  # the run's, from run()
        self.stop = threading.Event()  # the run's, from run()
        self._tokens = itertools.count(1)

    @property
    def mode(self) -> str:
        """What the workers' sends wait for (:data:`capplan.trials.backends.processes.worker.MODES`)."""
        journal = self.journal
        return "none" if journal is None else "budget" if journal.budget is not None else "journal"

    def start(self) -> None:
        """Start every worker (the backend's ``prepare``: forked, while this process runs one thread)."""
        self._began = time.perf_counter()
        started = spawn.start_workers(self.options.workers, self.mode, self.options.completion_factory)
        self.stats.forked = all(isinstance(process, spawn.Forked) for process, _ in started)
        # their readers only now: a thread running here before the last fork would make forking unsafe
        self.processes = [self._adopt(index, process, ours) for index, (process, ours) in enumerate(started)]
        self.first = list(self.processes)  # the incarnations the start-up time is measured on

    def run(self, specs: Iterator[TrialSpec], *, concurrency: int, stop: threading.Event) -> Iterator[TrialRecords]:
        stopping = killed = False
        feed = self.feed = Feed(specs)
        self.stop = stop
        try:
            self._configure(concurrency)
            while True:
                if stop.is_set() and not stopping:
                    stopping = True
                    self._broadcast(("stop",))
                if not stopping:
                    feed.fill(lambda: self._free() if len(self.in_flight) < concurrency else None, self._submit)
                if not self.in_flight and (stopping or feed.done):
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
            self.close(kill=killed)

    def _configure(self, concurrency: int) -> None:
        """Size the workers for ``concurrency`` trials in flight: the ones beyond it go, the rest get their slots."""
        keep = max(1, min(len(self.processes), concurrency))
        for process in self.processes[keep:]:
            self.retired.append(process)
            process.channel.finish()
        self.processes = self.processes[:keep]
        self.stats.workers = keep
        self.slots = math.ceil(concurrency / keep)
        self._broadcast(("config", self.slots))

    def _start_s(self) -> float | None:
        ready = [at for p in self.first for at in [p.ready_at] if at is not None]
        return max(ready) - self._began if self.first and len(ready) == len(self.first) else None

    # -- workers --------------------------------------------------------------------------

    def _adopt(self, index: int, process: WorkerProcess, ours: socket.socket) -> _Process:
        adopted = _Process(index, process, Channel(ours))
        adopted.reader = threading.Thread(target=self._read, args=(adopted,), name=f"capplan-worker-{index}",
                                          daemon=True)
        adopted.reader.start()
        self.stats.pids.append(process.pid)
        return adopted

    def _restart(self, index: int) -> _Process:
        """A fresh interpreter for worker ``index`` (this process runs threads now: no fork)."""
        process, ours = spawn.start_worker(self.mode, self.options.completion_factory)
        restarted = self._adopt(index, process, ours)
        restarted.channel.send(("config", self.slots))
        return restarted

    def _free(self) -> int | None:
        best = min(self.processes, key=lambda p: p.load)
        return best.index if best.load < self.slots else None

    def _submit(self, spec: TrialSpec, worker: int) -> None:
        token = next(self._tokens)
        head: LineHead | None = None
        if self.journal is not None:
            key = str(spec.key)
            head = self.journal.line_head(key, self.journal.begin_execution(key))
        self.in_flight[token] = _Attempt(spec, worker, head)
        process = self.processes[worker]
        process.load += 1
        try:
            process.channel.send(("run", token, spec, head))
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
        # every message one receive brought is taken before the lines they make are written (one append) and
        # their sends answered (one send): seam *reader batches*, the journal's hold (the reference mode: each
        # line written and each send answered as its message is taken)
        if self.journal is not None:
            self.journal.hold()
        answers: list[tuple[Any, ...]] = []
        try:
            while True:
                if not process.channel.has_message():  # the next receive may wait: nothing is kept back over it
                    self._settle(process, answers)
                try:
                    message = process.channel.recv()
                except (EOFError, OSError):
                    break
                kind = message[0]
                if kind == "send":
                    answers.append(self._journal_send(message))
                elif kind == "call":
                    self._journal_call(message)
                elif kind == "ready":
                    process.ready_at = time.perf_counter()
                    process.ready = True
                else:  # done, failed: the loop's, once the trial's calls are in the journal
                    self._settle(process, answers)
                    self.events.put((kind, process, *message[1:]))
            self._settle(process, answers)  # the calls of a worker that died: its sends need no answer
        except BaseException as exc:  # a defect here must stop the run, not hang it
            try:
                self._settle(process, [])  # what the messages taken so far journal is written, if it can be
            except BaseException:  # the defect above is what stops the run
                pass
            self.events.put(("broken", process, exc))
        self.events.put(("died", process))

    def _settle(self, process: _Process, answers: list[tuple[Any, ...]]) -> None:
        """Write the lines this reader holds, then send the answers to the sends they journal (emptied)."""
        if self.journal is not None:
            try:
                self.journal.flush()
            except ConfinedPathError:
                pass  # kept as journal.failure; the driver stops the run with it
        if not answers:
            return
        try:
            process.channel.send_many(answers)
        except OSError:
            pass  # it died waiting: the reader sees its end next
        finally:
            answers.clear()

    def _journal_send(self, message: tuple[Any, ...]) -> tuple[Any, ...]:
        """The answer to a worker's send, its line (assembled by the worker) journalled (held until the reader settles)."""
        _, token, role, request_id, worst, line = message
        answer: tuple[Any, ...] = ("granted", request_id)
        if self.stop.is_set():
            # as a trial thread here would see the stop event before its next turn: a send after the stop is
            # never made, however late the worker hears of it
            answer = ("stopped", request_id)
        elif self.journal is not None and (head := self.in_flight[token].head) is not None:
            try:
                self.journal.announce_line(head, role, request_id, worst, line)
            except BudgetSpent as spent:
                answer = ("refused", request_id, spent.committed, spent.budget)
            except ConfinedPathError:
                pass  # kept as journal.failure; the driver stops the run with it
        return answer

    def _journal_call(self, message: tuple[Any, ...]) -> None:
        _, token, call, at, line, cost_usd, answered, request_id = message
        if self.journal is not None and (head := self.in_flight[token].head) is not None:
            try:
                self.journal.record_line(head, at, call, line, cost_usd, answered, request_id)
            except ConfinedPathError:
                pass  # kept as journal.failure; the driver stops the run with it

    # -- the loop's events ---------------------------------------------------------------

    def _handle(self, event: tuple[Any, ...], stopping: bool) -> Iterator[TrialRecords]:
        kind, process = event[0], event[1]
        if kind == "done":
            del self.in_flight[event[2]]
            process.load -= 1
            # the worker scrubbed them against what it knows; this process's clients may know more
            records: TrialRecords = redact_records(event[3], texts=event[4])
            lost = self.lost.pop(str(records.key), 0)
            yield records if not lost else _with_lost(records, lost)
        elif kind == "failed":
            trial = self.in_flight[event[2]]
            raise RuntimeError(f"trial {trial.spec.key} raised in worker process {process.popen.pid}: {event[3]}")
        elif kind == "broken":
            raise event[2]
        elif kind == "died" and process.index < len(self.processes) and self.processes[process.index] is process:
            yield from self._died(process, stopping)

    def _died(self, process: _Process, stopping: bool) -> Iterator[TrialRecords]:
        try:
            code = process.popen.wait(timeout=_EXIT_S)  # its socket closed: it is exiting
        except subprocess.TimeoutExpired:
            process.popen.kill()
            code = process.popen.wait(timeout=_EXIT_S)
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
                self.feed.retry.append(trial.spec)
        if not stopping:
            self.stats.restarts += 1
            self.processes[process.index] = self._restart(process.index)

    def close(self, *, kill: bool = False) -> None:
        """End every worker: told to finish (it exits when its socket closes), killed if it does not, or at once."""
        everyone = [*self.processes, *self.retired]
        for process in everyone:
            if kill:
                process.popen.kill()
            else:
                process.channel.finish()  # the worker sees its input end and exits
        for process in everyone:
            try:
                process.popen.wait(timeout=_EXIT_S)
            except subprocess.TimeoutExpired:
                process.popen.kill()
                process.popen.wait(timeout=_EXIT_S)
            if process.reader is not None:
                process.reader.join(timeout=_EXIT_S)
            process.channel.close()
        self.stats.start_s = self._start_s()
        self.processes, self.retired = [], []


def _with_lost(records: TrialRecords, lost: int) -> TrialRecords:
    return dataclasses.replace(records, metrics={**records.metrics, "lost_attempts": lost})

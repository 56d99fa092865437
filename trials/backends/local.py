"""The default backend: trials on threads, in this process or in worker processes of this machine.

Threads, because a trial spends its time waiting on the provider; one client per plan is
shared by all of that plan's trials (``RunContext`` caches it). The stop event is the
context's cancel event, so running trials end at their next turn boundary as
``interrupted``. Records leave with every credential value this process knows replaced.
With a call journal attached (the driver attaches the run folder's), each trial runs with its
own execution of it, so each provider call is in ``calls.jsonl`` as it returns.

``workers``: how many processes run the threads. One process's turns share one interpreter lock,
so past a few hundred turns a second the CPU of one core, not the provider, sets the pace; with
``workers > 1`` the trials run in that many worker processes (:mod:`.processes`) and this one only
feeds them, journals their calls and hands their records to the driver. ``workers=None`` (``trial
run``'s default) is one per core this process may use; the count is capped by the trials in flight
and the trials to run; the reference mode (``CAPPLAN_REFERENCE=1``) defaults to one. A ``RunContext``
given by the caller (a test's fake sender) lives in this process, so it runs the trials here.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from capplan.core.reference_mode import reference_mode
from capplan.trials.backends.processes.pool import PoolOptions, ProcessPool, ProcessRunStats
from capplan.trials.run_folder.call_journal import CallJournal, CallLog, journalled
from capplan.trials.run_folder.recording import redact_records
from capplan.trials.runner import RunContext, run_trial
from capplan.trials.spec import TrialRecords, TrialSpec
from capplan.trials.tasks.task_code import stop_idle_workers


class LocalBackend:
    """Runs up to ``concurrency`` trials at once in threads, of this process or of ``workers`` processes."""

    name = "local"

    def __init__(self, context: RunContext | None = None, *, workers: int | None = 1,
                 completion_factory: str | None = None) -> None:
        """``workers`` None: one per usable core (``trial run``'s default; see the module docstring). ``completion_factory``:
        ``module:attr`` of a callable from a plan to its completion function, imported by each worker
        process (the benchmark's floor sender; ``context`` is the in-process equivalent)."""
        self.context = context
        self.workers = workers
        self.completion_factory = completion_factory
        self.journal: CallJournal | None = None
        self._pool: ProcessPool | None = None
        #: the worker processes' figures, for the run's closing lines (None: the trials ran in this process)
        self.stats: ProcessRunStats | None = None

    def attach_journal(self, journal: CallJournal | None) -> None:
        """Where the trials' calls are journalled from now on (None: nowhere)."""
        self.journal = journal

    def prepare(self, specs: Sequence[TrialSpec], *, concurrency: int | None = None) -> None:
        """Start the worker processes, if the run gets more than one (before the run starts any thread:
        they can then be forks of this process, see :mod:`.processes.spawn`)."""
        self.close()
        workers = self.worker_count(min(len(specs), concurrency or len(specs)))
        if workers > 1:
            # one for the whole command: a resampling round's losses and restarts add to the first round's
            self.stats = self.stats or ProcessRunStats()
            self._pool = ProcessPool(PoolOptions(workers=workers, journal=self.journal,
                                                 completion_factory=self.completion_factory), self.stats)
            self._pool.start()

    def worker_count(self, trials: int) -> int:
        """The processes a run with ``trials`` trials in flight at most gets: 1 means this one."""
        if self.context is not None:
            return 1
        if self.workers is None and reference_mode():
            return 1  # worker processes only save time: the plain path runs the trials here unless asked
        wanted = self.workers if self.workers is not None else usable_cores()
        return max(1, min(wanted, trials))

    def run(self, specs: Iterable[TrialSpec], *, concurrency: int, stop: threading.Event) -> Iterator[TrialRecords]:
        pool, self._pool = self._pool, None
        if pool is None:
            yield from self._run_here(specs, concurrency=concurrency, stop=stop)
            return
        yield from pool.run(iter(specs), concurrency=concurrency, stop=stop)

    def close(self) -> None:
        """End workers a ``prepare`` started for a run that never ran (a run ends its own)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def _run_here(self, specs: Iterable[TrialSpec], *, concurrency: int,
                  stop: threading.Event) -> Iterator[TrialRecords]:
        context = self.context or RunContext()
        context.cancel = stop
        pending = iter(specs)
        running = 0
        # each trial's future lands here as it finishes: taking the next one costs the same however many run
        finished: queue.SimpleQueue[Future[TrialRecords]] = queue.SimpleQueue()
        pool = ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="trial")
        wait_for_trials = True
        try:
            exhausted = False
            while True:
                while not exhausted and not stop.is_set() and running < concurrency:
                    spec = next(pending, None)
                    if spec is None:
                        exhausted = True
                        break
                    log = self.journal.begin(str(spec.key)) if self.journal is not None else None
                    pool.submit(_run_journalled, spec, context, log).add_done_callback(finished.put)
                    running += 1
                if not running:
                    return
                for future in _take_finished(finished):
                    running -= 1
                    yield redact_records(future.result())
        except KeyboardInterrupt:
            # a second Ctrl-C ends the run now: running trials are left behind (the driver records them unfinished)
            wait_for_trials = False
            raise
        finally:
            pool.shutdown(wait=wait_for_trials, cancel_futures=not wait_for_trials)
            stop_idle_workers()  # the trials' task-code workers, kept from one trial to the next


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, where the system has one), at least 1."""
    affinity = getattr(os, "sched_getaffinity", None)
    return max(1, len(affinity(0)) if affinity is not None else os.cpu_count() or 1)


def _run_journalled(spec: TrialSpec, context: RunContext, log: CallLog | None) -> TrialRecords:
    with journalled(log):
        return run_trial(spec, context)


def _take_finished(finished: queue.SimpleQueue[Future[TrialRecords]]) -> list[Future[TrialRecords]]:
    """The trials finished by now, at least one (waited for)."""
    while True:
        try:
            first = finished.get(timeout=0.2)  # a bounded wait keeps the generator responsive to Ctrl-C
        except queue.Empty:
            continue
        done = [first]
        while True:
            try:
                done.append(finished.get_nowait())
            except queue.Empty:
                return done

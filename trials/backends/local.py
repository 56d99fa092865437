"""The default backend: trials on a thread pool in this process.

Threads, because a trial spends its time waiting on the provider; one client per plan is
shared by all of that plan's trials (``RunContext`` caches it). The stop event is the
context's cancel event, so running trials end at their next turn boundary as
``interrupted``. Records leave with every credential value this process knows replaced.
With a call journal attached (the driver attaches the run folder's), each trial runs with its
own execution of it, so each provider call is in ``calls.jsonl`` as it returns.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from capplan.trials.run_folder.call_journal import CallJournal, CallLog, journalled
from capplan.trials.run_folder.recording import redact_records
from capplan.trials.runner import RunContext, run_trial
from capplan.trials.spec import TrialRecords, TrialSpec


class LocalBackend:
    """Runs up to ``concurrency`` trials at once in threads."""

    name = "local"

    def __init__(self, context: RunContext | None = None) -> None:
        self.context = context
        self.journal: CallJournal | None = None

    def attach_journal(self, journal: CallJournal | None) -> None:
        """Where the trials' calls are journalled from now on (None: nowhere)."""
        self.journal = journal

    def prepare(self, specs: Sequence[TrialSpec]) -> None:
        """Nothing to ship: the trials run in this process."""

    def run(self, specs: Iterable[TrialSpec], *, concurrency: int, stop: threading.Event) -> Iterator[TrialRecords]:
        context = self.context or RunContext()
        context.cancel = stop
        pending = iter(specs)
        running: set[Future[TrialRecords]] = set()
        pool = ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="trial")
        wait_for_trials = True
        try:
            exhausted = False
            while True:
                while not exhausted and not stop.is_set() and len(running) < concurrency:
                    spec = next(pending, None)
                    if spec is None:
                        exhausted = True
                        break
                    log = self.journal.begin(str(spec.key)) if self.journal is not None else None
                    running.add(pool.submit(_run_journalled, spec, context, log))
                if not running:
                    return
                done, running = _wait(running)
                for future in done:
                    yield redact_records(future.result())
        except KeyboardInterrupt:
            # a second Ctrl-C ends the run now: running trials are left behind (the driver records them unfinished)
            wait_for_trials = False
            raise
        finally:
            pool.shutdown(wait=wait_for_trials, cancel_futures=not wait_for_trials)


def _run_journalled(spec: TrialSpec, context: RunContext, log: CallLog | None) -> TrialRecords:
    with journalled(log):
        return run_trial(spec, context)


def _wait(running: set[Future[TrialRecords]]) -> tuple[set[Future[TrialRecords]], set[Future[TrialRecords]]]:
    # a bounded wait keeps the generator responsive to Ctrl-C in the consuming thread
    while True:
        done, rest = wait(running, timeout=0.2, return_when=FIRST_COMPLETED)
        if done:
            return set(done), set(rest)

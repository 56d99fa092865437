"""A worker process of ``trial run --workers N``: runs the trials its driver hands it, in threads.

Started as ``python -m capplan.trials.backends.processes.worker FD MODE [COMPLETION]``, or forked
from the driver (:func:`forked`), with ``FD`` its end of the socket to the driver (:mod:`.channel`) and ``MODE`` what the driver keeps:
``none`` (no journal: sends are not announced), ``journal`` or ``budget`` (``--max-cost``: each send
carries its worst case).

Messages in: ``("config", slots)`` first (its trial threads), then ``("run", token, spec,
head)`` (``head``: the :class:`~capplan.trials.run_folder.journal_lines.LineHead` its journal lines
begin with, None in mode ``none``); an answer to a send: ``("granted", request_id)``,
``("refused", request_id, committed, max_cost)`` (``--max-cost`` reached) or ``("stopped",
request_id)`` (the run is stopping: the send is not made); ``("stop",)``. Messages out: ``("ready",
pid)``; ``("send", token, role, request_id, worst_usd, line)`` before each send (the trial's
thread waits for the answer); ``("call", token, call, at, line, cost_usd, answered, request_id)`` as
each call is recorded (``call``: the record's JSON text). ``line`` is the whole journal line, assembled
here on the worker's core (seam *journal lines*): the command's process appends it as it is;
``("done", token, records, texts)`` (``texts``: the records' JSON texts the driver's redaction
check searches, :func:`~capplan.trials.run_folder.recording.record_texts`); ``("failed", token,
text)`` for a trial that raised (a harness defect: the run stops on it).

The worker writes nothing. Its records leave redacted against every credential its clients hold,
and so do its stdout and stderr. Ctrl-C is the driver's to handle: the worker runs in its own
session and ignores SIGINT; it ends when its socket closes (the driver finished, or died).
``COMPLETION`` (``module:attr``, a callable from a plan to a completion function) replaces the
plan's own sender: the throughput benchmark's floor sender, never set by ``trial run``.
"""

from __future__ import annotations

import importlib
import os
import random
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NoReturn

from capplan.core.redaction import redact_standard_streams, redact_text
from capplan.core.reference_mode import reference_mode
from capplan.core.young_collections import young_collections_spaced
from capplan.executor.client import Completion
from capplan.executor.cost_bound import worst_case_usd
from capplan.executor.plan import Plan
from capplan.executor.send_observer import Send
from capplan.trials.backends.processes.channel import Channel
from capplan.trials.run_folder.budget import BudgetSpent
from capplan.trials.run_folder.call_journal import call_data, journalled, settlement
from capplan.trials.run_folder.costs import round_usd
from capplan.trials.run_folder.journal_lines import LineHead, call_text
from capplan.trials.run_folder.record_yaml import dump_records_yaml
from capplan.trials.run_folder.recording import record_texts, redact_records
from capplan.trials.run_folder.records import CallRecord
from capplan.trials.outcome import TerminationReason
from capplan.trials.runner import RunContext, run_trial
from capplan.trials.spec import TrialRecords, TrialSpec, with_rendered
from capplan.trials.terminal import Terminal

#: what the driver keeps of the worker's calls (see the module docstring)
MODES = ("none", "journal", "budget")
#: how long a send waits for the driver to journal it; the driver answers at once unless it is gone
_ANSWER_S = 300.0


class _Answer:
    """One send's answer: held until the driver's arrives (a bare lock, not an Event, whose Condition makes
    and waits on one more lock per wait: every send of a journalled run waits here)."""

    __slots__ = ("arrived", "message")

    def __init__(self) -> None:
        self.arrived = threading.Lock()
        self.arrived.acquire()
        self.message: tuple[Any, ...] = ()


class _Answers:
    """The driver's answers to sends, handed to the trial thread waiting on each."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[str, _Answer] = {}

    def expect(self, request_id: str) -> _Answer:
        slot = _Answer()
        with self._lock:
            self._waiting[request_id] = slot
        return slot

    def deliver(self, request_id: str, answer: tuple[Any, ...]) -> None:
        with self._lock:
            slot = self._waiting.pop(request_id, None)
        if slot is not None:
            slot.message = answer
            slot.arrived.release()


class _PipeLog:
    """One trial's call log: each send waits for the driver's journal line, each call goes to it."""

    def __init__(self, channel: Channel, answers: _Answers, token: int, budgeted: bool,
                 cancel: threading.Event, head: LineHead) -> None:
        self.channel = channel
        self.cancel = cancel
        self.answers = answers
        self.token = token
        self.budgeted = budgeted
        self.head = head

    def send(self, role: str, turn: int, send: Send) -> None:
        # the worst case is worked out here: the request never leaves this process
        worst = worst_case_usd(send.plan, send.kwargs) if self.budgeted and send.plan is not None else None
        line = self.head.send_line(round(time.time(), 3), send.request_id, role, turn, send.attempt,
                                   round_usd(worst) if worst is not None else None)
        slot = self.answers.expect(send.request_id)
        self.channel.send(("send", self.token, role, send.request_id, worst, line))
        if not slot.arrived.acquire(timeout=_ANSWER_S):
            raise RuntimeError(f"the run's driver did not journal a send within {_ANSWER_S:.0f} s")
        answer = slot.message
        if answer[0] == "refused":
            _, _, committed, max_cost = answer
            raise BudgetSpent(committed, max_cost)
        if answer[0] == "stopped":
            self.cancel.set()  # the stop message may still be on its way: every trial here ends now
            raise Terminal(TerminationReason.INTERRUPTED, "the run was interrupted")

    def record(self, call: CallRecord, request_id: str | None = None) -> None:
        data = call_data(call)
        cost, answered = settlement(data)
        # encoded here, on the worker's core: the command's process appends the line as it is
        text = call_text(data)
        at = round(time.time(), 3)
        self.channel.send(("call", self.token, text, at, self.head.call_line(at, text, request_id), cost, answered,
                           request_id))


class Worker:
    """The worker's state: its channel, its trial threads and what they share."""

    def __init__(self, channel: Channel, mode: str, completion_for: Callable[[Plan], Completion] | None) -> None:
        if mode not in MODES:
            raise SystemExit(f"capplan worker: MODE must be one of {', '.join(MODES)}, not {mode!r}")
        self.channel = channel
        self.journalled = mode != "none"
        self.budgeted = mode == "budget"
        self.answers = _Answers()
        self.cancel = threading.Event()
        self.context = RunContext(cancel=self.cancel, completion_for=completion_for)
        self.pool: ThreadPoolExecutor | None = None  # sized by the driver's config message

    def serve(self) -> None:
        """Answer the driver until it closes the socket."""
        self.channel.send(("ready", os.getpid()))
        while True:
            try:
                message = self.channel.recv()
            except (EOFError, OSError):
                return
            kind = message[0]
            if kind == "config":
                # the trial slots: the run's --concurrency is known only once it runs, after the worker started
                self.pool = ThreadPoolExecutor(max_workers=message[1], thread_name_prefix="trial")
            elif kind == "run":
                if self.pool is None:
                    raise RuntimeError("capplan worker: a trial arrived before the driver's config")
                _, token, spec, head = message
                self.pool.submit(self._run, token, spec, head)
            elif kind in ("granted", "refused", "stopped"):
                self.answers.deliver(message[1], message)
            elif kind == "stop":
                self.cancel.set()  # running trials end at their next turn as interrupted

    def _run(self, token: int, spec: TrialSpec, head: LineHead | None) -> None:
        log = _PipeLog(self.channel, self.answers, token, self.budgeted, self.cancel, head) \
            if self.journalled and head is not None else None
        try:
            with journalled(log):
                records = redact_records(run_trial(spec, self.context))
                # the texts the driver's redaction check searches, and the files' YAML, made here on the worker's core
                texts = record_texts(records)
                records = rendered_here(records)
        except BaseException:  # run_trial never raises for a trial's failure: this is a defect, the run stops
            self.channel.send(("failed", token, redact_text(traceback.format_exc())))
            return
        self.channel.send(("done", token, records, texts))


def rendered_here(records: TrialRecords) -> TrialRecords:
    """``records`` with their files' YAML (seam *worker rendering*: the command's process, the run's one
    writer, then only writes the bytes; the reference mode leaves the rendering to it)."""
    if reference_mode():
        return records
    return with_rendered(records, (dump_records_yaml(records.trajectory), dump_records_yaml(records.metrics)))


def _completion_factory(target: str) -> Callable[[Plan], Completion]:
    module, _, attr = target.partition(":")
    factory: Callable[[Plan], Completion] = getattr(importlib.import_module(module), attr)
    return factory


def serve(fd: int, mode: str, completion_factory: str | None) -> NoReturn:
    """Be a worker on descriptor ``fd`` until the driver closes it, then exit (never returns)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    redact_standard_streams()
    factory = _completion_factory(completion_factory) if completion_factory else None
    with young_collections_spaced():  # as the driver's drive does for trials run in its own process
        Worker(Channel.from_fd(fd), mode, factory).serve()
    # the driver is done or gone: whatever still runs has nobody to report to
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def forked(fd: int, mode: str, completion_factory: str | None) -> NoReturn:
    """The child side of a fork of the driver (see :mod:`.pool`): its own session, its own random
    state, then :func:`serve`. Whatever goes wrong ends this process, never returns into the driver's code."""
    try:
        os.setsid()  # a Ctrl-C at the terminal reaches only the driver, as for a started worker
        random.seed()  # the driver's generator state, copied, would repeat in every worker
        serve(fd, mode, completion_factory)
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(1)


def main(argv: list[str]) -> None:
    if len(argv) not in (2, 3):
        raise SystemExit("usage: python -m capplan.trials.backends.processes.worker FD MODE [COMPLETION]")
    serve(int(argv[0]), argv[1], argv[2] if len(argv) > 2 else None)


if __name__ == "__main__":
    main(sys.argv[1:])

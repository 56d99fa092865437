"""``calls.jsonl``: every provider attempt, journalled before it is sent and again as it returns, so a trial
that dies takes no spend with it.

A trial's calls reach ``metrics.yaml`` only when the trial finishes. A process killed with
trials in flight (SIGKILL, the OOM killer, a lost Ray driver) used to take the money those trials
had spent with it. The journal closes that gap: the trial's metrics sink hands every
:class:`~capplan.trials.run_folder.records.CallRecord` (each attempt: agent, user simulator, summarise,
outer-controller retries included) to the journal the moment it is recorded, and the journal
appends one JSON line with one ``write`` (the page cache outlives a killed process, as for
``runs.jsonl``).

Every send is announced first (:mod:`capplan.executor.send_observer`: the metrics sink installs the
observer around each call, the attempt log calls it before the bytes go out).

Lines (``kind``):

- ``send``: the same identity fields as a call line, and ``send``: ``request_id``, ``role``,
  ``turn``, ``attempt`` (within its call) and ``max_usd`` (the worst case ``--max-cost`` reserved,
  null without a budget). A send no call line answers was sent with its outcome and cost unknown.
- ``call``: ``run_id``, ``execution`` (one id per time a trial runs: a rerun or a Ray resubmission
  gets a new one), ``key``, ``plan_key``, ``task_id``, ``index``, ``attempt`` (the ``runs.jsonl``
  attempt the execution would become) and ``call``, the CallRecord exactly as ``metrics.yaml``
  carries it (role, turn, status, error class, tokens, cost or null, cost source, generation id,
  route and route kind, key index — never a key), and ``request_id``: the send it answers (absent
  for a call that made no send, e.g. one refused for a missing credential).
- ``end``: the driver closed the execution: ``as: written`` just before its ``runs.jsonl`` line is
  appended (that line is the commit marker: an ``end`` without it means the process died between
  the two writes), or ``as: interrupted`` with the ``at`` of the ``run.json`` interrupted-spend entry
  that records its spend.
- ``lost``: the Ray driver saw the worker running the execution die (it is resubmitted under a new id).

Reading it back (:func:`died_in_flight`): an execution is accounted for when its ``end`` line and the
record it names (the ``runs.jsonl`` line of that key and attempt, or the ``run.json`` entry of that
key and time) both exist; every other execution died in flight, and its calls are that trial's
unrecorded spend — split into agent (agent + summarise) and user simulator, and ``None`` (unknown,
never $0) for a role whose answered call had no cost or whose send has no outcome. A new execution
is numbered past every attempt the journal or ``runs.jsonl`` has for its trial, so an execution
killed between its ``end`` line and its ``runs.jsonl`` line is never taken for its rerun's.

Who writes: the driver's process alone. The local backend's trials run in its threads and write
through :class:`CallJournal`. Ray workers run on other processes, possibly other machines, with no
shared file system in general; they keep their calls in a :class:`CallBuffer` that the driver
drains a few times a second and, for each finished trial, returns the rest with its records, so
the journal is still one file in the run folder and a worker that dies loses at most the last
poll interval of sends and calls (a worker's send line is written when drained, not before its
request: ``--max-cost`` is refused on Ray).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import ValidationError

from capplan.core.diagnostics import Diagnostic
from capplan.core.ids import uuid4_hex
from capplan.core.reference_mode import reference_mode
from capplan.executor.cost_bound import worst_case_usd
from capplan.executor.send_observer import Send
from capplan.trials.run_folder import confined
from capplan.trials.run_folder.budget import Budget
from capplan.trials.run_folder.confined import ConfinedPathError
from capplan.trials.run_folder.costs import known_cost, round_usd, unknown_cost_calls
from capplan.trials.run_folder.journal_lines import LineHead, call_text, dumps
from capplan.trials.run_folder.records import CallRecord

JOURNAL_FILE = "calls.jsonl"
#: a journal line holds one call record: far below this
MAX_JOURNAL_LINE_BYTES = 64 << 10

_AGENT_ROLES = ("agent", "summarize")
_USER_ROLES = ("user",)


class CallLog(Protocol):
    """Where one trial execution's sends and calls go as they happen (the metrics sink calls it)."""

    def send(self, role: str, turn: int, send: Send) -> None:
        """``send`` is about to go on the wire (may raise to stop it: a spent budget)."""
        ...

    def record(self, call: CallRecord, request_id: str | None = None) -> None:
        """``call`` was recorded; ``request_id``: the send it is the outcome of (None: it made none)."""
        ...


_CURRENT: ContextVar[CallLog | None] = ContextVar("capplan_call_log", default=None)


@contextmanager
def journalled(log: CallLog | None) -> Iterator[None]:
    """Run a trial with ``log`` as the call log of every metrics sink it creates (the backends wrap ``run_trial``).

    A context variable rather than a parameter: the runner builds its sink deep inside ``run_trial``,
    and each backend thread runs one trial at a time, so the trial in this thread is the one whose
    calls these are.
    """
    token = _CURRENT.set(log)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current_log() -> CallLog | None:
    """The call log of the trial running in this thread (None outside a journalled run)."""
    return _CURRENT.get()


def new_execution_id() -> str:
    return uuid4_hex()


def call_data(call: CallRecord) -> dict[str, Any]:
    """``call`` as its journal line carries it (a worker process sends this, not the record)."""
    data = call.model_dump(mode="json")
    if data.get("cost_usd") is not None:
        data["cost_usd"] = round_usd(data["cost_usd"])
    return data


def settlement(data: Mapping[str, Any]) -> tuple[float | None, bool]:
    """(cost or None when unknown, whether it was answered) of a call line's record: what settles its send."""
    cost = data.get("cost_usd")
    return (float(cost) if isinstance(cost, (int, float)) else None), data.get("outcome") != "failed"


@dataclass
class _Open:
    execution: str
    attempt: int


class CallJournal:
    """The driver's writer of ``calls.jsonl`` (thread-safe; one per run folder and process).

    ``attempts(key)`` is how many attempts of trial ``key`` the run folder already records, so an
    execution's ``attempt`` is the one its ``runs.jsonl`` line will carry.
    """

    def __init__(self, root: Path, run_id: str | None, attempts: Callable[[str], int]) -> None:
        self.root = root
        self.run_id = run_id
        self._attempts = attempts
        self._lock = threading.Lock()
        self._open: dict[str, _Open] = {}
        # key -> the highest attempt handed to an execution in this process: a number is never given twice
        self._claimed: dict[str, int] = {}
        # execution -> attempt of the executions already closed: a Ray drain issued before a trial
        # ended can deliver its last calls after the end line, and they keep that execution's attempt
        self._closed: dict[str, int] = {}
        self.failure: ConfinedPathError | None = None
        #: set by the driver under --max-cost: every send reserves its worst case here first
        self.budget: Budget | None = None
        # opened (and its path checked) once, on the first line: a call's line is then one write
        self._fd: int | None = None
        self._write_lock = threading.Lock()
        #: told of every line as it is appended (the run folder's read-back memo), in the file's order
        self.follower: JournalCache | None = None
        # the lines a thread holds (:meth:`hold`) until its :meth:`flush`
        self._held = threading.local()

    # -- opening executions and recording calls -------------------------------------------

    def begin(self, key: str) -> CallLog:
        """A new execution of trial ``key`` (in this process); its calls go through the returned log."""
        with self._lock:
            opened = self._open[key] = _Open(new_execution_id(), self._next_attempt(key))
        return _FileLog(self, key, opened)

    def begin_execution(self, key: str) -> str:
        """A new execution of trial ``key`` run by a worker process of this run: its id, for
        :meth:`announce` and :meth:`record` (the worker's sends and calls reach them through a pipe)."""
        with self._lock:
            opened = self._open[key] = _Open(new_execution_id(), self._next_attempt(key))
        return opened.execution

    def attempt_of(self, key: str) -> int:
        """The attempt trial ``key``'s runs.jsonl line is to carry: its open execution's, else a new number."""
        with self._lock:
            opened = self._open.get(key)
            return opened.attempt if opened is not None else self._next_attempt(key)

    def _next_attempt(self, key: str) -> int:
        # past every attempt the folder records *and* every one an execution was journalled under: a
        # rerun numbered like an execution that died after its end line would make that line look written
        attempt = max(self._attempts(key), self._claimed.get(key, 0)) + 1
        self._claimed[key] = attempt
        return attempt

    def record(self, key: str, execution: str, call: CallRecord | Mapping[str, Any],
               request_id: str | None = None) -> None:
        """Append one call of ``execution`` (an execution first seen here, from a Ray worker, is opened).

        ``request_id`` names the send line it answers (None: the call made no send).
        """
        data = call_data(call) if isinstance(call, CallRecord) else dict(call)
        cost, answered = settlement(data)
        self.record_encoded(key, execution, call_text(data), cost, answered, request_id)

    def record_encoded(self, key: str, execution: str, call: str, cost_usd: float | None, answered: bool,
                       request_id: str | None = None) -> None:
        """:meth:`record` of a call whose record is already encoded (``call``: its :func:`call_text`);
        ``cost_usd`` and ``answered`` settle its send against the budget."""
        head = self.line_head(key, execution)
        at = round(time.time(), 3)
        self.record_line(head, at, call, head.call_line(at, call, request_id), cost_usd, answered, request_id)

    def record_line(self, head: LineHead, at: float, call: str, line: str, cost_usd: float | None, answered: bool,
                    request_id: str | None = None) -> None:
        """Append a call line already assembled (``line``: ``head.call_line(at, call, request_id)``, made by the
        worker process that ran the call); ``cost_usd`` and ``answered`` settle its send against the budget."""
        if self.budget is not None:
            self.budget.settle(request_id, cost_usd, answered=answered)
        # what the memo keeps of the line: the call record stays text until a read needs it (a death)
        kept = {"kind": "call", "execution": head.execution, "key": head.key, "attempt": head.attempt, "at": at,
                "call": CallText(call), "request_id": request_id}
        self._append_text(line, kept)

    def send(self, key: str, execution: str, role: str, turn: int, request_id: str, attempt: int,
             worst_usd: float | None) -> None:
        """Append the intent of one send of ``execution`` before it goes out (``worst_usd``: what it may cost)."""
        head = self.line_head(key, execution)
        worst = round_usd(worst_usd) if worst_usd is not None else None
        self._append_send(head, role, request_id, worst,
                          head.send_line(round(time.time(), 3), request_id, role, turn, attempt, worst))

    def announce_line(self, head: LineHead, role: str, request_id: str, worst_usd: float | None, line: str) -> None:
        """:meth:`announce` of a send whose line a worker process assembled (``line``: ``head.send_line(...)``
        with ``worst_usd`` rounded by :func:`round_usd`): reserved against the budget (which may refuse it),
        then appended."""
        if self.budget is not None:
            self.budget.reserve(request_id, worst_usd if worst_usd is not None else 0.0)
        self._append_send(head, role, request_id, round_usd(worst_usd) if worst_usd is not None else None, line)

    def _append_send(self, head: LineHead, role: str, request_id: str, max_usd: float | None, line: str) -> None:
        kept = {"kind": "send", "execution": head.execution, "key": head.key, "attempt": head.attempt,
                "send": {"request_id": request_id, "role": role, "max_usd": max_usd}}
        self._append_text(line, kept)

    def sent(self, key: str, execution: str, role: str, turn: int, send: Send) -> None:
        """A send of this process's trial: reserved against the budget (which may refuse it), then journalled."""
        worst = worst_case_usd(send.plan, send.kwargs) if send.plan is not None and self.budget is not None else None
        self.announce(key, execution, role, turn, send.request_id, send.attempt, worst)

    def announce(self, key: str, execution: str, role: str, turn: int, request_id: str, attempt: int,
                 worst_usd: float | None) -> None:
        """A send about to go out, its worst case already known (a worker process works it out from the
        request, which never leaves it): reserved against the budget (which may refuse it), then journalled."""
        if self.budget is not None:
            # unbounded plans are refused with --max-cost before the run starts; a 0 here cannot happen there
            self.budget.reserve(request_id, worst_usd if worst_usd is not None else 0.0)
        self.send(key, execution, role, turn, request_id, attempt, worst_usd)

    def line_head(self, key: str, execution: str) -> LineHead:
        """What every line of ``execution`` (of trial ``key``) begins with; an execution first seen here is opened."""
        return LineHead(self.run_id, execution, key, self._attempt_for(key, execution))

    def _attempt_for(self, key: str, execution: str) -> int:
        with self._lock:
            closed = self._closed.get(execution)
            if closed is not None:
                attempt = closed
            else:
                opened = self._open.get(key)
                if opened is None or opened.execution != execution:
                    opened = self._open[key] = _Open(execution, self._next_attempt(key))
                attempt = opened.attempt
        return attempt

    def extend(self, entries: Iterable[Mapping[str, Any]]) -> None:
        """Sends and calls a Ray worker buffered (:meth:`CallBuffer.drain`), in the order it made them."""
        for entry in entries:
            key, execution = str(entry["key"]), str(entry["execution"])
            if entry.get("kind") == "send":
                send = entry["send"]
                self.send(key, execution, str(send["role"]), int(send["turn"]), str(send["request_id"]),
                          int(send["attempt"]), None)
            else:
                request_id = entry.get("request_id")
                self.record(key, execution, entry["call"], str(request_id) if request_id is not None else None)

    # -- closing them ------------------------------------------------------------------------

    def written(self, key: str, attempt: int) -> None:
        """Trial ``key`` is about to get its ``runs.jsonl`` line as ``attempt`` (call it just before appending)."""
        with self._lock:
            opened = self._open.pop(key, None)
            if opened is not None:
                self._closed[opened.execution] = attempt
        if opened is not None:
            self._append({"kind": "end", "as": "written", "execution": opened.execution, "key": key,
                          "attempt": attempt})

    def interrupted(self, key: str, at: str) -> None:
        """Trial ``key`` stopped part-way; its spend goes into ``run.json`` with time ``at`` (call it just before)."""
        with self._lock:
            opened = self._open.pop(key, None)
            if opened is not None:
                self._closed[opened.execution] = opened.attempt
        if opened is not None:
            self._append({"kind": "end", "as": "interrupted", "execution": opened.execution, "key": key,
                          "attempt": opened.attempt, "at": at})

    def lost(self, key: str) -> None:
        """The worker running trial ``key`` died; the execution stays open (unaccounted) and is noted."""
        with self._lock:
            opened = self._open.pop(key, None)
            if opened is not None:
                self._closed[opened.execution] = opened.attempt
        if opened is not None:
            self._append({"kind": "lost", "execution": opened.execution, "key": key, "attempt": opened.attempt})

    def raise_failure(self) -> None:
        """Stop the run (in the driver's thread) when a journal append failed in a trial's thread."""
        if self.failure is not None:
            raise self.failure

    def close(self) -> None:
        """Close the journal's descriptor (a later line opens it again)."""
        with self._write_lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def hold(self) -> None:
        """Keep the lines this thread appends from now on until its :meth:`flush`, which writes them in one append.

        Seam *reader batches*: a worker's reader thread takes every message a receive brought, then writes
        their lines at once and only then answers their sends (``ProcessPool``); the reference mode writes
        each line as it is appended.
        """
        if not reference_mode() and getattr(self._held, "lines", None) is None:
            self._held.lines = []

    def flush(self) -> None:
        """Write the lines this thread holds, in the order it appended them (it goes on holding)."""
        held: list[tuple[str, dict[str, Any]]] | None = getattr(self._held, "lines", None)
        if held:
            self._held.lines = []
            self._append_lines(held)

    def _append(self, data: dict[str, Any]) -> None:
        self._append_text(dumps(data), data)

    def _append_text(self, line: str, kept: dict[str, Any]) -> None:
        """Append ``line`` (unless this thread holds its lines); ``kept``: the values of it a read back uses."""
        held: list[tuple[str, dict[str, Any]]] | None = getattr(self._held, "lines", None)
        if held is not None:
            held.append((line, kept))
            return
        self._append_lines([(line, kept)])

    def _append_lines(self, lines: list[tuple[str, dict[str, Any]]]) -> None:
        """Append ``lines`` in one write; the follower is told of each, in order."""
        texts = [(line + "\n").encode("utf-8") for line, _ in lines]
        try:
            with self._write_lock:
                if self._fd is None:
                    self._fd = confined.open_append(self.root, (JOURNAL_FILE,))
                follower = self.follower
                try:
                    confined.write_all(self._fd, texts[0] if len(texts) == 1 else b"".join(texts))
                except OSError as exc:
                    if follower is not None:
                        follower.forget()  # part of the lines may be in the file
                    raise ConfinedPathError(self.root / JOURNAL_FILE, "out-unwritable",
                                            f"cannot append to it: {exc.strerror or exc}") from None
                if follower is not None:
                    for data, (_, kept) in zip(texts, lines):
                        follower.follow(data, kept)
        except ConfinedPathError as exc:
            # a trial's thread must not die of it: the driver raises it before the next trial is written
            if self.failure is None:
                self.failure = exc
            raise


class _FileLog:
    def __init__(self, journal: CallJournal, key: str, opened: _Open) -> None:
        self.journal = journal
        self.key = key
        self.opened = opened

    def send(self, role: str, turn: int, send: Send) -> None:
        try:
            self.journal.sent(self.key, self.opened.execution, role, turn, send)
        except ConfinedPathError:
            pass  # kept as journal.failure; the driver stops the run with it

    def record(self, call: CallRecord, request_id: str | None = None) -> None:
        try:
            self.journal.record(self.key, self.opened.execution, call, request_id)
        except ConfinedPathError:
            pass  # kept as journal.failure; the driver stops the run with it


class CallBuffer:
    """A Ray worker's calls, held until the driver drains them (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: list[dict[str, Any]] = []

    def begin(self, key: str) -> _BufferLog:
        return _BufferLog(self, key, new_execution_id())

    def add(self, key: str, execution: str, call: CallRecord, request_id: str | None = None) -> None:
        with self._lock:
            self._entries.append({"key": key, "execution": execution, "call": call_data(call),
                                  "request_id": request_id})

    def add_send(self, key: str, execution: str, role: str, turn: int, send: Send) -> None:
        with self._lock:
            self._entries.append({"kind": "send", "key": key, "execution": execution, "send": {
                "request_id": send.request_id, "role": role, "turn": turn, "attempt": send.attempt}})

    def drain(self) -> list[dict[str, Any]]:
        """Every call buffered so far, removed from the buffer."""
        with self._lock:
            out, self._entries = self._entries, []
        return out

    def take(self, execution: str) -> list[dict[str, Any]]:
        """The calls of ``execution`` not drained yet (they travel back with its records), removed."""
        with self._lock:
            mine = [e for e in self._entries if e["execution"] == execution]
            self._entries = [e for e in self._entries if e["execution"] != execution]
        return mine


class _BufferLog:
    def __init__(self, buffer: CallBuffer, key: str, execution: str) -> None:
        self.buffer = buffer
        self.key = key
        self.execution = execution

    def send(self, role: str, turn: int, send: Send) -> None:
        self.buffer.add_send(self.key, self.execution, role, turn, send)

    def record(self, call: CallRecord, request_id: str | None = None) -> None:
        self.buffer.add(self.key, self.execution, call, request_id)


# -- reading --------------------------------------------------------------------------------


@dataclass
class _Execution:
    execution: str
    key: str
    attempt: int
    #: (line number, the call as written); validated only for executions that died (the others'
    #: calls are in their metrics.yaml), so reading a long run's journal stays cheap
    calls: list[tuple[int, Any]] = field(default_factory=list)
    ends: list[dict[str, Any]] = field(default_factory=list)
    #: request id -> role of each send line; the ids some call line answers
    sends: dict[str, tuple[str, float | None]] = field(default_factory=dict)
    answered: set[str] = field(default_factory=set)
    last_at: float | None = None


@dataclass
class Journal:
    """``calls.jsonl`` read back: executions in order of their first line, and a torn tail if any."""

    executions: dict[str, _Execution] = field(default_factory=dict)
    good_bytes: int = 0
    torn_lineno: int = 0  # 0: no torn last line
    lines: int = 0


@dataclass(frozen=True)
class DiedSpend:
    """What one trial execution that died in flight had spent (its calls are only in the journal)."""

    key: str
    attempt: int
    execution: str
    calls: int
    agent_cost_usd: float | None
    user_cost_usd: float | None
    unknown_cost_calls: int
    unanswered_sends: int
    agent_tokens: int
    user_tokens: int
    last_call_at: float | None
    #: every call's known cost (a role total is None as soon as one is unknown; these dollars still count)
    known_calls_usd: float = 0.0
    #: the worst cases the unanswered sends reserved (0 where the run had no budget): what --max-cost counts for them
    unanswered_max_usd: float = 0.0

    @property
    def known_usd(self) -> float:
        return self.known_calls_usd

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "attempt": self.attempt, "execution": self.execution, "calls": self.calls,
                "agent_cost_usd": self.agent_cost_usd, "user_cost_usd": self.user_cost_usd,
                "unknown_cost_calls": self.unknown_cost_calls, "unanswered_sends": self.unanswered_sends,
                "agent_tokens": self.agent_tokens,
                "user_tokens": self.user_tokens}


class CallText(str):
    """A call record's JSON text (:func:`call_text`), kept unparsed by :class:`JournalCache` until a read needs it."""


class JournalCache:
    """The last clean read of ``calls.jsonl`` (no bad line, no torn tail), for :func:`read_journal` to resume.

    The journal only grows, and a run reads it back several times as it ends (run.json's and the
    summary's spend of trials that died in flight): a read whose first bytes are exactly the bytes
    parsed before (compared by digest, so a rewritten file is parsed again from its start) parses
    only the lines added since. The run folder's :class:`CallJournal` also tells it of each line it
    appends (:meth:`follow`, in the file's order): those lines' bytes join the digest as they are
    written and their values are taken as they are, so reading back a long run's journal as it
    ends parses none of this process's lines (a call's record stays text unless its execution
    died). A read that finds the file as a stat saw it just after the last read (the same device,
    inode, size and modification time) and nothing appended here since reads nothing: the run's end
    reads the journal several times, and reading and digesting a 1 000-trial run's 8 MB each time was
    about 0.03 of ``benchmarks/trial_loop.py``'s ideal wall at 8 ms. Thread-safe; the journal it hands
    out is extended by the next read. Seam *journal memo*; the reference mode
    (:mod:`capplan.core.reference_mode`) parses the whole file on every read.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._size = 0
        self._digest = hashlib.blake2b()
        self._journal: Journal | None = None
        #: lines appended since the last read, as :meth:`follow` was told them (their bytes are in the digest)
        self._followed: list[dict[str, Any]] = []
        #: the file as a stat saw it just after the last read that took every byte of it (device, inode, size,
        #: modification time): a read that finds it so, with nothing appended here since, has nothing to read
        self._unchanged: tuple[int, int, int, int] | None = None

    def read(self, root: Path, found: list[Diagnostic]) -> Journal:
        if reference_mode():
            return read_journal(root, found)
        with self._lock:
            if self._journal is not None and not self._followed and self._unchanged is not None \
                    and _file_key(root) == self._unchanged:
                return self._journal  # a run's end reads it several times: not the whole file, digested, each time
            self._unchanged = None
            raw = confined.read_bytes(root, (JOURNAL_FILE,))
            start: tuple[Journal, int] | None = None
            followed, self._followed = self._followed, []
            if raw is not None and self._journal is not None and self._size <= len(raw) \
                    and hashlib.blake2b(memoryview(raw)[:self._size]).digest() == self._digest.digest():
                journal = self._journal
                for data in followed:  # lines this process appended, as it wrote them: nothing to parse or check
                    journal.lines += 1
                    _apply_own_line(journal, data, journal.lines)
                journal.good_bytes = self._size
                start = (journal, self._size)
            self._journal = None
            if raw is None:
                self._remember(Journal(), b"")  # lines appended from now on are followed
                return Journal()
            before = len(found)
            journal = _parse_journal(root, raw, found, start)
            if len(found) == before and not journal.torn_lineno:
                if start is None:
                    self._remember(journal, memoryview(raw)[:journal.good_bytes])
                else:  # the digest holds the bytes up to where the parse began
                    self._digest.update(memoryview(raw)[self._size:journal.good_bytes])
                    self._journal, self._size = journal, journal.good_bytes
                key = _file_key(root)
                # taken after the read: a line appended in between makes the size differ, and the next read reads
                self._unchanged = key if key is not None and key[2] == len(raw) == journal.good_bytes else None
            return journal

    def follow(self, written: bytes, data: dict[str, Any]) -> None:
        """``written`` (one complete line, ``data`` its values) was just appended to the journal by this process."""
        if reference_mode():
            return
        with self._lock:
            if self._journal is None:
                return  # nothing read to extend: the next read parses the file
            if len(written) - 1 > MAX_JOURNAL_LINE_BYTES:
                self._journal, self._followed = None, []  # a read must see it (and refuse it)
                return
            self._followed.append(data)
            self._digest.update(written)
            self._size += len(written)

    def forget(self) -> None:
        """An append failed part-way: the next read parses the file from its start."""
        with self._lock:
            self._journal = None
            self._followed = []

    def _remember(self, journal: Journal, parsed: bytes | memoryview) -> None:
        self._journal = journal
        self._size = len(parsed)
        self._digest = hashlib.blake2b(parsed)


def _file_key(root: Path) -> tuple[int, int, int, int] | None:
    """``root/calls.jsonl``'s device, inode, size and modification time (a link's own, never its target's)."""
    try:
        st = os.stat(root / JOURNAL_FILE, follow_symlinks=False)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def read_journal(root: Path, found: list[Diagnostic]) -> Journal:
    """``root/calls.jsonl`` read back; every bad complete line goes to ``found`` (located), a torn tail is kept apart."""
    raw = confined.read_bytes(root, (JOURNAL_FILE,))
    if raw is None:
        return Journal()
    return _parse_journal(root, raw, found, None)


def _parse_journal(root: Path, raw: bytes, found: list[Diagnostic], start: tuple[Journal, int] | None) -> Journal:
    """The journal in ``raw``; ``start``: a clean journal of ``raw``'s first bytes to continue from."""
    journal, offset = start if start is not None else (Journal(), 0)
    lineno = journal.lines
    where = str(root / JOURNAL_FILE)
    while offset < len(raw):
        lineno += 1
        end = raw.find(b"\n", offset)
        if end < 0:  # a kill in the middle of an append: that call's line is lost, the rest holds
            journal.torn_lineno = lineno
            break
        chunk = raw[offset:end]
        offset = end + 1
        journal.lines = lineno
        problem = _take_line(journal, chunk, lineno)
        if problem is not None:
            found.append(Diagnostic(where, lineno, 1, "call-journal-invalid", problem,
                                    hint=f"{JOURNAL_FILE} is written by capplan only; restore it from a backup, or "
                                         "remove the line (its call's spend is then not counted)"))
    journal.good_bytes = offset
    return journal


def _take_line(journal: Journal, chunk: bytes, lineno: int) -> str | None:
    if len(chunk) > MAX_JOURNAL_LINE_BYTES:
        return f"is {len(chunk)} bytes long; a journal line is at most {MAX_JOURNAL_LINE_BYTES}"
    try:
        data = json.loads(chunk.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return "is not a JSON line"
    if not isinstance(data, dict):
        return "must be a JSON object"
    return _apply_line(journal, data, lineno)


def _apply_line(journal: Journal, data: dict[str, Any], lineno: int) -> str | None:
    """Line ``lineno``'s values taken into ``journal``; what is wrong with them, if anything."""
    kind = data.get("kind")
    execution, key, attempt = data.get("execution"), data.get("key"), data.get("attempt")
    if not (isinstance(execution, str) and isinstance(key, str) and key.count("/") == 2
            and isinstance(attempt, int) and not isinstance(attempt, bool)):
        return "lacks a valid execution, key or attempt"
    entry = journal.executions.get(execution)
    if entry is None:
        entry = journal.executions[execution] = _Execution(execution, key, attempt)
    if kind == "send":
        send = data.get("send")
        if not (isinstance(send, dict) and isinstance(send.get("request_id"), str) and isinstance(send.get("role"), str)):
            return "a send line must hold its send as an object with a request_id and a role"
        worst = send.get("max_usd")
        entry.sends[send["request_id"]] = (send["role"], float(worst) if isinstance(worst, (int, float))
                                           and not isinstance(worst, bool) and math.isfinite(worst) and worst >= 0
                                           else None)
        return None
    if kind == "call":
        call = data.get("call")
        if not (isinstance(call, dict) or (type(call) is CallText and call.startswith("{"))):
            return "a call line must hold its call record as an object"
        request_id = data.get("request_id")
        if request_id is not None and not isinstance(request_id, str):
            return "a call line's request_id must be a string"
        if request_id is not None:
            entry.answered.add(request_id)
        entry.calls.append((lineno, data["call"]))
        at = data.get("at")
        entry.last_at = float(at) if isinstance(at, (int, float)) and not isinstance(at, bool) else entry.last_at
        return None
    if kind in ("end", "lost"):
        if kind == "end" and data.get("as") not in ("written", "interrupted"):
            return "an end line must say as: written or as: interrupted"
        entry.ends.append(data)
        return None
    return "kind must be send, call, end or lost"


def _apply_own_line(journal: Journal, data: dict[str, Any], lineno: int) -> None:
    """:func:`_apply_line` of a line :class:`CallJournal` wrote in this process (``data``: the values it kept):
    the same result, without the checks a line read from the file needs (a run's end applies every line the
    run wrote; ``tests/trials/test_call_journal_cache.py`` compares the two)."""
    execution = data["execution"]
    entry = journal.executions.get(execution)
    if entry is None:
        entry = journal.executions[execution] = _Execution(execution, data["key"], data["attempt"])
    kind = data["kind"]
    if kind == "call":
        request_id = data["request_id"]
        if request_id is not None:
            entry.answered.add(request_id)
        entry.calls.append((lineno, data["call"]))
        entry.last_at = float(data["at"])
    elif kind == "send":
        send = data["send"]
        worst = send["max_usd"]
        entry.sends[send["request_id"]] = (send["role"], float(worst) if worst is not None and math.isfinite(worst)
                                           and worst >= 0 else None)
    else:  # end, lost
        entry.ends.append(data)


def died_in_flight(journal: Journal, written: Callable[[str, int], bool],
                   interrupted: Sequence[tuple[str, str]], where: str = JOURNAL_FILE,
                   found: list[Diagnostic] | None = None) -> list[DiedSpend]:
    """Executions with calls that no record accounts for, in journal order.

    ``written(key, attempt)``: whether ``runs.jsonl`` holds that trial attempt; ``interrupted``: the
    ``(key, at)`` pairs of ``run.json``'s interrupted-spend entries. A call of such an execution
    that is not a valid call record goes to ``found`` (located at ``where``) and is left out.
    """
    noted = set(interrupted)
    died = []
    for entry in journal.executions.values():
        unanswered = [send for request_id, send in entry.sends.items() if request_id not in entry.answered]
        if not (entry.calls or unanswered) or any(_accounts(end, written, noted) for end in entry.ends):
            continue
        calls = []
        for lineno, raw in entry.calls:
            try:
                calls.append(CallRecord.model_validate(json.loads(raw) if type(raw) is CallText else raw))
            except ValidationError as exc:
                first = exc.errors(include_input=False)[0]
                if found is not None:
                    found.append(Diagnostic(where, lineno, 1, "call-journal-invalid",
                                            f"call: {'.'.join(str(p) for p in first['loc'])}: {first['msg']}",
                                            hint=f"{JOURNAL_FILE} is written by capplan only; restore it from a "
                                                 "backup, or remove the line (its call's spend is then not counted)"))
        # a send with no outcome line: sent, outcome unknown, cost unknown (its role's total too)
        agent_open = any(role in _AGENT_ROLES for role, _ in unanswered)
        user_open = any(role in _USER_ROLES for role, _ in unanswered)
        died.append(DiedSpend(
            key=entry.key, attempt=entry.attempt, execution=entry.execution, calls=len(calls),
            agent_cost_usd=None if agent_open else known_cost(calls, _AGENT_ROLES),
            user_cost_usd=None if user_open else known_cost(calls, _USER_ROLES),
            unknown_cost_calls=unknown_cost_calls(calls),
            unanswered_sends=len(unanswered),
            known_calls_usd=round_usd(sum(c.cost_usd for c in calls if c.cost_usd is not None)),
            unanswered_max_usd=round_usd(sum(w for _, w in unanswered if w is not None)),
            # the known tokens (a call that reported none adds nothing; its cost is unknown and counted above)
            agent_tokens=sum(c.usage.prompt_tokens + c.usage.completion_tokens
                             for c in calls if c.role in _AGENT_ROLES and c.usage is not None),
            user_tokens=sum(c.usage.prompt_tokens + c.usage.completion_tokens
                            for c in calls if c.role in _USER_ROLES and c.usage is not None),
            last_call_at=entry.last_at,
        ))
    return died


def _accounts(end: dict[str, Any], written: Callable[[str, int], bool], noted: set[tuple[str, str]]) -> bool:
    if end.get("kind") != "end":
        return False
    if end.get("as") == "written":
        return written(str(end["key"]), int(end["attempt"]))
    return (str(end["key"]), str(end.get("at"))) in noted

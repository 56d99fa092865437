"""Live progress on stderr that never floods: a panel on a terminal, a few lines in a log.

A run of 10 000 trials used to print a line per finished trial (wrapping at 80 columns: 10 000+
lines). Now what is printed is bounded by the run's shape, not by its size:

- on a terminal, one live panel redrawn at the bottom, every row cropped to the terminal's width:
  a bar with done / running / failed, the rate, the spend and the ETA, the trials running now
  (longest first, with how long they have run) and the last few failures;
- off a terminal (CI logs, pipes), one line each time the run passes another 5 % of its trials, or
  when 30 s have passed since the last line (checked as trials start and end, so a log
  shows the run moving without a clock thread), and one line per failure (a trial that ended
  failed, error or aborted), the first :data:`FAILURE_LINES` of them; later failures are counted
  in the progress lines (every one is in ``runs.jsonl``);
- a run small enough that each trial is 5 % or more of it (:data:`EVERY_TRIAL_UP_TO` trials) prints
  every trial's line, as it always did;
- at the end, the summary line (on a terminal, the last failures above it, since the panel goes).

The display is :class:`capplan.core.progress.LiveDisplay`, and every text it prints passes the
process redactor. Time comes from ``clock`` (injected by tests: nothing here reads the wall clock
itself), so what is printed for a given sequence of events is deterministic.

"Running" counts trials the backend has taken and not yet handed back: the driver says so
(:meth:`Progress.ended`) the moment a trial's records reach it, not after they are written,
since the backend starts the next trial as soon as the driver takes a record and a count lowered
only after the write would, meanwhile, show one more trial running than ``--concurrency``.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from typing import TextIO

from rich.console import Console

from capplan.core.progress import LiveDisplay, plain_console
from capplan.core.redaction import redact_text
from capplan.trials.outcome import TrialStatus
from capplan.trials.spec import TrialRecords

#: the bar's widest, and the narrowest worth drawing
_BAR_MAX, _BAR_MIN = 30, 10
#: off a terminal: a progress line every this fraction of the run's trials…
STEP_FRACTION = 0.05
#: …or every this many seconds, whichever comes first
STEP_SECONDS = 30.0
#: a run of at most this many trials prints every trial's line (each is 5 % or more of it)
EVERY_TRIAL_UP_TO = 20
#: failures printed one by one before they are only counted (a run whose endpoint is down fails every trial)
FAILURE_LINES = 25
#: failures the panel (and, on a terminal, the end) shows
_PANEL_FAILURES = 3
#: the statuses a trial is a failure with (a completed trial that did not pass is a result, not a failure)
_FAILURES = frozenset({TrialStatus.FAILED, TrialStatus.ERROR, TrialStatus.ABORTED})


def duration(seconds: float) -> str:
    """A short, human duration: 45s, 3m20s, 1h02m, 2d03h."""
    s = max(0, int(round(seconds)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


class Progress:
    """Counts trials as they start and finish and renders them."""

    def __init__(self, stream: TextIO | None = None, *, live: bool | None = None, console: Console | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.console = console or plain_console(stream or sys.stderr, terminal=live)
        self.display = LiveDisplay(self.console, self._status, scrub=redact_text)
        self.live = self.display.live
        self.total = self.done = self.running = self.failed = 0
        self.interrupted = 0
        self.spent = 0.0
        #: trials whose cost no pricing covers: not in ``spent``, and said so
        self.unknown_cost = 0
        self.finished_here = 0  # this invocation's trials, for the rate (a resume's earlier ones excluded)
        self.by_node: Counter[str] = Counter()
        #: the trials running now (by key, when the driver names them) and since when
        self.running_since: dict[str, float] = {}
        self.last_failures: deque[str] = deque(maxlen=_PANEL_FAILURES)
        self.lines_printed = 0
        self._failure_lines = 0
        self._clock = clock
        self._began = clock()
        self._last_line = self._began
        self._next_step = 1  # the next 5 % step a progress line is due at
        self._lock = threading.Lock()

    # -- events (the driver's calls) -------------------------------------------------------------

    def begin(self, *, total: int, already: int, spent: float, again: int = 0) -> None:
        with self._lock:
            self.total, self.done, self.spent = total, already, spent
            self._began = self._last_line = self._clock()
            self._next_step = self._step() + 1
            if already:
                self._print(f"resuming: {already} of {total} trial(s) already finished")
            if again:
                self._print(f"retrying: {again} aborted trial(s) run again (--retry-aborted)")
            self.display.start()

    def started(self, key: object | None = None) -> None:
        """The backend took a trial to run (``key``: which one, for the panel's list)."""
        with self._lock:
            self.running += 1
            if key is not None:
                self.running_since[str(key)] = self._clock()
            self._heartbeat()
            self.display.refresh()

    def ended(self, key: object | None = None) -> None:
        """A trial's records reached the driver: it is no longer running (written or not)."""
        with self._lock:
            self.running = max(0, self.running - 1)
            if key is not None:
                self.running_since.pop(str(key), None)
            self.display.refresh()

    def finished(self, records: TrialRecords, *, written: bool, spent: float | None = None) -> None:
        """A trial that :meth:`ended` is accounted for: written to the run folder, or not (interrupted)."""
        with self._lock:
            # a driver that does not name its trials in ended() (an older backend's path) still clears them
            self.running_since.pop(str(records.key), None)
            if spent is not None:
                self.spent = spent
            run_line = records.run_line
            unknown = any(k in run_line and run_line[k] is None for k in ("cost_usd", "user_cost_usd"))
            if not written:
                self.interrupted += 1
                if self._small():
                    self._print(self._trial_line(records, unknown))
                self.display.refresh()
                return
            self.done += 1
            self.finished_here += 1
            self.unknown_cost += unknown
            if records.node is not None:
                self.by_node[records.node] += 1
            failure = records.status in _FAILURES
            if failure:
                self.failed += 1
                self.last_failures.append(self._trial_line(records, unknown))
            if self._small():
                self._print(self._trial_line(records, unknown))
            elif failure and not self.live:
                self._failure(self.last_failures[-1])
            self._heartbeat()
            self.display.refresh()

    def end(self) -> None:
        with self._lock:
            self.display.stop()
            if self.live and not self._small():
                # the panel is gone: its last failures stay on screen (every one is in runs.jsonl)
                if self.failed:
                    self._print(f"last {len(self.last_failures)} of {self.failed} failure(s):")
                    for line in self.last_failures:
                        self._print(f"  {line}")
            self._print(self._line())

    # -- what is printed ---------------------------------------------------------------------------

    def _print(self, text: str) -> None:
        self.display.print(text)
        self.lines_printed += 1
        self._last_line = self._clock()

    def _small(self) -> bool:
        return self.total <= EVERY_TRIAL_UP_TO

    def _step(self) -> int:
        """How many whole 5 % steps of the run are done."""
        return int(self.done * round(1 / STEP_FRACTION) // self.total) if self.total else 0

    def _heartbeat(self) -> None:
        """Off a terminal, a progress line at each new 5 % step, or after 30 s without a line."""
        if self.live or self._small():
            return
        step = self._step()
        if step >= self._next_step or self._clock() - self._last_line >= STEP_SECONDS:
            self._next_step = max(self._next_step, step + 1)
            self._print(self._tick())

    def _failure(self, line: str) -> None:
        self._failure_lines += 1
        if self._failure_lines <= FAILURE_LINES:
            self._print(line)
        elif self._failure_lines == FAILURE_LINES + 1:
            self._print("… more failures: counted in the progress lines from here (all are in runs.jsonl; "
                        "capplan trial report lists them)")

    @staticmethod
    def _trial_line(records: TrialRecords, unknown: bool) -> str:
        """One trial's line; ``unknown``: its cost (or its user simulator's) is unknown."""
        passed = records.run_line.get("passed")
        verdict = "passed" if passed else ("not passed" if passed is False else "ungraded")
        # a cost nobody reported is unknown, never $0 (runs.jsonl holds null for it); the known part is a
        # lower bound, with how many calls it leaves out
        calls = records.metrics.get("calls") or []
        missing = sum(1 for c in calls if isinstance(c, dict) and c.get("cost_usd") is None)
        cost = (f"cost ≥ ${records.cost_usd:.6f} (+ {missing} call(s) unknown)" if unknown and missing
                else "cost unknown" if unknown else f"${records.cost_usd:.6f}")
        return f"{records.status.value:<11} {records.key}  {records.termination_reason.value}  {verdict}  {cost}"

    def _rate_per_s(self) -> float:
        return self.finished_here / max(self._clock() - self._began, 1e-9)

    def _eta(self) -> str:
        left = self.total - self.done
        if left <= 0:
            return "0s"
        rate = self._rate_per_s()
        return duration(left / rate) if self.finished_here and rate > 0 else "—"

    def _spend(self, *, short: bool = False) -> str:
        text = f"{'≥ ' if self.unknown_cost else ''}${self.spent:.4f}{'' if short else ' spent'}"
        if self.unknown_cost:
            text += f" (+ {self.unknown_cost} of unknown cost)"
        return text

    def _percent(self) -> int:
        return int(100 * self.done / self.total) if self.total else 100

    def _tick(self) -> str:
        """A progress line in a log: short enough for 80 columns in a usual run."""
        failed = f" · {self.failed} failed" if self.failed else ""
        return (f"[{self._percent():>3}%] {self.done}/{self.total} · {self.running} running{failed} · "
                f"{self._rate_per_s() * 60:.1f}/min · {self._spend(short=True)} · ETA {self._eta()}")

    def _line(self) -> str:
        minutes = max(self._clock() - self._began, 1e-9) / 60
        line = (f"trials {self.done}/{self.total} done · {self.running} running · {self.failed} failed · "
                f"{self.finished_here / minutes:.1f}/min · {'≥ ' if self.unknown_cost else ''}${self.spent:.4f} spent")
        if self.unknown_cost:
            line += f" (+ {self.unknown_cost} trial(s) of unknown cost)"
        if self.interrupted:
            line += f" · {self.interrupted} interrupted"
        if self.by_node:
            line += " · per node: " + ", ".join(f"{node} {n}" for node, n in sorted(self.by_node.items()))
        return line

    def _status(self, width: int) -> str:
        """The live panel for ``width`` columns, one row per line (each cropped by the display)."""
        if self._small():
            return self._bar(self._line(), width)
        head = f"{self._percent()}% · {self.done}/{self.total} done · {self.running} running · {self.failed} failed"
        rows = [self._bar(head, width),
                f"{self._rate_per_s() * 60:.1f}/min · {self._spend()} · ETA {self._eta()}"]
        if self.by_node:
            rows.append("per node: " + ", ".join(f"{node} {n}" for node, n in sorted(self.by_node.items())))
        if self.running_since:
            rows.append(self._running_row(width))
        rows += [f"✗ {' '.join(line.split())}" for line in self.last_failures]  # no column padding: room is short
        return "\n".join(rows)

    def _running_row(self, width: int) -> str:
        """The trials running now, the longest-running first, as many as fit, then how many more."""
        now = self._clock()
        oldest = sorted(self.running_since.items(), key=lambda item: item[1])
        row, shown = "running:", 0
        for key, since in oldest:
            more = len(oldest) - shown - 1
            part = f" {key} {duration(now - since)}" + ("," if more else "")
            tail = f" +{more} more" if more else ""
            if len(row) + len(part) + len(tail) > width and shown:
                break
            row += part
            shown += 1
        if shown < len(oldest):
            row = row.rstrip(",") + f" +{len(oldest) - shown} more"
        return row

    def _bar(self, line: str, width: int) -> str:
        """``line`` with a bar before it where the bar fits beside it (cropped past that)."""
        room = min(_BAR_MAX, width - len(line) - 3)
        if room < _BAR_MIN:
            return line
        filled = int(room * self.done / self.total) if self.total else room
        return f"[{'#' * filled}{'.' * (room - filled)}] {line}"

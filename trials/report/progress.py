"""Live progress on stderr: done / running / failed and the spend so far.

On a terminal one live line, fitted to the terminal's width, is redrawn at the bottom and each
finished trial is printed above it; otherwise (CI logs, pipes) one line per finished trial and
the final summary, so a log shows what happened in order. The display is
:class:`capplan.core.progress.LiveDisplay`, and every text it prints passes the process redactor.

"Running" counts trials the backend has taken and not yet handed back: the driver says so
(:meth:`Progress.ended`) the moment a trial's records reach it, not after they are written,
since the backend starts the next trial as soon as the driver takes a record and a count lowered
only after the write would, meanwhile, show one more trial running than ``--concurrency``.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import TextIO

from rich.console import Console

from capplan.core.progress import LiveDisplay, plain_console
from capplan.core.redaction import redact_text
from capplan.trials.outcome import TrialStatus
from capplan.trials.spec import TrialRecords

#: the bar's widest, and the narrowest worth drawing
_BAR_MAX, _BAR_MIN = 30, 10


class Progress:
    """Counts trials as they start and finish and renders them."""

    def __init__(self, stream: TextIO | None = None, *, live: bool | None = None, console: Console | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.console = console or plain_console(stream or sys.stderr, terminal=live)
        self.display = LiveDisplay(self.console, self._status, scrub=redact_text)
        self.live = self.display.live
        self.total = self.done = self.running = self.failed = 0
        self.spent = 0.0
        #: trials whose cost no pricing covers: not in ``spent``, and said so
        self.unknown_cost = 0
        self.finished_here = 0  # this invocation's trials, for the rate (a resume's earlier ones excluded)
        self.by_node: Counter[str] = Counter()
        self._clock = clock
        self._began = clock()
        self._lock = threading.Lock()

    def begin(self, *, total: int, already: int, spent: float, again: int = 0) -> None:
        with self._lock:
            self.total, self.done, self.spent = total, already, spent
            self._began = self._clock()
            if already:
                self.display.print(f"resuming: {already} of {total} trial(s) already finished")
            if again:
                self.display.print(f"retrying: {again} aborted trial(s) run again (--retry-aborted)")
            self.display.start()

    def started(self) -> None:
        """The backend took a trial to run."""
        with self._lock:
            self.running += 1
            self.display.refresh()

    def ended(self) -> None:
        """A trial's records reached the driver: it is no longer running (written or not)."""
        with self._lock:
            self.running = max(0, self.running - 1)
            self.display.refresh()

    def finished(self, records: TrialRecords, *, written: bool, spent: float | None = None) -> None:
        """A trial that :meth:`ended` is accounted for: written to the run folder, or not (interrupted)."""
        with self._lock:
            if written:
                self.done += 1
                self.finished_here += 1
                if records.node is not None:
                    self.by_node[records.node] += 1
                if records.status is not TrialStatus.COMPLETED:
                    self.failed += 1
            if spent is not None:
                self.spent = spent
            passed = records.run_line.get("passed")
            verdict = "passed" if passed else ("not passed" if passed is False else "ungraded")
            # a cost nobody reported is unknown, never $0 (runs.jsonl holds null for it); the known part is a
            # lower bound, with how many calls it leaves out
            line = records.run_line
            unknown = any(k in line and line[k] is None for k in ("cost_usd", "user_cost_usd"))
            if unknown and written:
                self.unknown_cost += 1
            calls = records.metrics.get("calls") or []
            missing = sum(1 for c in calls if isinstance(c, dict) and c.get("cost_usd") is None)
            cost = (f"cost ≥ ${records.cost_usd:.6f} (+ {missing} call(s) unknown)" if unknown and missing
                    else "cost unknown" if unknown else f"${records.cost_usd:.6f}")
            self.display.print(f"{records.status.value:<11} {records.key}  {records.termination_reason.value}"
                               f"  {verdict}  {cost}")

    def end(self) -> None:
        with self._lock:
            self.display.stop()
            self.display.print(self._line())

    def _line(self) -> str:
        minutes = max(self._clock() - self._began, 1e-9) / 60
        line = (f"trials {self.done}/{self.total} done · {self.running} running · {self.failed} failed · "
                f"{self.finished_here / minutes:.1f}/min · {'≥ ' if self.unknown_cost else ''}${self.spent:.4f} spent")
        if self.unknown_cost:
            line += f" (+ {self.unknown_cost} trial(s) of unknown cost)"
        if self.by_node:
            line += " · per node: " + ", ".join(f"{node} {n}" for node, n in sorted(self.by_node.items()))
        return line

    def _status(self, width: int) -> str:
        """The live line for ``width`` columns: a bar where it fits beside the counts (cropped past that)."""
        line = self._line()
        room = min(_BAR_MAX, width - len(line) - 3)
        if room < _BAR_MIN:
            return line
        filled = int(room * self.done / self.total) if self.total else room
        return f"[{'#' * filled}{'.' * (room - filled)}] {line}"

"""Live progress on stderr: done / running / failed and the spend so far.

On a terminal it is one line redrawn in place; otherwise (CI logs, pipes) one line per
finished trial, so a log shows what happened in order.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from typing import TextIO

from capplan.trials.outcome import TrialStatus
from capplan.trials.spec import TrialRecords


class Progress:
    """Counts trials as they start and finish and renders them."""

    def __init__(self, stream: TextIO | None = None, *, live: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.total = self.done = self.running = self.failed = 0
        self.spent = 0.0
        self.finished_here = 0  # this invocation's trials, for the rate (a resume's earlier ones excluded)
        self.by_node: Counter[str] = Counter()
        self._began = time.monotonic()
        self._lock = threading.Lock()

    def begin(self, *, total: int, already: int, spent: float, again: int = 0) -> None:
        with self._lock:
            self.total, self.done, self.spent = total, already, spent
            self._began = time.monotonic()
            if already:
                self.stream.write(f"resuming: {already} of {total} trial(s) already finished\n")
            if again:
                self.stream.write(f"retrying: {again} aborted trial(s) run again (--retry-aborted)\n")
            self._draw()

    def started(self) -> None:
        with self._lock:
            self.running += 1
            self._draw()

    def finished(self, records: TrialRecords, *, written: bool, spent: float | None = None) -> None:
        with self._lock:
            self.running -= 1
            if written:
                self.done += 1
                self.finished_here += 1
                if records.node is not None:
                    self.by_node[records.node] += 1
                if records.status is not TrialStatus.COMPLETED:
                    self.failed += 1
            if spent is not None:
                self.spent = spent
            if not self.live:
                passed = records.run_line.get("passed")
                verdict = "passed" if passed else ("not passed" if passed is False else "ungraded")
                self.stream.write(f"{records.status.value:<11} {records.key}  {records.termination_reason.value}"
                                  f"  {verdict}  ${records.cost_usd:.6f}\n")
            self._draw()

    def end(self) -> None:
        with self._lock:
            if self.live:
                self.stream.write("\n")
            self.stream.write(self._line() + "\n")
            self.stream.flush()

    def _line(self) -> str:
        minutes = max(time.monotonic() - self._began, 1e-9) / 60
        line = (f"trials {self.done}/{self.total} done · {self.running} running · {self.failed} failed · "
                f"{self.finished_here / minutes:.1f}/min · ${self.spent:.4f} spent")
        if self.by_node:
            line += " · per node: " + ", ".join(f"{node} {n}" for node, n in sorted(self.by_node.items()))
        return line

    def _draw(self) -> None:
        if self.live:
            width = 30
            filled = int(width * self.done / self.total) if self.total else width
            self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {self._line()}\x1b[K")
            self.stream.flush()

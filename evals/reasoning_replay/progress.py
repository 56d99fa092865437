"""The ``run`` progress line: cells finished out of planned, and the folder's spend so far.

Drawn by :class:`capplan.core.progress.LiveDisplay`, the display the trial runner uses: on a
terminal the latest finished cell is the live line at the bottom (fitted to the width) and a
cell that did not finish cleanly is printed above it, to stay; elsewhere every cell is a line.
Every text passes :func:`redact.scrub` before it is printed.
"""

from __future__ import annotations

import sys
import threading
from typing import TextIO

from rich.console import Console

from capplan.core.progress import LiveDisplay, plain_console

from . import redact
from .budget import Budget


class Progress:
    """Prints one line per finished cell to stderr (the clean ones kept on one live line on a terminal)."""

    def __init__(self, total: int, already: int, budget: Budget, quiet: bool = False,
                 stream: TextIO | None = None, console: Console | None = None) -> None:
        self.total, self.done, self.budget, self.quiet = total, already, budget, quiet
        self.stream = stream or sys.stderr
        self.display = LiveDisplay(console or plain_console(self.stream), self._status, scrub=redact.scrub)
        self.tty = self.display.live
        self._latest = ""
        self._lock = threading.RLock()  # cell() closes the display when the last cell is in

    def start(self) -> None:
        """Say what is planned and what an earlier run already finished."""
        skipped = f", {self.done} already finished in this folder" if self.done else ""
        with self._lock:
            self._emit(f"{self.total} cells planned{skipped}; ${self.budget.spent:.4f} of "
                       f"${self.budget.cap:.2f} spent so far", final=True)

    def cell(self, label: str, state: str, reason: str = "") -> None:
        """Report one cell that ran (or was left for later)."""
        with self._lock:
            self.done += 1
            tail = f" ({reason})" if reason and state != "done" else ""
            line = (f"[{self.done:>3}/{self.total}] ${self.budget.spent:.4f}/${self.budget.cap:.2f}  "
                    f"{label}: {state}{tail}")
            self._emit(line, final=not self.tty or state != "done")
            if self.done >= self.total:
                self.close()

    def close(self) -> None:
        """End the live line, leaving the latest finished cell on the screen."""
        with self._lock:
            latest, self._latest = self._latest, ""
            self.display.stop()
            if latest and not self.quiet:
                self.display.print(latest)

    def _emit(self, line: str, final: bool) -> None:
        if self.quiet:
            return
        if final:
            self.display.print(line)
        else:
            self._latest = line
            self.display.start()
            self.display.refresh()

    def _status(self, width: int) -> str:
        return self._latest

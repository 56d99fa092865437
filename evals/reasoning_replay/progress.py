"""The ``run`` progress line: cells finished out of planned, and the folder's spend so far."""

from __future__ import annotations

import sys
import threading
from typing import TextIO

from . import redact
from .budget import Budget


class Progress:
    """Prints one line per finished cell to stderr (redrawn in place on a terminal)."""

    def __init__(self, total: int, already: int, budget: Budget, quiet: bool = False,
                 stream: TextIO | None = None) -> None:
        self.total, self.done, self.budget, self.quiet = total, already, budget, quiet
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._lock = threading.Lock()

    def start(self) -> None:
        """Say what is planned and what an earlier run already finished."""
        skipped = f", {self.done} already finished in this folder" if self.done else ""
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

    def _emit(self, line: str, final: bool) -> None:
        if self.quiet:
            return
        line = redact.scrub(line)
        if self.tty and not final:
            self.stream.write("\r\x1b[2K" + line[:200])
        else:
            self.stream.write(("\r\x1b[2K" if self.tty else "") + line + "\n")
        self.stream.flush()

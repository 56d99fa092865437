"""The progress display the trial runner and the replay harness share, drawn by rich.

On a terminal it keeps one live status line at the bottom of the screen and prints permanent
lines (a finished trial, a failure) above it. The live line is cropped to the terminal's width
at every redraw, so it never wraps: a wrapped line is one the next redraw cannot reach, and each
redraw would leave a copy of it behind. Anywhere else (a CI log, a pipe, a file) there is no live
line: the permanent lines are written one per line, unwrapped, so a log reads in order.

Every text passes ``scrub`` (the caller's redactor) before it reaches the console.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TextIO

from rich.cells import chop_cells
from rich.console import Console, ConsoleOptions, RenderResult
from rich.live import Live
from rich.text import Text

#: how a status line is worded for a given number of columns (lines apart by "\n": each one is cropped)
StatusLine = Callable[[int], str]
Scrub = Callable[[str], str]


def _unchanged(text: str) -> str:
    return text


def plain_console(stream: TextIO, *, terminal: bool | None = None, width: int | None = None) -> Console:
    """A console for ``stream`` that prints text as given: no markup, colour, emoji or highlighting.

    Whether ``stream`` is a terminal is its ``isatty()`` unless ``terminal`` says otherwise, never
    an environment variable: rich takes ``FORCE_COLOR`` (set by some CI runners) as "a terminal",
    and a CI log must not receive a live line's cursor movements.
    """
    if terminal is None:
        isatty = getattr(stream, "isatty", None)
        terminal = bool(isatty()) if callable(isatty) else False
    return Console(file=stream, force_terminal=terminal, width=width, markup=False, emoji=False,
                   highlight=False, color_system=None, soft_wrap=False)


class _StatusRenderable:
    """The live line, worded at render time for the width the console has then (terminals resize)."""

    def __init__(self, status: StatusLine, scrub: Scrub) -> None:
        self.status, self.scrub = status, scrub

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        # one column short of the width: some terminals wrap a line that fills the last column
        width = max(1, options.max_width - 1)
        # a status of several lines (a panel) is cropped line by line: no row may wrap
        rows = self.scrub(self.status(width)).split("\n")
        for i, row in enumerate(rows):
            text = Text(row, no_wrap=True, overflow="ellipsis", end="" if i == len(rows) - 1 else "\n")
            text.truncate(width, overflow="ellipsis")
            yield text


class LiveDisplay:
    """A live status line (terminal only) with permanent lines printed above it.

    Thread-safe: trials finish on several threads. ``status`` is called under the display's lock
    at every redraw with the number of columns it may use.
    """

    def __init__(self, console: Console, status: StatusLine, *, scrub: Scrub = _unchanged) -> None:
        self.console = console
        self.scrub = scrub
        #: a live line is drawn only where the cursor can go back to it
        self.live = console.is_terminal and not console.is_dumb_terminal
        self._lock = threading.RLock()
        self._live: Live | None = None
        self._renderable = _StatusRenderable(status, scrub)

    def start(self) -> None:
        """Draw the live line (a no-op off a terminal, or when already started)."""
        with self._lock:
            if not self.live or self._live is not None:
                return
            self._live = Live(self._renderable, console=self.console, auto_refresh=False, transient=True,
                              redirect_stdout=False, redirect_stderr=False)
            self._live.start(refresh=True)
            # rich hides the cursor while a live display runs; a run killed before stop() would
            # leave the user's shell without one
            self.console.show_cursor(True)

    def refresh(self) -> None:
        """Redraw the live line with the status as it is now."""
        with self._lock:
            if self._live is not None:
                self._live.refresh()

    def print(self, line: str) -> None:
        """A permanent line: above the live line on a terminal, one line of its own elsewhere."""
        with self._lock:
            text = self.scrub(line)
            if self.live:
                # broken at the width by characters (a word-wrap would drop the spaces it breaks
                # at), so no row is longer than the terminal and every character stays
                for row in chop_cells(text, max(1, self.console.width - 1)) or [""]:
                    self.console.print(Text(row, no_wrap=True, end="\n"))
            else:
                self.console.print(Text(text, end="\n"), soft_wrap=True)  # a log line is never broken
            self.console.file.flush()

    def stop(self) -> None:
        """Erase the live line (the caller prints the final summary with :meth:`print`)."""
        with self._lock:
            if self._live is not None:
                self._live.stop()
                self._live = None
            self.console.file.flush()

"""A small terminal emulator: what a screen of ``width`` columns shows after some output.

Enough of a VT100 for what rich's live display writes (printable text, CR, LF, erase line,
cursor up, cursor show/hide), so a test can read the screen a user would see, and count the
times a line ran past the last column and wrapped (each wrap is a row a redraw cannot reach).
"""

from __future__ import annotations

import re

_CSI = re.compile(r"\x1b\[(\??)([0-9;]*)([A-Za-z])")


class Screen:
    """Rows of text after ``feed``; ``wraps`` counts the characters written past the last column."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.rows: list[list[str]] = [[]]
        self.row = self.col = 0
        self.wraps = 0
        self._pending_wrap = False  # xterm: a full row wraps only when the next character arrives

    def feed(self, text: str) -> Screen:
        i = 0
        while i < len(text):
            match = _CSI.match(text, i)
            if match:
                self._control(match.group(1), match.group(2), match.group(3))
                i = match.end()
                continue
            ch = text[i]
            i += 1
            if ch == "\r":
                self.col, self._pending_wrap = 0, False
            elif ch == "\n":
                self._down()
                self.col, self._pending_wrap = 0, False
            elif ch == "\x1b":
                raise AssertionError(f"unexpected escape sequence {text[i - 1:i + 8]!r}")
            else:
                self._put(ch)
        return self

    def lines(self) -> list[str]:
        """The screen's rows, trailing blanks dropped (and a trailing empty row)."""
        out = ["".join(r).rstrip() for r in self.rows]
        while out and not out[-1]:
            out.pop()
        return out

    def text(self) -> str:
        """Every row's characters run together, as a user copying the wrapped text would get them."""
        return "".join("".join(r) for r in self.rows)

    def _put(self, ch: str) -> None:
        if self._pending_wrap:
            self.wraps += 1
            self._down()
            self.col, self._pending_wrap = 0, False
        line = self.rows[self.row]
        line.extend(" " * (self.col + 1 - len(line)))
        line[self.col] = ch
        if self.col == self.width - 1:
            self._pending_wrap = True
        else:
            self.col += 1

    def _down(self) -> None:
        self.row += 1
        while len(self.rows) <= self.row:
            self.rows.append([])

    def _control(self, private: str, args: str, final: str) -> None:
        if private == "?":
            return  # cursor shown / hidden
        n = int(args or "1") if final in "AB" else int(args or "0")
        if final == "A":
            self.row, self._pending_wrap = max(0, self.row - n), False
        elif final == "K":
            line = self.rows[self.row]
            if n == 2:
                line.clear()
            elif n == 0:
                del line[self.col:]
        elif final == "m":
            return
        else:
            raise AssertionError(f"control sequence not emulated: {final!r}")

"""Untrusted text (task ids, pack and model names, run folder names) made safe where it is printed.

A name reaches a terminal (``trial report`` prints its table), a markdown table
(``summary.md``) and CSV. An ANSI escape in a name would recolour or rewrite the terminal, a
control character could hide what follows, and a pipe would split a markdown row: escapes
and control characters are removed, line breaks become spaces, and the markdown cell escapes
backslashes and pipes so the row keeps its columns.
"""

from __future__ import annotations

import re

# CSI (ESC [ … final byte), OSC (ESC ] … BEL or ESC \), other two-byte escapes, and the 8-bit CSI/OSC forms
_ANSI = re.compile(
    r"(?:\x1b\[[0-?]*[ -/]*[@-~])"
    r"|(?:\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?)"
    r"|(?:\x9b[0-?]*[ -/]*[@-~])"
    r"|(?:\x9d[^\x07\x1b\x9c]*(?:\x07|\x9c)?)"
    r"|(?:\x1b[@-Z\\-_])"
)
# every C0 and C1 control and DEL, after line breaks and tabs became spaces
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SPACES = re.compile(r"[\r\n\t\v\f\u2028\u2029]+")
# bidirectional overrides and isolates can make a terminal show a name reversed
_BIDI = re.compile(r"[\u202a-\u202e\u2066-\u2069]")


def plain(text: object) -> str:
    """``text`` with escape sequences and control characters removed and line breaks as spaces."""
    value = _ANSI.sub("", str(text))
    value = _SPACES.sub(" ", value)
    return _BIDI.sub("", _CONTROL.sub("", value))


def md_cell(text: object) -> str:
    """``text`` as one markdown table cell: plain, with backslashes and pipes escaped."""
    return plain(text).replace("\\", "\\\\").replace("|", "\\|")


def md_table(header: list[str], rows: list[list[str]], align: str | None = None) -> list[str]:
    """A markdown table; every header and cell is escaped here, so callers pass raw values.

    ``align`` has one character per column: ``l`` or ``r``.
    """
    marks = align or "l" * len(header)
    lines = ["| " + " | ".join(md_cell(h) for h in header) + " |",
             "|" + "|".join("---:" if m == "r" else "---" for m in marks) + "|"]
    lines += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in rows]
    return lines

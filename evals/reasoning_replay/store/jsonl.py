"""Append-only JSON-lines files that survive crashes and hand edits.

Records are only ever appended; nothing here truncates or rewrites a file, so earlier
results cannot be lost. Files are opened without following links (a link planted under a log's
name is refused, see :mod:`capplan.core.confined_write`). A line that does not parse (a crash mid-write, a hand edit) is
reported and skipped on reading and left where it is.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from capplan.core import confined_write
from capplan.evals.reasoning_replay import redact
from capplan.evals.reasoning_replay.errors import HarnessError


class JsonlFile:
    """One ``*.jsonl`` file directly in the output folder, read and written without following links."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.folder, self.name = path.parent, path.name  # the folder is taken as given; the name is opened in it
        self._lock = threading.Lock()
        self._clean = False  # our own appends end in a newline: the file's end is looked at once

    def append(self, record: dict[str, Any]) -> None:
        """Add one record; credential values are scrubbed from the line first."""
        line = redact.scrub(json.dumps(record, ensure_ascii=False, default=str))
        with self._lock:
            try:
                # A torn last line (crash mid-write) must not swallow the next record.
                needs_newline = not self._clean and self._ends_without_newline()
                confined_write.append(self.folder, (self.name,),
                                      (("\n" if needs_newline else "") + line + "\n").encode("utf-8"))
            except confined_write.ConfinedPathError as exc:
                raise HarnessError(f"cannot write {exc.path}: {exc.message}" + (f"; {exc.hint}" if exc.hint else "")) \
                    from None
            self._clean = True

    def read(self) -> tuple[list[dict[str, Any]], list[str]]:
        """Every readable record, and one message per line that could not be read."""
        records: list[dict[str, Any]] = []
        problems: list[str] = []
        try:
            raw = confined_write.read_bytes(self.folder, (self.name,))
        except confined_write.ConfinedPathError as exc:
            return [], [f"{exc.path}: cannot read ({exc.message})"]
        except OSError as exc:
            return [], [f"{self.path}: cannot read ({exc.strerror or exc})"]
        if raw is None:
            return [], []
        text = raw.decode("utf-8-sig", errors="replace")
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except ValueError:
                value = None
            if isinstance(value, dict):
                records.append(value)
            else:
                problems.append(f"{self.path.name} line {number} is not a JSON record; "
                                f"skipped (left in the file)")
        return records, problems

    def _ends_without_newline(self) -> bool:
        raw = confined_write.read_bytes(self.folder, (self.name,))
        return raw is not None and raw != b"" and not raw.endswith(b"\n")

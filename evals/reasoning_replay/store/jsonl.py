"""Append-only JSON-lines files that survive crashes and hand edits.

Records are only ever appended; nothing here truncates or rewrites a file, so earlier
results cannot be lost. A line that does not parse (a crash mid-write, a hand edit) is
reported and skipped on reading and left where it is.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from capplan.evals.reasoning_replay import redact
from capplan.evals.reasoning_replay.errors import HarnessError


class JsonlFile:
    """One ``*.jsonl`` file in the output folder."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def append(self, record: dict[str, Any]) -> None:
        """Add one record; credential values are scrubbed from the line first."""
        line = redact.scrub(json.dumps(record, ensure_ascii=False, default=str))
        with self._lock:
            # A torn last line (crash mid-write) must not swallow the next record.
            needs_newline = self._ends_without_newline()
            try:
                with self.path.open("a", encoding="utf-8") as handle:
                    handle.write(("\n" if needs_newline else "") + line + "\n")
            except OSError as exc:
                raise HarnessError(f"cannot write {self.path}: {exc.strerror or exc}") from None

    def read(self) -> tuple[list[dict[str, Any]], list[str]]:
        """Every readable record, and one message per line that could not be read."""
        if not self.path.exists():
            return [], []
        records: list[dict[str, Any]] = []
        problems: list[str] = []
        try:
            text = self.path.read_text(encoding="utf-8-sig", errors="replace")
        except OSError as exc:
            return [], [f"{self.path}: cannot read ({exc.strerror or exc})"]
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
        try:
            with self.path.open("rb") as handle:
                handle.seek(0, 2)
                if handle.tell() == 0:
                    return False
                handle.seek(-1, 2)
                return handle.read(1) != b"\n"
        except FileNotFoundError:
            return False

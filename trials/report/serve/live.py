"""What a run is doing now: the trial executions its call journal opened and has not closed, with their turn.

``calls.jsonl`` (:mod:`capplan.trials.run_folder.call_journal`) gets a ``send`` line before every
provider request and an ``end`` line when the driver closes the execution, so an execution with
sends and no ``end`` or ``lost`` line is running (or died with its process: the run's status says
which it may be). Its current turn is the highest turn its sends name. Only the fields read here
are trusted, and only in shape; a line that does not parse is skipped, since the view is a
reader of a file another process is appending to (its last line may be half written).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capplan.trials.run_folder import confined
from capplan.trials.run_folder.call_journal import JOURNAL_FILE, MAX_JOURNAL_LINE_BYTES
from capplan.trials.run_folder.confined import ConfinedPathError

#: a journal larger than this is not read for live turns (a 10 000-trial run's journal is far below it)
MAX_LIVE_JOURNAL_BYTES = 256 << 20


@dataclass(frozen=True)
class Running:
    """One trial execution in flight."""

    key: str
    attempt: int
    turn: int
    sends: int
    calls: int

    def as_json(self) -> dict[str, Any]:
        return {"key": self.key, "attempt": self.attempt, "turn": self.turn, "sends": self.sends, "calls": self.calls}


def _whole(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def running(root: Path) -> tuple[list[Running], str | None]:
    """The executions of ``root``'s journal still open, in journal order, and a note when the journal is not read."""
    try:
        raw = confined.read_bytes(root, (JOURNAL_FILE,), limit=MAX_LIVE_JOURNAL_BYTES)
    except ConfinedPathError as exc:
        return [], f"{JOURNAL_FILE}: {exc.diagnostic().message}"
    if raw is None:
        return [], None
    open_: dict[str, dict[str, Any]] = {}
    closed: set[str] = set()
    for chunk in raw.split(b"\n"):
        if not chunk or len(chunk) > MAX_JOURNAL_LINE_BYTES:
            continue
        try:
            data = json.loads(chunk)
        except (UnicodeDecodeError, ValueError, RecursionError):
            continue  # the half-written last line, or a damaged one: trial report locates those
        if not isinstance(data, dict):
            continue
        execution, key, attempt = data.get("execution"), data.get("key"), _whole(data.get("attempt"))
        if not isinstance(execution, str) or not isinstance(key, str) or key.count("/") != 2 or attempt is None:
            continue
        kind = data.get("kind")
        if kind in ("end", "lost"):
            closed.add(execution)
            continue
        entry = open_.setdefault(execution, {"key": key, "attempt": attempt, "turn": 0, "sends": 0, "calls": 0})
        record = data.get("send") if kind == "send" else data.get("call") if kind == "call" else None
        if not isinstance(record, dict):
            continue
        entry["sends" if kind == "send" else "calls"] += 1
        turn = _whole(record.get("turn"))
        if turn is not None and turn > entry["turn"]:
            entry["turn"] = turn
    return [Running(**entry) for execution, entry in open_.items() if execution not in closed], None

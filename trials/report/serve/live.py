"""What a run is doing now: the trial executions its call journal opened and has not closed, with their turn.

``calls.jsonl`` (:mod:`capplan.trials.run_folder.call_journal`) gets a ``send`` line before every
provider request and an ``end`` line when the driver closes the execution, so an execution with
sends and no ``end`` or ``lost`` line is running (or died with its process: the run's status says
which it may be). Its current turn is the highest turn its sends and calls name. Only the fields
read here are trusted, and only in shape; a line that does not parse is skipped (``trial report``
locates those), since the view reads a file another process is appending to.

The journal only grows while a run writes and the page asks every second, so a reader keeps
what it parsed and, when the file's first bytes are still the ones it parsed (compared by
digest), parses only the complete lines added since.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
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


@dataclass
class _State:
    parsed: int = 0  # bytes of complete lines parsed
    digest: bytes = b""
    open_: dict[str, dict[str, Any]] = field(default_factory=dict)
    closed: set[str] = field(default_factory=set)

    def take(self, chunk: bytes) -> None:
        if not chunk or len(chunk) > MAX_JOURNAL_LINE_BYTES:
            return
        try:
            data = json.loads(chunk)
        except (UnicodeDecodeError, ValueError, RecursionError):
            return
        if not isinstance(data, dict):
            return
        execution, key, attempt = data.get("execution"), data.get("key"), _whole(data.get("attempt"))
        if not isinstance(execution, str) or not isinstance(key, str) or key.count("/") != 2 or attempt is None:
            return
        kind = data.get("kind")
        if kind in ("end", "lost"):
            self.closed.add(execution)
            self.open_.pop(execution, None)
            return
        if execution in self.closed:
            return
        record = data.get("send") if kind == "send" else data.get("call") if kind == "call" else None
        if not isinstance(record, dict):
            return
        entry = self.open_.setdefault(execution, {"key": key, "attempt": attempt, "turn": 0, "sends": 0, "calls": 0})
        entry["sends" if kind == "send" else "calls"] += 1
        turn = _whole(record.get("turn"))
        if turn is not None and turn > entry["turn"]:
            entry["turn"] = turn


class LiveJournal:
    """The open executions of one run folder's journal, re-read incrementally. Thread-safe."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.Lock()
        self._state = _State()

    def running(self) -> tuple[list[Running], str | None]:
        """The executions still open, in journal order, and a note when the journal cannot be read."""
        try:
            raw = confined.read_bytes(self.root, (JOURNAL_FILE,), limit=MAX_LIVE_JOURNAL_BYTES)
        except ConfinedPathError as exc:
            return [], f"{JOURNAL_FILE}: {exc.diagnostic().message}"
        with self._lock:
            state = self._state
            if raw is None or len(raw) < state.parsed or \
                    hashlib.blake2b(memoryview(raw)[:state.parsed]).digest() != state.digest:
                state = self._state = _State()  # rewritten or shortened: parse from the start
            if raw is None:
                return [], None
            end = raw.rfind(b"\n") + 1  # a half-written last line waits for its newline
            if end > state.parsed:
                for chunk in raw[state.parsed:end].split(b"\n"):
                    state.take(chunk)
                state.parsed = end
                state.digest = hashlib.blake2b(memoryview(raw)[:end]).digest()
            return [Running(**entry) for entry in state.open_.values()], None


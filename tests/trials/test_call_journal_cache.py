"""Reading calls.jsonl back again parses only what was appended, and gives what a full read gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from capplan.core.diagnostics import Diagnostic
from capplan.trials.run_folder.call_journal import JOURNAL_FILE, Journal, JournalCache, read_journal


def _line(execution: str, key: str, kind: str = "call", **extra: Any) -> bytes:
    data: dict[str, Any] = {"kind": kind, "execution": execution, "key": key, "attempt": 1, **extra}
    if kind == "call":
        data.setdefault("call", {"role": "agent"})
        data.setdefault("at", 1.5)
    return (json.dumps(data) + "\n").encode()


def _shape(journal: Journal) -> Any:
    return ({e: (x.key, x.attempt, x.calls, x.ends, x.last_at) for e, x in journal.executions.items()},
            journal.good_bytes, journal.torn_lineno, journal.lines)


def _both(root: Path, cache: JournalCache) -> tuple[Any, list[str], Any, list[str]]:
    cached: list[Diagnostic] = []
    full: list[Diagnostic] = []
    a = _shape(cache.read(root, cached))
    b = _shape(read_journal(root, full))
    return a, [d.message for d in cached], b, [d.message for d in full]


def test_appended_lines_are_read_as_a_full_read_reads_them(tmp_path: Path) -> None:
    path = tmp_path / JOURNAL_FILE
    path.write_bytes(_line("e1", "m/t/0") + _line("e1", "m/t/0", at=2.0))
    cache = JournalCache()
    a, da, b, db = _both(tmp_path, cache)
    assert (a, da) == (b, db) and a[3] == 2
    with path.open("ab") as f:
        f.write(_line("e1", "m/t/0", kind="end", **{"as": "written"}) + _line("e2", "m/t/1"))
    a, da, b, db = _both(tmp_path, cache)
    assert (a, da) == (b, db)
    assert set(a[0]) == {"e1", "e2"} and len(a[0]["e1"][3]) == 1 and a[3] == 4


def test_a_rewritten_journal_is_parsed_again_from_its_start(tmp_path: Path) -> None:
    path = tmp_path / JOURNAL_FILE
    path.write_bytes(_line("e1", "m/t/0") + _line("e2", "m/t/1"))
    cache = JournalCache()
    _both(tmp_path, cache)
    path.write_bytes(_line("e3", "m/t/0") + _line("e2", "m/t/1") + _line("e4", "m/t/2"))  # same first length
    a, da, b, db = _both(tmp_path, cache)
    assert (a, da) == (b, db) and set(a[0]) == {"e3", "e2", "e4"}
    path.write_bytes(_line("e5", "m/t/0"))  # shorter
    a, da, b, db = _both(tmp_path, cache)
    assert (a, da) == (b, db) and set(a[0]) == {"e5"}


def test_bad_and_torn_lines_are_reported_on_every_read(tmp_path: Path) -> None:
    path = tmp_path / JOURNAL_FILE
    path.write_bytes(_line("e1", "m/t/0") + b"not json\n" + b'{"kind": "ca')
    cache = JournalCache()
    for _ in range(2):
        a, da, b, db = _both(tmp_path, cache)
        assert (a, da) == (b, db)
        assert da == ["is not a JSON line"] and a[2] == 3
    path.write_bytes(_line("e1", "m/t/0"))
    a, da, b, db = _both(tmp_path, cache)
    assert (a, da, a[2]) == (b, db, 0)


def test_a_missing_journal_reads_as_empty_and_forgets_the_last_read(tmp_path: Path) -> None:
    path = tmp_path / JOURNAL_FILE
    path.write_bytes(_line("e1", "m/t/0"))
    cache = JournalCache()
    _both(tmp_path, cache)
    path.unlink()
    assert _shape(cache.read(tmp_path, [])) == _shape(Journal())
    path.write_bytes(_line("e1", "m/t/0"))
    a, da, b, db = _both(tmp_path, cache)
    assert (a, da) == (b, db) and a[3] == 1

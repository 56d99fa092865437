"""Reading calls.jsonl back again parses only what was appended, and gives what a full read gives."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from capplan.core.diagnostics import Diagnostic
from capplan.trials.run_folder import call_journal, confined
from capplan.trials.run_folder.call_journal import JOURNAL_FILE, Journal, JournalCache, call_data, read_journal
from capplan.trials.run_folder.confined import ConfinedPathError
from capplan.trials.run_folder.folder import RunFolder
from capplan.trials.run_folder.journal_lines import call_text
from capplan.trials.spec import TrialSpec
from tests.mode_switch import mode
from tests.trials.helpers import opened_run_folder
from tests.trials.test_call_journal_folder import call


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


# -- lines this process appends: followed as they are written, never parsed back ------------------------


def _normal(journal: Journal) -> Any:
    """``_shape`` with each call record as its parsed object (the memo keeps records it appended as text)."""
    return ({e: (x.key, x.attempt, [(n, json.loads(c) if isinstance(c, str) else c) for n, c in x.calls], x.ends,
                 x.last_at, x.sends, x.answered) for e, x in journal.executions.items()},
            journal.good_bytes, journal.torn_lineno, journal.lines)


@pytest.fixture
def folder(tmp_path: Path) -> tuple[RunFolder, list[TrialSpec]]:
    return opened_run_folder(tmp_path, trials=4)


def _journal_a_run(opened: RunFolder, specs: list[TrialSpec]) -> None:
    """Every kind of line, as trials and worker processes make them: some executions end, some die."""
    journal = opened.journal
    assert journal is not None
    keys = [str(s.key) for s in specs]
    first = journal.begin(keys[0])
    first.record(call(0.002))
    first.record(call(None, role="user"), request_id="r-user")
    journal.written(keys[0], 1)
    worker = journal.begin_execution(keys[1])  # a worker process's execution: its lines arrive assembled
    head = journal.line_head(keys[1], worker)
    journal.announce_line(head, "agent", "r1", 0.5, head.send_line(1767225600.5, "r1", "agent", 0, 1, 0.5))
    text = call_text(call_data(call(0.25)))
    journal.record_line(head, 1767225601.25, text, head.call_line(1767225601.25, text, "r1"), 0.25, True, "r1")
    journal.announce(keys[1], worker, "agent", 1, "r2", 1, None)  # never answered: died in flight
    dead = journal.begin(keys[2])
    dead.record(call(0.001))
    journal.lost(keys[2])
    interrupted = journal.begin(keys[3])
    interrupted.record(call(0.003))
    journal.interrupted(keys[3], "2026-01-01T00:00:00Z")


@pytest.mark.fast_side
def test_lines_this_process_appends_read_back_as_a_full_read_of_the_file(
        folder: tuple[RunFolder, list[TrialSpec]], monkeypatch: pytest.MonkeyPatch) -> None:
    opened, specs = folder
    parsed: list[int] = []
    original = call_journal._take_line

    def counted(journal: Journal, chunk: bytes, lineno: int) -> str | None:
        parsed.append(lineno)
        return original(journal, chunk, lineno)

    monkeypatch.setattr(call_journal, "_take_line", counted)
    with mode(False):
        _journal_a_run(opened, specs)
        followed = opened._journal_read.read(opened.root, [])
        assert parsed == []  # every line was followed as it was written
        assert _normal(followed) == _normal(read_journal(opened.root, []))
        assert followed.lines == 10 and parsed == list(range(1, 11))  # the full read above parsed them
        assert opened.died_in_flight() == RunFolder(opened.root).died_in_flight()
        # no runs.jsonl line or run.json entry names any of them: all four died in flight, the lost one too
        assert [d.key for d in opened.died_in_flight()] == [str(s.key) for s in specs]


def test_a_line_another_writer_appended_makes_the_next_read_parse_the_file(
        folder: tuple[RunFolder, list[TrialSpec]], monkeypatch: pytest.MonkeyPatch) -> None:
    opened, specs = folder
    with mode(False):
        _journal_a_run(opened, specs)
        opened._journal_read.read(opened.root, [])
        assert opened.journal is not None
        opened.journal.begin(str(specs[0].key)).record(call(0.004))
        with (opened.root / JOURNAL_FILE).open("ab") as f:  # between this process's lines
            f.write(_line("stranger", str(specs[1].key)))
        opened.journal.begin(str(specs[3].key)).record(call(0.005))
        parsed: list[int] = []
        original = call_journal._take_line
        monkeypatch.setattr(call_journal, "_take_line",
                            lambda j, c, n: parsed.append(n) or original(j, c, n))  # type: ignore[func-returns-value]
        followed = opened._journal_read.read(opened.root, [])
        assert parsed == list(range(1, 14))  # the digest did not match: parsed from the start
        assert _normal(followed) == _normal(read_journal(opened.root, []))
        assert "stranger" in followed.executions


def test_a_failed_append_and_an_overlong_line_are_left_to_a_full_read(
        folder: tuple[RunFolder, list[TrialSpec]], monkeypatch: pytest.MonkeyPatch) -> None:
    opened, specs = folder
    journal = opened.journal
    assert journal is not None
    cache = opened._journal_read
    with mode(False):
        cache.read(opened.root, [])
        writes = confined.write_all

        def torn(fd: int, data: bytes) -> None:
            writes(fd, data[:10])  # part of the line reaches the file
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(confined, "write_all", torn)
        journal.begin(str(specs[0].key)).record(call(0.001))
        assert isinstance(journal.failure, ConfinedPathError)  # kept for the driver to stop the run with
        monkeypatch.setattr(confined, "write_all", writes)
        journal.begin(str(specs[1].key)).record(call(0.002))
        found: list[Diagnostic] = []
        assert cache._journal is None  # forgotten: nothing appended since is trusted
        cache.read(opened.root, found)
        assert [d.message for d in found] == ["is not a JSON line"]  # the torn bytes joined the next line
        (opened.root / JOURNAL_FILE).write_bytes(b"")
        cache.read(opened.root, [])
        worker = journal.begin_execution(str(specs[2].key))
        journal.record_encoded(str(specs[2].key), worker, json.dumps({"role": "agent", "note": "x" * (70 << 10)}),
                               None, True)
        assert cache._journal is None  # over the line limit: a read must see (and refuse) it
        found = []
        cache.read(opened.root, found)
        assert [d.message for d in found][0].startswith("is ") and "bytes long" in found[0].message


def test_the_reference_mode_follows_nothing(folder: tuple[RunFolder, list[TrialSpec]]) -> None:
    opened, specs = folder
    with mode(True):
        _journal_a_run(opened, specs)
        assert opened._journal_read._followed == []
        assert _normal(opened._journal_read.read(opened.root, [])) == _normal(read_journal(opened.root, []))


def test_a_read_with_nothing_appended_since_reads_nothing_and_any_change_is_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / JOURNAL_FILE
    path.write_bytes(_line("e1", "m/t/0") + _line("e2", "m/t/1"))
    cache = JournalCache()
    reads: list[int] = []
    original = confined.read_bytes
    monkeypatch.setattr(confined, "read_bytes", lambda root, parts, **kw: reads.append(1) or original(root, parts, **kw))
    with mode(False):
        first = cache.read(tmp_path, [])
        assert cache.read(tmp_path, []) is first and len(reads) == 1  # unchanged: a stat, not a read
        with path.open("ab") as f:  # another writer's line
            f.write(_line("e3", "m/t/2"))
        a, da, b, db = _both(tmp_path, cache)
        assert (a, da) == (b, db) and set(a[0]) == {"e1", "e2", "e3"}
        assert len(reads) == 3  # the cache read the file again (and so did the full read beside it)
        stat = path.stat()
        path.write_bytes(_line("e4", "m/t/0") + _line("e5", "m/t/1") + _line("e6", "m/t/2"))  # the same size
        assert path.stat().st_size == stat.st_size
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # a rewrite is a new modification time
        a, da, b, db = _both(tmp_path, cache)
        assert (a, da) == (b, db) and set(a[0]) == {"e4", "e5", "e6"}


def test_held_lines_reach_the_file_in_one_append_in_order_and_read_back_as_a_full_read(
        folder: tuple[RunFolder, list[TrialSpec]], monkeypatch: pytest.MonkeyPatch) -> None:
    # seam *reader batches*: a worker's reader holds the lines of the messages one receive brought
    opened, specs = folder
    journal = opened.journal
    assert journal is not None
    writes: list[bytes] = []
    original = confined.write_all
    monkeypatch.setattr(confined, "write_all", lambda fd, data: (writes.append(data), original(fd, data))[1])
    key = str(specs[0].key)
    with mode(False):
        opened._journal_read.read(opened.root, [])
        execution = journal.begin_execution(key)
        journal.hold()
        journal.announce(key, execution, "agent", 0, "r0", 1, None)
        journal.record_encoded(key, execution, call_text(call_data(call(0.002))), 0.002, True, "r0")
        journal.announce(key, execution, "agent", 1, "r1", 1, None)
        assert writes == [] and not (opened.root / JOURNAL_FILE).exists()  # held
        journal.flush()
        assert len(writes) == 1
        assert [json.loads(line)["kind"] for line in writes[0].splitlines()] == ["send", "call", "send"]
        parsed: list[int] = []
        monkeypatch.setattr(call_journal, "_take_line", lambda j, c, n: parsed.append(n))  # type: ignore[func-returns-value]
        followed = opened._journal_read.read(opened.root, [])
        assert parsed == []  # followed in the file's order
        monkeypatch.undo()
        assert _normal(followed) == _normal(read_journal(opened.root, []))
        journal.flush()  # nothing held: nothing written
        assert len(writes) == 1


def test_the_reference_mode_holds_nothing(folder: tuple[RunFolder, list[TrialSpec]]) -> None:
    opened, specs = folder
    journal = opened.journal
    assert journal is not None
    key = str(specs[0].key)
    with mode(True):
        execution = journal.begin_execution(key)
        journal.hold()
        journal.announce(key, execution, "agent", 0, "r0", 1, None)
        assert b'"kind":"send"' in (opened.root / JOURNAL_FILE).read_bytes()  # written as it was appended

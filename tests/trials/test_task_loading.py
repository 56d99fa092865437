"""Fast task loading: libyaml gives the careful reader's data, positions are computed only for a diagnostic, and
a run reads and validates each task file once."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from capplan.core.diagnostics import InputError
from capplan.core.yaml_source import source_from_bytes
from capplan.core import yaml_fast
from capplan.trials.tasks import loading as tasks
from capplan.trials.tasks.task_source import fast_data, task_source_from_bytes
from capplan.trials.tasks.loading import lint_task, load_task, load_task_text
from tests.trials.helpers import EXAMPLES

SCALARS = [
    "1", "-1", "+1", "0", "-0", "1.5", "0.0", "1.5e3", "1.0e+3", "true", "True", "FALSE", "null", "~", "", "Null",
    "yes", "no", "on", "off", "y", "nULL", "tRUE", "012", "00", "0x1f", "0o17", "0b11", "1_000", "1e5", "3.", ".5",
    ".inf", "-.inf", ".NaN", "1:20", "2026-01-02", "2001-12-14t21:59:43.10-05:00", "2026.3.23", "1.2.3", "12 apples",
    "27in monitor", "-rw-r--r--", ".hidden", "0xZZ", "1e", "1 2", "a b", "'quoted 1'", '"2"', "[1, 2.5, x]",
    "{a: 1, 2: b}", "1" * 150, "1." + "5" * 200,
]


@pytest.mark.fast_side
@pytest.mark.parametrize("scalar", SCALARS)
def test_every_scalar_form_reads_as_the_careful_reader_reads_it(scalar: str) -> None:
    raw = f"key: {scalar}\n".encode()
    careful = source_from_bytes(raw, "x").data
    fast = fast_data(raw)
    assert fast is not None
    assert repr(fast) == repr(careful)


@pytest.mark.fast_side
@pytest.mark.parametrize("text", [
    "a: &x [1, {c: d}]\nb: *x\n",  # an alias: a copy, as the careful reader makes it
    "&r a: 1\n",
])
def test_aliases_within_bounds_read_the_same(text: str) -> None:
    assert fast_data(text.encode()) == source_from_bytes(text.encode(), "x").data


@pytest.mark.parametrize("text", [
    "a: 1\na: 2\n",  # a duplicate key: the careful reader names it
    "a: &x\n  b: *x\n",  # an alias inside its own anchor
    "a: !!str 3\n",  # an explicit tag
    "? [a]\n: 1\n",  # a complex key
    "a: 1\n---\nb: 2\n",  # two documents
    "a: *nowhere\n",
    "a: " + "1" * 5000 + "\n",  # past Python's int digit limit: the careful reader reports it
])
def test_what_only_the_careful_reader_reads_exactly_is_left_to_it(text: str) -> None:
    assert fast_data(text.encode()) is None


@pytest.mark.fast_side
def test_example_task_files_read_the_same_and_need_no_positions(monkeypatch: pytest.MonkeyPatch) -> None:
    files = sorted(EXAMPLES.glob("*/*.yaml"))
    assert files
    careful_reads: list[str] = []
    real = yaml_fast.source_from_bytes  # the careful reader, as the fast reader calls it

    def counted(raw: bytes, name: str) -> Any:
        careful_reads.append(name)
        return real(raw, name)

    monkeypatch.setattr(yaml_fast, "source_from_bytes", counted)
    for path in files:
        raw = path.read_bytes()
        assert task_source_from_bytes(raw, str(path)).data == real(raw, str(path)).data
        assert lint_task(path) == []
    assert careful_reads == []  # no file had a problem, so no position was ever computed


def test_a_diagnostic_gets_its_position_from_the_careful_reader(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "inventory_desk", tmp_path / "pack")
    path = sorted((tmp_path / "pack").glob("*.yaml"))[0]
    text = path.read_text()
    path.write_text(text + "max_turnz: 3\n")
    (diag,) = lint_task(path)
    assert (diag.code, diag.line, diag.col) == ("unknown-key", text.count("\n") + 1, 1)


def test_a_run_reads_and_validates_each_task_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(EXAMPLES / "inventory_desk", tmp_path / "pack")
    path = sorted((tmp_path / "pack").glob("*.yaml"))[0]
    parses: list[str] = []
    real = tasks.task_source_from_bytes

    def counted(raw: bytes, name: str) -> Any:
        parses.append(name)
        return real(raw, name)

    monkeypatch.setattr(tasks, "task_source_from_bytes", counted)
    loaded = load_task(path)
    again = load_task_text(path.read_text(), str(path))  # the trial's copy, as the runner loads it
    assert again is loaded and parses == [str(path)]
    # different content at the same path is loaded (and checked) anew
    path.write_text(path.read_text().replace("system_prompt:", "max_turns: 0\nsystem_prompt:", 1))
    with pytest.raises(InputError):
        load_task_text(path.read_text(), str(path))
    assert len(parses) == 2


def test_positions_for_a_diagnostic_are_the_careful_reader_s(tmp_path: Path) -> None:
    files = [*sorted(EXAMPLES.glob("*/*.yaml")), Path(__file__).parent / "one_pass_task" / "broken.yaml"]
    for path in files:
        raw = path.read_bytes()
        lazy = task_source_from_bytes(raw, str(path))
        careful = source_from_bytes(raw, str(path))
        assert [lazy.position(loc) for loc in careful.positions] == list(careful.positions.values()), path

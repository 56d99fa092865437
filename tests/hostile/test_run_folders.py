"""A trial run folder someone tampered with: located errors, exit 2, nothing changed, nothing written outside.

Every case starts from a real run (``capplan trial run`` offline on the mock plan and the
shipped inventory_desk pack), breaks it the way the issue did, and then runs the real
``capplan trial report`` and the resume (the same ``trial run`` command). ``runs.jsonl`` is
the run's record of what was paid for: no reader may drop or rewrite a line of it.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from tests.cli_runner import invoke_checked
from tests.trials.helpers import EXAMPLES, REPO, mock_plan, spec_for, write_task
from capplan.trials.run_folder import confined
from capplan.trials.run_folder.confined import ConfinedPathError, confined_path
from capplan.trials.run_folder.folder import RunFolder, RunFolderError
from capplan.trials.runner import RunContext, run_trial

MOCK_PLAN = REPO / "golden" / "plans" / "mock-echo.json"
TASKS = sorted(str(p) for p in (EXAMPLES / "inventory_desk").glob("*.yaml"))
CANARY = "sk-canary-RUNFOLDER-4242"

Snapshot = dict[str, tuple[str, bytes]]


def run(*args: str) -> Result:
    result = invoke_checked(*args)
    assert CANARY not in result.output
    return result


def trial_run(out: Path, *extra: str) -> Result:
    return run("trial", "run", *TASKS, "--plan", str(MOCK_PLAN), "--user-plan", str(MOCK_PLAN), "--out", str(out),
               *extra)


def snapshot(root: Path) -> Snapshot:
    """Every entry under ``root`` (links not followed): kind and bytes or link target, by relative path."""
    found: Snapshot = {}
    if not os.path.lexists(root):
        return found
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            rel = str(path.relative_to(root))
            if path.is_symlink():
                found[rel] = ("link", os.readlink(path).encode())
            elif path.is_dir():
                found[rel] = ("folder", b"")
            elif path.is_file():
                found[rel] = ("file", path.read_bytes())
            else:
                found[rel] = ("special", b"")
    return found


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run of the five inventory_desk tasks."""
    out = tmp_path_factory.mktemp("pristine") / "run"
    result = trial_run(out)
    assert result.exit_code == 0, result.output
    assert len((out / "runs.jsonl").read_bytes().splitlines()) == len(TASKS)
    return out


@pytest.fixture
def copy(pristine: Path, tmp_path: Path) -> Path:
    out = tmp_path / "work" / "run"
    shutil.copytree(pristine, out, symlinks=True)
    return out


def lines_of(out: Path) -> list[bytes]:
    return (out / "runs.jsonl").read_bytes().splitlines(keepends=True)


def set_lines(out: Path, lines: list[bytes]) -> None:
    (out / "runs.jsonl").write_bytes(b"".join(lines))


def refused_everywhere(out: Path, located: str, *, outside: Path | None = None, report: bool = True) -> None:
    """``report`` and the resume both fail at ``located`` with exit 2, and change nothing anywhere."""
    before, around = snapshot(out), snapshot(outside) if outside is not None else {}
    for result in ([run("trial", "report", str(out))] if report else []) + [trial_run(out)]:
        assert result.exit_code == 2, result.output
        assert located in result.output, result.output
        assert snapshot(out) == before
        if outside is not None:
            assert snapshot(outside) == around


# -- lines that do not read back ----------------------------------------------------------------

def test_a_garbage_second_line_is_located_and_nothing_is_dropped(copy: Path) -> None:
    lines = lines_of(copy)
    set_lines(copy, [lines[0], b"oops\n", *lines[1:]])  # sed -i '2i oops' runs.jsonl
    before = (copy / "runs.jsonl").read_bytes()
    report = run("trial", "report", str(copy))
    assert report.exit_code == 2
    assert f"{copy / 'runs.jsonl'}:2:1: error[run-line-json]" in report.output
    assert (copy / "runs.jsonl").read_bytes() == before  # all six lines, byte for byte
    refused_everywhere(copy, "runs.jsonl:2:1: error[run-line-json]")


def _drop_cost(line: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in line.items() if k != "cost_usd"}


BAD_LINES: dict[str, tuple[Callable[[dict[str, object]], bytes], str]] = {
    "blank": (lambda line: b"\n", "error[run-line-blank]"),
    "whitespace": (lambda line: b"   \t\n", "error[run-line-blank]"),
    "array": (lambda line: b"[1, 2]\n", "error[run-line-not-object]"),
    "string": (lambda line: json.dumps(CANARY).encode() + b"\n", "error[run-line-not-object]"),
    "missing-key": (lambda line: json.dumps(_drop_cost(line)).encode() + b"\n", "required key 'cost_usd' is missing"),
    "cost-lots": (lambda line: json.dumps({**line, "cost_usd": "lots " + CANARY}).encode() + b"\n",
                  "cost_usd: Input should be a valid number"),
    "cost-negative": (lambda line: json.dumps({**line, "cost_usd": -5}).encode() + b"\n", "cost_usd:"),
    "cost-nan": (lambda line: json.dumps({**line, "cost_usd": float("nan")}).encode() + b"\n",
                 "error[run-line-json]"),
    "cost-as-text": (lambda line: json.dumps({**line, "cost_usd": "0.5"}).encode() + b"\n", "cost_usd:"),
    "huge-index": (lambda line: json.dumps(line).replace('"index": 0', '"index": ' + "9" * 5001).encode() + b"\n",
                   "error[run-line-json]"),
    "escaping-dir": (lambda line: json.dumps({**line, "dir": "../../../elsewhere"}).encode() + b"\n",
                     "dir must be trials/<plan_key>/<task_id>/<index>"),
    "unsafe-key": (lambda line: json.dumps({**line, "plan_key": "../x", "key": "../x/t/0", "dir": "trials/../x/t/0"}
                                           ).encode() + b"\n", "model key must not contain '..'"),
    "not-utf8": (lambda line: b'{"key": "\xff"}\n', "error[run-line-json]: is not UTF-8 text"),
    "deep": (lambda line: b"[" * 5000 + b"]" * 5000 + b"\n", "error[run-line-json]"),
    "unknown-key": (lambda line: json.dumps({**line, CANARY: 1}).encode() + b"\n",
                    "has a key that is not one of this record's fields"),
}


@pytest.mark.parametrize("case", sorted(BAD_LINES))
def test_an_unreadable_middle_line_is_a_located_error_that_changes_nothing(copy: Path, case: str) -> None:
    make, expected = BAD_LINES[case]
    lines = lines_of(copy)
    set_lines(copy, [lines[0], make(json.loads(lines[1])), *lines[2:]])
    refused_everywhere(copy, "runs.jsonl:2:")
    assert expected in run("trial", "report", str(copy)).output


def test_a_torn_last_line_is_set_aside_and_only_its_trial_runs_again(copy: Path) -> None:
    lines = lines_of(copy)
    torn = lines[-1][: len(lines[-1]) // 2]  # a kill in the middle of the last append
    torn_key = json.loads(lines[-1])["key"]
    set_lines(copy, [*lines[:-1], torn])

    before = (copy / "runs.jsonl").read_bytes()
    report = run("trial", "report", str(copy))
    assert report.exit_code == 0, report.output
    assert f"runs.jsonl:{len(lines)}:1: warning[run-line-torn]" in report.output
    assert f"{len(lines) - 1} finished trial(s)" in report.output
    assert (copy / "runs.jsonl").read_bytes() == before  # report leaves it (a run may be appending)

    resumed = trial_run(copy)
    assert resumed.exit_code == 0, resumed.output
    assert "warning[run-line-torn]" in resumed.output and "runs.jsonl.torn-1" in resumed.output
    assert f"resuming: {len(lines) - 1} of {len(lines)} trial(s) already finished" in resumed.output
    assert (copy / "runs.jsonl.torn-1").read_bytes() == torn
    after = lines_of(copy)
    assert after[:-1] == lines[:-1] and len(after) == len(lines)  # the finished lines kept as they were
    assert json.loads(after[-1])["key"] == torn_key  # only the torn trial ran again

    # torn again later: the next name, the first torn line kept as it was
    again_lines = lines_of(copy)
    set_lines(copy, [*again_lines[:-1], again_lines[-1][:10]])
    again = trial_run(copy)
    assert again.exit_code == 0, again.output
    assert (copy / "runs.jsonl.torn-1").read_bytes() == torn
    assert (copy / "runs.jsonl.torn-2").read_bytes() == again_lines[-1][:10]
    assert len(lines_of(copy)) == len(lines)


def test_a_repeated_line_counts_once_in_the_summary_and_against_max_cost(copy: Path) -> None:
    lines = [json.loads(x) for x in lines_of(copy)]
    # three of five trials finished, 0.40 USD each; the first line then appended twice more
    paid = [json.dumps({**line, "cost_usd": 0.4}, sort_keys=True).encode() + b"\n" for line in lines[:3]]
    set_lines(copy, [*paid, paid[0], paid[0]])
    report = run("trial", "report", str(copy))
    assert report.exit_code == 0, report.output
    assert "warning[run-line-repeated]" in report.output and "repeats line 1" in report.output
    summary = json.loads((copy / "summary.json").read_text())
    assert summary["trials"] == 3 and summary["rows"][0]["trials"] == 3
    assert summary["total_cost_usd"] == pytest.approx(1.2)
    assert RunFolder(copy).spent_usd() == pytest.approx(1.2)

    # 1.20 spent is under a 1.50 budget (counted twice, 2.00 would have stopped the run)
    resumed = trial_run(copy, "--max-cost", "1.5")
    assert resumed.exit_code == 0, resumed.output
    assert "budget stop" not in resumed.output
    assert len({json.loads(x)["key"] for x in lines_of(copy)}) == len(TASKS)
    assert json.loads((copy / "summary.json").read_text())["trials"] == len(TASKS)


def test_the_same_attempt_twice_with_other_values_is_a_conflict(copy: Path) -> None:
    lines = lines_of(copy)
    other = json.dumps({**json.loads(lines[0]), "cost_usd": 9.0}).encode() + b"\n"
    set_lines(copy, [*lines, other])
    refused_everywhere(copy, f"runs.jsonl:{len(lines) + 1}:1: error[run-line-conflict]")


# -- run.json, trial folders, summary files ------------------------------------------------------

@pytest.mark.parametrize("content, located", [
    (b"garbage{", "run.json:1:1: error[run-manifest-invalid]"),
    (b"[]", "run.json:1:1: error[run-manifest-invalid]: must be a JSON object"),
    (b'{"format": "capplan-trial-run", "version": 1, "plans": {"../x": "00"}, "tasks": {}, "interrupted": []}',
     "error[run-manifest-invalid]"),
    (b'{"format": "capplan-trial-run", "version": 1, "plans": {}, "tasks": {}, "interrupted": [1]}',
     "error[run-manifest-invalid]: interrupted.0"),
    (b'{"format": "capplan-trial-run", "version": 1, "plans": {}, "tasks": {}, "interrupted": [], "x": 1}',
     "has a key that is not one of this record's fields"),
])
def test_a_bad_run_json_is_located(copy: Path, content: bytes, located: str) -> None:
    (copy / "run.json").write_bytes(content)
    refused_everywhere(copy, located)


def test_a_trial_folder_replaced_by_a_file(copy: Path) -> None:
    folder = copy / json.loads(lines_of(copy)[1])["dir"]
    shutil.rmtree(folder)
    folder.write_text("not a folder\n")
    refused_everywhere(copy, f"{folder}:1:1: error[run-folder-not-a-folder]")


def test_a_trial_file_replaced_by_a_folder(copy: Path) -> None:
    metrics = copy / json.loads(lines_of(copy)[0])["dir"] / "metrics.yaml"
    metrics.unlink()
    metrics.mkdir()
    refused_everywhere(copy, f"{metrics}:1:1: error[run-folder-not-a-file]")


@pytest.mark.parametrize("name", ["summary.md", "summary.json", "runs.jsonl", "run.json"])
def test_a_file_of_the_run_made_a_folder(copy: Path, name: str) -> None:
    (copy / name).unlink()
    (copy / name).mkdir()
    refused_everywhere(copy, f"{copy / name}:1:1: error[run-folder-not-a-file]")


@pytest.mark.parametrize("content", [b"garbage", json.dumps({"series": CANARY}).encode(), b"[]"])
def test_a_bad_probe_census_is_located(copy: Path, content: bytes) -> None:
    (copy / "probe.json").write_bytes(content)
    refused_everywhere(copy, f"{copy / 'probe.json'}:1:1: error[probe-census-invalid]")


def test_a_fifo_planted_as_runs_jsonl_is_refused_without_blocking(copy: Path) -> None:
    (copy / "runs.jsonl").unlink()
    os.mkfifo(copy / "runs.jsonl")
    refused_everywhere(copy, "runs.jsonl:1:1: error[special-file]")


# -- links: nothing is followed for writing ------------------------------------------------------

def test_a_runs_jsonl_link_to_a_file_outside_gets_nothing_appended(copy: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.jsonl"
    victim.write_bytes(b"".join(lines_of(copy)[:2]))  # readable as runs, so a resume would run and append 3
    (copy / "runs.jsonl").unlink()
    (copy / "runs.jsonl").symlink_to(victim)
    refused_everywhere(copy, "runs.jsonl:1:1: error[run-folder-symlink]", outside=outside)


def test_a_symlinked_trial_folder_receives_nothing(copy: Path, tmp_path: Path) -> None:
    lines = lines_of(copy)
    folder = copy / json.loads(lines[-1])["dir"]
    outside = tmp_path / "outside"
    shutil.copytree(folder, outside / "trial")
    shutil.rmtree(folder)
    folder.symlink_to(outside / "trial", target_is_directory=True)
    set_lines(copy, lines[:-1])  # that trial is not finished, so a resume would write into it
    # report writes only the summary (it does not look at unfinished trials); the resume is refused
    refused_everywhere(copy, f"{folder}:1:1: error[run-folder-symlink]", outside=outside, report=False)


def test_a_symlinked_folder_higher_up_receives_nothing(copy: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    shutil.move(copy / "trials" / "mock-echo", outside)
    (copy / "trials" / "mock-echo").symlink_to(outside, target_is_directory=True)
    refused_everywhere(copy, f"{copy / 'trials' / 'mock-echo'}:1:1: error[run-folder-symlink]", outside=outside)


@pytest.mark.parametrize("name", ["summary.md", "summary.json", "run.json", "probe.json"])
def test_a_symlinked_file_of_the_run_is_not_written_through(copy: Path, tmp_path: Path, name: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "precious.txt"
    target.write_text("keep me\n")
    (copy / name).unlink(missing_ok=True)
    (copy / name).symlink_to(target)
    refused_everywhere(copy, f"{copy / name}:1:1: error[run-folder-symlink]", outside=outside)


# -- --out must be a capplan run -----------------------------------------------------------------

def test_out_with_foreign_files_is_refused_and_left_untouched(tmp_path: Path) -> None:
    out = tmp_path / "project"
    (out / "trials").mkdir(parents=True)
    (out / "notes.txt").write_text("mine\n")
    (out / ".draft.tmp").write_text("draft\n")
    (out / "trials" / ".draft.tmp").write_text("draft\n")
    (out / "trials" / ".trajectory.yaml.abcdef12.tmp").write_text("looks like ours, is not\n")
    (out / "\x1b[31mred").write_text("a name with an escape\n")
    before = snapshot(out)
    result = trial_run(out)
    assert result.exit_code == 2, result.output
    assert "--out:1:1: error[out-not-run]" in result.output
    assert "choose a new --out" in result.output
    assert "\x1b" not in result.output
    assert snapshot(out) == before


def test_out_that_is_a_file_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "file"
    out.write_text("x\n")
    result = trial_run(out)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert out.read_text() == "x\n"


def test_report_of_a_foreign_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine\n")
    before = snapshot(tmp_path)
    result = run("trial", "report", str(tmp_path))
    assert result.exit_code == 2 and "error[not-a-run-folder]" in result.output
    assert snapshot(tmp_path) == before


def test_an_empty_out_and_a_finished_run_are_accepted(tmp_path: Path, pristine: Path) -> None:
    out = tmp_path / "empty"
    out.mkdir()
    assert trial_run(out, "--max-turns", "2").exit_code == 0
    before = (pristine / "runs.jsonl").read_bytes()
    again = trial_run(pristine)
    assert again.exit_code == 0 and (pristine / "runs.jsonl").read_bytes() == before


# -- the writer itself, reached directly ---------------------------------------------------------

@pytest.mark.parametrize("part", ["..", "../x", "/abs", "a/b", "", "a\x00b", "a\nb", "\x1b[31mred", "x" * 200, "|cmd",
                                  ".hidden"])
def test_confined_path_refuses_unsafe_parts(tmp_path: Path, part: str) -> None:
    with pytest.raises(ConfinedPathError) as caught:
        confined_path(tmp_path, "trials", part, "0")
    assert caught.value.code == "unsafe-name"
    assert len(part) <= 2 or part not in caught.value.message  # the name is described, never quoted
    with pytest.raises(ConfinedPathError):
        confined.write_atomic(tmp_path, ("trials", part, "x.yaml"), b"x")
    assert list(tmp_path.iterdir()) == []


def test_confined_writes_refuse_links_below_the_root(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "sub").symlink_to(outside, target_is_directory=True)
    (root / "file.txt").symlink_to(outside / "f.txt")
    attempts: list[Callable[[], None]] = [
        lambda: confined.write_atomic(root, ("sub", "a.yaml"), b"x"),
        lambda: confined.append(root, ("sub", "a.jsonl"), b"x\n"),
        lambda: confined.write_atomic(root, ("file.txt",), b"x"),
        lambda: confined.append(root, ("file.txt",), b"x\n"),
    ]
    for attempt in attempts:
        with pytest.raises(ConfinedPathError) as caught:
            attempt()
        assert caught.value.code in ("run-folder-symlink", "path-escapes")
    assert list(outside.iterdir()) == []
    confined.write_atomic(root, ("real", "a.yaml"), b"ok")  # a real folder is created and written
    assert (root / "real" / "a.yaml").read_bytes() == b"ok"
    assert sorted(p.name for p in (root / "real").iterdir()) == ["a.yaml"]  # no temp file left


@pytest.mark.parametrize("field, value", [("plan_key", "../../../escaped"), ("plan_key", "/tmp/abs"),
                                          ("task_id", "a/../../b"), ("task_id", "x\x00y"), ("task_pack", "p|q"),
                                          ("index", -1)])
def test_an_unsafe_name_reaching_the_run_folder_is_refused_before_writing(tmp_path: Path, field: str,
                                                                           value: object) -> None:
    import dataclasses

    task = write_task(tmp_path / "pack")
    changes: dict[str, Any] = {field: value}
    spec = dataclasses.replace(spec_for(task, mock_plan()), **changes)
    out = tmp_path / "run"
    folder = RunFolder(out)
    with pytest.raises(RunFolderError) as caught:
        folder.open([spec])
    assert "error[unsafe-name]" in str(caught.value)
    assert not out.exists()

    # the records of such a trial, handed to the writer directly, are refused too
    good = spec_for(task, mock_plan())
    RunFolder(out).open([good])
    records = run_trial(good, RunContext())
    records = dataclasses.replace(records, key=spec.key, run_line={**records.run_line, field: value})
    before = snapshot(tmp_path)
    with pytest.raises(ConfinedPathError) as refused:
        RunFolder(out).write(records)
    assert refused.value.code in ("unsafe-name", "run-line-invalid")
    assert snapshot(tmp_path) == before

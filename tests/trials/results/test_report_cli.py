"""``capplan trial report`` over real runs: side by side, the verdict, md / json / csv, hostile names, one-run compatibility."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from pathlib import Path

import pytest

from tests.cli_runner import invoke
from tests.trials.results.hostile_runs import TASKS, HostileRuns


def report(*args: str | Path) -> tuple[int, str]:
    result = invoke("trial", "report", *args)
    return result.exit_code, result.output


def table_rows(text: str) -> list[list[str]]:
    """Every markdown table, as lists of cells of each row (escaped pipes kept inside their cell)."""
    return [line.replace("\\|", "\0").split("|") for line in text.splitlines() if line.startswith("|")]


def test_two_runs_side_by_side_with_the_paired_verdict(hostile_runs: HostileRuns) -> None:
    code, text = report(*hostile_runs.paths)
    assert code == 0, text
    assert "- agent-a better than agent-b: +83 pp, p = 0.006, 12 paired tasks" in text
    for result in (hostile_runs.a, hostile_runs.b):
        fingerprint = result.trials[0].plan_fingerprint
        assert f"{fingerprint[:16]}…" in text
        assert result.folder.run_id is not None and result.folder.run_id in text
    matrix = text.split("## Per-task matrix")[1]
    assert "| desk | t00 | 0/1 | 1/1 |" in matrix and "| desk | t05 | 1/1 | 0/1 |" in matrix
    assert "| agent-a | 12 | 91.7% |" in text and "| agent-b | 12 | 8.3% |" in text


def test_names_cannot_reach_the_terminal_or_split_a_row(hostile_runs: HostileRuns) -> None:
    code, text = report(*hostile_runs.paths, "--by", "task")
    assert code == 0, text
    assert "\x1b" not in text and "\x07" not in text
    assert "agent-a <b>\\| run" in text  # the folder's name: escape removed, pipe escaped
    for table in text.split("\n\n"):
        rows = table_rows(table)
        if rows:
            assert {len(r) for r in rows} == {len(rows[0])}, table


def test_by_task_and_by_pack(hostile_runs: HostileRuns) -> None:
    _, by_task = report(*hostile_runs.paths, "--by", "task")
    rows = [r for r in table_rows(by_task.split("## By task")[1].split("##")[0]) if r[1].strip() in TASKS]
    assert len(rows) == 2 * len(TASKS)
    assert [r[2].strip() for r in rows[:2]] == ["agent-a", "agent-b"]
    _, by_pack = report(*hostile_runs.paths, "--by", "pack")
    assert "| desk | agent-a | 12 | 91.7% |" in by_pack


def test_json_holds_the_test_and_every_fingerprint(hostile_runs: HostileRuns) -> None:
    code, text = report(*hostile_runs.paths, "--format", "json")
    assert code == 0, text
    data = json.loads(text)
    [comparison] = data["comparisons"]
    assert comparison["p_value"] == 26 / 4096 and comparison["pairs"] == 12
    assert (comparison["only_a_passed"], comparison["only_b_passed"]) == (11, 1)
    assert comparison["significant"] is True
    assert [c["plan_fingerprint"] for c in data["columns"]] == [hostile_runs.a.trials[0].plan_fingerprint,
                                                                 hostile_runs.b.trials[0].plan_fingerprint]
    assert {g["column"]: g["passed"] for g in data["groups"]} == {"agent-a": 11, "agent-b": 1}


def test_csv_has_one_row_per_trial(hostile_runs: HostileRuns) -> None:
    code, text = report(*hostile_runs.paths, "--format", "csv")
    assert code == 0, text
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 2 * len(TASKS)
    assert {(r["plan_key"], r["task_id"], r["index"]) for r in rows} == {
        (k, t, "0") for k in ("agent-a", "agent-b") for t in TASKS}
    assert sum(r["outcome"] == "passed" for r in rows) == 12
    assert all("\x1b" not in v for r in rows for v in r.values())


def test_one_run_without_options_re_renders_its_summary(hostile_runs: HostileRuns, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(hostile_runs.a.out, copy)
    (copy / "summary.md").unlink()
    code, text = report(copy)
    assert code == 0, text
    assert text.startswith("# Trial summary") and text == (copy / "summary.md").read_text()
    assert "| agent-a | desk | 12 | 91.7% |" in text


def test_one_run_with_a_format_prints_the_report_and_writes_nothing(hostile_runs: HostileRuns, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(hostile_runs.a.out, copy)
    before = sorted(p.relative_to(copy) for p in copy.rglob("*"))
    code, text = report(copy, "--format", "md")
    assert code == 0 and text.startswith("# Trial report") and "## Paired comparison" not in text
    assert sorted(p.relative_to(copy) for p in copy.rglob("*")) == before


def test_a_damaged_run_is_a_located_error(hostile_runs: HostileRuns, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(hostile_runs.a.out, copy)
    with (copy / "runs.jsonl").open("a") as f:
        f.write("not json\n")
    code, text = report(copy, hostile_runs.b.out)
    assert code == 2 and "runs.jsonl:13:1: error[" in text


def test_the_command_offers_exactly_the_formats_and_groups_the_report_has() -> None:
    from capplan.cli import trial_results_cmd
    from capplan.trials.report.compare import GROUP_BY
    from capplan.trials.report.formats import FORMATS

    assert trial_results_cmd._FORMATS == FORMATS and trial_results_cmd._GROUP_BY == GROUP_BY


# -- on a terminal: tables at its width -----------------------------------------------------------

def _on_a_terminal(*args: str | Path, columns: int, monkeypatch: pytest.MonkeyPatch) -> str:
    """``capplan ARGS`` in this process with stdout on a pseudo-terminal ``columns`` wide: what it shows."""
    import os
    import pty
    import sys
    import threading

    from capplan.cli import main

    master, slave = pty.openpty()
    chunks: list[bytes] = []

    def drain() -> None:  # the terminal's buffer is small: read while the command writes
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # the slave side closed
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    monkeypatch.setenv("COLUMNS", str(columns))  # what shutil.get_terminal_size reads first
    with os.fdopen(slave, "w", encoding="utf-8", closefd=True) as terminal:
        monkeypatch.setattr(sys, "stdout", terminal)
        try:
            main.main([str(a) for a in args], prog_name="capplan", standalone_mode=False)
        finally:
            terminal.flush()
            monkeypatch.setattr(sys, "stdout", sys.__stdout__)
    reader.join(timeout=10)
    os.close(master)
    assert not reader.is_alive()
    return b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def test_on_a_terminal_the_tables_fit_its_width(hostile_runs: HostileRuns, monkeypatch: pytest.MonkeyPatch) -> None:
    """At 80 columns every line fits; the figures and the verdict are the Markdown report's; names stay text."""
    shown = _on_a_terminal("trial", "report", *hostile_runs.paths, columns=80, monkeypatch=monkeypatch)
    text = _ANSI.sub("", shown)
    assert "|---" not in text and "agent-a better than agent-b: +83 pp, p = 0.006" in text.replace("\n", " ")
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "91.7%" in text and "8.3%" in text
    assert "\x07" not in text and not re.search(r"\x1b(?!\[[0-9;]*m)", shown)  # only rich's own colours
    assert "agent-a <b>| run" in text  # the folder's name, its pipe unescaped, no markup run
    # the same report piped (the test runner is not a terminal): Markdown, as before
    code, piped = report(*hostile_runs.paths)
    assert code == 0 and "| agent-a | 12 | 91.7% |" in piped


def test_format_md_on_a_terminal_is_markdown(hostile_runs: HostileRuns, monkeypatch: pytest.MonkeyPatch) -> None:
    shown = _on_a_terminal("trial", "report", *hostile_runs.paths, "--format", "md", columns=80,
                           monkeypatch=monkeypatch)
    assert shown == report(*hostile_runs.paths, "--format", "md")[1]


def test_a_wide_table_is_shown_one_block_per_row() -> None:
    """Markup-looking names are shown as they are; a row too wide for the terminal becomes a block of its own."""
    from capplan.trials.report.formats import render_terminal
    from capplan.trials.safe_text import md_table

    header = [f"column {i}" for i in range(12)]
    markdown = "\n".join(["# Title", "", *md_table(header, [["[bold]x\\|y", *(f"value {i}" for i in range(11))]]), ""])
    text = render_terminal(markdown, 60)
    assert max(len(line) for line in text.splitlines()) <= 60
    assert "column 0: [bold]x\\|y" in text and "column 11   value 10" in text
    wide = render_terminal(markdown, 400)  # room for every column: one row
    assert any("column 0" in line and "column 11" in line for line in wide.splitlines())


# -- without RUN: the project file's run folder ---------------------------------------------------

@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project as ``capplan init`` writes it, with no run yet, as the working folder (its own git root)."""
    (tmp_path / ".git").mkdir()  # the project file search stops here
    monkeypatch.chdir(tmp_path)
    result = invoke("init", ".")
    assert result.exit_code == 0, result.output
    return tmp_path


def test_after_init_report_and_view_take_the_project_run_folder(hostile_runs: HostileRuns, project: Path) -> None:
    from capplan.core.project_file import read_project_source

    out = read_project_source(project / "capplan.yaml").data["trial"]["out"]
    for command in ("report", "view"):  # before the first run: the project file's line, and what to do
        result = invoke("trial", command)
        assert result.exit_code == 2, result.output
        assert re.search(r"^capplan\.yaml:\d+:\d+: error\[missing-file\]: trial\.out: the run folder "
                         rf"{re.escape(out)} \(trial\.out\) does not exist yet", result.output, re.M), result.output
        assert "run `capplan trial run` first" in result.output
    shutil.copytree(hostile_runs.a.out, project / out)
    code, text = report()
    assert code == 0 and text.startswith("# Trial summary") and text == (project / out / "summary.md").read_text()
    result = invoke("trial", "view")
    assert result.exit_code == 0, result.output
    assert (project / out / "report.html").is_file() and f"wrote {out}/report.html" in result.output


def test_without_run_or_project_file_the_error_says_what_to_pass(project: Path) -> None:
    (project / "capplan.yaml").unlink()
    for command in ("report", "view"):
        result = invoke("trial", command)
        assert result.exit_code == 2
        assert result.output.startswith(f"capplan trial {command}: error[NO_RUN]: no run folder given, and no "
                                        "project file names one"), result.output
        assert f"capplan trial {command} runs/demo" in result.output
    (project / "capplan.yaml").write_text("trial:\n  trials: 1\n")  # a project file without trial.out
    result = invoke("trial", "report")
    assert result.exit_code == 2
    assert result.output.startswith("capplan.yaml:1:1: error[no-run-folder]: trial: `capplan trial report` was "
                                    "given no run folder, and this file sets no trial.out"), result.output
    assert sorted(p.name for p in project.iterdir()) == [".git", "capplan.yaml", "overlays", "run.yaml", "schemas", "tasks"]

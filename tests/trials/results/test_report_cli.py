"""``capplan trial report`` over real runs: side by side, the verdict, md / json / csv, hostile names, one-run compatibility."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path


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

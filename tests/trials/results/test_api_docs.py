"""The Python API as docs/trials.md shows it: the page's example runs as written, and the records are typed."""

from __future__ import annotations

import contextlib
import io
import re
import shutil
from pathlib import Path

import pytest

import capplan.trials
from capplan.trials.report.run_data import RunDataError, TrialResult
from tests.trials.results.hostile_runs import TASKS, HostileRuns
from tests.cli_runner import invoke

REPO = Path(__file__).resolve().parents[3]


def docs_example() -> str:
    text = (REPO / "docs" / "trials.md").read_text(encoding="utf-8")
    section = text[text.index("### Python API"):]
    return re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)  # type: ignore[union-attr]


def test_the_docs_example_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pandas", reason="the example ends with to_pandas(); pandas is in the test extra")
    shutil.copytree(REPO / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.chdir(tmp_path)
    compiled = invoke("compile", "--model", "mock-echo", "--out", "mock-plans/")
    assert compiled.exit_code == 0, compiled.output
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(docs_example(), "docs/trials.md", "exec"), {})  # noqa: S102 - the page's own example
    lines = printed.getvalue().splitlines()
    assert lines[0] == "True 20"
    assert {line.split()[1] for line in lines[1:3]} == {"inventory_desk", "travel_desk"}
    assert "outcome" in printed.getvalue() and (tmp_path / "runs" / "notebook" / "runs.jsonl").is_file()


def test_load_run_gives_typed_records(hostile_runs: HostileRuns) -> None:
    run = capplan.trials.load_run(hostile_runs.a.out)
    assert len(run) == len(TASKS) and all(isinstance(t, TrialResult) for t in run)
    assert sorted(t.outcome for t in run) == ["failed"] + ["passed"] * 11
    first = next(t for t in run if t.task_id == "t00")
    assert first.passed is False and first.graded and first.termination_reason == "user_stop"
    trajectory = first.trajectory()
    assert trajectory is not None and trajectory["trial"]["key"] == "agent-a/t00/0"
    assert run.summary().rows[0].passed == 11
    assert hostile_runs.a.trials == run.trials


def test_to_pandas_without_pandas_says_what_to_install(hostile_runs: HostileRuns, monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_pandas(name: str, *args: object, **kwargs: object) -> object:
        if name == "pandas":
            raise ImportError("No module named 'pandas'")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    run = capplan.trials.load_run(hostile_runs.a.out)
    monkeypatch.setattr(builtins, "__import__", no_pandas)
    with pytest.raises(RunDataError, match="needs pandas") as raised:
        run.to_pandas()
    assert raised.value.hint is not None and "pip install pandas" in raised.value.hint

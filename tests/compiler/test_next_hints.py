"""A one-line "next:" hint after compile and trial run, on a terminal only (never in a log or a pipe)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.compiler.terminal_run import run_on_terminal

CAPPLAN = str(Path(sys.executable).with_name("capplan"))


def _env() -> dict[str, str]:
    return {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def test_compile_then_trial_run_each_say_what_to_run_next_on_a_terminal(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()  # a project root of its own
    code, out, shown = run_on_terminal([CAPPLAN, "compile", "--model", "mock-echo", "--out", "plans"], tmp_path, _env())
    assert code == 0 and out == "compiled 1 plan(s) into plans\n"
    assert shown.splitlines() == ["next: capplan trial run TASKS --plan plans/mock-echo.json --out runs/first"]

    piped = subprocess.run([CAPPLAN, "compile", "--model", "mock-echo", "--out", "plans"], cwd=tmp_path, env=_env(),
                           capture_output=True, text=True, timeout=120)
    assert piped.returncode == 0 and "next:" not in piped.stderr + piped.stdout

    made = subprocess.run([CAPPLAN, "init", "proj"], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                          timeout=120)
    assert made.returncode == 0, made.stderr
    project = tmp_path / "proj"
    code, _, shown = run_on_terminal([CAPPLAN, "compile"], project, _env())
    assert code == 0 and shown.splitlines()[-1] == "next: capplan trial run    # the tasks and plans capplan.yaml names"
    code, _, shown = run_on_terminal([CAPPLAN, "trial", "run"], project, _env())
    assert code == 0, shown
    assert shown.rstrip().splitlines()[-1] == (
        "next: capplan trial report runs/starter    # pass rate, cost and tokens per model and task pack")

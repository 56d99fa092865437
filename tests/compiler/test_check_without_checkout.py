"""`schema --check` and `compile --check` where there is nothing to compare with say so, in one located
error (exit 2), instead of calling every schema stale and every plan a missing golden plan.

Run in this process from a fresh project, as a user of the installed wheel runs them (capplan's
checkout plays no part); tests/wheel/test_wheel_install.py runs the same commands from the real wheel.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from capplan.compiler.schemas import rendered
from tests.cli_runner import invoke


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh project (a .git folder, nothing else) that the commands run in, as a user of the wheel runs them."""
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def errors(output: str) -> list[str]:
    return [line for line in output.splitlines() if "error[" in line]


def test_schema_check_without_a_schemas_folder_is_one_located_error(project: Path) -> None:
    done = invoke("schema", "--check")
    assert done.exit_code == 2, done.output
    assert errors(done.output) == [f"{project.resolve() / 'schemas'}:1:1: error[schemas-missing]: the project's schemas "
                                   "folder (schemas/ of the nearest folder with .git, else of this one) does not exist, "
                                   "so there is nothing to check against"]
    assert "hint: write them with `capplan schema --out" in done.output
    assert "stale schema" not in done.output and not (project / "schemas").exists()


def test_schema_check_compares_the_projects_schemas_file_by_file(project: Path) -> None:
    (project / "schemas").mkdir()
    for name, data in rendered().items():  # what `capplan schema --out schemas` writes (capplan init too)
        (project / "schemas" / name).write_bytes(data)
    (project / "schemas" / "task.schema.json").unlink()
    (project / "schemas" / "plan.schema.json").write_text("{}\n")
    done = invoke("schema", "--check")
    assert done.exit_code == 1
    lines = done.stderr.splitlines()
    folder = project.resolve() / "schemas"
    assert lines == [f"missing schema: {folder / 'task.schema.json'}", f"stale schema: {folder / 'plan.schema.json'}",
                     f"regenerate with: capplan schema --out {folder}"]


def test_schema_check_of_an_out_folder_that_is_not_there(project: Path) -> None:
    done = invoke("schema", "--check", "--out", "elsewhere")
    assert done.exit_code == 2
    assert errors(done.output) == ["elsewhere:1:1: error[schemas-missing]: the --out folder does not exist, "
                                   "so there is nothing to check against"]


@pytest.mark.parametrize("given", [False, True])
def test_compile_check_without_a_golden_folder_is_one_located_error(project: Path, given: bool) -> None:
    done = invoke("compile", "--model", "mock-echo", "--check", *(["--golden", "ci/golden"] if given else []))
    assert done.exit_code == 2, done.output
    folder = "ci/golden" if given else str(project.resolve() / "golden" / "plans")
    [line] = errors(done.output)
    assert line.startswith(f"{folder}:1:1: error[golden-missing]: ") and "does not exist" in line
    assert "capplan compile --update-golden" in done.output
    assert "missing golden plan" not in done.output and not (project / "golden").exists()

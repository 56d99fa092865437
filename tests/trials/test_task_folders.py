"""`capplan trial run FOLDER`: a folder stands for the task files inside it, in a stable order."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from capplan.cli.task_paths import expand_task_paths
from tests.trials.helpers import EXAMPLES, REPO
from tests.cli_runner import invoke

MOCK_PLAN = REPO / "golden" / "plans" / "mock-echo.json"


def test_the_example_folder_runs_on_the_mock(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = invoke("trial", "run", str(EXAMPLES / "inventory_desk"), "--plan", str(MOCK_PLAN),
                    "--user-plan", str(MOCK_PLAN), "--out", str(out))
    assert result.exit_code == 0, result.output
    ran = {json.loads(line)["task_id"] for line in (out / "runs.jsonl").read_text().splitlines()}
    assert ran == {p.stem for p in (EXAMPLES / "inventory_desk").glob("*.yaml")}


def test_folders_are_walked_recursively_sorted_and_skip_what_is_not_a_task(tmp_path: Path) -> None:
    pack = tmp_path / "pack"
    shutil.copytree(EXAMPLES / "inventory_desk", pack / "b")
    (pack / "a").mkdir()
    shutil.copy(EXAMPLES / "inventory_desk" / "inv-01-check-stock.yaml", pack / "a" / "z.yaml")
    (pack / "a" / "run.yaml").write_text("models: [mock-echo]\n")
    (pack / ".hidden").mkdir()
    (pack / ".hidden" / "x.yaml").write_text("environment: {}\nuser: {}\n")
    notes: list[str] = []
    found = expand_task_paths([pack, pack / "a" / "z.yaml"], notes.append)
    rel = [p.relative_to(pack).as_posix() for p in found]
    assert rel == ["a/z.yaml", *sorted(f"b/{p.name}" for p in (EXAMPLES / "inventory_desk").glob("*.yaml"))]
    assert notes == [f"capplan: skipped {pack / 'a' / 'run.yaml'}: not a task file (no environment and user keys)"]


def test_an_unreadable_yaml_in_a_folder_is_reported_not_skipped(tmp_path: Path) -> None:
    (tmp_path / "broken.yaml").write_text("environment: [\n")
    result = invoke("trial", "run", str(tmp_path), "--plan", str(MOCK_PLAN),
                    "--out", str(tmp_path / "run"))
    assert result.exit_code == 2
    assert f"{tmp_path / 'broken.yaml'}:" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "run").exists()


def test_a_folder_without_task_files_is_a_located_error(tmp_path: Path) -> None:
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "run.yaml").write_text("models: [mock-echo]\n")
    result = invoke("trial", "run", str(tmp_path / "tasks"), "--plan", str(MOCK_PLAN),
                    "--out", str(tmp_path / "run"))
    assert result.exit_code == 2
    assert f"{tmp_path / 'tasks'}:1:1: error[no-task-files]:" in result.output
    assert not (tmp_path / "run").exists()

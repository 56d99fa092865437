"""`capplan trial run|report` and `capplan lint` on the shipped example packs, offline on the mock provider."""

from __future__ import annotations

import json
import os
from pathlib import Path

import yaml

from tests.trials.helpers import EXAMPLES, REPO, write_task
from tests.cli_runner import invoke

EXAMPLE_TASKS = sorted(str(p) for p in EXAMPLES.glob("*/*.yaml"))
MOCK_PLAN = REPO / "golden" / "plans" / "mock-echo.json"


def test_example_packs_have_five_tasks_each_with_both_user_kinds() -> None:
    for pack in ("inventory_desk", "travel_desk"):
        tasks = [yaml.safe_load(p.read_text()) for p in (EXAMPLES / pack).glob("*.yaml")]
        assert len(tasks) >= 5
        assert {t["user"]["mode"] for t in tasks} == {"scripted", "llm"}


def test_examples_lint_clean() -> None:
    result = invoke("lint", *EXAMPLE_TASKS)
    assert result.exit_code == 0, result.output


def test_a_task_naming_a_missing_tool_is_a_located_error(tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack")
    task.write_text(task.read_text().replace("name: explode", "name: explod"))
    result = invoke("lint", str(task))
    assert result.exit_code == 2
    assert f"{task}:" in result.output
    assert "error[unknown-tool]: tools[2].name: environment counter_env:Counter has no method 'explod'" in result.output
    assert "did you mean 'explode'?" in result.output
    assert "error[undeclared-method]" in result.output  # explode is now a method the task does not declare


def test_trial_run_refuses_a_bad_task_before_any_call(tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack")
    task.write_text(task.read_text().replace("name: explode", "name: explod"))
    result = invoke("trial", "run", str(task), "--plan", str(MOCK_PLAN), "--out", str(tmp_path / "run"))
    assert result.exit_code == 2
    assert "error[unknown-tool]" in result.output
    assert not (tmp_path / "run").exists()


def test_trial_run_validates_the_run_configs_engine_section_before_writing(tmp_path: Path) -> None:
    """The overlays ``engine.presets_file`` names are checked as compile checks them (a trial run never
    applies them, so a wrong one passed unseen); wrong types are one message each; nothing is written."""
    task = write_task(tmp_path / "pack")
    (tmp_path / "overlays").mkdir()
    (tmp_path / "overlays" / "team.yaml").write_text("providers:\n  mock: {empty_retry_count: 1}\n")
    (tmp_path / "bad.yaml").write_text("presets: {oops: 1}\n")
    os.mkfifo(tmp_path / "overlays" / "fifo")  # never opened: a read would block
    config = tmp_path / "run.yaml"
    model = "models:\n  mock-echo: {provider: mock, name: echo-1}\n"
    out = tmp_path / "run"
    args = ["trial", "run", str(task), "--plan", str(MOCK_PLAN), "--out", str(out), "--config", str(config)]
    for engine, expected in [
        ("engine: {presets_file: overlays/teem.yaml}",
         ["run.yaml:3:10: error[missing-file]: engine.presets_file: 'overlays/teem.yaml' does not exist",
          "hint: engine.presets_file names operator overlays relative to the run config's folder"]),
        ("engine: {presets_file: [overlays/team.yaml, overlays, bad.yaml]}",
         ["run.yaml:3:45: error[missing-file]: engine.presets_file[1]: 'overlays' is a folder, not an overlay file",
          "bad.yaml:1:11: error[wrong-type]: presets.oops:", "2 error(s); nothing was written"]),
        ("engine: {presets_file: ''}", ["error[missing-file]: engine.presets_file: is empty"]),
        ("engine: {presets_file: overlays/fifo}",
         ["error[missing-file]: engine.presets_file: 'overlays/fifo' is not a regular file (a device, FIFO or socket)"]),
        ("engine: {presets_file: 7}",
         ["run.yaml:3:10: error[wrong-type]: engine.presets_file: must be an overlay file name or a list of them, "
          "not a number", "1 error(s); nothing was written"]),
        ("engine: {presets_file: [overlays/team.yaml, 7]}",
         ["error[wrong-type]: engine.presets_file: entry 2 must be an overlay file name, not a number",
          "1 error(s); nothing was written"]),
        ("engine: {preset_file: overlays/team.yaml}",
         ["run.yaml:3:10: error[unknown-key]: engine.preset_file: unknown key 'preset_file'",
          "did you mean 'presets_file'?"]),
    ]:
        config.write_text(model + engine + "\n")
        refused = invoke(*args)
        assert refused.exit_code == 2, (engine, refused.output)
        for text in expected:
            assert text in refused.stderr, (engine, refused.stderr)
        assert "Traceback" not in refused.output
        assert not out.exists(), engine
    config.write_text(model + "engine: {presets_file: overlays/team.yaml}\n")
    assert invoke(*args).exit_code == 0


def test_llm_user_tasks_need_a_user_plan(tmp_path: Path) -> None:
    result = invoke("trial", "run", *EXAMPLE_TASKS, "--plan", str(MOCK_PLAN), "--out", str(tmp_path))
    assert result.exit_code == 2
    assert "--user-plan" in result.output


def test_offline_run_report_and_resume(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["trial", "run", *EXAMPLE_TASKS, "--plan", str(MOCK_PLAN), "--user-plan", str(MOCK_PLAN),
            "--out", str(out), "--trials", "2", "--concurrency", "3", "--max-turns", "6"]
    first = invoke(*args)
    assert first.exit_code == 0, first.output
    lines = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert len(lines) == len(EXAMPLE_TASKS) * 2
    assert len({line["key"] for line in lines}) == len(lines)
    for line in lines:
        folder = out / line["dir"]
        metrics = yaml.safe_load((folder / "metrics.yaml").read_text())
        trajectory = yaml.safe_load((folder / "trajectory.yaml").read_text())
        assert metrics["status"] == line["status"] and metrics["max_turns"] <= 6
        assert trajectory["trial"]["task_sha256"] == line["task_sha256"]
        assert metrics["n_calls"] == len(metrics["calls"]) >= 1
    summary = json.loads((out / "summary.json").read_text())
    assert {(r["plan_key"], r["task_pack"]) for r in summary["rows"]} == {
        ("mock-echo", "inventory_desk"), ("mock-echo", "travel_desk")}
    assert "| mock-echo | inventory_desk |" in (out / "summary.md").read_text()

    again = invoke(*args)
    assert again.exit_code == 0, again.output
    assert f"resuming: {len(lines)} of {len(lines)} trial(s) already finished" in again.output
    assert len((out / "runs.jsonl").read_text().splitlines()) == len(lines)

    (out / "summary.md").unlink()
    report = invoke("trial", "report", str(out))
    assert report.exit_code == 0
    assert "| mock-echo | travel_desk |" in report.output and (out / "summary.md").is_file()

"""A run folder holds one experiment: run.json records what defines it, and a resume that changes it is refused.

Every case runs the real ``capplan trial run`` offline on the mock plan and a copy of the shipped
inventory_desk pack, then resumes into the same ``--out`` with one thing changed: exit 2, one
located ``run.json`` error per change, naming exactly what changed, and no byte of the folder
changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml
from click.testing import Result

from capplan.executor.plan import Plan
from tests.cli_runner import invoke_checked
from tests.trials.helpers import EXAMPLES, REPO

MOCK_PLAN = REPO / "golden" / "plans" / "mock-echo.json"
SCRIPTED = ("inv-01-check-stock.yaml", "inv-02-invoice-acme.yaml")
GRADED = "inv-04-void.yaml"  # an llm user and a grader function in inventory_graders.py
CANARY = "PASSCANARY7731"


def invoke(*args: str) -> Result:
    return invoke_checked(*args)


@pytest.fixture
def pack(tmp_path: Path) -> Path:
    """A copy of the inventory_desk pack (environment, graders, every task) to edit."""
    copy = tmp_path / "packs" / "inventory_desk"
    shutil.copytree(EXAMPLES / "inventory_desk", copy)
    return copy


def run_args(pack: Path, out: Path, *extra: str, names: tuple[str, ...] = SCRIPTED) -> list[str]:
    return ["trial", "run", *(str(pack / n) for n in names), "--plan", str(MOCK_PLAN), "--out", str(out),
            "--max-turns", "4", *extra]


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def refused(result: Result, out: Path, before: dict[str, bytes]) -> list[str]:
    """The changes a refused resume listed; asserts it was refused, located on run.json, with nothing written."""
    assert result.exit_code == 2, result.output
    assert snapshot(out) == before
    found = re.findall(rf"^{re.escape(str(out / 'run.json'))}:1:1: error\[run-identity-changed\]: "
                       r"this run differs from the recorded one: (.*)$", result.output, re.M)
    assert found, result.output
    assert "use a new --out" in result.output
    return found


def test_run_json_records_the_experiment_and_the_run(pack: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    config = tmp_path / "run.yaml"
    config.write_text("models:\n  agent: {provider: openai, name: agent-model}\nrate_limit_probe:\n  enabled: false\n")
    result = invoke(*run_args(pack, out, "--config", str(config), "--trials", "2"))
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["version"] == 2
    assert re.fullmatch(r"[0-9a-f]{32}", manifest["run_id"])
    stamp = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z"
    assert re.fullmatch(stamp, manifest["started_at"]) and re.fullmatch(stamp, manifest["ended_at"])
    assert manifest["started_at"] <= manifest["ended_at"]
    assert [i["ended_at"] for i in manifest["invocations"]] == [manifest["ended_at"]]
    # under CliRunner the command line is pytest's own; its paths are shown project-relative all the same
    assert manifest["command"] and not any(arg.startswith("/") for arg in manifest["command"])
    settings = manifest["settings"]
    assert settings["max_turns"] == 4 and settings["trials"] == 2
    assert settings["user_plan_fingerprint"] is None

    assert settings["run_config_sha256"] == hashlib.sha256(config.read_bytes()).hexdigest()
    files = settings["module_files"]
    assert [Path(name).name for name in files] == ["inventory_env.py"]  # these two tasks have no grader function
    for name, digest in files.items():
        assert digest == hashlib.sha256((pack / Path(name).name).read_bytes()).hexdigest()
    assert settings["installed_modules"] == {}
    assert settings["capplan_version"] == version("capplan")
    assert settings["litellm_version"] == version("litellm")
    assert manifest["plans"] == {"mock-echo": Plan.load(MOCK_PLAN).fingerprint}
    assert set(manifest["tasks"]) == {"inv-01-check-stock", "inv-02-invoice-acme"}
    assert manifest["interrupted_spend"] == [] and manifest["interrupted_spend_usd"] == 0.0
    lines = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert len(lines) == 4
    assert {line["run_id"] for line in lines} == {manifest["run_id"]}
    assert {line["user_plan_fingerprint"] for line in lines} == {None}


def test_lines_carry_the_user_plan_fingerprint(pack: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = invoke(*run_args(pack, out, "--user-plan", str(MOCK_PLAN)))
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "run.json").read_text())
    fingerprint = manifest["settings"]["user_plan_fingerprint"]
    assert fingerprint == manifest["plans"]["mock-echo"]  # the same mock plan plays the user
    lines = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert [line["user_plan_fingerprint"] for line in lines] == [fingerprint] * len(SCRIPTED)


def test_no_path_of_the_machine_in_the_records(tmp_path: Path) -> None:
    out = tmp_path / "run"
    tasks = [str(EXAMPLES / "inventory_desk" / n) for n in (*SCRIPTED, GRADED)]
    result = invoke("trial", "run", *tasks, "--plan", str(MOCK_PLAN), "--user-plan", str(MOCK_PLAN), "--out", str(out))
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["tasks"]["inv-01-check-stock"]["path"] == "examples/trials/inventory_desk/inv-01-check-stock.yaml"
    assert sorted(manifest["settings"]["module_files"]) == ["examples/trials/inventory_desk/inventory_env.py",
                                                            "examples/trials/inventory_desk/inventory_graders.py"]
    records = [out / "run.json", *out.rglob("trajectory.yaml"), *out.rglob("metrics.yaml")]
    assert len(records) == 1 + 2 * len(tasks)
    for path in records:
        text = path.read_text()
        for machine in (str(REPO), str(tmp_path), str(Path.home())):
            assert machine not in text, path
    metrics = yaml.safe_load(next(out.rglob("metrics.yaml")).read_text())
    assert metrics["trial"]["task_path"].startswith("examples/trials/inventory_desk/")


def test_the_command_line_is_redacted(tmp_path: Path) -> None:
    """A real process, so sys.argv is the command: the URL's password never reaches run.json."""
    out = tmp_path / "run"
    capplan = Path(sys.executable).with_name("capplan")
    cmd = [str(capplan), "trial", "run", *(str(EXAMPLES / "inventory_desk" / n) for n in SCRIPTED),
           "--plan", str(MOCK_PLAN), "--out", str(out), "--api-base", f"http://u:{CANARY}@127.0.0.1:1/v1"]
    # the mock provider never dials the base URL; the run finishes offline
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert done.returncode == 0, done.stderr
    text = (out / "run.json").read_text()
    assert CANARY not in text
    for path in out.rglob("*"):
        if path.is_file():
            assert CANARY not in path.read_text(errors="replace"), path
    command = json.loads(text)["command"]
    assert command[:3] == ["capplan", "trial", "run"]
    assert command[command.index("--api-base") + 1] == "http://<redacted>@127.0.0.1:1/v1"
    assert command[command.index("--out") + 1] == "run"  # relative to the current directory (no .git above)


@pytest.fixture
def finished(pack: Path, tmp_path: Path) -> tuple[Path, dict[str, bytes]]:
    out = tmp_path / "run"
    result = invoke(*run_args(pack, out))
    assert result.exit_code == 0, result.output
    return out, snapshot(out)


def test_an_unchanged_resume_runs(finished: tuple[Path, dict[str, bytes]], pack: Path) -> None:
    out, before = finished
    result = invoke(*run_args(pack, out))
    assert result.exit_code == 0, result.output
    assert (out / "runs.jsonl").read_bytes() == before["runs.jsonl"]  # nothing to run again
    manifest = json.loads((out / "run.json").read_text())
    first = json.loads(before["run.json"])
    assert manifest["run_id"] == first["run_id"] and manifest["started_at"] == first["started_at"]
    assert len(manifest["invocations"]) == 2 and manifest["invocations"][1]["ended_at"] == manifest["ended_at"]


def test_a_resume_with_a_user_plan_added_is_refused(finished: tuple[Path, dict[str, bytes]], pack: Path) -> None:
    out, before = finished
    (change,) = refused(invoke(*run_args(pack, out, "--user-plan", str(MOCK_PLAN))), out, before)
    assert change.startswith("--user-plan: none -> ")


def test_a_resume_with_other_max_turns_is_refused(finished: tuple[Path, dict[str, bytes]], pack: Path) -> None:
    out, before = finished
    args = run_args(pack, out)
    args[args.index("--max-turns") + 1] = "7"
    assert refused(invoke(*args), out, before) == ["--max-turns: 4 -> 7"]


def test_a_resume_with_other_trials_is_refused(finished: tuple[Path, dict[str, bytes]], pack: Path) -> None:
    out, before = finished
    assert refused(invoke(*run_args(pack, out, "--trials", "3")), out, before) == ["--trials: 1 -> 3"]


def test_a_resume_with_an_edited_environment_is_refused(finished: tuple[Path, dict[str, bytes]], pack: Path) -> None:
    out, before = finished
    env = pack / "inventory_env.py"
    env.write_text(env.read_text() + "\n# a changed environment\n")
    (change,) = refused(invoke(*run_args(pack, out)), out, before)
    assert re.fullmatch(r"module file \S*inventory_env\.py changed", change), change


def test_a_resume_with_a_renamed_task_is_refused(finished: tuple[Path, dict[str, bytes]], pack: Path) -> None:
    out, before = finished
    task = pack / SCRIPTED[1]
    task.write_text(task.read_text().replace("id: inv-02-invoice-acme", "id: inv-02-invoice-renamed", 1))
    changes = refused(invoke(*run_args(pack, out)), out, before)
    assert changes == ["task 'inv-02-invoice-acme' removed (or renamed)", "task 'inv-02-invoice-renamed' added"]


def test_every_change_is_listed_at_once(finished: tuple[Path, dict[str, bytes]], pack: Path) -> None:
    out, before = finished
    (pack / "inventory_env.py").write_text((pack / "inventory_env.py").read_text() + "\n# edited\n")
    changes = sorted(refused(invoke(*run_args(pack, out, "--trials", "2", "--user-plan", str(MOCK_PLAN))), out, before))
    assert len(changes) == 3
    assert changes[0] == "--trials: 1 -> 2" and changes[1].startswith("--user-plan: none -> ")
    assert re.fullmatch(r"module file \S*inventory_env\.py changed", changes[2])


def test_a_resume_with_an_edited_grader_module_is_refused(pack: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = run_args(pack, out, "--user-plan", str(MOCK_PLAN), names=(GRADED,))
    assert invoke(*args).exit_code == 0
    before = snapshot(out)
    graders = pack / "inventory_graders.py"
    graders.write_text(graders.read_text() + "\n# edited\n")
    (change,) = refused(invoke(*args), out, before)
    assert re.fullmatch(r"module file \S*inventory_graders\.py changed", change), change


def test_an_older_run_json_with_finished_trials_is_refused(finished: tuple[Path, dict[str, bytes]],
                                                           pack: Path) -> None:
    out, _ = finished
    manifest = json.loads((out / "run.json").read_text())
    old = {"format": "capplan-trial-run", "version": 1, "plans": manifest["plans"], "tasks": manifest["tasks"],
           "interrupted": []}
    (out / "run.json").write_text(json.dumps(old))
    before = snapshot(out)
    result = invoke(*run_args(pack, out))
    assert result.exit_code == 2
    assert f"{out / 'run.json'}:1:1: error[run-identity-unknown]: was written by an older capplan" in result.output
    assert "use a new --out" in result.output
    assert snapshot(out) == before
    # report still reads it
    assert invoke("trial", "report", str(out)).exit_code == 0


# -- interrupted trials' spend -----------------------------------------------------------------------


class _StopsAfterFirst:
    """The local backend, but every trial after the first ends interrupted, having spent 0.25 USD (a Ctrl-C)."""

    def __init__(self) -> None:
        from capplan.trials.backends.local import LocalBackend
        from capplan.trials.runner import RunContext

        self.inner = LocalBackend(RunContext(sleep=lambda s: None))

    def prepare(self, specs: object, *, concurrency: int | None = None) -> None:
        self.inner.prepare(specs, concurrency=concurrency)  # type: ignore[arg-type]

    def run(self, specs: object, *, concurrency: int, stop: object) -> object:
        import dataclasses

        from capplan.trials.outcome import TrialStatus

        for n, records in enumerate(self.inner.run(specs, concurrency=1, stop=stop)):  # type: ignore[arg-type]
            if n:
                stop.set()  # type: ignore[attr-defined]
                records = dataclasses.replace(records, status=TrialStatus.INTERRUPTED, cost_usd=0.25,
                                              run_line={**records.run_line, "cost_usd": 0.25, "user_cost_usd": 0.0})
            yield records


def test_interrupted_trials_spend_is_kept_across_resumes(pack: Path, tmp_path: Path) -> None:
    import io

    from capplan.trials.driver import RunRequest, build_run, drive
    from capplan.trials.report.progress import Progress
    from capplan.trials.run_folder.folder import RunFolder

    out = tmp_path / "run"
    request = RunRequest(tasks=[pack / n for n in SCRIPTED], plans=[MOCK_PLAN], out=out, trials=2, concurrency=1)
    specs, settings = build_run(request)
    recorded: list[str] = []
    for leg in (1, 2):
        outcome = drive(specs, RunFolder(out), _StopsAfterFirst(), concurrency=1, max_cost=None,  # type: ignore[arg-type]
                        progress=Progress(io.StringIO()), settings=settings, command=["capplan", "trial", "run"])
        assert outcome.interrupted, leg
        recorded += sorted(str(k) for k in outcome.interrupted)
        manifest = json.loads((out / "run.json").read_text())
        # every leg's interrupted attempts are kept: each rerun starts from nothing, so that money is gone
        assert [e["key"] for e in manifest["interrupted_spend"]] == recorded
        assert {e["cost_usd"] for e in manifest["interrupted_spend"]} == {0.25}
        assert manifest["interrupted_spend_usd"] == 0.25 * len(recorded)
        assert manifest["ended_at"] == manifest["invocations"][-1]["ended_at"] is not None
        assert len(manifest["invocations"]) == leg
    assert manifest["interrupted"]  # the last leg's interrupted trials rerun next time

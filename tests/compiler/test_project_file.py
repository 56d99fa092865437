"""The project file and `capplan init`, end to end through the command line, as a new user runs them."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from capplan.compiler.schemas import rendered
from tests.cli_runner import invoke

REPO = Path(__file__).resolve().parents[2]
STARTER = ["capplan.yaml", "run.yaml", "overlays/team.yaml", "tasks/order-01-status.yaml", "tasks/order_env.py"]


def capplan(cwd: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`capplan ARGS` as a process in ``cwd`` (offline; stderr is a pipe, so no hints)."""
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.run([sys.executable, "-m", "capplan.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_init_writes_a_starter_that_lints_clean_and_runs_offline(tmp_path: Path) -> None:
    made = capplan(tmp_path, "init", "my-evals")
    assert made.returncode == 0, made.stderr
    project = tmp_path / "my-evals"
    schemas = {f"schemas/{name}": data for name, data in rendered().items()}
    assert sorted(str(p.relative_to(project)) for p in project.rglob("*") if p.is_file()) == sorted([*STARTER, *schemas])
    # the schemas are what `capplan schema --out` writes, and every $schema line names one of them by relative path
    assert all(project.joinpath(name).read_bytes() == data for name, data in schemas.items())
    for name in STARTER:
        for target in re.findall(r"\$schema=(\S+)", project.joinpath(name).read_text()):
            assert (project / name).parent.joinpath(target).resolve().is_file(), f"{name}: {target}"
    assert sum("$schema=" in project.joinpath(name).read_text() for name in STARTER) == 4
    assert "next: cd my-evals && capplan lint && capplan compile && capplan trial run" in made.stdout
    assert all(project.joinpath(name).read_text().startswith(("#", '"""')) for name in STARTER)  # commented

    lint = capplan(project, "lint")
    assert (lint.returncode, lint.stdout.strip()) == (0, "capplan lint: 4 file(s) checked: no problems")

    compiled = capplan(project, "compile")  # plans folder and run config from capplan.yaml
    assert compiled.returncode == 0, compiled.stderr
    assert sorted(p.name for p in (project / "plans").iterdir()) == ["manifest.json", "mock-echo.json"]

    run = capplan(project, "trial", "run")  # tasks, plans, out and trials from capplan.yaml
    assert run.returncode == 0, run.stderr
    lines = [json.loads(x) for x in (project / "runs/starter/runs.jsonl").read_text().splitlines()]
    assert len(lines) == 2 and {line["task_id"] for line in lines} == {"order-01-status"}
    assert all(line["status"] == "completed" and line["passed"] for line in lines), lines


def test_init_refuses_to_overwrite_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "run.yaml").write_text("mine\n")
    done = capplan(tmp_path, "init")
    assert done.returncode == 2
    assert "run.yaml:1:1: error[file-exists]: exists already; capplan init never overwrites" in done.stderr
    assert (tmp_path / "run.yaml").read_text() == "mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.yaml"]


def test_init_refused_for_anything_in_the_way_writes_nothing_and_lists_every_problem(tmp_path: Path) -> None:
    # a file where tasks/ belongs, a link where overlays/ belongs, and one starter file already there:
    # all three are listed, and not one starter file (nor a folder) is left behind
    (tmp_path / "tasks").write_text("mine\n")
    (tmp_path / "overlays").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "run.yaml").write_text("mine\n")
    done = capplan(tmp_path, "init")
    assert done.returncode == 2, done.stderr
    assert "tasks:1:1: error[not-a-folder]: is a file where the starter needs a folder" in done.stderr
    assert "overlays:1:1: error[symlink]: is a symbolic link where the starter needs a folder" in done.stderr
    assert "run.yaml:1:1: error[file-exists]" in done.stderr
    assert "3 error(s); nothing was written" in done.stderr and "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["overlays", "run.yaml", "tasks"]
    assert not (tmp_path / "elsewhere").exists()


def test_init_under_a_file_is_a_located_error_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine\n")
    done = capplan(tmp_path, "init", "notes.txt/evals")
    assert done.returncode == 2, done.stderr
    assert "notes.txt:1:1: error[not-a-folder]: is a file, so the folder notes.txt/evals cannot be created" in done.stderr
    assert "hint: give capplan init a path whose parents are folders" in done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


@pytest.mark.parametrize(("kind", "what"), [("file", "a file"), ("dangling link", "a symbolic link to nothing")])
def test_init_onto_a_file_or_a_dangling_link_is_a_located_error(tmp_path: Path, kind: str, what: str) -> None:
    target = tmp_path / "evals"
    if kind == "file":
        target.write_text("mine\n")
    else:
        target.symlink_to(tmp_path / "nowhere")
    done = capplan(tmp_path, "init", "evals")
    assert done.returncode == 2, done.stderr
    assert f"evals:1:1: error[not-a-folder]: is {what}, not a folder" in done.stderr
    assert "hint: give capplan init a folder" in done.stderr and "Traceback" not in done.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["evals"] and not (tmp_path / "nowhere").exists()


def test_init_whose_write_fails_midway_removes_what_it_wrote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from capplan.trials.run_folder import confined

    real, calls = confined.create_new, []

    def third_fails(root: Path, parts: tuple[str, ...], data: bytes, **kwargs: object) -> bool:
        calls.append(parts)
        if len(calls) == 3:  # as a full disk would refuse it
            raise confined.ConfinedPathError(root.joinpath(*parts), "out-unwritable", "cannot write it: No space left")
        return real(root, parts, data)

    monkeypatch.setattr(confined, "create_new", third_fails)
    done = invoke("init", str(tmp_path / "evals"))
    assert done.exit_code == 2, done.output
    assert "error[out-unwritable]: cannot write it: No space left" in done.stderr
    assert len(calls) == 3
    assert list(tmp_path.iterdir()) == []  # the two files written, their folders and evals/ itself are gone


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project whose capplan.yaml names the example run config and overlay."""
    root = tmp_path / "proj"
    (root / "overlays").mkdir(parents=True)
    (root / "sub" / "deeper").mkdir(parents=True)
    shutil.copy(REPO / "examples/run.yaml", root / "run.yaml")
    shutil.copy(REPO / "examples/overlays/ops-overlay.yaml", root / "overlays/ops.yaml")
    (root / "capplan.yaml").write_text("run_config: run.yaml\noverlays: [overlays/ops.yaml]\nplans: build/plans\n")
    return root


def test_every_command_reads_the_project_file_from_below_and_flags_override_it(project: Path) -> None:
    here = project / "sub" / "deeper"
    done = capplan(here, "compile")
    assert done.returncode == 0, done.stderr
    # the overlay's in-house model compiled: run config and overlay both came from capplan.yaml
    assert sorted(p.name for p in (project / "build/plans").iterdir()) == [
        "acme-support.json", "claude-opus.json", "grok.json", "manifest.json"]
    done = capplan(here, "compile", "--model", "grok", "--out", "mine")  # flags beat the file
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (here / "mine").iterdir()) == ["grok.json", "manifest.json"]
    explained = capplan(here, "explain", "acme-support", "binding.key")
    assert explained.returncode == 0, explained.stderr
    first, second = explained.stdout.splitlines()[:2]
    assert first == "# project file: ../../capplan.yaml (its settings are the defaults; flags override them)"
    assert second.startswith("# acme-support: acme/support-ft-3")
    ignored = capplan(here, "--no-project", "explain", "acme-support")  # not a catalogue key without the file
    assert ignored.returncode == 2 and "project file" not in ignored.stdout
    (project / "other.yaml").write_text("plans: other-plans\n")
    chosen = capplan(here, "--project", "../../other.yaml", "compile", "--model", "mock-echo")
    assert chosen.returncode == 0, chosen.stderr
    assert (project / "other-plans/mock-echo.json").is_file()
    (project / "other.yaml").write_text("plans: other-plans\nplan: typo\n")
    linted = capplan(here, "--project", "../../other.yaml", "lint")
    assert linted.returncode == 2 and "../../other.yaml:2:1: error[unknown-key]: plan: unknown key 'plan'" in linted.stdout


def test_help_says_which_project_file_is_used(project: Path, tmp_path: Path) -> None:
    for args in (["compile", "--help"], ["trial", "run", "--help"], ["lint", "--help"]):
        helped = capplan(project / "sub", *args)
        assert helped.returncode == 0
        assert "project file: ../capplan.yaml (its settings are the defaults; flags override" in " ".join(
            helped.stdout.split()), args
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert "project file:" not in capplan(elsewhere, "compile", "--help").stdout


def test_a_broken_project_file_is_linted_in_one_pass_and_stops_other_commands(project: Path) -> None:
    (project / "capplan.yaml").write_text(
        "run_conifg: run.yaml\n"
        "overlays: [overlays/ops.yaml, ../outside.yaml, missing.yaml]\n"
        "plans: 5\n"
        "trial: {trials: 0, concurency: 3, tasks: [nowhere/]}\n")
    lint = capplan(project, "lint", "capplan.yaml")
    assert lint.returncode == 2
    errors = [line for line in lint.stdout.splitlines() if ": error[" in line]
    assert errors == [
        "capplan.yaml:1:1: error[unknown-key]: run_conifg: unknown key 'run_conifg'",
        "capplan.yaml:2:31: error[path-outside-project]: overlays[1]: the path leads outside the project root",
        "capplan.yaml:2:48: error[missing-file]: overlays[2]: no such file: missing.yaml",
        "capplan.yaml:3:1: error[wrong-type]: plans: Input should be a valid string (got 5)",
        "capplan.yaml:4:9: error[wrong-type]: trial.trials: Input should be greater than or equal to 1 (got 0)",
        "capplan.yaml:4:20: error[unknown-key]: trial.concurency: unknown key 'concurency'",
        "capplan.yaml:4:43: error[missing-file]: trial.tasks[0]: no such file or folder: nowhere/",
    ]
    assert "did you mean 'run_config'?" in lint.stdout and "did you mean 'concurrency'?" in lint.stdout
    compiled = capplan(project, "compile")
    assert compiled.returncode == 2 and "capplan.yaml:1:1: error[unknown-key]" in compiled.stderr
    assert not (project / "build").exists()
    made = capplan(project, "init", "another")  # a command that takes nothing from the file does not read it
    assert made.returncode == 0, made.stderr


def test_lint_checks_the_project_file_beside_the_files_it_is_given(project: Path) -> None:
    (project / "capplan.yaml").write_text("run_config: run.yaml\noverlays: [overlays/ops.yaml]\ngoldne: g\n")
    lint = capplan(project / "sub", "lint", "../overlays/ops.yaml")
    assert lint.returncode == 2
    assert "../capplan.yaml:3:1: error[unknown-key]: goldne: unknown key 'goldne'" in lint.stdout
    assert lint.stderr.strip() == "capplan lint: 2 file(s) checked: 1 error(s), 0 warning(s)"


def test_pyproject_tool_capplan_is_a_project_file_with_located_errors(tmp_path: Path) -> None:
    shutil.copy(REPO / "examples/run.yaml", tmp_path / "run.yaml")
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.capplan]\nrun_config = "run.yaml"\nplans = "out/plans"\n\n'
        '[tool.capplan.trial]\nconcurrency = "four"\n')
    lint = capplan(tmp_path, "lint", "pyproject.toml")
    assert lint.returncode == 2
    assert "pyproject.toml:9:1: error[wrong-type]: trial.concurrency: Input should be a valid integer" in lint.stdout
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.capplan]\nrun_config = "run.yaml"\nplans = "out/plans"\n')
    done = capplan(tmp_path, "compile", "--model", "claude-opus")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out/plans/claude-opus.json").is_file()


def test_the_walk_up_stops_at_the_git_root(tmp_path: Path) -> None:
    (tmp_path / "capplan.yaml").write_text("plans: never-used\n")
    checkout = tmp_path / "checkout"
    (checkout / ".git").mkdir(parents=True)
    done = capplan(checkout, "compile", "--model", "mock-echo")
    assert done.returncode == 0, done.stderr
    assert (checkout / "plans/mock-echo.json").is_file() and not (checkout / "never-used").exists()


@pytest.mark.parametrize("with_file", [False, True])
def test_the_project_files_models_are_loaded_only_when_there_is_a_file(tmp_path: Path, with_file: bool) -> None:
    checkout = tmp_path / "checkout"
    (checkout / ".git").mkdir(parents=True)
    if with_file:
        (checkout / "capplan.yaml").write_text("plans: built\n")
    probe = ("import sys\nfrom capplan.cli import main\nsys.argv = ['capplan', 'compile', '--model', 'mock-echo']\n"
             "try:\n    main()\nexcept SystemExit as done:\n"
             "    print(done.code, 'capplan.core.project_file' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=checkout, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.stdout.split()[-2:] == ["0", str(with_file)], done.stdout + done.stderr
    assert (checkout / ("built" if with_file else "plans") / "mock-echo.json").is_file()


PLANTED = "sk-or-v1-" + "9f3a" * 12  # shaped like a real key: must never be echoed


@pytest.mark.parametrize("content", [
    pytest.param(b"run_config: [run.yaml\n", id="truncated"),
    pytest.param(b"plans: " + b"[" * 5000 + b"]" * 5000 + b"\n", id="deep"),
    pytest.param(b"overlays:\n" + b"  - overlays/ops.yaml\n" * 400_000, id="huge"),
    pytest.param(b"- just\n- a list\n", id="wrong-type"),
    pytest.param(f"run_config: {PLANTED}\ngolden: {PLANTED}\n".encode(), id="planted-key"),
    pytest.param(b"\xff\xfe not utf-8\n", id="not-utf8"),
])
def test_a_hostile_project_file_is_a_located_error_and_nothing_is_written(project: Path, content: bytes) -> None:
    (project / "capplan.yaml").write_bytes(content)
    done = capplan(project, "compile")
    assert done.returncode == 2, done.stderr
    assert "capplan.yaml" in done.stderr and "Traceback" not in done.stderr + done.stdout
    assert PLANTED not in done.stderr + done.stdout
    assert not (project / "build").exists() and not (project / "plans").exists()

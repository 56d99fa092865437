"""What a task's code ref may name, and that validating a task constructs nothing.

A ref is a module file in the task file's folder, or a module of an installed distribution the
task file declares under ``requires:``; never the standard library, never anything else on
``sys.path``. Each refused ref is a located error, and a marker file proves that nothing was
imported, constructed or run. A module whose import hangs is ended by the task-code deadline.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from capplan.core.diagnostics import InputError
from capplan.trials.tasks.loading import lint_task, load_task
from tests.trials.helpers import openai_plan
from tests.trials.installed_dist import install
from tests.cli_runner import invoke

TOOLS = """tools:
  - {name: add, description: d, parameters: {type: object, properties: {amount: {type: integer}}}}
user: {mode: scripted, turns: [hi]}
"""

#: a component whose import and whose construction each leave a marker file
MARKED = """\
from pathlib import Path
Path({imported!r}).write_text("imported")


class Desk:
    def __init__(self):
        Path({built!r}).write_text("constructed")
        self.count = 0

    def add(self, amount: int) -> int:
        self.count += amount
        return self.count
"""


def _task(folder: Path, head: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "task.yaml"
    path.write_text(f"id: t\nsystem_prompt: s\n{head}{TOOLS}")
    return path


def _trial_run(task: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    plan = tmp_path / "agent.json"
    plan.write_bytes(openai_plan().to_bytes())
    monkeypatch.setenv("OPENAI_API_KEY", "sk-refs-test-key")
    result = invoke("trial", "run", str(task), "--plan", str(plan), "--out", str(tmp_path / "run"),
                    "--api-base", "http://127.0.0.1:9/v1")
    return result.exit_code, result.output


@pytest.mark.parametrize(("ref", "args", "code"), [
    ("subprocess:Popen", "{{args: [touch, {marker}]}}", "ref-stdlib"),
    ("os:system", "{{command: touch {marker}}}", "ref-stdlib"),
])
def test_a_standard_library_ref_is_refused_located_and_nothing_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    ref: str, args: str, code: str) -> None:
    marker = tmp_path / "ran"
    task = _task(tmp_path / "pack", f"environment: {ref}\nenvironment_args: {args.format(marker=marker)}\n")
    exit_code, output = _trial_run(task, tmp_path, monkeypatch)
    assert exit_code == 2, output
    assert f"{task}:3:1: error[{code}]: environment: module '{ref.split(':')[0]}' is part of Python's standard " \
           "library" in output
    assert "hint: an environment ref names a module file in the task file's folder" in output
    assert "Traceback" not in output
    assert not marker.exists()  # never constructed
    assert not (tmp_path / "run").exists()  # and nothing was written
    assert [d.code for d in lint_task(task)] == [code]  # lint (nothing imported) says the same


def test_a_module_elsewhere_on_sys_path_is_refused_and_never_imported(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    imported, built = tmp_path / "imported", tmp_path / "built"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "sneaky_env.py").write_text(MARKED.format(imported=str(imported), built=str(built)))
    monkeypatch.syspath_prepend(str(elsewhere))
    task = _task(tmp_path / "pack", "environment: sneaky_env:Desk\n")
    exit_code, output = _trial_run(task, tmp_path, monkeypatch)
    assert exit_code == 2, output
    assert f"{task}:3:1: error[ref-not-allowed]: environment: module 'sneaky_env' is neither in the task file's " \
           "folder nor a module of an installed distribution" in output
    assert not imported.exists() and not built.exists()


def test_a_module_of_an_undeclared_distribution_is_refused_and_a_declared_one_loads_unconstructed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    imported, built = tmp_path / "imported", tmp_path / "built"
    install(tmp_path / "site", monkeypatch, dist="desk-dist", package="deskpkg",
            source=MARKED.format(imported=str(imported), built=str(built)))
    task = _task(tmp_path / "pack", "environment: deskpkg:Desk\n")
    with pytest.raises(InputError) as caught:
        load_task(task)
    [diag] = caught.value.diagnostics
    assert (diag.code, diag.line, diag.col) == ("ref-undeclared", 3, 1)
    assert "belongs to the installed distribution desk-dist, which the task file does not declare" in diag.message
    assert diag.hint is not None and "requires: [desk-dist]" in diag.hint
    assert not imported.exists()

    declared = _task(tmp_path / "declared", "requires: [desk-dist]\nenvironment: deskpkg:Desk\n")
    loaded = load_task(declared)
    assert loaded.classes[0].__name__ == "Desk"
    assert imported.exists()  # imported, to check its methods against the tools ...
    assert not built.exists()  # ... but validation constructs nothing


def test_a_distribution_declared_but_not_installed_is_located(tmp_path: Path) -> None:
    task = _task(tmp_path / "pack", "requires: [no-such-dist-xyz]\nenvironment: env:Desk\n")
    (tmp_path / "pack" / "env.py").write_text("class Desk:\n    def add(self, amount: int) -> int:\n        return 1\n")
    diags = lint_task(task)
    assert [(d.code, d.line, d.col) for d in diags] == [("requires-missing", 3, 12)]
    assert "pip install no-such-dist-xyz" in (diags[0].hint or "")


def test_a_path_ref_outside_the_task_folder_is_refused(tmp_path: Path) -> None:
    built = tmp_path / "built"
    (tmp_path / "outside.py").write_text(MARKED.format(imported=str(tmp_path / "imported"), built=str(built)))
    task = _task(tmp_path / "pack", "environment:\n  - ref: ../outside.py:Desk\n")
    with pytest.raises(InputError) as caught:
        load_task(task)
    assert [(d.code, d.line) for d in caught.value.diagnostics] == [("ref-outside-folder", 4)]
    assert not (tmp_path / "imported").exists() and not built.exists()


def test_a_task_module_whose_import_hangs_is_ended_by_the_deadline(tmp_path: Path) -> None:
    pack = tmp_path / "pack"
    task = _task(pack, "tool_timeout_s: 0.5\nenvironment: hang_env:Desk\n")
    (pack / "hang_env.py").write_text("import threading\nthreading.Event().wait()\n\nclass Desk:\n    pass\n")
    # a second task, validated after it: refused at once, not after a deadline of its own behind the hung import
    later = pack / "zz.yaml"
    later.write_text(f"id: zz\nsystem_prompt: s\ntool_timeout_s: 30\nenvironment: ok_env:Desk\n{TOOLS}")
    (pack / "ok_env.py").write_text("class Desk:\n    def add(self, amount: int) -> int:\n        return amount\n")
    plan = tmp_path / "agent.json"
    plan.write_bytes(openai_plan().to_bytes())
    env = {**os.environ, "OPENAI_API_KEY": "sk-refs-test-key"}
    # in a child process: before the deadline, this import hung the command for good
    done = subprocess.run([sys.executable, "-c", "from capplan.cli import main; main()", "trial", "run", str(pack),
                           "--plan", str(plan), "--out", str(tmp_path / "run"), "--api-base", "http://127.0.0.1:9/v1"],
                          env=env, capture_output=True, timeout=120)
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert f"{task}:4:1: error[environment-import]: environment: importing hang_env:Desk timed out after 0.5 s" in err
    assert "hint: a task module's import must return within the task-code deadline" in err
    assert f"{later}:4:1: error[environment-import]: environment: not imported: importing hang_env:Desk is still " \
           "running past its deadline" in err
    assert not (tmp_path / "run").exists()

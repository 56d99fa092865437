"""Hostile task files: no command but ``trial run`` runs a line of the code a task file names.

``capplan lint`` reads a task's environment and grader from their source (found by path in the
task's folder); ``--import-environments`` is the one way to make it import them, and even then
``sys.path`` is never changed, so a module beside a task cannot stand in for a standard one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import Result

from tests.cli_runner import CAPPLAN, invoke_checked

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "trials"
MOCK_PLAN = REPO / "golden" / "plans" / "mock-echo.json"

# the file, word for word: linting it used to run `sh`
PWNED_TASK = """\
id: t2
system_prompt: hi
environment: subprocess:Popen
environment_args: {args: ["sh", "-c", "id > PWNED"]}
tools: [{name: poll, description: x}]
user: {mode: scripted, turns: ["hi"]}
"""

COUNTER_ENV = '''
import difflib  # the standard module, whatever sits beside this file


class Counter:
    def __init__(self, start: int = 0) -> None:
        self.value = start

    def add(self, amount: int) -> dict:
        self.value += amount
        return {"value": self.value}
'''

COUNTER_TASK = """\
id: count
system_prompt: You keep a counter.
environment: counter_env:Counter
tools:
  - name: {tool}
    description: Add to the counter.
    parameters: {{type: object, properties: {{amount: {{type: integer}}}}, required: [amount]}}
user: {{mode: scripted, turns: [add two]}}
{extra}"""


def run(*args: str) -> Result:
    return invoke_checked(*args)


def capplan(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real command in a process of its own (its own sys.path and sys.modules), from ``cwd``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "LLM_PROXY", "OPENAI", "ANTHROPIC"))}
    done = subprocess.run([str(CAPPLAN), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


def counter_pack(folder: Path, *, tool: str = "add", extra: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "counter_env.py").write_text(COUNTER_ENV)
    task = folder / "count.yaml"
    task.write_text(COUNTER_TASK.format(tool=tool, extra=extra))
    return task


def task_modules() -> set[str]:
    return {name for name in sys.modules if name.startswith("capplan_task_env_") or name.endswith("_env")}


# --- the file through every command that reads a file -------------------------------------

def test_the_popen_task_runs_nothing_through_any_command(tmp_path: Path) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    for name in ("t2.yaml", "ops-overlay.yaml"):
        (cwd / name).write_text(PWNED_TASK)
    (cwd / "overlays").mkdir()
    (cwd / "overlays" / "team.yaml").write_text(PWNED_TASK)
    commands: list[tuple[list[str], set[int]]] = [
        # an error: a task's code is a module file in its folder or of a distribution it declares, never the
        # standard library; the ref is judged by its name, nothing is imported
        (["lint", "t2.yaml"], {2}),
        (["lint", "--kind", "task", "t2.yaml"], {2}),
        (["lint", "--format", "github", "ops-overlay.yaml", "overlays/team.yaml"], {2}),  # examples/ci/capplan.yml
        (["lint", "--kind", "overlay", "t2.yaml"], {2}),
        (["lint", "--config", "t2.yaml", "ops-overlay.yaml"], {1, 2}),
        (["compile", "--presets-file", "t2.yaml", "--out", "plans"], {2}),
        (["compile", "--config", "t2.yaml", "--out", "plans"], {2}),
        (["diff", "t2.yaml", "ops-overlay.yaml"], {2}),
        (["diff", "--presets-file", "t2.yaml", "t2.yaml", "t2.yaml"], {2}),
        (["explain", "gpt-4o", "--presets-file", "t2.yaml"], {2}),
        (["explain", "gpt-4o", "--config", "t2.yaml"], {2}),
        (["schema", "task"], {0}),
    ]
    for args, codes in commands:
        done = capplan(cwd, *args)
        assert done.returncode in codes, (args, done.returncode, done.stdout, done.stderr)
        assert not list(tmp_path.rglob("PWNED")), args
        assert not (cwd / "plans").exists(), args
    assert not (REPO / "PWNED").exists()
    lint = capplan(cwd, "lint", "t2.yaml")
    assert "t2.yaml:3:1: error[ref-stdlib]" in lint.stdout
    assert "requires:" in lint.stdout


def test_the_pre_commit_hook_entry_runs_nothing(tmp_path: Path) -> None:
    hooks = (REPO / ".pre-commit-hooks.yaml").read_text()
    assert "entry: capplan lint\n" in hooks  # no --import-environments in the hook
    (tmp_path / "ops-overlay.yaml").write_text(PWNED_TASK)
    done = capplan(tmp_path, "lint", "ops-overlay.yaml")
    assert done.returncode == 2 and "error[ref-stdlib]" in done.stdout
    assert not (tmp_path / "PWNED").exists()


def test_only_the_flag_makes_lint_import_and_its_help_says_so(tmp_path: Path) -> None:
    help_text = " ".join(run("lint", "--help").output.split())  # as read, not as wrapped
    assert "--import-environments" in help_text
    assert "runs the task's code (imports environment and grader modules, constructs the environment)" in help_text
    trial_help = " ".join(run("trial", "run", "--help").output.split())
    assert "This runs the tasks' code" in trial_help and "grader modules are" in trial_help


# --- a module beside a task never stands in for the standard one ----------------------------------

def test_a_difflib_beside_a_task_is_never_imported(tmp_path: Path) -> None:
    marker = tmp_path / "SHADOWED"
    pack = tmp_path / "pack"
    task = counter_pack(pack, tool="ad")  # a typo: the did-you-mean hint imports difflib
    (pack / "difflib.py").write_text(f"open({str(marker)!r}, 'w').write('imported')\n")
    overlay = tmp_path / "ops-overlay.yaml"
    overlay.write_text("presets:\n  mine:\n    match: ['x/*']\n    suport_seed: true\n")  # a typo again
    for flag in ([], ["--import-environments"]):
        done = capplan(tmp_path, "lint", *flag, str(task), str(overlay))
        assert done.returncode == 2, done.stdout
        assert "did you mean 'add'?" in done.stdout  # the real difflib answered, for the task ...
        assert "error[unknown-key]" in done.stdout and "did you mean" in done.stdout.split("ops-overlay")[-1]
        assert not marker.exists(), flag


def test_lint_never_changes_sys_path_even_with_the_flag(tmp_path: Path) -> None:
    pack = tmp_path / "pack"
    task = counter_pack(pack)
    (pack / "difflib.py").write_text("raise SystemExit('shadowed')\n")
    before_path, before_difflib = list(sys.path), sys.modules.get("difflib")
    before_modules = task_modules()
    clean = run("lint", str(task))
    assert clean.exit_code == 0, clean.output
    assert task_modules() == before_modules  # nothing the file names was imported
    imported = run("lint", "--import-environments", str(task))
    assert imported.exit_code == 0, imported.output
    assert sys.path == before_path
    assert sys.modules.get("difflib") is before_difflib
    new = task_modules() - before_modules
    assert new and all(n.startswith("capplan_task_env_") for n in new)  # its own name, never counter_env
    assert not (pack / "__pycache__").exists()  # no bytecode written into the task's folder


def test_two_packs_with_a_module_of_the_same_name_do_not_share_it(tmp_path: Path) -> None:
    first = counter_pack(tmp_path / "a")
    second = counter_pack(tmp_path / "b", tool="sub")
    (tmp_path / "b" / "counter_env.py").write_text(COUNTER_ENV.replace("def add(", "def sub("))
    assert run("lint", "--import-environments", str(first)).exit_code == 0
    result = run("lint", "--import-environments", str(second))
    assert result.exit_code == 0, result.output  # b's own module, not a's cached under the same name


# --- an environment that exits at import ----------------------------------------------------------

def test_an_environment_raising_system_exit_is_not_imported_by_lint(tmp_path: Path) -> None:
    marker = tmp_path / "IMPORTED"
    pack = tmp_path / "pack"
    task = counter_pack(pack)
    (pack / "counter_env.py").write_text(f"open({str(marker)!r}, 'w').write('x')\nraise SystemExit(0)\n" + COUNTER_ENV)
    clean = run("lint", str(task))
    assert clean.exit_code == 0, clean.output
    assert not marker.exists()
    flagged = run("lint", "--import-environments", str(task))
    assert flagged.exit_code == 2, flagged.output
    assert marker.exists()  # the flag did what it says: it ran the module ...
    assert f"{task}:3:1: error[environment-import]: environment: importing 'counter_env' raised SystemExit: 0" \
        in flagged.output  # ... and its exit is a located error, not capplan's exit
    for i, raised in enumerate(("KeyboardInterrupt()", "BaseException('boom')")):
        (pack / f"env_{i}.py").write_text(f"raise {raised}\n" + COUNTER_ENV)
        task.write_text(COUNTER_TASK.format(tool="add", extra="").replace("counter_env", f"env_{i}"))
        assert run("lint", str(task)).exit_code == 0
        result = run("lint", "--import-environments", str(task))
        assert result.exit_code == 2, result.output
        assert f"error[environment-import]: environment: importing 'env_{i}' raised {raised.split('(')[0]}" \
            in result.output


def test_trial_run_reports_an_exit_at_import_as_a_located_error(tmp_path: Path) -> None:
    pack = tmp_path / "pack"
    task = counter_pack(pack)
    (pack / "counter_env.py").write_text("raise SystemExit(0)\n" + COUNTER_ENV)
    out = tmp_path / "run"
    result = run("trial", "run", str(task), "--plan", str(MOCK_PLAN), "--out", str(out))
    assert result.exit_code == 2, result.output
    assert f"{task}:3:1: error[environment-import]" in result.output
    assert not out.exists()


# --- the static check finds what the import-based one found ---------------------------------------

BROKEN = {
    "unknown tool": ("inventory_desk/inv-02-invoice-acme.yaml", "- name: void_invoice", "- name: void_invoic"),
    "undeclared method": ("inventory_desk/inv-01-check-stock.yaml", "  - name: list_low_stock\n", "  - name: list_low_stocks\n"),
    "wrong parameter": ("travel_desk/trv-02-book.yaml", "passenger:", "passengr:"),
    "unknown state key": ("inventory_desk/inv-02-invoice-acme.yaml", "    invoices: {INV-0001", "    invoice: {INV-0001"),
    "unknown grader function": ("inventory_desk/inv-04-void.yaml", ":every_invoice_void", ":every_invoice_voids"),
    "bad environment args": ("inventory_desk/inv-01-check-stock.yaml", "\ntools:", "\nenvironment_args: {threshold: 3}\ntools:"),
}


def _findings(*args: str) -> list[tuple[int, int, str, str]]:
    result = run("lint", "--format", "json", *args)
    assert result.exit_code == 2, result.output
    data = json.loads(result.output)
    return sorted((d["line"], d["col"], d["code"], d["message"]) for d in data["diagnostics"] if d["severity"] == "error")


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_the_static_check_reports_what_importing_reported(tmp_path: Path, case: str) -> None:
    name, old, new = BROKEN[case]
    pack = tmp_path / name.split("/")[0]
    shutil.copytree(EXAMPLES / name.split("/")[0], pack, ignore=shutil.ignore_patterns("__pycache__"))
    task = pack / name.split("/")[1]
    text = task.read_text()
    assert old in text
    task.write_text(text.replace(old, new, 1))
    static = _findings(str(task))
    imported = _findings("--import-environments", str(task))
    assert static, case
    if case in ("unknown grader function", "bad environment args"):
        # the same finding; the import-based message quotes the exception or lists nothing
        assert [f[2] for f in static] == [f[2] for f in imported]
    else:
        assert static == imported
    assert not (pack / "__pycache__").exists()


def test_the_example_packs_lint_clean_without_importing_anything(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("inventory_env", "travel_env", "inventory_graders", "travel_graders"):
        monkeypatch.delitem(sys.modules, name, raising=False)  # an import by either name would show
    before = task_modules()
    result = run("lint", *sorted(str(p) for p in EXAMPLES.glob("*/*.yaml")))
    assert result.exit_code == 0, result.output
    assert "no problems" in result.output
    assert task_modules() == before


# --- values ---------------------------------------------------------------------------------------

VALUES = {
    "max_turns string": ("max_turns: '6'\n", "max_turns", "error[wrong-type]"),
    "max_turns bool": ("max_turns: true\n", "max_turns", "error[wrong-type]"),
    "max_turns float": ("max_turns: 6.0\n", "max_turns", "error[wrong-type]"),
    "max_turns huge": ("max_turns: 1000000000000\n", "max_turns", "error[wrong-type]"),
    "output cap string": (None, "tools[0].output_max_chars", "error[wrong-type]"),
}


@pytest.mark.parametrize("case", sorted(VALUES))
def test_a_task_number_is_strict_and_bounded(tmp_path: Path, case: str) -> None:
    extra, where, code = VALUES[case]
    task = counter_pack(tmp_path / "pack", extra=extra or "")
    if extra is None:
        task.write_text(task.read_text().replace("required: [amount]}", "required: [amount]}\n    output_max_chars: '40'"))
    for args in (["lint", str(task)], ["trial", "run", str(task), "--plan", str(MOCK_PLAN), "--out", str(tmp_path / "run")]):
        result = run(*args)
        assert result.exit_code == 2, result.output
        assert f"{task}:" in result.output and code in result.output and f"{where}:" in result.output
        assert not (tmp_path / "run").exists()


def test_properties_that_are_not_a_mapping_are_a_located_error(tmp_path: Path) -> None:
    task = counter_pack(tmp_path / "pack",
                        extra="grader:\n  expected_actions: [{name: add, arguments: {amount: 2}}]\n")
    task.write_text(task.read_text().replace("properties: {amount: {type: integer}}", "properties: 5"))
    for flag in ([], ["--import-environments"]):
        result = run("lint", *flag, str(task))
        assert result.exit_code == 2, result.output
        assert f"{task}:7:" in result.output
        assert "error[tool-schema]: tools[0].parameters.properties: not a valid JSON Schema: must be of type 'object'" \
            in result.output
    result = run("trial", "run", str(task), "--plan", str(MOCK_PLAN), "--out", str(tmp_path / "run"))
    assert result.exit_code == 2 and "error[tool-schema]" in result.output
    assert not (tmp_path / "run").exists()


# --- what the source cannot show is said, never guessed -------------------------------------------

STATIC_CASES = {
    # source of counter_env.py, then the warning expected (None: lint is clean)
    "a base class in the module": ("class Base:\n    def add(self, amount: int) -> int:\n        return amount\n\n"
                                   "class Counter(Base):\n    def __init__(self) -> None:\n        self.value = 0\n", None),
    "a base class from elsewhere": ("from collections import UserDict\n\nclass Counter(UserDict):\n"
                                    "    def add(self, amount: int) -> int:\n        return amount\n",
                                    "may have public methods lint cannot see (base class UserDict"),
    "state set with setattr": ("class Counter:\n    def __init__(self) -> None:\n        setattr(self, 'value', 0)\n"
                               "    def add(self, amount: int) -> int:\n        return amount\n",
                               "expected_state keys were not checked: the constructor calls setattr()"),
    "a class bound by an import": ("from collections import Counter\n",
                                   "'Counter' in module 'counter_env' is imported from another module"),
    "a dataclass": ("from dataclasses import dataclass, field\n\n@dataclass\nclass Counter:\n    value: int = 0\n"
                    "    def add(self, amount: int) -> int:\n        return amount\n", None),
    "a decorated tool": ("def tool(f):\n    return f\n\nclass Counter:\n    def __init__(self) -> None:\n"
                         "        self.value = 0\n    @tool\n    def add(self, amount: int) -> int:\n        return amount\n",
                         "whether 'add' is a method (a tool) depends on a decorator or an assignment lint cannot read"),
    "a staticmethod tool": ("class Counter:\n    def __init__(self) -> None:\n        self.value = 0\n"
                            "    @staticmethod\n    def add(amount: int) -> int:\n        return amount\n", None),
}


@pytest.mark.parametrize("case", sorted(STATIC_CASES))
def test_what_the_source_cannot_show_is_a_warning_naming_the_flag(tmp_path: Path, case: str) -> None:
    source, warning = STATIC_CASES[case]
    task = counter_pack(tmp_path / "pack", extra="grader:\n  expected_state: {value: 2}\n")
    (tmp_path / "pack" / "counter_env.py").write_text(source)
    result = run("lint", str(task))
    if warning is None:
        assert result.exit_code == 0, result.output
        return
    assert result.exit_code == 1, result.output
    assert "warning[not-checked-statically]" in result.output and warning in result.output
    assert "hint: capplan lint --import-environments checks it by running the task's code" in result.output


def test_a_module_that_does_not_parse_or_lacks_the_class_is_an_error(tmp_path: Path) -> None:
    task = counter_pack(tmp_path / "pack")
    env = tmp_path / "pack" / "counter_env.py"
    env.write_text("class Counter(:\n")
    result = run("lint", str(task))
    assert result.exit_code == 2
    assert f"{task}:3:1: error[environment-import]: environment: module 'counter_env' (counter_env.py) does not parse: line 1" \
        in result.output
    env.write_text("class Count:\n    pass\n")
    result = run("lint", str(task))
    assert result.exit_code == 2
    assert "error[environment-import]: environment: module 'counter_env' has no class 'Counter' (classes: Count)" \
        in result.output
    env.write_text("x = 1\n" * (600 * 1024))  # over the 1 MiB the static check reads
    result = run("lint", str(task))
    assert result.exit_code == 1 and "warning[not-checked-statically]" in result.output


@pytest.mark.parametrize("name", ["-rf", "_hidden", "a/b", ".."])
def test_a_task_id_or_pack_that_is_no_safe_path_segment_is_refused(tmp_path: Path, name: str) -> None:
    task = counter_pack(tmp_path / "pack", extra=f"pack: {json.dumps(name)}\n")
    task.write_text(task.read_text().replace("id: count", f"id: {json.dumps(name)}"))
    out = tmp_path / "run"
    for args in (["lint", str(task)], ["trial", "run", str(task), "--plan", str(MOCK_PLAN), "--out", str(out)]):
        result = run(*args)
        assert result.exit_code == 2, result.output
        assert f"{task}:1:1: error[wrong-type]: id:" in result.output
        assert "error[wrong-type]: pack:" in result.output
        assert not out.exists()

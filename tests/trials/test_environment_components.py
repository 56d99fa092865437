"""Environments of several components: loading by path under a unique module name, a fresh set per trial,
setup, dispatch by method name, state per component, the run identity's digests, and the lint of it all."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from capplan.core.diagnostics import InputError
from capplan.trials.tasks.environment import TrialEnvironment
from capplan.trials.run_folder.run_identity import task_modules
from capplan.trials.spec import TrialSpec
from capplan.trials.tasks.loading import lint_task, load_task
from tests.trials.installed_dist import install


CALCULATOR = '''
class Calculator:
    """An installed-module component (of the distribution calc-dist, installed for the test)."""

    def __init__(self) -> None:
        self.last = 0

    def add(self, a: int, b: int) -> int:
        self.last = a + b
        return self.last
'''


@pytest.fixture(autouse=True)
def calculator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install(tmp_path / "site", monkeypatch, dist="calc-dist", package="calcpkg", source=CALCULATOR)


FILES = '''
class Files:
    def __init__(self, root: str = "/"):
        self.root = root
        self.files = {}
        self.loaded = None

    def _load_scenario(self, scenario: dict, long_context: bool = False):
        self.files = dict(scenario["files"])
        self.loaded = long_context

    def write(self, name: str, text: str) -> str:
        self.files[name] = text
        return "ok"

    def cat(self, name: str) -> str:
        return self.files[name]

    def debug_dump(self) -> str:
        return repr(self.files)
'''

TICKETS = '''
class Tickets:
    def __init__(self):
        self.queue = []
        self._secret = "kept out of the state"

    def open_ticket(self, title: str) -> int:
        self.queue.append(title)
        return len(self.queue)

    def state(self):
        return {"open": len(self.queue)}
'''

TASK = """\
id: {id}
system_prompt: s
requires: [calc-dist]
environment:
  - ref: envs/files.py:Files
    args: {{root: /home}}
    setup: {{method: _load_scenario, args: {{scenario: {{files: {{a.txt: hello}}}}, long_context: true}}}}
    ignore_methods: [debug_dump]
  - ref: envs/tickets.py:Tickets
    name: support
  - ref: calcpkg:Calculator
tools:
  - {{name: write, description: d, parameters: {{type: object, properties: {{name: {{type: string}}, text: {{type: string}}}}}}}}
  - {{name: cat, description: d, parameters: {{type: object, properties: {{name: {{type: string}}}}}}}}
  - {{name: open_ticket, description: d, parameters: {{type: object, properties: {{title: {{type: string}}}}}}}}
  - {{name: add, description: d, parameters: {{type: object, properties: {{a: {{type: integer}}, b: {{type: integer}}}}}}}}
user: {{mode: scripted, turns: [hi]}}
grader:
  function: {{ref: checks.py:ok}}
"""


def _pack(folder: Path, *, task_id: str = "desk", files: str = FILES, tickets: str = TICKETS, task: str = TASK) -> Path:
    (folder / "envs").mkdir(parents=True, exist_ok=True)
    (folder / "envs" / "files.py").write_text(files)
    (folder / "envs" / "tickets.py").write_text(tickets)
    (folder / "checks.py").write_text("def ok(trajectory, final_state, task):\n    return True\n")
    path = folder / f"{task_id}.yaml"
    path.write_text(task.format(id=task_id))
    return path


def test_components_are_built_fresh_set_up_and_serve_their_tools(tmp_path: Path) -> None:
    loaded = load_task(_pack(tmp_path))
    env = TrialEnvironment.create(loaded)
    write, add, ticket = env.method("write"), env.method("add"), env.method("open_ticket")
    assert write is not None and add is not None and ticket is not None
    assert env.method("debug_dump") is None and env.method("nope") is None
    assert write("b.txt", "bye") == "ok" and add(a=2, b=3) == 5 and ticket("printer") == 1
    assert env.state() == {
        "Files": {"files": {"a.txt": "hello", "b.txt": "bye"}, "loaded": True, "root": "/home"},
        "support": {"open": 1},  # its state() replaces its attributes; the component's name is its key
        "Calculator": {"last": 5},
    }
    again = TrialEnvironment.create(loaded)  # one fresh set per trial: nothing leaks from the last one
    assert again.state()["Files"]["files"] == {"a.txt": "hello"} and again.state()["support"] == {"open": 0}
    assert not list(tmp_path.rglob("__pycache__"))  # no bytecode in the task's folder


def test_two_packs_with_the_same_file_names_never_share_code(tmp_path: Path) -> None:
    first = load_task(_pack(tmp_path / "a"))
    other = FILES.replace('return "ok"', 'return "other pack"')
    second = load_task(_pack(tmp_path / "b", files=other))
    assert first.classes[0] is not second.classes[0]
    assert first.classes[0].__module__ != second.classes[0].__module__
    write_a = TrialEnvironment.create(first).method("write")
    write_b = TrialEnvironment.create(second).method("write")
    assert write_a is not None and write_b is not None
    assert (write_a("x", "y"), write_b("x", "y")) == ("ok", "other pack")


def test_the_run_identity_digests_component_and_grader_files(tmp_path: Path) -> None:
    path = _pack(tmp_path)
    spec = TrialSpec(plan_json="{}", plan_fingerprint="f" * 64, plan_key="m", task_path=str(path),
                     task_text=path.read_text(), task_id="desk", task_pack="p", index=0)
    files, installed = task_modules([spec])
    digested = {Path(name).name: digest for name, digest in files.items()}
    assert digested == {name: hashlib.sha256(p.read_bytes()).hexdigest()
                        for name, p in (("files.py", tmp_path / "envs" / "files.py"),
                                        ("tickets.py", tmp_path / "envs" / "tickets.py"),
                                        ("checks.py", tmp_path / "checks.py"))}
    assert list(installed) == ["calcpkg"]


BROKEN_TASK = """\
id: {id}
system_prompt: s
environment:
  - ref: envs/files.py:Files
    args: {{rooot: /home}}
    setup: {{method: _load_scenaro, args: {{}}}}
    ignore_methods: [debug_dumpp]
  - ref: envs/tickets.py:Tickets
    setup: {{method: open_ticket, args: {{titel: x}}}}
  - ref: envs/missing.py:Nope
tools:
  - {{name: write, description: d, parameters: {{type: object, properties: {{name: {{type: string}}, text: {{type: string}}}}}}}}
  - {{name: open_ticket, description: d, parameters: {{type: object, properties: {{title: {{type: string}}}}}}}}
  - {{name: cta, description: d, parameters: {{type: object, properties: {{name: {{type: string}}}}}}}}
user: {{mode: scripted, turns: [hi]}}
"""

EXPECTED_STATIC = [
    ("environment-args", "environment[0].args.rooot"),
    ("setup-method", "environment[0].setup.method"),
    ("unknown-method", "environment[0].ignore_methods[0]"),
    ("undeclared-method", "environment[0]"),
    ("undeclared-method", "environment[0]"),
    ("setup-args", "environment[1].setup.args.titel"),
    ("setup-args", "environment[1].setup.args"),
    ("environment-import", "environment[2].ref"),
]


def test_lint_reports_every_component_problem_located_in_one_run(tmp_path: Path) -> None:
    path = _pack(tmp_path, task=BROKEN_TASK)
    diags = lint_task(path)
    assert sorted((d.code, d.path) for d in diags) == sorted(EXPECTED_STATIC)
    messages = {d.message for d in diags}
    assert "component 'Files' (envs/files.py:Files) has public method 'debug_dump', which the task does not declare" \
        in messages
    assert "no file envs/missing.py in the task file's folder" in messages
    assert all(d.line > 1 for d in diags)


def test_two_components_serving_one_tool_and_a_tool_no_component_has(tmp_path: Path) -> None:
    tickets = TICKETS.replace("def state(self):", "def cat(self, name: str) -> str:\n        return name\n\n"
                                                    "    def state(self):")
    task = TASK.replace("  - {{name: add,", "  - {{name: nothing_serves_me, description: d}}\n  - {{name: add,")
    path = _pack(tmp_path, tickets=tickets, task=task)
    static, imported = lint_task(path), lint_task(path, import_environments=True)
    assert sorted((d.code, d.path) for d in imported) == [
        ("duplicate-tool-owner", "tools[1].name"), ("unknown-tool", "tools[3].name")]
    # from source, the installed module's methods are unknown: a tool no file shows is a warning, not an error
    assert sorted((d.code, d.path, d.severity) for d in static) == [
        ("duplicate-tool-owner", "tools[1].name", "error"), ("not-checked-statically", "environment[2].ref", "warning")]
    for diags in (static, imported):
        owner = next(d for d in diags if d.code == "duplicate-tool-owner")
        assert owner.message == "tool 'cat' is a method of more than one component (Files and support)"
        assert owner.hint == "list it under ignore_methods: of the components that must not serve it"
    with pytest.raises(InputError) as caught:
        load_task(path)
    assert {d.code for d in caught.value.diagnostics} == {"duplicate-tool-owner", "unknown-tool"}


def test_lint_with_imports_runs_setup_and_reports_what_it_raised(tmp_path: Path) -> None:
    files = FILES.replace('self.files = dict(scenario["files"])', 'raise SystemExit("no scenario")')
    path = _pack(tmp_path, files=files)
    diags = lint_task(path, import_environments=True)
    assert [(d.code, d.path, d.message) for d in diags] == [
        ("environment-setup", "environment[0].setup", "Files._load_scenario(**setup.args) raised SystemExit: no scenario")]
    assert lint_task(path) == [d for d in lint_task(path) if d.severity == "warning"]  # statically it looks right


def test_a_path_ref_of_a_task_whose_folder_is_elsewhere_is_found_in_the_working_dir(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from capplan.trials.tasks.environment import EnvironmentLoadError, component_file

    # a Ray worker on another machine: the driver's task folder is not there, the staged working dir is
    (tmp_path / "envs").mkdir()
    (tmp_path / "envs" / "files.py").write_text(FILES)
    monkeypatch.chdir(tmp_path)
    assert component_file("envs/files.py", tmp_path / "no" / "such" / "folder") == tmp_path / "envs" / "files.py"
    # where the task's folder exists, only it is looked in
    (tmp_path / "pack").mkdir()
    with pytest.raises(EnvironmentLoadError, match="no file envs/files.py in the task file's folder"):
        component_file("envs/files.py", tmp_path / "pack")

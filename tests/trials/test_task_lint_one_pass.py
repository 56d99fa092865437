"""One pass: a task file with one error of every kind the task linter knows reports every one, located, in a
single run; schema errors in one block do not stop the checks of the blocks that validated."""

from __future__ import annotations

import shutil
from pathlib import Path

from capplan.trials.tasks.loading import lint_task
from tests.cli_runner import invoke

HERE = Path(__file__).resolve().parent / "one_pass_task"

#: (code, key path, line) of every finding in broken.yaml; the comment says what each one is
EXPECTED = [
    ("unknown-key", "max_turnz", 3),  # schema: a typo'd top-level key
    ("unknown-tool", "tool_choice.name", 4),  # tool_choice names an undeclared tool
    ("undeclared-method", "environment[0]", 6),  # Shop.audit is neither a tool nor ignored
    ("environment-args", "environment[0].args.currancy", 7),  # the constructor has no such parameter
    ("setup-method", "environment[0].setup.method", 8),  # no method _lod
    ("unknown-method", "environment[0].ignore_methods[0]", 9),  # ignoring a method that does not exist
    ("setup-args", "environment[1].setup.args.x", 11),  # the setup method takes no x
    ("environment-import", "environment[2].ref", 12),  # no class Missing in envs.py
    ("duplicate-tool-owner", "tools[0].name", 14),  # Shop and Ledger both have buy()
    ("missing-parameter", "tools[1].parameters", 15),  # refund(order_id) needs order_id
    ("unknown-parameter", "tools[1].parameters.properties.order", 15),  # ...and has no parameter order
    ("missing-parameter", "tools[2].parameters", 16),  # the second refund declares no parameters
    ("duplicate-tool", "tools[2].name", 16),  # refund declared twice
    ("tool-schema", "tools[3].parameters.type", 17),  # parameters must be an object schema
    ("wrong-type", "tools[4].output_max_chars", 18),  # schema: a string where an integer belongs
    ("tool-never-offered", "tools[5].available_from_turn", 19),  # the script has 2 turns
    ("unknown-tool", "grader.expected_actions[0].name", 23),  # an expected action of an undeclared tool
    ("unknown-parameter", "grader.expected_actions[1].arguments.qty", 24),  # the tool's schema has no qty
    ("unknown-state-key", "grader.expected_state.Shop.itemz", 25),  # Shop's state has items, not itemz
    ("unknown-state-key", "grader.expected_state.Ledgr", 25),  # no component Ledgr
    ("per-turn-count", "grader.per_turn[2]", 29),  # a third entry for a two-turn script
    ("grader-import", "grader.function.ref", 30),  # graders.py has no function nope
    ("grader-args", "grader.function.args.metadata", 30),  # an argument named like one capplan passes itself
]


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(HERE, tmp_path / "pack")
    return tmp_path / "pack" / "broken.yaml"


def test_every_kind_of_task_error_is_reported_in_one_run_located(tmp_path: Path) -> None:
    diags = lint_task(_copy(tmp_path))
    assert sorted((d.code, d.path, d.line) for d in diags) == sorted(EXPECTED)
    assert all(d.severity == "error" and d.col > 0 for d in diags)


def test_with_imports_the_same_findings_less_what_needs_every_component_constructed(tmp_path: Path) -> None:
    diags = lint_task(_copy(tmp_path), import_environments=True)
    found = sorted((d.code, d.path) for d in diags)
    # constructing Shop with its wrong argument raises: the error sits at its args; Shop's state keys are
    # only known from a constructed set, and the Missing component never constructs
    expected = sorted([(c, p) for c, p, _ in EXPECTED if c not in ("environment-args", "unknown-state-key")]
                      + [("environment-args", "environment[0].args"),
                         ("unknown-state-key", "grader.expected_state.Ledgr")])
    assert found == expected


def test_the_lint_command_prints_them_all_and_exits_2(tmp_path: Path) -> None:
    result = invoke("lint", str(_copy(tmp_path)))
    assert result.exit_code == 2
    assert f"{len(EXPECTED)} error(s)" in result.output

"""One exit map: command modules raise, and only ``capplan.cli.errors`` turns what they raise into an
exit status, every status a member of ``ExitCode``.

Read from the source with ``ast``, so a ``sys.exit`` on a path no other test reaches is caught too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from capplan.cli.errors import CommandExit
from capplan.core.errors import ExitCode

REPO = Path(__file__).resolve().parents[1]
CLI = REPO / "cli"
#: the console script (``run``: an exit without teardown) and the one map (``errors_reported``)
MAY_EXIT = {"__init__.py", "errors.py"}
#: what ends a process or a click context with a status of its own
EXIT_CALLS = {"exit", "_exit", "quit"}


def _cli_modules() -> list[Path]:
    return sorted(CLI.rglob("*.py"))


def _exits(tree: ast.AST) -> list[str]:
    """Each place in ``tree`` that ends the process (or the click context) itself: ``line: what``."""
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in EXIT_CALLS:
                found.append(f"{node.lineno}: {ast.unparse(func)}(…)")
        if isinstance(node, ast.Raise) and node.exc is not None:
            raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(raised, ast.Name) and raised.id == "SystemExit":
                found.append(f"{node.lineno}: raise SystemExit")
    return found


def test_the_cli_folder_is_what_the_scan_reads() -> None:
    names = {p.name for p in _cli_modules()}
    assert MAY_EXIT <= names and {"lint_cmd.py", "diff_cmd.py", "trial_cmd.py"} <= names, names


def test_the_scan_finds_every_way_to_exit() -> None:
    # the detector itself: each form it must refuse, and a raise it must let through
    source = ("import sys, os\nsys.exit(1)\nos._exit(2)\nexit(3)\nctx.exit(1)\nraise SystemExit(4)\n"
              "raise SystemExit\nraise CommandExit(ExitCode.FINDINGS)\n")
    assert sorted(int(line.split(":")[0]) for line in _exits(ast.parse(source))) == [2, 3, 4, 5, 6, 7]


@pytest.mark.parametrize("path", [p for p in _cli_modules() if p.name not in MAY_EXIT], ids=lambda p: p.name)
def test_no_command_module_exits_by_itself(path: Path) -> None:
    assert _exits(ast.parse(path.read_text(encoding="utf-8"))) == [], f"{path.name}: raise CommandExit instead"


def _command_exit_arguments() -> list[tuple[str, ast.expr]]:
    found: list[tuple[str, ast.expr]] = []
    for path in _cli_modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "CommandExit":
                assert len(node.args) == 1 and not node.keywords, f"{path.name}:{node.lineno}"
                found.append((f"{path.name}:{node.lineno}", node.args[0]))
    return found


def test_every_status_a_command_raises_is_a_member_of_the_enum() -> None:
    arguments = _command_exit_arguments()
    assert len(arguments) >= 10  # lint, diff, compile, schema, guard, gateway, conformance, trial run, replay
    for where, arg in arguments:
        if isinstance(arg, ast.Attribute):  # ExitCode.FINDINGS: a member by name
            assert isinstance(arg.value, ast.Name) and arg.value.id == "ExitCode", where
            assert arg.attr in ExitCode.__members__, where
        elif isinstance(arg, ast.Call):  # ExitCode(code): a value that is no member raises
            assert isinstance(arg.func, ast.Name) and arg.func.id == "ExitCode", where
        else:  # a variable: mypy --strict holds it to CommandExit's ExitCode parameter
            assert isinstance(arg, ast.Name), f"{where}: {ast.unparse(arg)}"


def test_no_module_defines_an_exit_code_of_its_own() -> None:
    # the codes lived in cli/common.py, compiler/diff/fail_on.py and cli/errors.py; now only in the enum
    for folder in ("cli", "compiler", "core", "executor", "trials", "conformance", "probes"):
        for path in sorted((REPO / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                targets = (node.targets if isinstance(node, ast.Assign)
                           else [node.target] if isinstance(node, ast.AnnAssign) else [])
                names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
                assert not [n for n in names if n.startswith("EXIT_")], f"{path.relative_to(REPO)}:{node.lineno}"


def test_command_exit_carries_a_member_and_only_a_member() -> None:
    assert CommandExit(ExitCode.CREDENTIAL_ROUTING).status is ExitCode.CREDENTIAL_ROUTING
    with pytest.raises(ValueError):
        ExitCode(4)  # what replay's ExitCode(code) does with a status the enum does not know
    assert [int(c) for c in ExitCode] == [0, 1, 2, 3, 130]

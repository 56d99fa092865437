"""The shared CLI helpers: the program they name is the installed ``capplan``, and no test finds it another way."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.cli_runner import BIN, CAPPLAN, invoke

TESTS = Path(__file__).resolve().parent
# how tests used to find the program: a `.venv` in the checkout, or the VIRTUAL_ENV of the shell
CHECKOUT_VENV = re.compile(r"""REPO\s*/\s*["']\.venv["']|environ\.get\(\s*["']VIRTUAL_ENV["']|environ\[\s*["']VIRTUAL_ENV["']\]""")


def test_the_program_sits_beside_the_running_interpreter_and_is_capplan() -> None:
    assert BIN == Path(sys.executable).parent
    done = subprocess.run([str(CAPPLAN), "--help"], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    in_process = invoke("--help")
    assert in_process.exit_code == 0
    # the same command group either way: every command the in-process help lists, the program lists
    commands = re.findall(r"^  (\w[\w-]*)  ", in_process.output, flags=re.M)
    assert commands and commands == re.findall(r"^  (\w[\w-]*)  ", done.stdout, flags=re.M)


def test_no_test_finds_the_program_through_a_checkout_venv_or_virtual_env() -> None:
    found = [f"{path.relative_to(TESTS)}:{number}: {line.strip()}"
             for path in sorted(TESTS.rglob("*.py")) if path != Path(__file__).resolve()
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if CHECKOUT_VENV.search(line)]
    assert not found, "use tests.cli_runner.BIN / CAPPLAN instead:\n" + "\n".join(found)

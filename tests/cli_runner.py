"""The ``capplan`` command as tests run it: in this process through click, or as the installed program.

Tests find the program from the interpreter running them, never from a ``.venv`` folder in the
checkout or from ``VIRTUAL_ENV``: the suite then passes from any environment capplan is installed in.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

from click.testing import CliRunner, Result

from capplan.cli import main

#: the folder of the interpreter running the tests, where pip put the ``capplan`` console script
BIN = Path(sys.executable).parent
#: the installed ``capplan`` program (the console script ``pyproject.toml`` declares)
CAPPLAN = BIN / "capplan"


def invoke(*args: str | Path, env: Mapping[str, str | None] | None = None, input: str | bytes | None = None,
           catch_exceptions: bool = True, terminal_width: int | None = None) -> Result:
    """``capplan ARGS`` in this process, in a fresh click runner; the result as click gives it.

    ``terminal_width`` is the width click wraps help text to.
    """
    return CliRunner().invoke(main, [str(arg) for arg in args], env=env, input=input,
                              catch_exceptions=catch_exceptions, terminal_width=terminal_width)


def invoke_checked(*args: str | Path, env: Mapping[str, str | None] | None = None,
                   expect: int | None = None) -> Result:
    """``capplan ARGS`` in this process; an escaped exception or a traceback in the output fails the test,
    and so does an exit code other than ``expect`` where one is given.

    A user never sees a traceback: every error ends as a message and an exit code (a ``SystemExit``).
    """
    result = invoke(*args, env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert "Traceback" not in result.output
    if expect is not None:
        assert result.exit_code == expect, result.output
    return result

"""Without bfcl-eval installed, ``trial import bfcl`` is a located error naming the pip command.

Runs whether or not the benchmark is installed: the import machinery is made to find no
``bfcl_eval`` package, as an environment without it does.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.cli_runner import invoke


def test_without_the_benchmark_the_error_names_the_pip_command(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "bfcl_eval" or m.startswith("bfcl_eval.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "bfcl_eval", None)  # what an environment without it gives an import
    result = invoke("trial", "import", "bfcl", "--category", "multi_turn_base",
                    "--out", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert "error[BFCL_NOT_INSTALLED]: the BFCL benchmark (bfcl-eval) is not installed" in result.output
    assert "pip install --no-deps bfcl-eval==2026.3.23 mpmath==1.3.0" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "out").exists()

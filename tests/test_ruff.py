"""The source keeps the ruff rules in pyproject.toml's ``[tool.ruff]``, checked on the real folders.

``capplan/`` holds only symlinks to the layer folders and ruff does not walk into a symlinked
folder, so ``ruff check capplan/`` sees one file. The folders are therefore named here: every
layer ``capplan/`` links to (read from the links themselves, so a new layer is checked without
editing this list), plus the tests, the benchmarks and the tools.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: what is not a layer but is still the project's Python
OTHER_FOLDERS = ("tests", "benchmarks", "tools")


def _layer_folders() -> list[str]:
    """The folders ``capplan/`` links to, by their real names at the top of the checkout."""
    links = sorted(p for p in (ROOT / "capplan").iterdir() if p.is_symlink())
    return [p.resolve().relative_to(ROOT).as_posix() for p in links]


def _ruff(*args: str) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec("ruff") is None:
        pytest.skip("ruff is not installed here; `pip install -e .[test]` installs the pinned one")
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def test_layer_folders_are_the_symlinked_ones() -> None:
    # the list below must not be empty or miss the core, or the check would pass on nothing
    layers = _layer_folders()
    assert {"core", "compiler", "executor", "trials", "cli"} <= set(layers), layers
    assert all((ROOT / name).is_dir() and not (ROOT / name).is_symlink() for name in layers)


def test_ruff_sees_every_real_folder() -> None:
    # guards against the symlink trap: ruff must list Python files from each folder it is given
    folders = [*_layer_folders(), *OTHER_FOLDERS]
    proc = _ruff("check", "--show-files", *folders)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    seen = {Path(line).resolve().relative_to(ROOT).parts[0] for line in proc.stdout.splitlines() if line.strip()}
    with_python = {f for f in folders if any((ROOT / f).rglob("*.py"))}
    assert with_python <= seen, f"ruff saw no file in {sorted(with_python - seen)}"


def test_ruff_check_is_clean() -> None:
    proc = _ruff("check", "--no-cache", "--output-format", "concise", *_layer_folders(), *OTHER_FOLDERS)
    assert proc.returncode == 0, proc.stdout + proc.stderr

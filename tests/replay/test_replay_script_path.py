"""harness.py run as a script puts the folder holding ``capplan`` on sys.path, in both layouts."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from capplan.evals.reasoning_replay.harness import package_root

from .conftest import REPO_ROOT

# Runs the script the way `python …/harness.py` does (its folder first on sys.path), then says
# which capplan it imported and what sys.path became.
DRIVER = """
import runpy, sys
script = sys.argv[1]
sys.path.insert(0, str(__import__("pathlib").Path(script).parent))
sys.argv = [script, "report", "--help"]
try:
    runpy.run_path(script, run_name="__main__")
except SystemExit as exc:
    assert not exc.code, exc.code
import capplan
print("CAPPLAN", capplan.__file__)
print("PATH", "\\n".join(sys.path))
"""


def _installed_layout(site: Path) -> Path:
    """A site-packages holding real folders, as the wheel installs them."""
    package = site / "capplan"
    package.mkdir(parents=True)
    shutil.copy(REPO_ROOT / "capplan" / "__init__.py", package / "__init__.py")
    for layer in ("core", "evals"):
        shutil.copytree(REPO_ROOT / layer, package / layer, ignore=shutil.ignore_patterns("__pycache__"))
    return package / "evals" / "reasoning_replay"


def test_the_root_is_the_folder_holding_capplan_in_both_layouts(tmp_path):
    here = _installed_layout(tmp_path / "site-packages")
    assert package_root(here) == tmp_path / "site-packages"
    checkout = tmp_path / "checkout"
    (checkout / "evals" / "reasoning_replay").mkdir(parents=True)
    (checkout / "capplan").mkdir()
    (checkout / "capplan" / "__init__.py").write_text("")
    (checkout / "capplan" / "evals").symlink_to("../evals")
    assert package_root((checkout / "evals" / "reasoning_replay").resolve()) == checkout.resolve()
    assert package_root(REPO_ROOT / "evals" / "reasoning_replay") == REPO_ROOT
    lone = tmp_path / "copied" / "reasoning_replay"
    lone.mkdir(parents=True)
    assert package_root(lone) is None


def test_the_installed_script_imports_its_own_capplan_and_exposes_no_layer_at_top_level(tmp_path):
    site = tmp_path / "site-packages"
    script = _installed_layout(site) / "harness.py"
    done = subprocess.run([sys.executable, "-c", DRIVER, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert f"CAPPLAN {site / 'capplan' / '__init__.py'}" in lines
    path = lines[lines.index(next(line for line in lines if line.startswith("PATH "))):]
    entries = [path[0].removeprefix("PATH "), *path[1:]]
    assert entries[0] == str(site)
    assert str(site / "capplan") not in entries and str(script.parent) not in entries

"""A ``fast_side`` test runs in the fast mode under ``--reference``; every other test runs in the run's mode.

In the plain run both hold trivially; ``tests/reference_run.py`` runs this file in its
``pytest --reference`` subprocess, where they say whether ``tests/conftest.py``'s fixture pins the
mode of a marked test (in this process and for the command lines it starts) and of no other.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from capplan.core import reference_mode

_CHILD_MODE = "from capplan.core.reference_mode import mode_name; print(mode_name())"


@pytest.mark.fast_side
def test_a_fast_side_test_runs_in_the_fast_mode_and_so_do_its_subprocesses() -> None:
    assert not reference_mode.reference_mode()
    child = subprocess.run([sys.executable, "-c", _CHILD_MODE], capture_output=True, text=True, timeout=120,
                           env=os.environ.copy())
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == reference_mode.mode_name() == "fast"


def test_any_other_test_runs_in_the_mode_the_run_asked_for(request: pytest.FixtureRequest) -> None:
    asked = bool(request.config.getoption("--reference")) or os.environ.get(reference_mode.VARIABLE) == "1"
    assert reference_mode.reference_mode() is asked

"""The byte-pinning tests in a ``pytest --reference`` subprocess, started early so it overlaps the rest of the suite.

The reference mode is read once per process, so the byte-pinning tests can only run in it in a
process of their own. That process needs nothing from the suite around it, so ``tests/conftest.py``
starts it as soon as collection shows its test is selected, and the test (in
``tests/test_reference_mode.py``) waits for it and asserts on what it printed: on a machine with
two cores it runs beside the other tests instead of after them. Its output goes to files (a pipe
nobody reads would fill and stall it), its temporary files to a folder of its own (so it never
shares pytest's numbered temporary folders with the suite), and it is stopped, with everything it
started, if the suite ends first.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from capplan.core.reference_mode import VARIABLE

REPO = Path(__file__).resolve().parents[1]
#: how long the subprocess may take, counted from its start
TIMEOUT_S = 1800

#: the tests that pin bytes, run again in the reference mode (issue 35's list)
BYTE_PINNING_TESTS = (
    "tests/compiler/test_golden_plans.py",
    "tests/executor/test_golden_wire.py",
    "tests/executor/test_direct_wire_identity.py",
    "tests/executor/test_direct_responses_wire_identity.py",
    "tests/trials/test_record_yaml.py",
    "tests/trials/bfcl/test_bfcl_agents.py",
)
#: and the check that a test marked ``fast_side`` runs in the fast mode there, and no other does
MODE_TESTS = ("tests/test_fast_side_marker.py",)


@dataclass
class ReferenceRun:
    """The running subprocess, the folder holding its output and temporary files."""

    process: subprocess.Popen[bytes]
    folder: Path

    def wait(self) -> tuple[int, str, str]:
        """Its exit status, stdout and stderr, once it has ended (bounded by ``TIMEOUT_S``)."""
        try:
            status = self.process.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.stop()
            raise
        return status, self._read("stdout.txt"), self._read("stderr.txt")

    def _read(self, name: str) -> str:
        return (self.folder / name).read_text(encoding="utf-8", errors="replace")

    def stop(self) -> None:
        """Ends the subprocess and whatever it started (its own process group), and removes its folder."""
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait(timeout=30)
        shutil.rmtree(self.folder, ignore_errors=True)


#: the test in ``tests/test_reference_mode.py`` that waits for the run
TEST_NAME = "test_the_byte_pinning_tests_pass_in_the_reference_mode"
#: where ``tests/conftest.py`` keeps the run it started, for the test to wait on
REFERENCE_RUN = pytest.StashKey[ReferenceRun]()


def start() -> ReferenceRun:
    """``pytest --reference -x`` over :data:`BYTE_PINNING_TESTS`, started and not waited for."""
    folder = Path(tempfile.mkdtemp(prefix="capplan-reference-run-"))
    env = {k: v for k, v in os.environ.items() if k != VARIABLE and not k.startswith("PYTEST_")}
    command = [sys.executable, "-m", "pytest", "--reference", "-x", "-p", "no:cacheprovider", "-rfE",
               "--basetemp", str(folder / "tmp"), *BYTE_PINNING_TESTS, *MODE_TESTS]
    with (folder / "stdout.txt").open("wb") as out, (folder / "stderr.txt").open("wb") as err:
        process = subprocess.Popen(command, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                   start_new_session=True)
    return ReferenceRun(process, folder)

"""``capplan conformance`` on the bundled catalogue, as a user runs it: wall time and CPU against 30 s.

The command runs as a child process (the installed console script next to this interpreter, or
``python -m capplan.cli`` when there is none), exactly as a user or a CI step starts it, with the
bundled catalogue compiled in memory. Printed: the wall time, the child's CPU time (user + sys,
from ``resource.getrusage(RUSAGE_CHILDREN)``), the exit code, the summary line, and the ratio of
the wall time to the 30 s budget the issue sets. ``--repeat N`` runs it N times and prints each
run and the median.

Time it with the bytecode cached, as an install has it: ``python -m compileall -q .`` first
(``PYTHONDONTWRITEBYTECODE=1`` is set on these machines; see /work/shared/NOTES.md).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUDGET_S = 30.0


def command(extra: list[str]) -> list[str]:
    script = Path(sys.executable).with_name("capplan")
    head = [str(script)] if script.exists() else [sys.executable, "-m", "capplan.cli"]
    return [*head, "conformance", *extra]


def once(extra: list[str]) -> tuple[float, float, int, str]:
    """(wall s, child CPU s, exit code, last line of stdout) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command(extra), cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = done.stdout.strip().splitlines() or done.stderr.strip().splitlines() or [""]
    return wall, cpu, done.returncode, lines[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="runs (the median is printed)")
    parser.add_argument("args", nargs="*", help="more arguments for capplan conformance (default: none)")
    options = parser.parse_args()
    walls = []
    for index in range(options.repeat):
        wall, cpu, code, summary = once(options.args)
        walls.append(wall)
        print(f"run {index + 1}: wall {wall:.2f} s, CPU {cpu:.2f} s (user+sys of the child), exit {code}: {summary}")
    median = statistics.median(walls)
    print(f"capplan conformance {' '.join(options.args) or '(bundled catalogue)'}: median wall {median:.2f} s "
          f"= {median / BUDGET_S:.2f} x the {BUDGET_S:.0f} s budget ({os.cpu_count()} CPUs)")
    return 0 if median <= BUDGET_S else 1


if __name__ == "__main__":
    sys.exit(main())

"""The test suite's wall time, this checkout against an earlier revision, measured in one run.

Each side runs the README's test command's pytest (``python -m pytest -q -p no:cacheprovider``,
with the same interpreter and installed dependencies) on a clean copy of its revision: the
earlier one as a temporary ``git worktree``, this one as it stands. The sides alternate
(``--rounds``), so a machine whose load drifts slows both alike, and the script prints each
side's wall time, its CPU time (which moves less when other work shares the machine) and the load
average before and after it, the after/before ratio per round and its median, and the ten slowest
test folders of the last round of each side (from pytest's own ``--durations`` report)::

    .venv/bin/python benchmarks/suite_time.py --before 8e34f1f                  # the whole suite, ~2 x 20 min
    .venv/bin/python benchmarks/suite_time.py --before 8e34f1f tests/trials      # one folder

A side that fails is reported with its exit status; its time is still printed, but no ratio is
drawn from a red run. Test paths are given as they are in this checkout; a path the earlier
revision lacks is left out of its side, and the script says so.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_DURATION = re.compile(r"^(\d+\.\d+)s (?:call|setup|teardown)\s+(\S+?)::")


def _load() -> str:
    """The one-minute load average (a machine shared with other work slows both sides unevenly)."""
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:
        return "?"


def _cpu_seconds() -> float:
    """User and system CPU seconds of the child processes waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(checkout: Path, paths: list[str], log: Path) -> tuple[float, float, int, str]:
    """One pytest run in ``checkout``: (wall seconds, CPU seconds, exit status, its output).

    The CPU seconds (pytest's and those of the processes it waited for) move less than the wall
    time when other work shares the machine; the wall time is what CI waits for.
    """
    env = dict(os.environ, PYTHONPATH=str(checkout), PYTHONDONTWRITEBYTECODE="1")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--durations=0", *paths]
    start, cpu = time.perf_counter(), _cpu_seconds()
    with log.open("w", encoding="utf-8") as out:
        status = subprocess.run(command, cwd=checkout, env=env, stdout=out, stderr=subprocess.STDOUT,
                                timeout=4 * 3600, check=False).returncode
    return (time.perf_counter() - start, _cpu_seconds() - cpu, status,
            log.read_text(encoding="utf-8", errors="replace"))


def _by_folder(output: str) -> list[tuple[str, float]]:
    """Seconds per test folder, from ``--durations=0`` (setup, call and teardown summed)."""
    seconds: dict[str, float] = defaultdict(float)
    for line in output.splitlines():
        match = _DURATION.match(line.strip())
        if match:
            seconds[str(Path(match.group(2)).parent)] += float(match.group(1))
    return sorted(seconds.items(), key=lambda item: -item[1])[:10]


def _tail(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="the earlier revision (a commit, tag or branch)")
    parser.add_argument("--rounds", type=int, default=1, help="alternating rounds of both sides (default 1)")
    parser.add_argument("paths", nargs="*", default=["tests"], help="test paths (default: tests)")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    with tempfile.TemporaryDirectory(prefix="capplan-suite-") as tmp:
        before = Path(tmp) / "before"
        subprocess.run(["git", "worktree", "add", "--detach", str(before), args.before], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
        try:
            before_paths = [path for path in args.paths if (before / path).exists()]
            for path in sorted(set(args.paths) - set(before_paths)):
                print(f"note: {path} does not exist at {args.before}; left out of its side")
            sides = {"before": (before, before_paths), "after": (ROOT, args.paths)}
            walls: dict[str, list[float]] = {"before": [], "after": []}
            cpus: dict[str, list[float]] = {"before": [], "after": []}
            last: dict[str, str] = {}
            green = True
            for round_ in range(args.rounds):
                for name in ("before", "after") if round_ % 2 == 0 else ("after", "before"):
                    checkout, paths = sides[name]
                    load = _load()
                    wall, cpu, status, output = _run(checkout, paths, Path(tmp) / f"{name}-{round_}.log")
                    walls[name].append(wall)
                    cpus[name].append(cpu)
                    last[name] = output
                    green = green and status == 0
                    print(f"round {round_ + 1} {name:6} {wall:8.1f} s wall {cpu:8.1f} s cpu  load {load}->{_load()}  "
                          f"exit {status}  {_tail(output)}", flush=True)
            for name in ("before", "after"):
                print(f"\nslowest folders, {name}:")
                for folder, seconds in _by_folder(last[name]):
                    print(f"  {seconds:8.1f} s  {folder}")
            if not green:
                print("\na side failed: no ratio is drawn from a red run")
                return 1
            ratios = [after / before_ for after, before_ in zip(walls["after"], walls["before"])]
            print(f"\nwall after/before: median {statistics.median(ratios):.2f}x over {len(ratios)} round(s) "
                  f"(before median {statistics.median(walls['before']):.0f} s, after {statistics.median(walls['after']):.0f} s)")
            print(f"cpu  after/before: before median {statistics.median(cpus['before']):.0f} s, "
                  f"after {statistics.median(cpus['after']):.0f} s")
            return 0
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(before)], cwd=ROOT, check=False)


if __name__ == "__main__":
    raise SystemExit(main())

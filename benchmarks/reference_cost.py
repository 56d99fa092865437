"""What the speed-only paths buy: a benchmark's usual workload run once per mode, and the ratios.

``--reference-cost`` on ``benchmarks/transport.py`` or ``benchmarks/trial_loop.py`` runs that
script again, with the same arguments less this one, in two child processes: the fast mode and
the reference mode (``CAPPLAN_REFERENCE=1``: every speed-only path off, see
``capplan.core.reference_mode``). Each child prints its own tables; then come the wall time and
the CPU time (user + sys of the child and every process it waited for: the loopback servers)
of each, and the reference/fast ratios: of the whole runs, and row by row, for each printed line
the two runs share with only its figures changed (a table row's figure, or every ``N ms`` of a
line: what each shortcut buys where it acts). The modes take turns over ``--reference-rounds``
rounds (1 by default), so a machine whose speed drifts slows both alike; the run figures are
medians, the row figures those of the last round.
"""

from __future__ import annotations

import os
import re
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

FLAG = "--reference-cost"
ROUNDS_FLAG = "--reference-rounds"
ROOT = Path(__file__).resolve().parents[1]


def requested(argv: Sequence[str]) -> bool:
    """Whether ``argv`` asks for the reference mode's cost."""
    return FLAG in argv


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(script: Path, argv: list[str], reference: bool) -> tuple[float, float, list[str]]:
    env = {**os.environ, "CAPPLAN_REFERENCE": "1" if reference else "0"}
    cpu, start = _children_cpu(), time.monotonic()
    done = subprocess.run([sys.executable, str(script), *argv], cwd=ROOT, env=env, check=False,
                          stdout=subprocess.PIPE, text=True)
    wall, used = time.monotonic() - start, _children_cpu() - cpu
    print(done.stdout, end="", flush=True)
    if done.returncode != 0:
        raise SystemExit(f"{script.name} ({'reference' if reference else 'fast'} mode) exited {done.returncode}")
    return wall, used, done.stdout.splitlines()


_FIGURE = re.compile(r"\d+\.\d+")
#: a table row: a label, then its figure (``capplan Client.generate, direct    1.052  (0.9-1.1)``)
_ROW = re.compile(r"^\s+(?P<label>\S.*?\S)\s{2,}(?P<figure>\d+\.\d+)\s+\(")
#: a figure in milliseconds anywhere in a line (``300 messages 2.989 ms``)
_MS = re.compile(r"(\d+\.\d+) ms\b")


def _shape(line: str) -> str:
    """The line with its figures and the padding around them masked (a wider figure shifts a column)."""
    return " ".join(_FIGURE.sub("#", line).split())


def row_ratios(fast: list[str], reference: list[str]) -> list[str]:
    """``label: ratio, ...`` for each line the two outputs share up to their figures."""
    out = []
    for one, other in zip(fast, reference):
        if _shape(one) != _shape(other):
            continue
        row, row_ref = _ROW.match(one), _ROW.match(other)
        if row and row_ref:
            pairs = [(float(row["figure"]), float(row_ref["figure"]))]
            label = row["label"]
        else:
            pairs = list(zip(map(float, _MS.findall(one)), map(float, _MS.findall(other))))
            label = one.split(":")[0].strip()
        ratios = [f"{r / f:.2f}x" for f, r in pairs if f > 0]
        if ratios:
            out.append(f"{label}: {', '.join(ratios)}")
    return out


def report(script: str, argv: Sequence[str]) -> None:
    """Run ``script`` with ``argv`` (less the flags of this module) in each mode and print the ratios."""
    rest = list(argv)
    rounds = 1
    if ROUNDS_FLAG in rest:
        at = rest.index(ROUNDS_FLAG)
        rounds = int(rest[at + 1])
        del rest[at:at + 2]
    rest = [a for a in rest if a != FLAG]
    path = Path(script).resolve()
    figures: dict[bool, list[tuple[float, float, list[str]]]] = {False: [], True: []}
    for round_no in range(rounds):
        for reference in (False, True):
            print(f"--- {path.name} {' '.join(rest)}: {'reference' if reference else 'fast'} mode, round {round_no + 1}",
                  flush=True)
            figures[reference].append(_run(path, rest, reference))
    fast_wall = statistics.median(w for w, _, _ in figures[False])
    fast_cpu = statistics.median(c for _, c, _ in figures[False])
    ref_wall = statistics.median(w for w, _, _ in figures[True])
    ref_cpu = statistics.median(c for _, c, _ in figures[True])
    print(f"reference mode's cost ({path.name} {' '.join(rest)}; median of {rounds} round(s), "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs):")
    print(f"  fast:      wall {fast_wall:8.2f} s   CPU {fast_cpu:8.2f} s")
    print(f"  reference: wall {ref_wall:8.2f} s   CPU {ref_cpu:8.2f} s")
    print(f"  reference / fast: wall {ref_wall / fast_wall:.2f}x, CPU {ref_cpu / fast_cpu:.2f}x")
    print("  row by row, reference / fast:")
    for line in row_ratios(figures[False][-1][2], figures[True][-1][2]):
        print(f"    {line}")

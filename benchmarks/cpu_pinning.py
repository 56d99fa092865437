"""Pinning a benchmark, and the processes it starts, to one CPU."""

from __future__ import annotations

import os


def pin_to_one_cpu(cpu: int | None) -> int | None:
    """Run this process, and every process it starts (they inherit it), on one CPU; None when not pinned.

    On a shared machine one core can be slower than another for seconds at a time; with every
    side of a ratio on the same core, alternating, a slow spell slows both sides alike.
    ``cpu`` None picks the first CPU this process may use, -1 pins nothing.
    """
    if cpu == -1 or not hasattr(os, "sched_setaffinity"):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    chosen = allowed[0] if cpu is None else cpu
    if chosen not in allowed:
        raise SystemExit(f"--cpu {chosen}: this process may run on CPUs {allowed} only")
    os.sched_setaffinity(0, {chosen})
    return chosen


CPU_HELP = "CPU every measured process runs on (default: the first this process may use; -1: no pinning)"

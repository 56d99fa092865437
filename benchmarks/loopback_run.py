"""A benchmark run against a loopback server in its own process: its wall time, and the CPU of the run and of the server.

Shared by ``benchmarks/trial_loop.py`` (capplan's runs) and ``benchmarks/bare_loop.py`` (the bare
Python loop's), so that both are timed and their CPU counted the same way.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the loopback chat-completions server answering as the benchmarks' scripted agent (``python -m`` it)
CHAT_SERVER = "tests.fake_provider"


@dataclass(frozen=True)
class Measured:
    """One throughput run: wall seconds, turns run, the runner's CPU seconds and the loopback server's."""

    wall: float
    turns: int
    cpu: float
    #: the server process's own CPU, start-up included: on a machine with few cores it competes with the runner
    server_cpu: float
    #: the part of ``cpu`` the command's own process spent (every thread; all of it with one worker)
    command_cpu: float = 0.0


def against_server(server_module: str, latency_s: float,
                   prepare: Callable[[str], Callable[[], object]]) -> tuple[float, float, float, float]:
    """(wall, CPU, the command's own CPU, the server's CPU) of the run ``prepare(base_url)`` returns, against a
    loopback server answering after ``latency_s``. CPU: this process's, every thread, plus that of the child
    processes the run started and waited for (their start-up included); the server's, read once it has exited."""
    server = subprocess.Popen([sys.executable, "-m", server_module, str(latency_s)], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        run = prepare(server.stdout.readline().strip())
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        server_before = cpu_of(server.pid)  # its start-up and the warm-up's turns, not the run's
        started, cpu = time.perf_counter(), time.process_time()
        run()
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        command_cpu = cpu
        # the run's child processes have exited and been waited for when it returns; the server has not
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu += (after.ru_utime - children.ru_utime) + (after.ru_stime - children.ru_stime)
    finally:
        server.kill()
        server.wait(timeout=10)
    # the server is the only child waited for since ``after``: what the children's clock gained is its CPU
    done = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_cpu = (done.ru_utime - after.ru_utime) + (done.ru_stime - after.ru_stime) - server_before
    return wall, cpu, command_cpu, server_cpu


def cpu_of(pid: int) -> float:
    """The CPU seconds process ``pid`` has used so far, from ``/proc`` (Linux; where there is none, 0: the
    server's figure then holds its start-up too, about 0.1 s)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime and stime, in clock ticks

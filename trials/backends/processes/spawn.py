"""How a worker process comes to be: a fork of the driver where that is safe, else a fresh interpreter.

A fresh ``python -m capplan.trials.backends.processes.worker`` imports the trial runner and everything
under it again: about a second of CPU per worker, which a short run at a fast provider pays in wall
time. A fork of the driver has all of it already. Forking is safe only while the driver runs one
thread (a lock another thread held at the fork would stay held in the child forever), so the
backend starts its workers in ``prepare``, before the run starts its writer, its progress display
or any reader: there the driver forks them all, then starts reading them. A worker restarted
mid-run (threads are running then), a driver that already runs threads (an embedding program, a
test with a server thread), a system without ``fork`` and the reference mode all start a fresh
interpreter. The two are the same worker: :func:`capplan.trials.backends.processes.worker.serve`.

The forked child closes the driver's ends of every worker socket made so far, so each worker sees
end of file when the driver goes, and never returns into the driver's code.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Protocol

import capplan
from capplan.core.reference_mode import reference_mode
from capplan.trials.backends.processes.worker import forked
from capplan.trials.tasks.task_code import stop_idle_workers

#: how often a forked worker's exit is polled for while waiting for it
_POLL_S = 0.01


class WorkerProcess(Protocol):
    """What the pool needs of a worker's process, forked or started (``subprocess.Popen`` has it)."""

    pid: int

    def wait(self, timeout: float | None = None) -> int: ...

    def kill(self) -> None: ...


class Forked:
    """A forked worker: waited for and killed by pid, as ``Popen`` does for a started one."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
                break
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout or 0.0)
            time.sleep(_POLL_S)
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:  # once waited for, the pid may be someone else's
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def may_fork() -> bool:
    """Whether a worker may be a fork of this process now (see the module docstring)."""
    return hasattr(os, "fork") and not reference_mode() and threading.active_count() == 1


def start_workers(count: int, mode: str, completion_factory: str | None) -> list[tuple[WorkerProcess, socket.socket]]:
    """``count`` workers, each with the driver's end of its socket: forked if :func:`may_fork`, else started."""
    stop_idle_workers()  # the task-code workers the driver's checks left idle: it may fork only with one thread
    if not may_fork():
        return [start_worker(mode, completion_factory) for _ in range(count)]
    sys.stdout.flush()  # buffered output would be written again by every child
    sys.stderr.flush()
    started: list[tuple[WorkerProcess, socket.socket]] = []
    try:
        for _ in range(count):
            ours, theirs = socket.socketpair()
            pid = os.fork()
            if pid == 0:  # the worker: it never leaves this branch
                ours.close()
                for _, sibling in started:
                    sibling.close()
                forked(theirs.detach(), mode, completion_factory)
            theirs.close()
            started.append((Forked(pid), ours))
    except BaseException:
        for process, ours in started:
            process.kill()
            ours.close()
        raise
    return started


def start_worker(mode: str, completion_factory: str | None) -> tuple[WorkerProcess, socket.socket]:
    """One worker in a fresh interpreter (``python -m capplan.trials.backends.processes.worker``)."""
    ours, theirs = socket.socketpair()
    argv = [sys.executable, "-m", "capplan.trials.backends.processes.worker", str(theirs.fileno()), mode]
    if completion_factory is not None:
        argv.append(completion_factory)
    # the child imports capplan from where this process did, whatever its working directory
    root = str(Path(capplan.__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    try:
        # its own session: a Ctrl-C at the terminal reaches only the driver, which stops the run
        popen = subprocess.Popen(argv, pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, env=env,
                                 start_new_session=True)
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()
    return popen, ours

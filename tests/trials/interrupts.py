"""Ctrl-C sent to a ``capplan`` child process one at a time, each once the child has acted on it.

A sleep between two Ctrl-C, or between a Ctrl-C and what the test does next, is a bet on the
machine's load: two SIGINTs that arrive before Python runs the handler reach it as one (the
handler runs once per check however often the signal came), and a run told to stop has not
stopped taking new trials until its handler has run. So the child starts with :data:`PRELUDE`,
which wraps every SIGINT handler the child installs (and the default one) so that it writes one
byte to the pipe :func:`traced_child` hands it once the handler has run; :func:`interrupt` sends
one SIGINT and waits, bounded, for that byte (or for the child's exit).
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

#: the bound on waiting for the child to act on a Ctrl-C: generous, a passing test never waits it out
HANDLED_TIMEOUT_S = 120.0
_FD_VARIABLE = "CAPPLAN_TEST_SIGINT_FD"

#: run first in the child: every SIGINT handler it installs writes one byte to the fd once it has run
PRELUDE = f"""
import os as _os, signal as _signal

def _trace_sigint() -> None:
    fd = int(_os.environ.pop({_FD_VARIABLE!r}))
    _os.set_inheritable(fd, False)  # the child's own children must not keep the pipe open past its exit
    install = _signal.signal

    def traced(handler):
        if not callable(handler) or getattr(handler, "_traced", False):
            return handler

        def run(signum, frame):
            try:
                return handler(signum, frame)
            finally:
                _os.write(fd, b"h")

        run._traced = True
        return run

    def signal_traced(signum, handler):
        return install(signum, traced(handler) if signum == _signal.SIGINT else handler)

    _signal.signal = signal_traced
    install(_signal.SIGINT, traced(_signal.getsignal(_signal.SIGINT)))

_trace_sigint()
"""


@contextmanager
def traced_child(argv: Sequence[str], entry: str, env: Mapping[str, str],
                 **popen: Any) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """``python -c PRELUDE+entry argv...`` started, with the read end of its handled-SIGINT pipe.

    The child is killed (and reaped) when the block ends, whatever happened in it.
    """
    read_fd, write_fd = os.pipe()
    try:
        proc = subprocess.Popen([sys.executable, "-c", PRELUDE + entry, *argv],
                                env={**env, _FD_VARIABLE: str(write_fd)}, pass_fds=(write_fd,), **popen)
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)  # the child holds it now: its exit is an end-of-file here
    try:
        yield proc, read_fd
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        os.close(read_fd)


def interrupt(proc: subprocess.Popen[bytes], handled: int) -> None:
    """Send ``proc`` one Ctrl-C and return once its handler has run it, or once ``proc`` has exited."""
    proc.send_signal(signal.SIGINT)
    ready, _, _ = select.select([handled], [], [], HANDLED_TIMEOUT_S)
    assert ready, f"the child did not act on Ctrl-C within {HANDLED_TIMEOUT_S:.0f} s"
    if os.read(handled, 1) == b"":  # it exited (and closed its end) without running a handler
        proc.wait(timeout=HANDLED_TIMEOUT_S)

"""A connected socket whose every send and receive waits at most until the attempt's deadline.

An answer is read in many receives (the answer reader's :meth:`DeadlineSocket.recv`, or
``http.client``'s through ``makefile`` for a request it writes itself); a timeout set once applies to
each receive alone, so a server that sends a byte just inside it keeps the attempt going for ever. Here every receive and send waits at most the
time left before the attempt's deadline, so the per-attempt timeout bounds the attempt as a whole.

Seam *socket deadline* (``benchmarks/trial_loop.py``): Python's own socket timeout costs three
system calls per receive or send, each of which lets go of the GIL the running trials share (the
timeout set again, which switches the descriptor's blocking mode; a ``poll``; the receive itself).
Under ``--concurrency 32`` a thread that lets go of the GIL mostly waits to get it back, a context
switch each time. On Linux a plain TCP connection is instead left in blocking mode and the kernel
bounds each operation: ``SO_RCVTIMEO`` or ``SO_SNDTIMEO`` set to the time left (``setsockopt``
keeps the GIL), then one receive or send. A kernel timeout is raised as Python's own is, a
:class:`TimeoutError`. A TLS connection keeps Python's timeout: OpenSSL's read on a blocking socket
would retry a kernel timeout for ever. So do other platforms and the reference mode.

One difference remains: a signal delivered to the waiting thread restarts its receive with the
time that was left when it began (Python retries an interrupted call). Only a signal handler's
exception ends it there, as it does with Python's timeout.
"""

from __future__ import annotations

import io
import socket
import struct
import sys
from typing import Any

from capplan.core.reference_mode import reference_mode
from capplan.executor.direct.bounded_body import remaining

#: ``struct timeval`` as Linux lays it out on a 64-bit build (two longs): the kernel timeouts' value.
_TIMEVAL = struct.Struct("@ll")


def kernel_timeouts(sock: Any) -> bool:
    """Whether ``sock``'s operations are bounded by the kernel (see the module's docstring)."""
    # exactly socket.socket: an ssl.SSLSocket (a subclass) keeps Python's timeout
    return (sys.platform.startswith("linux") and _TIMEVAL.size == 16 and type(sock) is socket.socket
            and sock.family in (socket.AF_INET, socket.AF_INET6) and not reference_mode())


def timeval(seconds: float) -> bytes:
    """``seconds`` (> 0) as a ``struct timeval``, never all zeros: a zero timeout is no timeout to the kernel."""
    whole = int(seconds)
    micros = int((seconds - whole) * 1_000_000)
    if whole == 0 and micros == 0:
        micros = 1
    return _TIMEVAL.pack(whole, micros)


class DeadlineSocket:
    """``sock`` (connected) with :attr:`deadline`, a ``time.monotonic`` value the pool sets for each attempt."""

    def __init__(self, sock: Any, deadline: float) -> None:
        self._sock = sock
        self.deadline = deadline
        self.kernel = kernel_timeouts(sock)
        if self.kernel:
            sock.settimeout(None)  # blocking: Python neither polls first nor sets the mode again
        # as socket.makefile's own count: a connection closed while its answer is still read (a server
        # that says `Connection: close`) keeps the socket open until that answer's reader is closed
        self._readers = 0
        self._closing = False

    def sendall(self, data: Any) -> None:
        if not self.kernel:
            self._sock.settimeout(remaining(self.deadline))
            self._sock.sendall(data)
            return
        view = memoryview(data).cast("B")
        while view:  # each send bounded by the time left then, so that the sends together end by the deadline
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, timeval(remaining(self.deadline)))
            try:
                sent = self._sock.send(view)
            except BlockingIOError:  # EAGAIN: the kernel's timeout passed with nothing sent
                raise TimeoutError("timed out") from None
            view = view[sent:]

    def recv_into(self, buffer: Any) -> int:
        # the buffer's size, as socket.SocketIO asks (an SSL socket reads nothing when told 0 bytes)
        return int(self._received(self._sock.recv_into, buffer))

    def recv(self, size: int) -> bytes:
        """At most ``size`` bytes once some arrived (``b""``: the other end closed), by the deadline."""
        return bytes(self._received(self._sock.recv, size))

    def _received(self, receive: Any, argument: Any) -> Any:
        """``receive(argument)``, bounded by the time left before the deadline (raises once none is)."""
        if self.kernel:
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, timeval(remaining(self.deadline)))
        else:
            self._sock.settimeout(remaining(self.deadline))
        try:
            return receive(argument)
        except BlockingIOError:  # EAGAIN: the kernel's timeout passed with nothing received
            raise TimeoutError("timed out") from None

    def makefile(self, mode: str = "rb", *args: Any, **kwargs: Any) -> io.BufferedReader:
        self._readers += 1
        return io.BufferedReader(_DeadlineReader(self))

    def reader_closed(self) -> None:
        self._readers -= 1
        if self._closing and self._readers == 0:
            self._sock.close()

    def close(self) -> None:
        self._closing = True
        if self._readers == 0:
            self._sock.close()

    def __getattr__(self, name: str) -> Any:  # fileno, settimeout, ...: the socket's own
        return getattr(self._sock, name)


class _DeadlineReader(io.RawIOBase):
    """The raw stream ``http.client`` reads an answer from, through :class:`DeadlineSocket`."""

    def __init__(self, sock: DeadlineSocket) -> None:
        super().__init__()
        self._sock = sock

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        return self._sock.recv_into(buffer)

    def close(self) -> None:
        if not self.closed:
            self._sock.reader_closed()
        super().close()

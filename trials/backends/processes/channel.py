"""One end of the socket a worker process and the run's driver talk over: pickled messages.

A socket pair rather than ``multiprocessing``: the worker is a plain ``python -m`` child (no fork
of a process full of threads, no spawn of the parent's ``__main__``), and one descriptor carries
both directions. Both ends are this run's own code, so pickle carries only what they send
(specs, records, plain tuples); a provider's bytes reach it as strings inside records.

Each message is its length (4 bytes, big-endian) and its pickle, sent in one ``sendall``. The
receiving end reads what has arrived into a buffer and takes every whole message from it: one
system call for several messages that arrived together, where reading a length and then its
message took two for each (seam *channel framing*; the reference mode reads each message with two).
"""

from __future__ import annotations

import pickle
import socket
import threading
from typing import Any

from capplan.core.reference_mode import reference_mode

#: what one receive asks for at least, and at most (a long message's rest arrives in pieces of this size)
_READ = 1 << 16
_READ_MOST = 1 << 20
_HEADER = 4


class Channel:
    """Messages over one connected socket; ``send`` from any thread, ``recv`` from one."""

    def __init__(self, sock: socket.socket) -> None:
        self._socket = sock
        self._send_lock = threading.Lock()
        self._buffer = bytearray()

    @classmethod
    def from_fd(cls, fd: int) -> Channel:
        """The end a worker process was handed as descriptor ``fd``."""
        return cls(socket.socket(fileno=fd))

    def send(self, message: tuple[Any, ...]) -> None:
        """Send one message whole (raises ``OSError`` once the other end is gone)."""
        frame = _frame(message)
        with self._send_lock:
            self._socket.sendall(frame)

    def send_many(self, messages: list[tuple[Any, ...]]) -> None:
        """Send ``messages`` whole, in order, in one ``sendall`` (the reference mode: one each)."""
        if reference_mode():
            for message in messages:
                self.send(message)
            return
        frames = b"".join(_frame(message) for message in messages)
        with self._send_lock:
            self._socket.sendall(frames)

    def has_message(self) -> bool:
        """Whether a whole message is already received, so that :meth:`recv` returns it without waiting."""
        buffer = self._buffer
        return len(buffer) >= _HEADER and len(buffer) >= _HEADER + int.from_bytes(buffer[:_HEADER], "big")

    def recv(self) -> tuple[Any, ...]:
        """The next message; raises ``EOFError`` once the other end closed or died."""
        buffer = self._buffer
        while True:
            if len(buffer) >= _HEADER:
                end = _HEADER + int.from_bytes(buffer[:_HEADER], "big")
                if len(buffer) >= end:
                    with memoryview(buffer)[_HEADER:end] as body:  # released before the buffer shrinks
                        message: tuple[Any, ...] = pickle.loads(body)
                    del buffer[:end]
                    return message
                wanted = end - len(buffer)
            else:
                wanted = _HEADER - len(buffer)
            # the reference mode reads exactly what the message still lacks: a length, then its message
            chunk = self._socket.recv(wanted if reference_mode() else min(max(wanted, _READ), _READ_MOST))
            if not chunk:
                raise EOFError("the other end closed the channel")
            buffer += chunk

    def finish(self) -> None:
        """Tell the other end nothing more comes (it reads end of file); its messages can still be read."""
        try:
            self._socket.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # already gone

    def close(self) -> None:
        self._socket.close()


def _frame(message: tuple[Any, ...]) -> bytes:
    """``message`` as it goes over the socket: its pickle's length (4 bytes, big-endian), then the pickle."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return len(data).to_bytes(_HEADER, "big") + data

"""One end of the socket a worker process and the run's driver talk over: pickled messages.

A socket pair rather than ``multiprocessing``: the worker is a plain ``python -m`` child (no fork
of a process full of threads, no spawn of the parent's ``__main__``), and one descriptor carries
both directions. Both ends are this run's own code, so pickle carries only what they send
(specs, records, plain tuples); a provider's bytes reach it as strings inside records.
"""

from __future__ import annotations

import os
import pickle
import socket
import threading
from multiprocessing.connection import Connection
from typing import Any


class Channel:
    """Messages over one connected socket; ``send`` from any thread, ``recv`` from one."""

    def __init__(self, sock: socket.socket) -> None:
        self._socket = sock
        # its own descriptor: the socket object stays to shut down our sending side (finish)
        self._connection = Connection(os.dup(sock.fileno()))
        self._send_lock = threading.Lock()

    @classmethod
    def from_fd(cls, fd: int) -> Channel:
        """The end a worker process was handed as descriptor ``fd``."""
        return cls(socket.socket(fileno=fd))

    def send(self, message: tuple[Any, ...]) -> None:
        """Send one message whole (raises ``OSError`` once the other end is gone)."""
        # plain pickle, not Connection.send's ForkingPickler (a new pickler and its reducer table per message,
        # for sockets and descriptors neither end ever sends): a send of every worker goes through here
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        with self._send_lock:
            self._connection.send_bytes(data)

    def recv(self) -> tuple[Any, ...]:
        """The next message; raises ``EOFError`` once the other end closed or died."""
        message: tuple[Any, ...] = pickle.loads(self._connection.recv_bytes())
        return message

    def finish(self) -> None:
        """Tell the other end nothing more comes (it reads end of file); its messages can still be read."""
        try:
            self._socket.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # already gone

    def close(self) -> None:
        self._connection.close()
        self._socket.close()

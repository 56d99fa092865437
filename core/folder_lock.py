"""One writer per folder: an OS lock on a file inside it, held for the writer's life.

Two processes appending to one run folder at once each pay the provider for the same trials and
each count only their own (two ``trial run --out same`` both exited 0 with 40 lines for 20
trials). The writer takes ``fcntl.flock`` on ``FOLDER/writer.lock``, opened without following a
link, and keeps the descriptor open until it ends; the kernel releases the lock when the process
exits however it exits (SIGKILL included), so a stale lock never needs cleaning up. After locking,
the writer's pid is written into the file, so the next writer's refusal can name the holder.
Readers (reports, views) take no lock.

Used by the trial runner's run folder and the reasoning-replay harness's ``--out`` folder, so it
lives in core (standard library only).
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path

from capplan.core.confined_write import ConfinedPathError

#: the lock file's name inside the folder it guards
LOCK_FILE = "writer.lock"
#: a pid is a few digits; anything longer in the file was not written by a writer
_PID_BYTES = 32
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


class FolderBusy(ConfinedPathError):
    """Another process holds the folder's writer lock; ``pid`` is the holder's, when it could be read."""

    def __init__(self, path: Path, pid: int | None) -> None:
        holder = f"pid {pid}" if pid is not None else "a pid that could not be read"
        stop = f"stop it (kill {pid})" if pid is not None else "stop it"
        super().__init__(path, "folder-busy", f"another capplan process ({holder}) is writing this folder; a folder "
                         "has one writer at a time",
                         f"wait for that run to end, or {stop}: its lock is released when it exits, and the same "
                         "command then resumes the folder (or choose another --out)")
        self.pid = pid


class FolderLock:
    """A held writer lock; :meth:`release` (or the process's end) lets the next writer in."""

    def __init__(self, fd: int, path: Path) -> None:
        self._fd: int | None = fd
        self.path = path

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __del__(self) -> None:
        try:  # a lock dropped without release() (the process's end would release it too; this is sooner)
            self.release()
        except Exception:  # noqa: BLE001 - at interpreter shutdown os or fcntl may be gone
            pass

    def release(self) -> None:
        """Unlock and close (the file stays: removing it would let a waiting writer lock a file no one sees)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def hold(folder: Path) -> FolderLock:
    """Take ``folder``'s writer lock without waiting; :class:`FolderBusy` when another process holds it.

    ``folder`` must exist (it is taken as given, as ``--out`` is); the lock file in it is created
    when missing, and a link, folder or special file under its name is a :class:`ConfinedPathError`.
    """
    path = folder / LOCK_FILE
    try:
        dir_fd = os.open(folder, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
    except OSError as exc:
        raise ConfinedPathError(folder, "out-unwritable", f"cannot open the folder: {exc.strerror or exc}") from None
    try:
        fd = _open_lock_file(dir_fd, path)
    finally:
        os.close(dir_fd)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        pid = _read_pid(fd)
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise FolderBusy(path, pid) from None
        raise ConfinedPathError(path, "out-unwritable", f"cannot lock it: {exc.strerror or exc}") from None
    try:  # the holder's pid, for the message of the writer refused next
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    except OSError as exc:
        os.close(fd)
        raise ConfinedPathError(path, "out-unwritable", f"cannot write it: {exc.strerror or exc}") from None
    return FolderLock(fd, path)


def _open_lock_file(dir_fd: int, path: Path) -> int:
    hint = "capplan does not follow links inside a run folder; remove it (or choose a new --out)"
    try:
        fd = os.open(LOCK_FILE, os.O_RDWR | os.O_CREAT | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC, 0o644, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ConfinedPathError(path, "run-folder-symlink", "is a symbolic link", hint) from None
        if exc.errno == errno.EISDIR:
            raise ConfinedPathError(path, "run-folder-not-a-file", "should be a file but is a folder",
                                    "move the folder away (or choose a new --out)") from None
        raise ConfinedPathError(path, "out-unwritable", f"cannot open it: {exc.strerror or exc}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ConfinedPathError(path, "special-file", "is not a regular file", "move it away (or choose a new --out)")
    return fd


def _read_pid(fd: int) -> int | None:
    """The pid the holder wrote, or None (being written right now, or not a pid)."""
    try:
        text = os.pread(fd, _PID_BYTES, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() and len(text) <= 10 else None

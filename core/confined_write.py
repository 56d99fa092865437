"""Reading and writing inside one folder, and nowhere else.

The generic part of confinement, shared by the trial runner (:mod:`capplan.trials.run_folder.confined`) and
the reasoning-replay harness (``evals/``, which may use only core and the standard library).
A run folder's names come from files a pull request can change (a plan's model key, a task
id), and the folder itself may hold links someone planted (``runs.jsonl`` pointing at a file
elsewhere, a trial folder pointing at another folder). So every path capplan writes is built
by :func:`confined_path` (each part checked against :mod:`capplan.core.safe_names`, the result
resolved and checked to be inside the root), and then opened one component at a time from a
descriptor of the root with ``O_NOFOLLOW``: a link anywhere below the root is refused, never
followed, even if it appears between the check and the write. Atomic writes create their
temporary file in the same real folder and rename it there, relative to that folder's
descriptor. Only the root itself is taken as given (``--out`` may well be a link the user made).
A writer that writes into the same folders again and again (a run, a trial folder per trial) keeps
their descriptors in :class:`OpenFolders` instead of walking from the root each time.

Every refusal is a :class:`ConfinedPathError`, which renders as a located diagnostic.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from capplan.core.ids import uuid4_hex
from capplan.core.reference_mode import reference_mode, speed_memo
from capplan.core.diagnostics import Diagnostic
from capplan.core.safe_names import UnsafeName, name_problem

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO planted under a file's name must not block the open
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_READ_CHUNK = 1 << 16


class ConfinedPathError(Exception):
    """A path that cannot be used inside its folder: unsafe name, escape, link, wrong kind of file."""

    def __init__(self, path: Path | str, code: str, message: str, hint: str | None = None) -> None:
        self.path, self.code, self.message, self.hint = str(path), code, message, hint
        super().__init__(f"{self.path}: error[{code}]: {message}")

    def diagnostic(self) -> Diagnostic:
        return Diagnostic(self.path, 1, 1, self.code, self.message, hint=self.hint)


_LINK_HINT = "capplan does not follow links inside a run folder; remove the link (or choose a new --out)"


@speed_memo(maxsize=4096)  # a run joins the same few names on every write
def _problem(name: str) -> str | None:
    return name_problem(name)


def check_segment(name: object, what: str) -> str:
    """:func:`capplan.core.safe_names.check_name`, remembered per name: a run joins the same few names
    (its model keys and task ids) once per trial, and reads them back once per line."""
    problem = _problem(name) if isinstance(name, str) else name_problem(name)
    if problem is not None:
        raise UnsafeName(f"{what} {problem}")
    assert isinstance(name, str)
    return name


def confined_path(root: Path, *parts: str) -> Path:
    """``root/parts…`` resolved, after checking each part is one safe name and the result stays inside.

    Raises :class:`ConfinedPathError` (code ``unsafe-name`` or ``path-escapes``); the message
    says what is wrong with a part, never quotes it.
    """
    base = _resolved(os.path.abspath(root))
    _check_parts(root, parts)
    joined = base.joinpath(*parts)
    resolved = joined.resolve()
    if not resolved.is_relative_to(base):
        for depth in range(1, len(parts) + 1):  # name the link that leads out, where it sits
            if os.path.islink(base.joinpath(*parts[:depth])):
                raise ConfinedPathError(root.joinpath(*parts[:depth]), "run-folder-symlink",
                                        "is a symbolic link that leads out of the run folder", _LINK_HINT)
        raise ConfinedPathError(root.joinpath(*parts), "path-escapes", "resolves to a place outside the run folder",
                                _LINK_HINT)
    return joined


def _check_parts(root: Path, parts: Sequence[str]) -> None:
    """Each part one safe name: :func:`confined_path`'s check, made alone for the files of a folder it resolved."""
    for i, part in enumerate(parts):
        try:
            check_segment(part, f"path segment {i + 1}")
        except UnsafeName as exc:
            raise ConfinedPathError(root, "unsafe-name", f"cannot build a path inside this folder: {exc}",
                                    "names that become folders must be short slugs (see `capplan lint`)") from None


@speed_memo(maxsize=64)
def _resolved(root: str) -> Path:
    """The real path of the (absolute) root: a run asks for it on every write; the root is the user's own path."""
    return Path(root).resolve()


@contextmanager
def _root_fd(root: Path) -> Iterator[int]:
    try:
        fd = os.open(root, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
    except OSError as exc:
        raise ConfinedPathError(root, "out-unwritable", f"cannot open the folder: {exc.strerror or exc}") from None
    try:
        yield fd
    finally:
        os.close(fd)


def _classify(dir_fd: int, name: str, shown: Path) -> ConfinedPathError | None:
    """Why ``name`` under ``dir_fd`` is unusable as a folder or file (None when it does not exist)."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return ConfinedPathError(shown, "out-unwritable", f"cannot inspect it: {exc.strerror or exc}")
    if stat.S_ISLNK(st.st_mode):
        return ConfinedPathError(shown, "run-folder-symlink", "is a symbolic link", _LINK_HINT)
    return None


def _open_dir(dir_fd: int, name: str, shown: Path, *, create: bool) -> int:
    """A descriptor of the real folder ``name`` under ``dir_fd``; links and files are refused."""
    for first_try in (True, False):
        try:
            return os.open(name, os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=dir_fd)
        except FileNotFoundError:
            if not create or not first_try:
                raise _Missing from None
        except OSError as exc:
            link = _classify(dir_fd, name, shown)
            if link is not None:
                raise link from None
            if exc.errno == errno.ENOTDIR:
                raise ConfinedPathError(shown, "run-folder-not-a-folder", "should be a folder but is a file",
                                        "move the file away (or choose a new --out)") from None
            raise ConfinedPathError(shown, "out-unwritable", f"cannot open the folder: {exc.strerror or exc}") from None
        try:  # mkdir never follows a link planted under the name: it fails, and the open above refuses it
            os.mkdir(name, 0o777, dir_fd=dir_fd)
        except FileExistsError:
            pass
        except OSError as exc:
            raise ConfinedPathError(shown, "out-unwritable", f"cannot create the folder: {exc.strerror or exc}") from None
    raise _Missing


class _Missing(Exception):
    """A folder on the way does not exist (and was not to be created)."""


@contextmanager
def _parent_fd(root: Path, parts: Sequence[str], *, create: bool) -> Iterator[int | None]:
    """A descriptor of the folder holding ``parts[-1]``, every folder on the way opened without links.

    None when a folder on the way does not exist and ``create`` is False.
    """
    with _root_fd(root) as fd:
        opened: list[int] = []
        try:
            current: int | None = fd
            for i, part in enumerate(parts[:-1]):
                assert current is not None
                try:
                    current = _open_dir(current, part, root.joinpath(*parts[: i + 1]), create=create)
                except _Missing:
                    if create:
                        raise ConfinedPathError(root.joinpath(*parts[: i + 1]), "out-unwritable",
                                                "vanished while it was being created") from None
                    current = None
                    break
                opened.append(current)
            yield current
        finally:
            for d in opened:
                os.close(d)


@contextmanager
def _existing_parent_fd(root: Path, parts: Sequence[str]) -> Iterator[int]:
    with _parent_fd(root, parts, create=True) as dir_fd:
        assert dir_fd is not None
        yield dir_fd


def _refuse_unless_regular(dir_fd: int, name: str, shown: Path) -> bool:
    """True when ``name`` exists as a regular file, False when absent; anything else is refused."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise ConfinedPathError(shown, "out-unwritable", f"cannot inspect it: {exc.strerror or exc}") from None
    if stat.S_ISLNK(st.st_mode):
        raise ConfinedPathError(shown, "run-folder-symlink", "is a symbolic link", _LINK_HINT)
    if stat.S_ISDIR(st.st_mode):
        raise ConfinedPathError(shown, "run-folder-not-a-file", "should be a file but is a folder",
                                "move the folder away (or choose a new --out)")
    if not stat.S_ISREG(st.st_mode):
        raise ConfinedPathError(shown, "special-file", "is a device, FIFO or socket, not a regular file",
                                "move it away (or choose a new --out)")
    return True


def write_atomic(root: Path, parts: Sequence[str], data: bytes, *, mode: int = 0o600) -> None:
    """Write ``root/parts…`` so a reader sees the old file or the new one, never a part.

    Folders on the way are created; a link or a file of the wrong kind anywhere below ``root``
    is a :class:`ConfinedPathError` and nothing is written.
    """
    write_atomic_many(root, parts[:-1], ((parts[-1], data),), mode=mode)


def write_atomic_many(root: Path, folder: Sequence[str], files: Sequence[tuple[str, bytes]], *,
                      mode: int = 0o600) -> None:
    """:func:`write_atomic` for several files of one folder, which is walked and checked once.

    A trial's record files are written together at the end of every trial, on threads that share
    the GIL with the running trials; each system call on the way is a chance to lose it.
    """
    if not files:
        return
    # the folder is resolved and checked once; each file is a name in it, opened without following
    # a link (a trial's files were each resolved on their own, an lstat per component apiece)
    confined_path(root, *folder)
    for name, _ in files:
        _check_parts(root, (*folder, name))
    with _existing_parent_fd(root, (*folder, files[0][0])) as dir_fd:  # the folder holding them
        for name, data in files:
            _replace_in(dir_fd, name, data, root.joinpath(*folder, name), mode)


class OpenFolders:
    """The folders one writer writes a new sub-folder into again and again, each walked once (seam *open folders*).

    A run writes every trial's files into a folder of its own, ``trials/<plan>/<task>/<index>``. Walked
    from the root for each trial (the path resolved, then a descriptor per component, links refused)
    that is some thirty system calls per trial on the writer's thread, each a chance to lose the GIL the
    running trials share: about a tenth of a local run's CPU per turn (``benchmarks/trial_loop.py``).
    Here the folder *holding* the written one (``trials/<plan>/<task>``) is resolved, checked and walked
    exactly as :func:`write_atomic_many` does it, once, and its descriptor kept; each write then opens
    only its own last folder from that descriptor (``O_NOFOLLOW``: a link is refused). A link planted
    above a kept folder later is never followed: the kept descriptor is the real folder that was
    checked. A write that fails through a kept descriptor (the folder was removed meanwhile) walks
    again from the root, as a write without it does.

    At most ``limit`` descriptors are kept (the least recently used one is closed past it; one in use is
    closed when its write ends). :meth:`close` closes them all; a later write opens what it needs again.
    The reference mode keeps none and walks every time.
    """

    def __init__(self, root: Path, limit: int = 64) -> None:
        self.root = root
        self.limit = limit
        self._lock = threading.Lock()
        self._kept: OrderedDict[tuple[str, ...], _Kept] = OrderedDict()
        # a writer dropped without close() (a caller of the Python API) leaves no descriptor behind
        weakref.finalize(self, _close_all, self._kept)

    def write_atomic_many(self, folder: Sequence[str], files: Sequence[tuple[str, bytes]], *,
                          mode: int = 0o600) -> None:
        """:func:`write_atomic_many` under this writer's root, the folder's parent walked once per run."""
        if not files or len(folder) < 2 or reference_mode():
            write_atomic_many(self.root, folder, files, mode=mode)
            return
        for name, _ in files:
            _check_parts(self.root, (*folder, name))
        parent = tuple(folder[:-1])
        kept = self._take(parent)
        try:
            try:
                _write_in(kept.fd, folder[-1], files, self.root.joinpath(*folder), mode)
                return
            except ConfinedPathError as exc:
                if exc.code == "run-folder-symlink":
                    confined_path(self.root, *folder)  # a link that leads out is worded as a walk words it
                if exc.code != "out-unwritable":
                    raise  # a link, a file where a folder belongs: the same refusal a walk gives
                self._forget(parent, kept)  # removed or moved meanwhile: walk again, as a write without it does
        finally:
            self._give_back(kept)
        write_atomic_many(self.root, folder, files, mode=mode)

    def close(self) -> None:
        """Close every kept descriptor (one in use is closed when its write ends)."""
        with self._lock:
            kept = list(self._kept.values())
            self._kept.clear()
        for entry in kept:
            self._retire(entry)

    def _take(self, parent: tuple[str, ...]) -> _Kept:
        with self._lock:
            entry = self._kept.get(parent)
            if entry is not None:
                self._kept.move_to_end(parent)
                entry.users += 1
                return entry
        confined_path(self.root, *parent)  # resolved and checked once, as write_atomic_many does each time
        with _existing_parent_fd(self.root, (*parent, "x")) as dir_fd:
            fd = os.dup(dir_fd)  # kept past the walk, which closes its own descriptors
        entry = _Kept(fd, users=1)
        with self._lock:
            if parent in self._kept:  # another writer opened it meanwhile: keep one
                entry.retired = True
            else:
                self._kept[parent] = entry
                while len(self._kept) > self.limit:
                    _, oldest = self._kept.popitem(last=False)
                    self._retire_locked(oldest)
        return entry

    def _give_back(self, entry: _Kept) -> None:
        with self._lock:
            entry.users -= 1
            if entry.retired and entry.users == 0 and entry.fd >= 0:
                os.close(entry.fd)
                entry.fd = -1

    def _forget(self, parent: tuple[str, ...], entry: _Kept) -> None:
        with self._lock:
            if self._kept.get(parent) is entry:
                del self._kept[parent]
            entry.retired = True

    def _retire(self, entry: _Kept) -> None:
        with self._lock:
            self._retire_locked(entry)

    @staticmethod
    def _retire_locked(entry: _Kept) -> None:
        entry.retired = True
        if entry.users == 0 and entry.fd >= 0:
            os.close(entry.fd)
            entry.fd = -1


def _close_all(kept: OrderedDict[tuple[str, ...], _Kept]) -> None:
    """Close what a collected :class:`OpenFolders` still kept (no write can be using it any more)."""
    for entry in kept.values():
        if entry.fd >= 0:
            os.close(entry.fd)
            entry.fd = -1
    kept.clear()


class _Kept:
    """One kept folder descriptor and how many writes are using it now."""

    __slots__ = ("fd", "users", "retired")

    def __init__(self, fd: int, users: int) -> None:
        self.fd = fd
        self.users = users
        self.retired = False


def _write_in(parent_fd: int, name: str, files: Sequence[tuple[str, bytes]], shown: Path, mode: int) -> None:
    """``files`` written atomically into the folder ``name`` under ``parent_fd`` (created if missing, never a link).

    The folder is usually new (a trial's first write), so it is made first and opened after: a
    look that finds nothing, and a check of each file's name, are system calls on a thread that
    shares the GIL with running trials. In a folder this call made, no name can be a link, a
    folder or a special file, so the files are not looked at first; ``O_EXCL`` and the rename,
    which replaces a name and never follows it, hold either way.
    """
    dir_fd, made = _made_dir(parent_fd, name, shown)
    try:
        for file_name, data in files:
            _replace_in(dir_fd, file_name, data, shown / file_name, mode, checked=made)
    finally:
        os.close(dir_fd)


def _made_dir(parent_fd: int, name: str, shown: Path) -> tuple[int, bool]:
    """A descriptor of the real folder ``name`` under ``parent_fd``, made here if it was missing, and whether it was."""
    try:  # mkdir never follows a link planted under the name: it fails, and the open refuses it
        os.mkdir(name, 0o777, dir_fd=parent_fd)
    except OSError:  # there already (or not makeable here): opened, or refused, as any folder on a walk
        return _open_dir(parent_fd, name, shown, create=True), False
    return _open_dir(parent_fd, name, shown, create=False), True


def _replace_in(dir_fd: int, name: str, data: bytes, shown: Path, mode: int, *, checked: bool = False) -> None:
    """Write ``name`` under ``dir_fd`` through a temporary file renamed over it.

    ``checked``: the folder was made by this write, so ``name`` is not looked at first.
    """
    if not checked:
        _refuse_unless_regular(dir_fd, name, shown)
    # unique, not secret: O_EXCL refuses a name that is there already
    tmp = f".{name}.{uuid4_hex()[:12]}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, mode, dir_fd=dir_fd)
    except OSError as exc:
        raise ConfinedPathError(shown, "out-unwritable", f"cannot write it: {exc.strerror or exc}") from None
    try:
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException as exc:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise ConfinedPathError(shown, "out-unwritable", f"cannot write it: {exc.strerror or exc}") from None
        raise


def append(root: Path, parts: Sequence[str], data: bytes, *, mode: int = 0o644) -> None:
    """Append ``data`` to ``root/parts…`` with one ``write`` (``O_APPEND | O_NOFOLLOW``)."""
    confined_path(root, *parts)
    shown = root.joinpath(*parts)
    with _existing_parent_fd(root, parts) as dir_fd:
        _refuse_unless_regular(dir_fd, parts[-1], shown)
        fd = _open_file(dir_fd, parts[-1], shown, os.O_WRONLY | os.O_APPEND | os.O_CREAT, mode)
        try:
            _write_all(fd, data)
        except OSError as exc:
            raise ConfinedPathError(shown, "out-unwritable", f"cannot append to it: {exc.strerror or exc}") from None
        finally:
            os.close(fd)


def open_append(root: Path, parts: Sequence[str], *, mode: int = 0o644) -> int:
    """A descriptor of ``root/parts…`` opened for appending, checked as :func:`append` checks it.

    For a file appended to very often (a journal line per provider call): the caller writes with
    :func:`write_all` and closes the descriptor itself; the path is walked and checked once.
    """
    confined_path(root, *parts)
    shown = root.joinpath(*parts)
    with _existing_parent_fd(root, parts) as dir_fd:
        _refuse_unless_regular(dir_fd, parts[-1], shown)
        return _open_file(dir_fd, parts[-1], shown, os.O_WRONLY | os.O_APPEND | os.O_CREAT, mode)


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` (one ``write`` for anything a pipe-sized buffer holds)."""
    _write_all(fd, data)


def create_new(root: Path, parts: Sequence[str], data: bytes, *, mode: int = 0o644) -> bool:
    """Write a file that must not exist yet; False (nothing written) when something has the name."""
    confined_path(root, *parts)
    shown = root.joinpath(*parts)
    with _existing_parent_fd(root, parts) as dir_fd:
        try:
            fd = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, mode,
                         dir_fd=dir_fd)
        except FileExistsError:
            return False
        except OSError as exc:
            raise ConfinedPathError(shown, "out-unwritable", f"cannot write it: {exc.strerror or exc}") from None
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
    return True


def truncate(root: Path, parts: Sequence[str], size: int) -> None:
    """Cut ``root/parts…`` to ``size`` bytes (used only to set a torn last line aside)."""
    confined_path(root, *parts)
    shown = root.joinpath(*parts)
    with _parent_fd(root, parts, create=False) as dir_fd:
        if dir_fd is None or not _refuse_unless_regular(dir_fd, parts[-1], shown):
            raise ConfinedPathError(shown, "out-unwritable", "vanished before it could be shortened")
        fd = _open_file(dir_fd, parts[-1], shown, os.O_WRONLY, 0)
        try:
            os.ftruncate(fd, size)
        except OSError as exc:
            raise ConfinedPathError(shown, "out-unwritable", f"cannot shorten it: {exc.strerror or exc}") from None
        finally:
            os.close(fd)


def read_bytes(root: Path, parts: Sequence[str], *, limit: int | None = None) -> bytes | None:
    """The bytes of the regular file ``root/parts…``, or None when it does not exist.

    Links are refused like for writing (a planted link would otherwise be read back as the
    run's own record); more than ``limit`` bytes is ``file-too-large``.
    """
    confined_path(root, *parts)
    shown = root.joinpath(*parts)
    with _parent_fd(root, parts, create=False) as dir_fd:
        if dir_fd is None or not _refuse_unless_regular(dir_fd, parts[-1], shown):
            return None
        fd = _open_file(dir_fd, parts[-1], shown, os.O_RDONLY, 0)
        try:
            chunks: list[bytes] = []
            size = 0
            while True:
                chunk = os.read(fd, _READ_CHUNK)
                if not chunk:
                    break
                size += len(chunk)
                if limit is not None and size > limit:
                    raise ConfinedPathError(shown, "file-too-large", f"is larger than {limit} bytes")
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)


def _open_file(dir_fd: int, name: str, shown: Path, flags: int, mode: int) -> int:
    try:
        fd = os.open(name, flags | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC, mode, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ConfinedPathError(shown, "run-folder-symlink", "is a symbolic link", _LINK_HINT) from None
        raise ConfinedPathError(shown, "out-unwritable", f"cannot open it: {exc.strerror or exc}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped for something else since it was looked at
        os.close(fd)
        raise ConfinedPathError(shown, "special-file", "is not a regular file", "move it away (or choose a new --out)")
    return fd


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def folder_exists(root: Path, folder: Sequence[str]) -> bool:
    """Whether ``root/folder…`` exists as a real folder; a link or a file on the way is refused, as a write refuses it."""
    confined_path(root, *folder)
    with _parent_fd(root, (*folder, "x"), create=False) as dir_fd:
        return dir_fd is not None


def remove_leftovers(root: Path, folder: Sequence[str], names: re.Pattern[str]) -> list[str]:
    """Remove the regular files in ``root/folder…`` whose whole name matches ``names``; their names.

    Used for the temporary files of writes a killed process never renamed: only names of that
    exact shape go, and only real files inside real folders (nothing is followed).
    """
    parts = (*folder, "x")  # the folder's own descriptor is the parent of any name in it
    confined_path(root, *folder)
    removed: list[str] = []
    with _parent_fd(root, parts, create=False) as dir_fd:
        if dir_fd is None:
            return removed
        for name in os.listdir(dir_fd):
            if names.fullmatch(name) is None:
                continue
            try:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                if stat.S_ISREG(st.st_mode):
                    os.unlink(name, dir_fd=dir_fd)
                    removed.append(name)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise ConfinedPathError(root.joinpath(*folder, name), "out-unwritable",
                                        f"cannot remove a leftover temporary file: {exc.strerror or exc}") from None
    return removed


def atomic_write(path: Path, data: bytes) -> None:
    """Write the file ``path`` inside its folder so a reader sees the old file or the new one, never a part.

    ``path.parent`` is taken as the folder; ``path`` itself must not be a link or a folder.
    """
    write_atomic(path.parent, (path.name,), data)

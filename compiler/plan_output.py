"""Write a compiled plan set into ``--out`` atomically.

The set (plans and ``manifest.json``) is written into a temporary folder beside ``--out``
and then swapped into place with one ``renameat2(RENAME_EXCHANGE)``, so a crash or SIGKILL at
any moment leaves ``--out`` holding either the old set or the new one, never a mix and never
a half-written file. Where the kernel or file system cannot exchange, two renames are used;
a crash between them leaves the old set in a ``.<out>.capplan-old-*`` folder beside it.

Afterwards ``--out`` holds exactly the compiled set: plans of models not compiled this time
are removed and listed, unless ``keep_others``. A folder that holds anything that is not a
capplan plan is refused rather than emptied (``--out .`` must never delete a project).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from capplan.core.diagnostics import Diagnostic, InputError
from capplan.compiler.manifest import MANIFEST_FILE, Manifest
from capplan.executor.plan import Plan

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_FSYNC_THREADS = 8  # enough for the file system to batch the commits


@dataclass
class WriteResult:
    """What a write changed."""

    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


def out_error(message: str, hint: str | None = None, code: str = "out-unwritable") -> InputError:
    """A located error about ``--out`` (exit 2)."""
    return InputError([Diagnostic("--out", 1, 1, code, message, hint=hint)])


def write_plan_set(plans: dict[str, Plan], manifest: Manifest, out: Path, *, keep_others: bool = False
                   ) -> WriteResult:
    """Replace ``out`` with exactly ``plans`` and their manifest (plus other files with ``keep_others``)."""
    writer = PlanSetWriter(out, set(plans), keep_others=keep_others)
    try:
        for key, plan in sorted(plans.items()):
            writer.add(key, plan)
    except BaseException:
        writer.abort()
        raise
    return writer.commit(manifest)


class PlanSetWriter:
    """One plan set on its way into ``out``: each plan's file is written as soon as it is added.

    The files go into a temporary folder beside ``out``; :meth:`commit` writes the manifest,
    waits until every file is on disk and swaps the folder into place, :meth:`abort` removes it
    (and the parent folders this writer created), leaving ``out`` as it was. Nothing of a plan is
    kept once its file is written but its name, so a compile that streams into a writer holds one
    plan at a time (``benchmarks/compiler_speed.py``, memory row).
    """

    def __init__(self, out: Path, keys: set[str], *, keep_others: bool = False) -> None:
        #: ``out`` as given, for messages
        self.folder = out
        created = _missing_folders(Path(os.path.abspath(out)).parent)
        self.out = _usable_out(out)
        self._created = created
        self._keep_others = keep_others
        self._kept, self._stale = _existing(self.out, {f"{key}.json" for key in keys}, keep_others)
        _sweep_leftovers(self.out)
        try:
            self._tmp: Path | None = Path(tempfile.mkdtemp(prefix=f".{self.out.name}.capplan-{os.getpid()}-",
                                                           dir=self.out.parent))
        except OSError as exc:
            self._remove_created()
            raise out_error(f"{self.out}: cannot create a folder beside it: {exc.strerror or exc}",
                            "choose an --out in a folder you can write to") from None
        self._written: list[str] = []
        self._dir_fd: int | None = None

    def add(self, key: str, plan: Plan) -> None:
        """Write ``plan``'s file now; only its name is kept."""
        name = f"{key}.json"
        self._guarded(lambda tmp: self._write(tmp, name, plan.to_bytes()))
        self._written.append(name)

    def _write(self, tmp: Path, name: str, data: bytes) -> None:
        # by name within the open folder: a third of the CPU of ``Path.write_bytes`` per file, which
        # counts at thousands of plans (benchmarks/compiler_speed.py, memory row)
        if self._dir_fd is None:
            self._dir_fd = os.open(tmp, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666, dir_fd=self._dir_fd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)

    def _close_dir(self) -> None:
        if self._dir_fd is not None:
            os.close(self._dir_fd)
            self._dir_fd = None

    def commit(self, manifest: Manifest) -> WriteResult:
        """Write the manifest, sync every file, and swap the set into place."""
        if self._keep_others:
            manifest = _merged_manifest(self.out, manifest, self._kept)
        self._guarded(lambda tmp: self._finish(tmp, manifest))
        self._close_dir()
        self._tmp = None
        return WriteResult(written=list(self._written), removed=sorted(self._stale))

    def abort(self) -> None:
        """Remove what was written; ``out`` stays as it was."""
        self._close_dir()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
            self._remove_created()

    def _finish(self, tmp: Path, manifest: Manifest) -> None:
        (tmp / MANIFEST_FILE).write_bytes(manifest.to_bytes())
        _sync_all([tmp / name for name in sorted(self._written)] + [tmp / MANIFEST_FILE])
        for name in self._kept:
            source = self.out / name
            (shutil.copytree if source.is_dir() else shutil.copy2)(source, tmp / name)
        _fsync_dir(tmp)
        os.chmod(tmp, _mode_of(self.out))
        _swap_into_place(tmp, self.out)

    def _guarded(self, step: Callable[[Path], object]) -> None:
        """Run one writing step; a failure removes the half-written set and is a located error."""
        if self._tmp is None:
            raise RuntimeError("this plan set was already committed or aborted")
        try:
            step(self._tmp)
        except OSError as exc:
            self.abort()
            raise out_error(f"{self.out}: cannot write the plans: {exc.strerror or exc}",
                            "nothing was changed; check the folder's permissions and free space") from None

    def _remove_created(self) -> None:
        for folder in self._created:  # deepest first; one that is no longer empty stays
            try:
                folder.rmdir()
            except OSError:
                break


def _missing_folders(folder: Path) -> list[Path]:
    """``folder`` and its ancestors that do not exist yet, deepest first."""
    missing = []
    for candidate in (folder, *folder.parents):
        if candidate.exists():
            break
        missing.append(candidate)
    return missing


def _usable_out(out: Path) -> Path:
    """``out`` made absolute, its parent created; a file in the way is a located error."""
    out = Path(os.path.abspath(out))
    if out.is_symlink():
        out = out.resolve()
    for folder in (out, *out.parents):
        if folder.exists() and not folder.is_dir():
            where = "is a file" if folder == out else f"is under {folder}, which is a file"
            raise out_error(f"{out} {where}, not a folder", "give --out a folder path")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise out_error(f"{out}: cannot create its parent folder: {exc.strerror or exc}") from None
    return out


def _existing(out: Path, names: set[str], keep_others: bool) -> tuple[list[str], list[str]]:
    """Entries of ``out`` to carry over, and stale plans that will go; refuses what it must not delete."""
    if not out.is_dir():
        return [], []
    kept: list[str] = []
    stale: list[str] = []
    foreign: list[str] = []
    for entry in sorted(out.iterdir(), key=lambda p: p.name):
        if entry.name in names:
            if entry.is_dir() and not entry.is_symlink():
                raise out_error(f"{entry} is a folder, so the plan {entry.name} cannot be written there",
                                "move or remove that folder, or choose another --out", "out-conflict")
            continue
        if entry.name == MANIFEST_FILE:
            continue
        if _is_plan(entry):
            (kept if keep_others else stale).append(entry.name)
        else:
            (kept if keep_others else foreign).append(entry.name + ("/" if entry.is_dir() else ""))
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise out_error(f"{out} holds files that are not capplan plans ({shown}); compiling replaces the "
                        "folder's contents", "compile into an empty folder or a folder of plans, or pass "
                        "--keep-others to keep what is there", "out-not-plans")
    return kept, stale


def _is_plan(entry: Path) -> bool:
    if entry.suffix != ".json" or not entry.is_file():
        return False
    try:
        data = json.loads(entry.read_bytes())
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "plan_version" in data and "fingerprint" in data


def _merged_manifest(out: Path, manifest: Manifest, kept: list[str]) -> Manifest:
    """With --keep-others the kept plans stay listed, by the fingerprint the old manifest gave them."""
    try:
        old = Manifest.model_validate_json((out / MANIFEST_FILE).read_bytes())
    except (OSError, ValueError):
        return manifest
    kept_keys = {name.removesuffix(".json") for name in kept}
    carried = {k: v for k, v in old.plans.items() if k in kept_keys}
    return manifest.model_copy(update={"plans": dict(sorted({**carried, **manifest.plans}.items()))})


def _sweep_leftovers(out: Path) -> None:
    """Remove temporary folders of earlier runs that were killed before they could clean up."""
    for entry in out.parent.glob(f".{out.name}.capplan-*"):
        pid = entry.name.removeprefix(f".{out.name}.capplan-").split("-")[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            shutil.rmtree(entry, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _sync_all(paths: list[Path]) -> None:
    """Wait until every written file is on disk.

    The fsyncs run side by side: one after another, each waited for its own journal commit,
    which was most of a catalogue compile's wall time; together the file system can commit
    them at once. Every file is still synced before the folder is swapped into place, and at
    most a few files are open at a time, whatever the number of plans. Plain threads, not
    ``concurrent.futures``: importing that (and the logging it pulls in) cost more CPU than
    the rest of writing a catalogue.
    """
    pending = iter(paths)
    lock = threading.Lock()
    failures: list[OSError] = []

    def sync_some() -> None:
        while not failures:
            with lock:
                path = next(pending, None)
            if path is None:
                return
            try:
                _fsync_file(path)
            except OSError as exc:
                failures.append(exc)

    workers = [threading.Thread(target=sync_some, name="capplan-fsync") for _ in range(min(_FSYNC_THREADS, len(paths)))]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    if failures:
        raise failures[0]


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(folder: Path) -> None:
    _fsync_file(folder)  # a folder is synced through a read-only descriptor, like a file


def _mode_of(out: Path) -> int:
    if out.is_dir():
        return out.stat().st_mode & 0o7777
    umask = os.umask(0)
    os.umask(umask)
    return 0o777 & ~umask


def _swap_into_place(tmp: Path, out: Path) -> None:
    """Make ``tmp`` be ``out``; the previous ``out`` (if any) is removed afterwards."""
    if not out.exists():
        os.rename(tmp, out)
    elif _exchange(tmp, out):
        shutil.rmtree(tmp)  # now the old set
    else:
        aside = Path(tempfile.mkdtemp(prefix=f".{out.name}.capplan-old-", dir=out.parent))
        os.rmdir(aside)
        os.rename(out, aside)
        os.rename(tmp, out)
        shutil.rmtree(aside)
    _fsync_dir(out.parent)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux renameat2); False where that is not available."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))

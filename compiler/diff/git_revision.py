"""Read files as they are at a git revision, through the ``git`` command (no shell, bounded time).

Only the blobs asked for are read (``git cat-file``), so this works in a shallow clone as long
as the revision's commit was fetched; when it was not, the error says how to fetch it.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from capplan.compiler.diff.errors import DiffInputError

#: seconds any one git command may take; a hung credential prompt or network fetch must not hang CI
GIT_TIMEOUT = 60


class RevisionMissingError(DiffInputError):
    """The revision is not in this clone."""

    code = "GIT_REVISION"


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=GIT_TIMEOUT, check=False,
                              stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise DiffInputError("--base needs git, and no `git` command was found on PATH") from None
    except subprocess.TimeoutExpired:
        raise DiffInputError(f"`git {' '.join(args)}` did not finish within {GIT_TIMEOUT} s") from None


@dataclass(frozen=True)
class GitRepo:
    """A working tree: its root folder, and file reads at any commit it holds."""

    root: Path

    @classmethod
    def discover(cls, cwd: Path) -> GitRepo:
        """The repository ``cwd`` is in."""
        done = _git(cwd, "rev-parse", "--show-toplevel")
        if done.returncode != 0:
            raise DiffInputError(f"--base needs a git repository, and {cwd} is not inside one "
                                 f"({_stderr(done)})")
        return cls(Path(done.stdout.decode("utf-8").strip()).resolve())

    def resolve(self, rev: str) -> str:
        """The full commit id of ``rev``, or a message saying how to fetch it."""
        if not rev or rev.startswith("-"):
            raise DiffInputError(f"--base: {rev!r} is not a revision")
        done = _git(self.root, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
        if done.returncode == 0:
            return done.stdout.decode("ascii").strip()
        raise RevisionMissingError(self._missing_message(rev))

    def _missing_message(self, rev: str) -> str:
        shallow = _git(self.root, "rev-parse", "--is-shallow-repository").stdout.strip() == b"true"
        why = "this is a shallow clone, which holds only the commits it fetched" if shallow else "no such commit or ref"
        remotes = _git(self.root, "remote").stdout.decode("utf-8").split()
        if not remotes:
            return (f"revision {rev!r} is not in this repository ({why}), "
                    "and the repository has no remote to fetch it from")
        remote = "origin" if "origin" in remotes else remotes[0]
        prefix = next((r for r in remotes if rev.startswith(r + "/")), None)
        if prefix is not None:
            branch = rev[len(prefix) + 1:]
            fetch = f"git fetch --depth=1 {prefix} {branch}:refs/remotes/{prefix}/{branch}"
        elif re.fullmatch(r"[0-9a-fA-F]{7,64}", rev):
            fetch = f"git fetch --depth=1 {remote} {rev}"
        else:
            fetch = f"git fetch --depth=1 {remote} {rev}   (then pass --base FETCH_HEAD)"
        return f"revision {rev!r} is not in this repository ({why}); fetch it first:\n    {fetch}"

    def read(self, commit: str, relpath: str) -> bytes | None:
        """The file's bytes at ``commit`` as a checkout would write them, or None when it did not exist."""
        spec = f"{commit}:{relpath}"
        kind = _git(self.root, "cat-file", "-t", spec)
        if kind.returncode != 0:
            return None
        if kind.stdout.strip() != b"blob":
            raise DiffInputError(f"{relpath} is a {kind.stdout.decode().strip()} at {commit[:12]}, not a file")
        done = _git(self.root, "cat-file", "--filters", spec)
        if done.returncode != 0:
            raise DiffInputError(f"cannot read {relpath} at {commit[:12]}: {_stderr(done)}")
        return done.stdout

    def relative(self, path: Path) -> str | None:
        """``path`` relative to the root (POSIX spelling), or None when it lies outside the repository."""
        try:
            return PurePosixPath(path.resolve().relative_to(self.root)).as_posix()
        except ValueError:
            return None


def _stderr(done: subprocess.CompletedProcess[bytes]) -> str:
    return done.stderr.decode("utf-8", "replace").strip() or f"git exited with {done.returncode}"

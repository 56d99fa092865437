"""What ``run`` may write in ``--out``, and the folder's one-writer lock.

Every file the harness writes is a name directly in ``--out``, written through
:mod:`capplan.core.confined_write` (opened with ``O_NOFOLLOW``: a link planted under a name is
refused, never followed, a dangling one never creates a file elsewhere). ``run`` starts only in
a folder that is missing, empty, or holds nothing but files the harness writes, each a regular
file; it never writes beside or over foreign files. While it runs it holds the folder's writer
lock (:mod:`capplan.core.folder_lock`), so a second ``run`` on the same folder is refused.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from capplan.core import folder_lock
from capplan.core.confined_write import ConfinedPathError
from capplan.evals.reasoning_replay.errors import UsageError

#: the logs ``run`` appends to, the files ``report`` derives, the lock, and the crash log
LOGS = ("calls.jsonl", "cost.jsonl", "runs.jsonl", "cells.jsonl")
DERIVED = ("matrix.md", "matrix.json", "heatmap.svg", "overlay_snippet.yaml")
OWN_FILES = frozenset((*LOGS, *DERIVED, "errors.log", folder_lock.LOCK_FILE))
#: a derived file's temporary twin, left by a ``report`` killed before its rename
_LEFTOVER = re.compile(r"\.(?:{})\.[A-Za-z0-9_]{{1,32}}\.tmp".format("|".join(re.escape(n) for n in DERIVED)))
_HINT = "choose a new --out (a missing or empty folder), or the folder of an earlier run of this harness"


def problem(exc: ConfinedPathError) -> UsageError:
    """A refused path as the harness's one-line error: where, what, how to fix it."""
    return UsageError(f"{exc.path}: {exc.message}" + (f"; {exc.hint}" if exc.hint else ""))


def check_out(path: Path) -> None:
    """Refuse (:class:`UsageError`) an ``--out`` that holds anything the harness did not write, or a link/folder
    under one of its own names. Nothing is written."""
    try:
        names = sorted(os.listdir(path))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise UsageError(f"--out {path}: cannot list the folder ({exc.strerror or exc})") from None
    foreign = [n for n in names if n not in OWN_FILES and _LEFTOVER.fullmatch(n) is None]
    if foreign:
        shown = ", ".join(_shown(n) for n in foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise UsageError(f"--out {path} holds files this harness did not write ({shown}); a run never writes "
                         f"beside or over foreign files; {_HINT}")
    for name in names:
        st = os.lstat(path / name)
        if not stat.S_ISREG(st.st_mode):
            kind = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a regular file"
            raise UsageError(f"{path / name} is {kind}; the harness does not follow links or write over anything "
                             "but its own files; remove it (or choose a new --out)")


def hold(path: Path) -> folder_lock.FolderLock:
    """The folder's writer lock; a folder another ``run`` is writing is a :class:`UsageError` naming its pid."""
    try:
        return folder_lock.hold(path)
    except ConfinedPathError as exc:
        raise problem(exc) from None


def _shown(name: str) -> str:
    return name if len(name) <= 60 and name.isprintable() else f"<a name of {len(name)} characters>"

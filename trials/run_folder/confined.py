"""Reading and writing inside a run folder, and nowhere else: :mod:`capplan.core.confined_write`, and a trial's folder.

The confinement itself (names checked, paths resolved inside the root, every component opened
with ``O_NOFOLLOW``) lives in core, where the reasoning-replay harness uses it too; this module
adds the one thing only trials have, the parts of a trial's folder.
"""

from __future__ import annotations

from capplan.core.confined_write import (
    ConfinedPathError,
    OpenFolders,
    append,
    atomic_write,
    check_segment,
    confined_path,
    create_new,
    folder_exists,
    open_append,
    read_bytes,
    remove_leftovers,
    truncate,
    write_all,
    write_atomic,
    write_atomic_many,
)
from capplan.core.safe_names import UnsafeName

__all__ = ["ConfinedPathError", "OpenFolders", "append", "atomic_write", "check_segment", "confined_path",
           "create_new", "folder_exists", "open_append", "read_bytes", "remove_leftovers", "trial_parts", "truncate",
           "write_all", "write_atomic", "write_atomic_many"]


def trial_parts(plan_key: object, task_id: object, index: object) -> tuple[str, str, str, str]:
    """The parts of a trial's folder, ``trials/<plan_key>/<task_id>/<index>``, each checked."""
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise UnsafeName("trial index must be a whole number of 0 or more")
    return ("trials", check_segment(plan_key, "model key"), check_segment(task_id, "task id"), str(index))

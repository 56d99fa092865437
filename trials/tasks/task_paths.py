"""Task arguments (``capplan trial run``'s TASKS, ``capplan.trials.run``'s ``tasks``): files as given, folders as the
task files inside them.

A folder stands for every ``*.yaml`` file under it (recursively, hidden folders left out, links
to folders not followed), sorted by path relative to that folder so the run order, and the
order of the run folder's trials, is the same on every machine. A YAML file in a folder that
reads as something other than a task file (a run config, an overlay) is skipped with a note; a
file that does not read at all is kept, so the task loader reports why, located.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from capplan.core.diagnostics import Diagnostic, InputError
from capplan.core.yaml_source import read_source
from capplan.trials.tasks.task_kind import looks_like_task


def expand_task_paths(paths: Iterable[Path], note: Callable[[str], None]) -> tuple[Path, ...]:
    """Every task file ``paths`` name, each once, in argument order and folders sorted within."""
    out: list[Path] = []
    seen: set[Path] = set()
    problems: list[Diagnostic] = []
    for path in paths:
        if path.is_dir():
            found = _folder_tasks(path, note)
            if not found:
                problems.append(Diagnostic(str(path), 1, 1, "no-task-files",
                                           "the folder holds no task file (a *.yaml file with environment "
                                           "and user keys), in it or in any folder below it",
                                           hint="pass the task files or the folder that holds them"))
        else:
            found = [path]
        for task in found:
            key = _identity(task)
            if key not in seen:  # a file named and also inside a named folder runs once
                seen.add(key)
                out.append(task)
    if problems:
        raise InputError(problems)
    return tuple(out)


def _folder_tasks(folder: Path, note: Callable[[str], None]) -> list[Path]:
    candidates: list[tuple[str, Path]] = []
    for root, dirs, files in os.walk(folder, followlinks=False):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            if name.endswith(".yaml") and not name.startswith("."):
                full = Path(root) / name
                candidates.append((full.relative_to(folder).as_posix(), full))
    tasks: list[Path] = []
    for _, path in sorted(candidates):
        if _clearly_not_task(path):
            note(f"capplan: skipped {path}: not a task file (no environment and user keys)")
        else:
            tasks.append(path)
    return tasks


def _clearly_not_task(path: Path) -> bool:
    try:
        data = read_source(path).data
    except InputError:
        return False  # unreadable: the task loader reports the problem where it is
    return not looks_like_task(data)


def _identity(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path.absolute()

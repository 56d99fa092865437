"""Writing ``capplan init``'s starter project: every refusal decided first, then all files or none.

A refusal must leave the folder as it was, so nothing is created until every path has been
looked at (a file already there, a file or a link where a folder belongs, a file where DIRECTORY
or one of its parents should be), and every problem is reported at once. The writes then go
through the confined writer (:func:`capplan.trials.run_folder.confined.create_new`: no link is followed,
no file replaced); if one still fails (a disk full, a file that appeared meanwhile), what this
call created is removed again before the error is raised.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from capplan.core.diagnostics import Diagnostic, InputError
from capplan.trials.run_folder import confined

_NEW_FOLDER = "run capplan init in a new folder, or move it away"

Parts = tuple[str, ...]


@dataclass
class Decision:
    """What writing the starter into a folder would take, decided before anything is written."""

    problems: list[Diagnostic] = field(default_factory=list)
    #: DIRECTORY and its parents that do not exist yet, outermost first
    missing_parents: list[Path] = field(default_factory=list)
    #: folders inside DIRECTORY the starter needs that do not exist yet, outermost first
    missing_folders: list[Parts] = field(default_factory=list)


def _problem(path: Path, code: str, message: str, hint: str = _NEW_FOLDER) -> Diagnostic:
    return Diagnostic(str(path), 1, 1, code, message, hint=hint)


def decide(directory: Path, files: Mapping[Parts, str]) -> Decision:
    """Every reason writing ``files`` into ``directory`` would fail, and what would have to be created."""
    decision = Decision()
    if os.path.lexists(directory):
        if not directory.is_dir():  # DIRECTORY itself may be a link the user made: it is taken as given
            what = "a symbolic link to nothing" if not directory.exists() else "a file"
            decision.problems.append(_problem(directory, "not-a-folder", f"is {what}, not a folder",
                                              "give capplan init a folder (a new one, or one without the starter's files)"))
        return _inside(directory, files, decision) if not decision.problems else decision
    parent = directory.absolute()
    while not os.path.lexists(parent):
        decision.missing_parents.insert(0, parent)
        parent = parent.parent
    if not parent.is_dir():
        decision.problems.append(_problem(parent, "not-a-folder",
                                          f"is a file, so the folder {directory} cannot be created inside it",
                                          "give capplan init a path whose parents are folders"))
        return decision
    decision.missing_folders = sorted({parts[:depth] for parts in files for depth in range(1, len(parts))})
    return decision


def _inside(directory: Path, files: Mapping[Parts, str], decision: Decision) -> Decision:
    """The checks of an existing DIRECTORY: each folder on the way and each file, without following links."""
    blocked: set[Parts] = set()
    for folder in sorted({parts[:depth] for parts in files for depth in range(1, len(parts))}):
        if any(folder[:depth] in blocked for depth in range(1, len(folder))):
            continue
        path = directory.joinpath(*folder)
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            decision.missing_folders.append(folder)
            continue
        if stat.S_ISDIR(mode):
            continue
        blocked.add(folder)
        if stat.S_ISLNK(mode):
            decision.problems.append(_problem(path, "symlink", "is a symbolic link where the starter needs a folder; "
                                              "capplan init never writes through links",
                                              "remove the link, or run capplan init in a new folder"))
        else:
            decision.problems.append(_problem(path, "not-a-folder", "is a file where the starter needs a folder"))
    for parts in files:
        if any(parts[:depth] in blocked for depth in range(1, len(parts))):
            continue
        path = directory.joinpath(*parts)
        if os.path.lexists(path):  # a dangling link has the name too
            decision.problems.append(_problem(path, "file-exists", "exists already; capplan init never overwrites",
                                              "run capplan init in a new folder, or move the file away"))
    return decision


def write_all_or_nothing(directory: Path, files: Mapping[Parts, str]) -> None:
    """Write ``files`` into ``directory``, or raise :class:`InputError` having left it as it was."""
    decision = decide(directory, files)
    if decision.problems:
        raise InputError(decision.problems)
    made_parents: list[Path] = []
    written: list[Path] = []
    try:
        for parent in decision.missing_parents:
            try:
                os.mkdir(parent)
            except OSError as exc:
                raise InputError([_problem(parent, "out-unwritable",
                                           f"cannot create the folder: {exc.strerror or exc}",
                                           "choose a folder you can write to")]) from None
            made_parents.append(parent)
        for parts, text in files.items():
            try:
                created = confined.create_new(directory, parts, text.encode("utf-8"))
            except confined.ConfinedPathError as exc:
                raise InputError([exc.diagnostic()]) from None
            if not created:
                raise InputError([_problem(directory.joinpath(*parts), "file-exists",
                                           "appeared while the project was being written; it was left as it is",
                                           "move it away and run capplan init again")])
            written.append(directory.joinpath(*parts))
    except BaseException:
        _undo(written, [directory.joinpath(*f) for f in decision.missing_folders], made_parents)
        raise


def _undo(written: list[Path], folders: list[Path], parents: list[Path]) -> None:
    """Remove what this call created: its files, then the folders it made (only while empty), innermost first."""
    for path in reversed(written):
        try:
            os.unlink(path)
        except OSError:
            pass  # already gone; nothing else to do about one file
    for folder in [*reversed(folders), *reversed(parents)]:
        try:
            os.rmdir(folder)  # fails on a folder someone else put a file in meanwhile: that one stays
        except OSError:
            pass

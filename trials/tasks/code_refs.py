"""What a task file's code ``ref`` may name, decided before anything is imported.

A task's environment component (and its grader function) is the task's own code: a module
file in the task file's folder (``pkg/mod.py``, ``pkg/mod/__init__.py``, or a ``rel/path.py``
inside the folder), or a module of an installed distribution the task file declares under
``requires:`` (checked with :mod:`importlib.metadata`: the module's top-level name must be one
the distribution installs). Never the standard library (``subprocess:Popen`` named as an
environment once ran during validation), never anything else that happens to be on
``sys.path``. A grader may also name one of capplan's own graders (``capplan.…``).

Nothing here imports or runs the module: only the task folder and the installed distributions'
metadata are read, so ``capplan lint`` applies the same rule.
"""

from __future__ import annotations

import importlib.metadata
import inspect
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from capplan.core.reference_mode import speed_memo

#: a distribution name as PEP 508 spells one
DISTRIBUTION_NAME = r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,98}[A-Za-z0-9])?$"
#: the one package capplan's own graders live in
OWN_PACKAGE = "capplan"


class RefNotAllowed(LookupError):
    """A ref that names code outside what a task may name; ``code`` and ``hint`` for its diagnostic."""

    def __init__(self, message: str, code: str, hint: str) -> None:
        super().__init__(message)
        self.code = code
        self.hint = hint


def normalized(name: str) -> str:
    """A distribution name as :mod:`importlib.metadata` compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _owners() -> dict[str, frozenset[str]]:
    """Top-level import name -> the normalized names of the installed distributions that provide it."""
    return _owners_on(tuple(sys.path))


@speed_memo(maxsize=4)
def _owners_on(path: tuple[str, ...]) -> dict[str, frozenset[str]]:
    """:func:`_owners` for one ``sys.path`` (a scan of every installed distribution: once per path, not per ref)."""
    return {top: frozenset(normalized(d) for d in dists)
            for top, dists in importlib.metadata.packages_distributions().items()}


@speed_memo(maxsize=256)
def _top_names(name: str, path: tuple[str, ...]) -> frozenset[str]:
    """The top-level import names distribution ``name`` installs (on this ``sys.path``); empty when not installed.

    Read from its own metadata only (``top_level.txt``, else its file list), as
    :func:`importlib.metadata.packages_distributions` reads every distribution's.
    """
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return frozenset()
    text = dist.read_text("top_level.txt")
    if text:
        return frozenset(line.strip() for line in text.splitlines() if line.strip())
    found: set[str] = set()
    for file in dist.files or ():
        first = file.parts[0] if file.parts else ""
        if not first or first == ".." or first.endswith((".dist-info", ".egg-info", ".data")):
            continue
        module = first if len(file.parts) > 1 else inspect.getmodulename(first)
        if module:
            found.add(module)
    return frozenset(found)


def installed(name: str) -> bool:
    """Whether a distribution called ``name`` is installed."""
    try:
        importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def check_module(module_name: str, requires: Sequence[str], *, grader: bool = False) -> None:
    """Refuse a ``package.module`` that is not in the task's folder unless a declared distribution provides it.

    The caller has already looked for it in the task's folder (where anything goes).
    """
    top = module_name.split(".")[0]
    if grader and top == OWN_PACKAGE:
        return
    where = ("an environment ref names a module file in the task file's folder, or a module of an installed "
             "distribution the task file declares under requires:")
    if top in sys.stdlib_module_names or top in sys.builtin_module_names:
        raise RefNotAllowed(f"module {module_name!r} is part of Python's standard library, which a task may not name "
                            "as its code", "ref-stdlib", where)
    if any(top in _top_names(name, tuple(sys.path)) for name in requires):
        return
    owners = _owners().get(top, frozenset())  # every installed distribution scanned: only to say what to declare
    if owners:
        names = ", ".join(sorted(owners))
        raise RefNotAllowed(f"module {module_name!r} belongs to the installed distribution {names}, which the task file "
                            "does not declare", "ref-undeclared", f"add `requires: [{sorted(owners)[0]}]` to the task "
                            "file (only what the task declares is imported)")
    raise RefNotAllowed(f"module {module_name!r} is neither in the task file's folder nor a module of an installed "
                        "distribution", "ref-not-allowed", where)


def check_path(relative: str, folder: Path) -> None:
    """Refuse a ``rel/path.py`` ref whose file lies outside the task file's folder."""
    base = folder.resolve()
    if not (base / relative).resolve().is_relative_to(base):
        raise RefNotAllowed(f"{relative} lies outside the task file's folder", "ref-outside-folder",
                            "a .py ref names a file in the task file's folder or below it; move the file there")

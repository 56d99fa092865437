"""Entry points of the installed distributions, for the groups capplan reads, found in one pass over them.

Seam *entry points* (``benchmarks/compiler_speed.py``, the start-up rows). Two lookups read every
installed distribution's ``entry_points.txt`` on each start: capplan's policy registry (group
``capplan.policies``) and pydantic's plugin lookup (group ``pydantic``, on the first model it builds).
Through :mod:`importlib.metadata` each one builds a distribution object, a path object and an entry
point object for every line of every distribution: about 21 ms apiece with 179 distributions
installed, together about a tenth of ``capplan lint``. A pass over the same folders reads each
``entry_points.txt`` with ``os.open`` and keeps only the wanted groups (about 4.5 ms here); the
registry reads its group through it, and pydantic's lookup is answered from it when it would find
nothing (:mod:`capplan.core.pydantic_plugins`). A CLI command reads both groups in one pass
(:func:`one_pass_for`). The same walk finds the metadata folder
:func:`importlib.metadata.distribution` would read (:func:`distribution_folder`: capplan's own
version, which ``compile`` checks against the data's ``requires_capplan``), so a command that asks
nothing else of importlib.metadata does not import it (about 35 ms: the e-mail parser, ``zipfile``,
``csv``).

What it finds is what :func:`importlib.metadata.entry_points` finds, in the same order:

- the folders of ``sys.path`` in order (``""`` is the current folder; one that is missing or not a
  folder holds nothing);
- in each, every child whose name ends with ``.dist-info`` or ``.egg-info`` (any case), grouped by
  the normalized name before the first ``-`` in the order the names first appear;
- the first distribution of each normalized name wins (a later copy of it is shadowed);
- its ``entry_points.txt`` read as importlib reads it: lines stripped, blank and ``#`` lines
  skipped, ``[group]`` headers, ``name = value`` split at the first ``=``.

Whatever the pass does not model is handed to :mod:`importlib.metadata` whole: a ``sys.path`` entry
that is a file (a zip), a folder named ``*.egg``, a finder on ``sys.meta_path`` other than the path
finder that finds distributions (the ``importlib_metadata`` backport installs one when imported), a
metadata folder whose suffix is not spelled exactly ``.dist-info`` / ``.egg-info``.

A file importlib cannot read (a line under a group that is not ``name = value``, bytes that are
not UTF-8) makes importlib raise a bare ``TypeError`` or ``UnicodeDecodeError``; both modes report it
instead as :class:`EntryPointsUnreadable`, naming the file and line. The reference mode always asks
:mod:`importlib.metadata`; ``tests/registry/test_entry_point_scan.py`` compares both sides on this
environment and on made-up ones.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, NamedTuple

from capplan.core.errors import UserError
from capplan.core.reference_mode import reference_mode

#: the group capplan's policy registry reads
POLICY_GROUP = "capplan.policies"

_SUFFIXES = (".dist-info", ".egg-info")


class Found(NamedTuple):
    """One entry point: ``name = value`` under ``[group]`` of the distribution at ``folder``."""

    name: str
    value: str
    group: str
    folder: str | None  # the metadata folder; None when importlib.metadata found it
    dist: Any = None  # the importlib.metadata distribution, when importlib.metadata found it

    def distribution(self) -> str:
        """The distribution's name from its metadata, for messages only (parsing METADATA costs)."""
        dist = self.dist
        if dist is None and self.folder is not None:
            from importlib.metadata import PathDistribution

            dist = PathDistribution(Path(self.folder))
        name = getattr(dist, "name", None) if dist is not None else None
        return name if isinstance(name, str) else "?"


class _Unmodelled(Exception):
    """Something the pass does not model: importlib.metadata answers instead."""


class EntryPointsUnreadable(UserError):
    """An installed distribution's ``entry_points.txt`` that importlib.metadata cannot read.

    importlib.metadata reads every installed distribution's file, whichever group is asked for, and
    raises a bare ``TypeError`` or ``UnicodeDecodeError`` on a line that is not ``name = value`` or
    on bytes that are not UTF-8. pydantic's plugin lookup and capplan's policy registry both ask, so
    one such file stops every command. A broken installation, not an input: the file and line are
    named, and the fix is to reinstall or remove the distribution.
    """

    code = "ENTRY_POINTS"


def entry_points_in(group: str) -> tuple[Found, ...]:
    """The entry points of ``group``, in the order :func:`importlib.metadata.entry_points` gives them.

    Read afresh on every call (the policy registry keeps its own union once built)."""
    return found_groups(frozenset({group})).get(group, ())


def found_groups(groups: frozenset[str]) -> dict[str, tuple[Found, ...]]:
    """Each of ``groups`` with its entry points (a group with none is absent).

    Inside :func:`one_pass_for` groups that cover them, answered from that block's one pass.
    :class:`EntryPointsUnreadable` for a file importlib.metadata cannot read, in both modes."""
    shared = _ONE_PASS.get()
    if shared is not None and groups <= shared.groups and not reference_mode():
        if shared.found is None:
            shared.found = _lookup(shared.groups)
        return {group: found for group, found in shared.found.items() if group in groups}
    return _lookup(groups)


class _OnePass:
    def __init__(self, groups: frozenset[str]) -> None:
        self.groups = groups
        self.found: dict[str, tuple[Found, ...]] | None = None


# per thread (a context variable): a command run on another thread of the same process, or a
# thread the command starts, neither sees nor ends this block
_ONE_PASS: ContextVar[_OnePass | None] = ContextVar("capplan_entry_points_one_pass", default=None)


@contextmanager
def one_pass_for(groups: frozenset[str]) -> Iterator[None]:
    """Within the block, the first lookup of any of ``groups`` reads all of them in one pass over
    the distributions, and later lookups of them are answered from it.

    A command reads two groups a few milliseconds apart (pydantic's plugins before its module is
    imported, the policy registry when it first resolves a name); the CLI holds one block for the
    length of a command, so what is installed is read once per command, as fresh as before. Outside
    a block, and in the reference mode, every lookup reads afresh.
    """
    token = _ONE_PASS.set(_OnePass(groups))
    try:
        yield
    finally:
        _ONE_PASS.reset(token)


def _lookup(groups: frozenset[str]) -> dict[str, tuple[Found, ...]]:
    if not reference_mode():
        try:
            return _scan(groups)
        except _Unmodelled:
            pass
    return _by_importlib(groups)


def _by_importlib(groups: frozenset[str]) -> dict[str, tuple[Found, ...]]:
    from importlib.metadata import entry_points

    out: dict[str, tuple[Found, ...]] = {}
    for group in sorted(groups):
        try:
            listed = list(entry_points(group=group))
        except (TypeError, ValueError):
            _locate_unreadable()  # raises the located error when the pass finds the file
            raise
        found = tuple(Found(ep.name, ep.value, ep.group, None, getattr(ep, "dist", None)) for ep in listed)
        if found:
            out[group] = found
    return out


def distribution_folder(name: str) -> str | None:
    """The metadata folder :func:`importlib.metadata.distribution` reads for ``name``: the first one
    of that normalized name along ``sys.path``. None in the reference mode, where the pass does not
    model what is installed, or where it finds none: ask importlib.metadata then (which raises
    ``PackageNotFoundError`` for none)."""
    if reference_mode():
        return None
    wanted = _normalize(name.lower())
    try:
        _only_the_path_finder()
        for entry in sys.path:
            for found, folder in _metadata_folders(entry):
                if found == wanted:
                    return folder
    except _Unmodelled:
        pass
    return None


def _only_the_path_finder() -> None:
    path_finder = importlib.machinery.PathFinder
    if getattr(path_finder, "find_distributions", None) is None:
        # the importlib_metadata backport, once imported, takes this over from the standard library
        raise _Unmodelled("the standard path finder does not find distributions here")
    for finder in sys.meta_path:
        if getattr(finder, "find_distributions", None) is not None and finder is not path_finder:
            raise _Unmodelled(f"{finder!r} finds distributions")


def _scan(groups: frozenset[str]) -> dict[str, tuple[Found, ...]]:
    _only_the_path_finder()
    out: dict[str, list[Found]] = {}
    for folder in _distribution_folders(skip_unmodelled=False):
        for found in _entries(folder, groups):
            out.setdefault(found.group, []).append(found)
    return {group: tuple(found) for group, found in out.items()}


def _locate_unreadable() -> None:
    """Raise :class:`EntryPointsUnreadable` for the file importlib.metadata just failed on, if the pass finds it."""
    for folder in _distribution_folders(skip_unmodelled=True):
        _entries(folder, frozenset())


def _distribution_folders(*, skip_unmodelled: bool) -> Iterator[str]:
    """The metadata folder of each distribution importlib reads, in its order: a later one of a
    name already seen is shadowed. ``skip_unmodelled``: pass over a ``sys.path`` entry the pass does
    not model instead of raising :class:`_Unmodelled`."""
    seen: set[str] = set()
    for entry in sys.path:
        try:
            folders = _metadata_folders(entry)
        except _Unmodelled:
            if not skip_unmodelled:
                raise
            continue
        for name, folder in folders:
            if name not in seen:
                seen.add(name)
                yield folder


def _metadata_folders(entry: str) -> list[tuple[str, str]]:
    """``(normalized name, folder)`` of each metadata folder in the ``sys.path`` entry, grouped by name."""
    if not isinstance(entry, str):
        raise _Unmodelled(f"sys.path holds {entry!r}")
    root = entry or "."
    if os.path.basename(entry).lower().endswith(".egg"):
        raise _Unmodelled(f"{entry} is an egg")
    try:
        children = os.listdir(root)
    except OSError:
        if os.path.isfile(root):
            raise _Unmodelled(f"{entry} is a file (a zip?)") from None
        return []  # absent, or not a folder: importlib finds nothing there either
    grouped: dict[str, list[str]] = {}
    for child in children:
        low = child.lower()
        if not low.endswith(_SUFFIXES):
            continue
        name = _normalize(low.rpartition(".")[0].partition("-")[0])
        if not child.endswith(_SUFFIXES) or not name:  # importlib names such a folder from its METADATA
            raise _Unmodelled(f"{child}: named by its METADATA")
        grouped.setdefault(name, []).append(child)
    return [(name, os.path.join(entry, child)) for name, children_ in grouped.items() for child in children_]


def _normalize(name: str) -> str:
    # importlib.metadata.Prepared.normalize: PEP 503 with "_" for the separator
    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")


def _entries(folder: str, groups: frozenset[str]) -> list[Found]:
    path = os.path.join(folder, "entry_points.txt")
    try:
        raw_bytes = _read(path)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
        return []  # importlib reads such a distribution as having no entry points
    except OSError:
        raise _Unmodelled(f"{path} unreadable") from None
    try:
        text = raw_bytes.decode("utf-8")
    except UnicodeDecodeError as exc:
        lineno = raw_bytes.count(b"\n", 0, exc.start) + 1
        raise _unreadable(path, lineno, "the file is not UTF-8 text (its first bad byte is on this line)") from None
    found: list[Found] = []
    group: str | None = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            group = line.strip("[]")
            continue
        if group is None:
            continue
        name, sep, value = line.partition("=")
        if not sep:
            raise _unreadable(path, lineno, f"{line[:80]!r} under [{group[:80]}] is not 'name = value'")
        if group in groups:
            found.append(Found(name.strip(), value.strip(), group, folder))
    return found


def _unreadable(path: str, lineno: int, what: str) -> EntryPointsUnreadable:
    return EntryPointsUnreadable(
        f"{what}: importlib.metadata cannot read this installed distribution's entry points, "
        "and pydantic's plugin lookup and capplan's policy registry read every distribution's",
        location=f"{path}:{lineno}",
        hint=f"reinstall or remove the distribution installed as {os.path.dirname(path)}")


def _read(path: str) -> bytes:
    # os.open, not open(): most distributions have no entry_points.txt, and a failed open() builds a
    # text wrapper's worth of machinery first (about 4.4 against 3 ms for 178 distributions here).
    # Text mode's newline translation is not needed: str.splitlines breaks at "\r\n" and "\r" too.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)

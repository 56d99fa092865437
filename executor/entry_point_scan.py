"""Entry points of a few groups, read straight from the ``*.dist-info`` folders on ``sys.path``.

``importlib.metadata.entry_points(group=...)`` builds an object for every entry point of every
installed distribution, and pydantic runs a second such scan (its plugin group) before it
builds its first validator: together most of the registry's share of ``capplan lint``'s
start-up. This module reads each distribution's ``entry_points.txt`` once, with the same
discovery rules (``sys.path`` order, folder listing order grouped by normalised name, the first
distribution of a name wins, the same section syntax), and keeps only the groups asked for.

Where those rules would take it somewhere this reader does not go (a zip or egg on
``sys.path``, another finder that discovers distributions, a folder name it cannot read a
distribution name from, an ``entry_points.txt`` importlib.metadata would choke on), :func:`scan`
answers None and callers ask ``importlib.metadata`` itself, which then behaves exactly as before.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from importlib.machinery import PathFinder
from pathlib import Path

POLICY_GROUP = "capplan.policies"
PYDANTIC_PLUGIN_GROUP = "pydantic"  # pydantic.plugin._loader.PYDANTIC_ENTRY_POINT_GROUP
#: the groups read: capplan's policies and pydantic's plugins, in one pass
GROUPS: tuple[str, ...] = (POLICY_GROUP, PYDANTIC_PLUGIN_GROUP)

_INFO_SUFFIXES = (".dist-info", ".egg-info")


@dataclass(frozen=True)
class FoundEntryPoint:
    """One entry point, and the metadata folder of the distribution that declares it."""

    name: str
    value: str
    group: str
    dist_folder: str

    def dist_name(self) -> str:
        """The distribution's name as its METADATA gives it (what ``EntryPoint.dist.name`` says)."""
        from importlib.metadata import PathDistribution

        return str(PathDistribution(Path(self.dist_folder)).name)


def _normalize(name: str) -> str:
    # importlib.metadata.Prepared.normalize: PEP 503, dashes as underscores
    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")


_MEMO: dict[tuple[object, ...], dict[str, list[FoundEntryPoint]] | None] = {}


def scan() -> dict[str, list[FoundEntryPoint]] | None:
    """``{group: [entry points in discovery order]}`` for :data:`GROUPS`, or None (see the module doc).

    Remembered per ``sys.path`` and the folders' modification times, as importlib.metadata
    remembers its folder listings: a distribution installed or removed since is seen.
    """
    if [f for f in sys.meta_path if getattr(f, "find_distributions", None) is not None] != [PathFinder]:
        return None  # e.g. the importlib_metadata backport, which replaces the standard finder
    key: list[object] = []
    for root in sys.path:
        if not isinstance(root, str):
            return None
        try:
            key.append((root, os.stat(root or ".").st_mtime_ns))
        except OSError:
            key.append((root, None))
    memo_key = tuple(key)
    if memo_key in _MEMO:
        return _MEMO[memo_key]
    found = _scan(GROUPS)
    _MEMO.clear()  # one entry: the scan for the current path (threads racing here only scan twice)
    _MEMO[memo_key] = found
    return found


def _scan(groups: tuple[str, ...]) -> dict[str, list[FoundEntryPoint]] | None:
    found: dict[str, list[FoundEntryPoint]] = {group: [] for group in groups}
    seen: set[str] = set()
    for root in sys.path:
        try:
            children = os.listdir(root or ".")
        except OSError:
            if os.path.exists(root or "."):
                return None  # a zip (or something else importlib.metadata may read)
            continue
        if os.path.basename(root).lower().endswith(".egg"):
            return None
        by_name: dict[str, list[str]] = {}
        for child in children:
            low = child.lower()
            if low.endswith(_INFO_SUFFIXES):
                by_name.setdefault(_normalize(low.rpartition(".")[0].partition("-")[0]), []).append(child)
        for folders in by_name.values():
            for child in folders:
                stem, ext = os.path.splitext(child)
                if ext not in _INFO_SUFFIXES:
                    return None  # importlib.metadata would name it from its METADATA
                name = _normalize(stem.partition("-")[0])
                if name in seen:
                    continue
                seen.add(name)
                folder = os.path.join(root, child)
                if not _read_groups(folder, found):
                    return None
    return found


def _read_groups(folder: str, found: dict[str, list[FoundEntryPoint]]) -> bool:
    """Add ``folder``'s entry points of the wanted groups; False where importlib.metadata would fail."""
    try:
        with open(os.path.join(folder, "entry_points.txt"), encoding="utf-8") as stream:
            text = stream.read()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
        return True  # importlib.metadata reads these as "no entry points"
    except (OSError, UnicodeDecodeError):
        return False
    section: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")
            continue
        if section is None:
            continue
        if "=" not in line:
            return False  # importlib.metadata raises on such a line
        if section in found:
            name, value = line.split("=", 1)
            found[section].append(FoundEntryPoint(name.strip(), value.strip(), section, folder))
    return True


def skip_pydantic_plugin_scan() -> None:
    """When no distribution declares a pydantic plugin, tell pydantic so before it looks.

    pydantic discovers plugins with a full ``importlib.metadata`` entry-point scan the first
    time it builds a validator, and caches the answer (``pydantic.plugin._loader._plugins``).
    When this module's scan finds no entry point in pydantic's group, that answer is known to
    be empty, and it is filled in here; in every other case (plugins declared, a scan this
    module cannot do, a pydantic without that cache) pydantic is left to look for itself.
    """
    found = scan()
    if found is None or found[PYDANTIC_PLUGIN_GROUP]:
        return
    try:
        from pydantic.plugin import _loader
    except ImportError:
        return
    if getattr(_loader, "_plugins", ...) is None and not getattr(_loader, "_loading_plugins", True):
        _loader._plugins = {}

"""pydantic's plugin lookup, answered from the entry-point pass when no plugin is installed.

Seam *entry points* (``benchmarks/compiler_speed.py``, the start-up rows). pydantic looks its
plugins up once per process, on the first validator it builds
(``pydantic.plugin._loader.get_plugins``): it reads the ``pydantic`` group of every installed
distribution through :mod:`importlib.metadata`. Two costs come with that:

- the lookup itself (about 21 ms with 179 distributions here): answered by the pass of
  :mod:`capplan.core.entry_points`, which reads the same group for a fraction of it;
- importing :mod:`importlib.metadata` at all, which ``pydantic.plugin._loader`` does at its top
  (about 35 ms: it imports the e-mail parser, ``zipfile``, ``csv`` and ``importlib.resources``).
  Where the answer is "no plugins", the loader is imported with a stand-in for that one name,
  whose ``entry_points`` imports the real module the first time it is called; nothing calls it
  unless the memo is cleared, and then it answers as importlib does.

Where a plugin is installed, ``PYDANTIC_DISABLE_PLUGINS`` is set, pydantic has looked already, or
keeps its memo elsewhere, nothing is touched and pydantic looks as it always does. The reference
mode asks importlib.metadata and leaves pydantic to look itself.
"""

from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType
from typing import Any

from capplan.core.entry_points import found_groups
from capplan.core.reference_mode import reference_mode

#: the group pydantic reads its plugins from (``pydantic.plugin._loader``)
PYDANTIC_GROUP = "pydantic"
#: pydantic's own switch for its plugins; when a user set it, pydantic's reading of it stands
PYDANTIC_DISABLE_VARIABLE = "PYDANTIC_DISABLE_PLUGINS"

_LOADER = "pydantic.plugin._loader"
_METADATA = "importlib.metadata"
_STAND_IN = "_capplan_stand_in"


def answer_pydantic_plugin_lookup() -> None:
    """Tell pydantic it has no plugins when none is installed, so it does not look again.

    Where the pass finds no entry point in the ``pydantic`` group, pydantic's lookup would find
    none either: its memo is set to what it would have found (no plugins).

    An ``entry_points.txt`` importlib.metadata cannot read would stop pydantic's lookup with a bare
    ``TypeError``: it is reported here instead, located
    (:class:`capplan.core.entry_points.EntryPointsUnreadable`), in both modes.
    """
    if PYDANTIC_DISABLE_VARIABLE in os.environ:
        return
    loaded = sys.modules.get(_LOADER)
    if loaded is not None and not _still_to_look(loaded):
        return
    found = found_groups(frozenset({PYDANTIC_GROUP}))
    if found or reference_mode():
        return
    try:
        loader = loaded or _import_loader_without_metadata()
    except ImportError:
        return
    if _still_to_look(loader):
        vars(loader)["_plugins"] = {}  # the module's memo, as get_plugins leaves it after finding none


def _still_to_look(loader: ModuleType) -> bool:
    # the memo as pydantic keeps it before its first lookup; any other shape is left alone
    return getattr(loader, "_plugins", False) is None and getattr(loader, "_loading_plugins", True) is False


def _import_loader_without_metadata() -> ModuleType:
    """``pydantic.plugin._loader``, imported with a stand-in for :mod:`importlib.metadata` when that
    is not imported yet. The loader takes only ``entry_points`` from it; any other name it asks for
    gets the real module, imported then."""
    if _METADATA in sys.modules:
        return importlib.import_module(_LOADER)
    stand_in = ModuleType(_METADATA, "importlib.metadata until something calls into it")
    vars(stand_in).update(entry_points=_entry_points_on_call, __getattr__=_real_attribute, **{_STAND_IN: True})
    sys.modules[_METADATA] = stand_in
    try:
        return importlib.import_module(_LOADER)
    finally:
        if sys.modules.get(_METADATA) is stand_in:
            del sys.modules[_METADATA]


def _real_metadata() -> ModuleType:
    if getattr(sys.modules.get(_METADATA), _STAND_IN, False):
        del sys.modules[_METADATA]  # the stand-in, asked for another name while the loader imports
    return importlib.import_module(_METADATA)


def _entry_points_on_call(*args: Any, **kwargs: Any) -> Any:
    """:func:`importlib.metadata.entry_points`, the module imported on the first call."""
    return _real_metadata().entry_points(*args, **kwargs)


def _real_attribute(name: str) -> Any:
    if name.startswith("__") and name.endswith("__"):
        # the import system asks a module for __path__ and the like: the stand-in has none
        raise AttributeError(f"module {_METADATA!r} has no attribute {name!r}")
    return getattr(_real_metadata(), name)

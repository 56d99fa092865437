"""Every module of some of capplan's layers imported, for tests that look across all of them."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable


def import_layers(layers: Iterable[str]) -> None:
    """Import each module under ``capplan.<layer>`` (a ``__main__`` is skipped: it runs its command line).

    A module that needs an optional extra that is not installed (ray) is skipped; any other
    import error fails the caller."""
    for layer in layers:
        package = importlib.import_module(f"capplan.{layer}")
        for info in pkgutil.walk_packages(package.__path__, f"capplan.{layer}."):
            if info.name.endswith(".__main__"):
                continue
            try:
                importlib.import_module(info.name)
            except ModuleNotFoundError as exc:
                if (exc.name or "").startswith("capplan"):
                    raise

"""Task environments: ``package.module:ClassName`` whose public methods are the tools.

One fresh instance per trial, so state such as a database never leaks between trials. The
final state recorded for grading is the instance's public attributes (names not starting with
``_``), copied to JSON-safe data after the conversation ends.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.util
import inspect
import json
import os
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

from capplan.trials.static_environment import find_module_file

_IMPORT_LOCK = threading.RLock()
#: Prefix of the names task modules are imported under (never the name the task file gives).
MODULE_PREFIX = "capplan_task_env_"


class EnvironmentLoadError(Exception):
    """The environment named by a task cannot be imported or is not a class."""


def load_class(target: str, task_dir: Path | None) -> type[Any]:
    """Import ``package.module:ClassName``: by path from ``task_dir``, else an installed module.

    This runs the module's code: only ``capplan trial run`` and ``capplan lint
    --import-environments`` call it.
    """
    module_name, _, class_name = target.partition(":")
    module = import_task_module(module_name, task_dir)
    cls = getattr(module, class_name, None)
    if cls is None:
        names = [n for n, v in vars(module).items() if inspect.isclass(v) and not n.startswith("_")]
        raise EnvironmentLoadError(
            f"module {module_name!r} has no class {class_name!r}" + (f" (classes: {', '.join(sorted(names))})" if names else "")
        )
    if not inspect.isclass(cls):
        raise EnvironmentLoadError(f"{target} is a {type(cls).__name__}, not a class")
    return cls


def import_task_module(module_name: str, task_dir: Path | None) -> ModuleType:
    """The module a task names, imported without touching ``sys.path``.

    A module under ``task_dir`` (``pkg/mod/__init__.py`` or ``pkg/mod.py``) is loaded from its file
    under a name of its own, ``capplan_task_env_<sha256 of the resolved path>``: a ``difflib.py``
    beside a task cannot stand in for the standard module, and two task packs with a module of the
    same name never share it. Its own package's relative imports work as usual; no bytecode is
    written into the task's folder. A module not found there is imported as an installed one (on
    a Ray worker, the job's working dir). Whatever the import raises, ``SystemExit`` included,
    becomes an :class:`EnvironmentLoadError`.
    """
    with _IMPORT_LOCK:
        written = sys.dont_write_bytecode
        sys.dont_write_bytecode = True
        try:
            found = find_module_file(module_name, task_dir) if task_dir is not None else None
            if found is None:
                return importlib.import_module(module_name)
            assert task_dir is not None
            return _import_by_path(module_name, task_dir)
        except ImportError as exc:
            raise EnvironmentLoadError(f"cannot import module {module_name!r}: {exc}") from None
        except BaseException as exc:  # the task author's code: SystemExit or KeyboardInterrupt at import included
            raise EnvironmentLoadError(f"importing {module_name!r} raised {type(exc).__name__}: {exc}") from None
        finally:
            sys.dont_write_bytecode = written


def _import_by_path(module_name: str, task_dir: Path) -> ModuleType:
    parts = module_name.split(".")
    top = task_dir / parts[0]
    # as the import system decides: a folder with __init__.py, else pkg.py, else a namespace folder
    package = (top / "__init__.py").is_file() or (len(parts) > 1 and top.is_dir())
    location = (top if package else top.with_name(parts[0] + ".py")).resolve()
    root = MODULE_PREFIX + hashlib.sha256(str(location).encode("utf-8")).hexdigest()[:32]
    if root not in sys.modules:
        init = location / "__init__.py"
        if not package:
            spec = importlib.util.spec_from_file_location(root, location)
        elif init.is_file():
            spec = importlib.util.spec_from_file_location(root, init, submodule_search_locations=[str(location)])
        else:  # a namespace package: nothing to run, only a folder to find submodules in
            spec = importlib.machinery.ModuleSpec(root, None, is_package=True)
            spec.submodule_search_locations = [str(location)]
        if spec is None:
            raise ImportError(f"no loader for {location.name}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[root] = module
        try:
            if spec.loader is not None:
                spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[root]
            raise
    # submodules through the package's own __path__: the import system, never sys.path
    return importlib.import_module(".".join([root, *parts[1:]])) if len(parts) > 1 else sys.modules[root]


def module_files(module_name: str, task_dir: Path | None) -> list[Path] | None:
    """The files :func:`import_task_module` loads ``module_name`` from, or None when it is an installed module.

    A module is its one file; a package is every ``.py`` file below its folder (hidden folders
    and ``__pycache__`` left out, links not followed), since any of them may be imported by
    it later. Nothing is imported: the run folder digests these files as part of the run's
    identity.
    """
    if task_dir is None or find_module_file(module_name, task_dir) is None:
        return None
    parts = module_name.split(".")
    top = task_dir / parts[0]
    package = (top / "__init__.py").is_file() or (len(parts) > 1 and top.is_dir())
    if not package:
        return [top.with_name(parts[0] + ".py").resolve()]
    found: list[Path] = []
    for folder, dirs, names in os.walk(top.resolve(), followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        found += [Path(folder) / n for n in names if n.endswith(".py") and os.path.isfile(Path(folder) / n)]
    return sorted(found)


def resolve_function(target: str, task_dir: Path | None) -> Any:
    """Import ``package.module:function`` the same way; :class:`LookupError` names what is missing."""
    module_name, _, attr = target.partition(":")
    try:
        module = import_task_module(module_name, task_dir)
    except EnvironmentLoadError as exc:
        raise LookupError(str(exc)) from None
    function = getattr(module, attr, None)
    if not callable(function):
        raise LookupError(f"module {module_name!r} has no function {attr!r}")
    return function


def tool_methods(cls: type[Any]) -> dict[str, Any]:
    """The environment's public methods by name: exactly the tools it implements."""
    return {
        name: member
        for name, member in inspect.getmembers(cls, predicate=inspect.isfunction)
        if not name.startswith("_")
    }


def final_state(instance: Any) -> dict[str, Any]:
    """The instance's public attributes as JSON-safe data (deep-copied through JSON)."""
    public = {k: v for k, v in vars(instance).items() if not k.startswith("_")}
    state: dict[str, Any] = json.loads(json.dumps(public, default=_json_default, sort_keys=True))
    return state


def _json_default(value: Any) -> Any:
    if isinstance(value, (set, frozenset, tuple)):
        return sorted(value, key=repr) if isinstance(value, (set, frozenset)) else list(value)
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if hasattr(value, "__dict__"):
        return {k: v for k, v in vars(value).items() if not k.startswith("_")}
    return repr(value)

"""Task environments: ``package.module:ClassName`` whose public methods are the tools.

One fresh instance per trial, so state such as a database never leaks between trials. The
final state recorded for grading is the instance's public attributes (names not starting with
``_``), copied to JSON-safe data after the conversation ends.
"""

from __future__ import annotations

import importlib
import inspect
import json
import sys
import threading
from pathlib import Path
from typing import Any

_IMPORT_LOCK = threading.Lock()


class EnvironmentLoadError(Exception):
    """The environment named by a task cannot be imported or is not a class."""


def load_class(target: str, task_dir: Path | None) -> type[Any]:
    """Import ``package.module:ClassName``, looking in ``task_dir`` before ``sys.path``."""
    module_name, _, class_name = target.partition(":")
    with _IMPORT_LOCK:
        if task_dir is not None and str(task_dir) not in sys.path:
            sys.path.insert(0, str(task_dir))
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise EnvironmentLoadError(f"cannot import module {module_name!r}: {exc}") from None
        except Exception as exc:  # a module that fails at import time is the task author's to fix
            raise EnvironmentLoadError(f"importing {module_name!r} raised {type(exc).__name__}: {exc}") from None
    cls = getattr(module, class_name, None)
    if cls is None:
        names = [n for n, v in vars(module).items() if inspect.isclass(v) and not n.startswith("_")]
        raise EnvironmentLoadError(
            f"module {module_name!r} has no class {class_name!r}" + (f" (classes: {', '.join(sorted(names))})" if names else "")
        )
    if not inspect.isclass(cls):
        raise EnvironmentLoadError(f"{target} is a {type(cls).__name__}, not a class")
    return cls


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

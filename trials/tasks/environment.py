"""Task environments: one or more component classes whose public methods are the tools.

A task's ``environment`` is ``package.module:ClassName`` (one component, flat state) or a list
of components, each ``{ref, args, name, setup, ignore_methods}`` with ``ref`` a module class or
``rel/path.py:ClassName`` (a file relative to the task). :class:`TrialEnvironment` is one fresh
set of instances per trial, so state such as a database never leaks between trials; tools
dispatch by method name to the component that has it. The state recorded for grading is each
component's ``state()`` (when it has one and no tool is named ``state``) or its public
attributes, through the one encoder (:mod:`capplan.trials.tasks.state_encoding`).
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import importlib.machinery
import importlib.util
import inspect
import os
import sys
import threading
from pathlib import Path
from types import ModuleType
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from capplan.trials.tasks.code_refs import check_module, check_path
from capplan.trials.tasks.state_encoding import StateEncodingError, encode_attributes, encode_state_value
from capplan.trials.tasks.static_environment import find_module_file
from capplan.trials.tasks.taskfile import EnvironmentComponent, TaskFile, is_path_ref, ref_parts


class LoadedComponents(Protocol):
    """What :meth:`TrialEnvironment.create` reads of a loaded task (``capplan.trials.tasks.loading.LoadedTask``)."""

    @property
    def task(self) -> TaskFile: ...

    @property
    def classes(self) -> tuple[type[Any], ...]: ...

    @property
    def tool_owners(self) -> Mapping[str, int]: ...

    @property
    def user_classes(self) -> tuple[type[Any], ...]: ...

    @property
    def user_tool_owners(self) -> Mapping[str, int]: ...

__all__ = ["EnvironmentLoadError", "StateEncodingError", "TrialEnvironment", "component_file", "load_class",
           "load_component_class", "import_task_module", "module_files", "resolve_function", "tool_methods"]

_IMPORT_LOCK = threading.RLock()
#: Prefix of the names task modules are imported under (never the name the task file gives).
MODULE_PREFIX = "capplan_task_env_"


class EnvironmentLoadError(Exception):
    """The environment named by a task cannot be imported or is not a class."""


def load_class(target: str, task_dir: Path | None, requires: Sequence[str] = ()) -> type[Any]:
    """Import ``package.module:ClassName``: by path from ``task_dir``, else a module of a distribution in ``requires``.

    This runs the module's code: only ``capplan trial run`` and ``capplan lint
    --import-environments`` call it. What a ref may name: :mod:`capplan.trials.tasks.code_refs`.
    """
    module_name, _, class_name = target.partition(":")
    module = import_task_module(module_name, task_dir, requires)
    cls = getattr(module, class_name, None)
    if cls is None:
        names = [n for n, v in vars(module).items() if inspect.isclass(v) and not n.startswith("_")]
        raise EnvironmentLoadError(
            f"module {module_name!r} has no class {class_name!r}" + (f" (classes: {', '.join(sorted(names))})" if names else "")
        )
    if not inspect.isclass(cls):
        raise EnvironmentLoadError(f"{target} is a {type(cls).__name__}, not a class")
    return cls


def load_component_class(ref: str, task_dir: Path | None, requires: Sequence[str] = ()) -> type[Any]:
    """The class a component's ``ref`` names: ``package.module:Class`` or ``rel/path.py:Class``."""
    where, class_name = ref_parts(ref)
    if not is_path_ref(ref):
        return load_class(ref, task_dir, requires)
    module = import_task_file(where, task_dir)
    cls = getattr(module, class_name, None)
    if cls is None:
        names = [n for n, v in vars(module).items() if inspect.isclass(v) and not n.startswith("_")]
        raise EnvironmentLoadError(
            f"{where} has no class {class_name!r}" + (f" (classes: {', '.join(sorted(names))})" if names else ""))
    if not inspect.isclass(cls):
        raise EnvironmentLoadError(f"{ref} is a {type(cls).__name__}, not a class")
    return cls


def component_file(relative: str, task_dir: Path | None) -> Path:
    """The file a ``rel/path.py`` ref names (resolved); :class:`EnvironmentLoadError` when it is not there.

    On a Ray worker of another machine the task's folder does not exist: there the file is looked up in the
    job's working dir (the current directory), where the Ray backend stages it, as installed modules are.
    """
    if task_dir is None:
        raise EnvironmentLoadError(f"{relative} is relative to the task file's folder, and this task has none")
    base = task_dir if task_dir.is_dir() else Path.cwd()
    check_path(relative, base)  # a RefNotAllowed (a LookupError) is not caught as a load error
    path = (base / relative).resolve()
    if not path.is_file():
        raise EnvironmentLoadError(f"no file {relative} in the task file's folder ({path.parent.name}/)")
    return path


def import_task_file(relative: str, task_dir: Path | None) -> ModuleType:
    """A ``.py`` file relative to ``task_dir``, run as a module named for its resolved path.

    Two task packs with files of the same name never share a module, nothing is put on
    ``sys.path``, no bytecode is written; whatever the import raises is an :class:`EnvironmentLoadError`.
    """
    path = component_file(relative, task_dir)
    name = MODULE_PREFIX + hashlib.sha256(str(path).encode("utf-8")).hexdigest()[:32]
    with _IMPORT_LOCK:
        if name in sys.modules:
            return sys.modules[name]
        written = sys.dont_write_bytecode
        sys.dont_write_bytecode = True
        try:
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:
                raise EnvironmentLoadError(f"{relative} cannot be loaded as a Python module")
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            try:
                spec.loader.exec_module(module)
            except BaseException as exc:  # the task author's code: SystemExit or KeyboardInterrupt included
                del sys.modules[name]
                raise EnvironmentLoadError(f"importing {relative} raised {type(exc).__name__}: {exc}") from None
            return module
        finally:
            sys.dont_write_bytecode = written


def import_task_module(module_name: str, task_dir: Path | None, requires: Sequence[str] = (), *,
                       grader: bool = False) -> ModuleType:
    """The module a task names, imported without touching ``sys.path``.

    A module under ``task_dir`` (``pkg/mod/__init__.py`` or ``pkg/mod.py``) is loaded from its file
    under a name of its own, ``capplan_task_env_<sha256 of the resolved path>``: a ``difflib.py``
    beside a task cannot stand in for the standard module, and two task packs with a module of the
    same name never share it. Its own package's relative imports work as usual; no bytecode is
    written into the task's folder (on a Ray worker, where the task's folder does not exist, its
    modules are staged in the job's working dir and found there). A module not found there must
    belong to a distribution in ``requires`` (:func:`capplan.trials.tasks.code_refs.check_module`, which
    raises :class:`~capplan.trials.tasks.code_refs.RefNotAllowed` before anything is imported); it is then
    imported as an installed one. Whatever the import raises, ``SystemExit`` included, becomes an
    :class:`EnvironmentLoadError`.
    """
    base = None if task_dir is None else task_dir if task_dir.is_dir() else Path.cwd()
    found = find_module_file(module_name, base) if base is not None else None
    if found is None:
        check_module(module_name, requires, grader=grader)
    with _IMPORT_LOCK:
        written = sys.dont_write_bytecode
        sys.dont_write_bytecode = True
        try:
            if found is None:
                return importlib.import_module(module_name)
            assert base is not None
            return _import_by_path(module_name, base)
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
    if module_name.endswith(".py"):  # a path ref: that one file
        if task_dir is None or not (task_dir / module_name).is_file():
            return None
        return [(task_dir / module_name).resolve()]
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


def resolve_function(target: str, task_dir: Path | None, requires: Sequence[str] = ()) -> Any:
    """Import ``package.module:function`` or ``rel/path.py:function`` the same way; :class:`LookupError` names
    what is missing (:class:`~capplan.trials.tasks.code_refs.RefNotAllowed`: what may not be named). capplan's own
    graders (``capplan.…``) may be named too."""
    module_name, attr = ref_parts(target)
    try:
        module = import_task_file(module_name, task_dir) if is_path_ref(target) else \
            import_task_module(module_name, task_dir, requires, grader=True)
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


#: the method name that, on a component, is its state hook (unless a tool has that name)
STATE_HOOK = "state"


class TrialEnvironment:
    """One trial's fresh set of component instances; tools dispatch by method name."""

    def __init__(self, instances: list[tuple[EnvironmentComponent, Any]], owners: Mapping[str, int], *,
                 flat: bool, declared: set[str], user_instances: list[tuple[EnvironmentComponent, Any]] | None = None,
                 user_owners: Mapping[str, int] | None = None, user_declared: set[str] | None = None) -> None:
        """``owners`` maps a tool to the index of the component serving it; ``flat``: the string form's state.

        ``user_instances`` are the user's own components (dual control), ``user_owners`` their tools' owners:
        the agent's lookups never reach them, the user's never reach the agent's.
        """
        self.instances = instances
        self._owners = dict(owners)
        self._flat = flat
        self._declared = declared
        self.user_instances = user_instances or []
        self._user_owners = dict(user_owners or {})
        self._user_declared = user_declared or set()

    @classmethod
    def create(cls, loaded: LoadedComponents) -> TrialEnvironment:
        """Construct every component with its args and run its ``setup``; raises whatever task code raises."""
        task = loaded.task
        instances: list[tuple[EnvironmentComponent, Any]] = []
        for component, klass in zip(task.components, loaded.classes):
            # deep copies: task code may keep and change what it is given (BFCL's classes keep the
            # scenario's lists), and the parsed task is shared by every trial of it in this process
            instance = klass(**copy.deepcopy(component.args))
            if component.setup is not None:
                getattr(instance, component.setup.method)(**copy.deepcopy(component.setup.args))
            instances.append((component, instance))
        by_name = {component.component_name: instance for component, instance in instances}
        user_instances: list[tuple[EnvironmentComponent, Any]] = []
        for component, klass in zip(task.user_components, loaded.user_classes):
            # built after the agent's: a user component may be handed agent components it shares a world with
            peers = {parameter: by_name[name] for parameter, name in component.peers.items()}
            instance = klass(**copy.deepcopy(component.args), **peers)
            if component.setup is not None:
                getattr(instance, component.setup.method)(**copy.deepcopy(component.setup.args))
            user_instances.append((component, instance))
        return cls(instances, loaded.tool_owners, flat=task.flat_state, declared={t.name for t in task.tools},
                   user_instances=user_instances, user_owners=loaded.user_tool_owners,
                   user_declared={t.name for t in task.user_tools})

    def method(self, tool_name: str) -> Callable[..., Any] | None:
        """The bound method implementing ``tool_name``; None when no component has it."""
        index = self._owners.get(tool_name)
        if index is None:
            return None
        found = getattr(self.instances[index][1], tool_name, None)
        return found if callable(found) else None

    def user_method(self, tool_name: str) -> Callable[..., Any] | None:
        """The bound method implementing the user's tool ``tool_name``; None when no user component has it."""
        index = self._user_owners.get(tool_name)
        if index is None:
            return None
        found = getattr(self.user_instances[index][1], tool_name, None)
        return found if callable(found) else None

    def user_state(self) -> dict[str, Any] | None:
        """The user's components' state, ``{component: {attr: value}}``; None when the user has none."""
        if not self.user_instances:
            return None
        return {component.component_name: self._one(component, instance, self._user_declared)
                for component, instance in self.user_instances}

    def state(self) -> dict[str, Any]:
        """The state: flat ``{attr: value}`` for the string form, ``{component: {attr: value}}`` for a list.

        Raises :class:`StateEncodingError` naming the component and attribute; task code that
        raises while its state is read (a ``state()`` hook, a property, ``__lt__``) is one too.
        """
        if self._flat:
            component, instance = self.instances[0]
            return self._one(component, instance)
        return {component.component_name: self._one(component, instance) for component, instance in self.instances}

    def _one(self, component: EnvironmentComponent, instance: Any, declared: set[str] | None = None) -> dict[str, Any]:
        name = component.component_name
        declared = self._declared if declared is None else declared
        try:
            hook = getattr(type(instance), STATE_HOOK, None) if STATE_HOOK not in declared else None
            if callable(hook):
                value = encode_state_value(getattr(instance, STATE_HOOK)(), name, "state()")
                if not isinstance(value, dict):
                    raise StateEncodingError(name, "state()", "", f"state() returned a {type(value).__name__}, "
                                             "expected a mapping of names to values")
                return value
            return encode_attributes(instance, name)
        except StateEncodingError:
            raise
        except BaseException as exc:  # the task author's code ran: SystemExit and KeyboardInterrupt included
            raise StateEncodingError(name, None, "", f"reading the state raised {type(exc).__name__}: {exc}") from None

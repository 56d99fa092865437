"""Loading and linting task files: every problem in a file, located, before any call is made.

Beyond the schema, a task is checked against its environment: each component's class must
exist, its constructor must accept its args and its ``setup`` method must exist and take its
args; the declared tools must be exactly the components' public methods (less each one's
``ignore_methods``), each served by one component, with parameters its method accepts; and the
grader may only name tools, arguments, state keys, user turns and functions that exist.

One pass: the schema's errors and every check of the blocks that did validate are reported
together. A broken tool does not hide a wrong constructor argument, a broken grader does not
hide an undeclared method (checks that need a block that did not validate are skipped, never
guessed).

Three ways to check: ``capplan lint`` reads the components' and grader's source
(:mod:`capplan.trials.tasks.static_environment`: nothing a file names is imported, run or
constructed); ``capplan trial run`` imports the modules (each import under the task-code
deadline) but constructs and calls nothing: constructor args are checked against the
signature and state keys read from the source; ``capplan lint --import-environments`` also
constructs the components, runs their ``setup`` and reads their state. In every mode a ref
must name code a task may name (:mod:`capplan.trials.tasks.code_refs`), checked before any import.

A run reads and validates each task file once: :func:`load_task` keeps what it loaded by
resolved path and content digest, and :func:`load_task_text` (the trial's side, from the
spec's copy of the text) finds it there. The data is read by libyaml; positions are computed
only when there is a problem to locate (:mod:`capplan.trials.tasks.task_source`).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import inspect
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
from pydantic import TypeAdapter, ValidationError

from capplan.core.reference_mode import speed_memo
from capplan.core.diagnostics import Diagnostic, InputError, did_you_mean
from capplan.core.input_limits import MAX_CONFIG_BYTES, InputLimitError, read_limited
from capplan.core.pydantic_errors import parse
from capplan.core.yaml_source import SourceFile, read_source
from capplan.trials.tasks import static_environment
from capplan.trials.tasks.environment import (
    STATE_HOOK,
    StateEncodingError,
    TrialEnvironment,
    load_component_class,
    tool_methods,
)
from capplan.trials.tasks.environment import resolve_function as _resolve_function
from capplan.trials.tasks.code_refs import RefNotAllowed, check_module, check_path, installed
from capplan.trials.tasks.static_environment import NotStatic, Signature, StaticLookupError
from capplan.trials.tasks.task_code import (
    DEFAULT_TIMEOUT_S,
    TaskCodeCancelled,
    TaskCodeFailed,
    TaskCodeRunner,
    TaskCodeTimedOut,
)
from capplan.trials.tasks.task_kind import looks_like_task  # noqa: F401  (its home before task_kind; kept importable here)
from capplan.trials.tasks.task_source import task_source_from_bytes
from capplan.trials.tasks.taskfile import (
    GRADER_KEYWORDS,
    EnvironmentComponent,
    ExpectedAction,
    GraderFunction,
    NamedToolChoice,
    ScriptedUser,
    TaskFile,
    TaskTool,
    TurnExpectation,
    is_path_ref,
    ref_parts,
)

#: What the warnings about an unchecked part say, so a user finds the flag that checks it.
IMPORT_FLAG_HINT = ("capplan lint --import-environments checks it by running the task's code (imports its "
                    "environment and grader modules, constructs the environment)")
Loc = tuple[str | int, ...]


@dataclass(frozen=True)
class LoadedTask:
    """A validated task, where it came from, and its components' classes."""

    task: TaskFile
    path: Path
    text: str
    classes: tuple[type[Any], ...]
    #: tool name -> index of the component that serves it
    tool_owners: Mapping[str, int] = field(default_factory=dict)
    #: the user's own components' classes (dual control), and user tool name -> index of the one serving it
    user_classes: tuple[type[Any], ...] = ()
    user_tool_owners: Mapping[str, int] = field(default_factory=dict)

    @functools.cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def pack(self) -> str:
        return self.task.pack or self.path.resolve().parent.name


# --- loading (trial run) ---------------------------------------------------------------------------

#: tasks loaded in this process, by (resolved path, sha256 of the text): the driver loads every task
#: before the run, each trial loads its spec's copy; the second is a lookup. It stays in the reference
#: mode: loading imports the task's code and constructs its components, which must happen once
_LOADED: dict[tuple[str, str], LoadedTask] = {}
_LOADED_MAX = 20_000
_LOADED_LOCK = threading.Lock()


def _remember(key: tuple[str, str], loaded: LoadedTask) -> LoadedTask:
    with _LOADED_LOCK:
        if len(_LOADED) >= _LOADED_MAX:
            del _LOADED[next(iter(_LOADED))]
        return _LOADED.setdefault(key, loaded)


def load_task(path: Path) -> LoadedTask:
    """Read, validate and check a task file, importing its code; raises :class:`InputError` with every problem.

    For ``capplan trial run`` only: the components' and grader's modules are imported (by path,
    see :mod:`capplan.trials.tasks.environment`) and the components are constructed once, as a check.
    """
    try:
        raw = read_limited(path, MAX_CONFIG_BYTES)
        text = raw.decode("utf-8")
    except (OSError, InputLimitError, UnicodeDecodeError):
        read_source(path)  # raises the located error
        raise  # pragma: no cover  (read_source raised)
    key = (str(path.resolve()), hashlib.sha256(raw).hexdigest())
    with _LOADED_LOCK:
        hit = _LOADED.get(key)
    if hit is not None:
        return hit
    return _remember(key, _checked(task_source_from_bytes(raw, str(path)), path, text))


def load_task_text(text: str, path: str) -> LoadedTask:
    """The same, for task content carried in a trial spec (``path`` locates errors and imports)."""
    raw = text.encode("utf-8")
    key = (str(Path(path).resolve()), hashlib.sha256(raw).hexdigest())
    with _LOADED_LOCK:
        hit = _LOADED.get(key)
    if hit is not None:
        return hit
    return _remember(key, _checked(task_source_from_bytes(raw, path), Path(path), text))


def lint_task(path: Path, *, import_environments: bool = False) -> list[Diagnostic]:
    """Every diagnostic for one task file (``capplan lint``), in one pass.

    Nothing the file names is imported or run unless ``import_environments`` is set: the
    components and grader are checked from their source, and what that cannot decide is a
    warning naming ``--import-environments``.
    """
    try:
        raw = read_limited(path, MAX_CONFIG_BYTES)
    except (OSError, InputLimitError):
        try:
            read_source(path)
        except InputError as exc:
            return list(exc.diagnostics)
        return []  # pragma: no cover  (read_source raised)
    try:
        source = task_source_from_bytes(raw, str(path))
    except InputError as exc:
        return list(exc.diagnostics)
    view, diags = _view(source, path)
    if import_environments:
        diags += _Checks(source, view).imported()[0]
    else:
        diags += _Checks(source, view).static()
    return diags


def _checked(source: SourceFile, path: Path, text: str) -> LoadedTask:
    view, diags = _view(source, path)
    checks = _Checks(source, view)
    found, classes = checks.imported(construct=False)  # validation constructs nothing
    diags += found
    errors = [d for d in diags if d.severity == "error"]
    if errors or view.task is None or classes is None or checks.user_classes is None:
        raise InputError(errors or diags)
    user_classes = checks.user_classes
    return LoadedTask(view.task, path, text, tuple(classes), view.owners(classes), tuple(user_classes),
                      view.user_owners(user_classes))


# --- what validated --------------------------------------------------------------------------------


@dataclass
class _Component:
    loc: Loc  # where the component is: ("environment",) for the string form, ("environment", i) in a list
    spec: EnvironmentComponent
    args_loc: Loc


@dataclass
class _View:
    """What of a task file validated: the whole task, or the blocks that did (the checks skip the rest)."""

    folder: Path
    task: TaskFile | None
    tools: list[tuple[int, TaskTool]]
    declared: set[str]  # every tool name the file declares, also of tools that did not validate
    tools_complete: bool  # ``declared`` is every tool's name
    components: list[_Component]
    components_complete: bool
    flat: bool
    actions: list[tuple[int, ExpectedAction]] = field(default_factory=list)
    expected_state: dict[str, Any] | None = None
    per_turn: list[tuple[int, TurnExpectation]] = field(default_factory=list)
    function: GraderFunction | None = None
    function_loc: Loc = ("grader", "function")
    user_turns: int | None = None  # a scripted user's turn count
    tool_choice: NamedToolChoice | None = None
    requires: tuple[str, ...] = ()  # distributions whose modules the refs may name (see capplan.trials.tasks.code_refs)
    code_timeout_s: float = DEFAULT_TIMEOUT_S  # the task-code deadline an import runs under
    # the user's own side (dual control), when the whole task validated
    user_tools: list[tuple[int, TaskTool]] = field(default_factory=list)
    user_components: list[_Component] = field(default_factory=list)

    @property
    def reads_state(self) -> bool:
        return (self.expected_state is not None or any(t.expected_state is not None for _, t in self.per_turn)
                or self.function is not None)

    def owners(self, classes: list[type[Any]]) -> dict[str, int]:
        return _owners(self.components, classes, self.declared)

    @property
    def user_declared(self) -> set[str]:
        return {t.name for _, t in self.user_tools}

    def user_owners(self, classes: list[type[Any]]) -> dict[str, int]:
        return _owners(self.user_components, classes, self.user_declared)


def _owners(components: list[_Component], classes: list[type[Any]], declared: set[str]) -> dict[str, int]:
    owners: dict[str, int] = {}
    for index, (component, cls) in enumerate(zip(components, classes)):
        for name in _candidates(component.spec, set(tool_methods(cls)), declared):
            if name in declared:
                owners.setdefault(name, index)
    return owners


def _candidates(component: EnvironmentComponent, public: set[str], declared: set[str]) -> set[str]:
    """A component's public methods that are tools: not ignored, not its state hook (unless a tool has that name)."""
    names = public - set(component.ignore_methods)
    if STATE_HOOK not in declared:
        names.discard(STATE_HOOK)
    return names


def _view(source: SourceFile, path: Path) -> tuple[_View, list[Diagnostic]]:
    folder = path.resolve().parent
    try:
        task = parse(source, TaskFile)
    except InputError as exc:
        return _partial_view(source.data, folder), list(exc.diagnostics)
    task._folder = folder  # noqa: SLF001  (set once, where the file is read)
    grader = task.grader
    components = ([_Component(("environment", i), c, ("environment", i, "args")) for i, c in enumerate(task.components)]
                  if not task.flat_state else [_Component(("environment",), task.components[0], ("environment_args",))])
    view = _View(folder, task, list(enumerate(task.tools)), {t.name for t in task.tools}, True, components, True,
                 task.flat_state,
                 list(enumerate(grader.expected_actions or [])) if grader else [],
                 grader.expected_state if grader else None,
                 list(enumerate(grader.per_turn or [])) if grader else [],
                 grader.function_ref if grader else None,
                 user_turns=len(task.user.turns) if isinstance(task.user, ScriptedUser) else None,
                 tool_choice=task.tool_choice if isinstance(task.tool_choice, NamedToolChoice) else None,
                 requires=tuple(task.requires), code_timeout_s=task.tool_timeout_s or DEFAULT_TIMEOUT_S)
    if grader is not None and isinstance(grader.function, GraderFunction):
        view.function_loc = ("grader", "function", "ref")
    view.user_tools = list(enumerate(task.user_tools))
    view.user_components = [_Component(("user", "environment", i), c, ("user", "environment", i, "args"))
                            for i, c in enumerate(task.user_components)]
    return view, []


def _valid(annotation: Any, value: Any) -> Any:
    """``value`` validated as ``annotation``, or None when it does not validate (the schema errors say why)."""
    try:
        return TypeAdapter(annotation).validate_python(value)
    except (ValidationError, ValueError, TypeError):
        return None


def _field_value(model: Any, name: str, data: Mapping[str, Any]) -> Any:
    """One field of ``model`` validated on its own (its declared type and constraints), or None."""
    from typing import Annotated

    if name not in data:
        return None
    info = model.model_fields[name]
    return _valid(Annotated[info.annotation, info], data[name])


def _partial_view(data: Any, folder: Path) -> _View:
    """The blocks of a task file that failed the schema as a whole, each validated on its own."""
    data = data if isinstance(data, dict) else {}
    tools: list[tuple[int, TaskTool]] = []
    declared: set[str] = set()
    raw_tools = data.get("tools")
    complete = isinstance(raw_tools, list)
    for i, raw in enumerate(raw_tools if isinstance(raw_tools, list) else []):
        if isinstance(raw, dict) and isinstance(raw.get("name"), str):
            declared.add(raw["name"])
        else:
            complete = False  # a tool whose name is unknown: the set of declared names is not known
        tool = _valid(TaskTool, raw)
        if tool is not None:
            tools.append((i, tool))
    components: list[_Component] = []
    env = data.get("environment")
    env_complete = False
    flat = isinstance(env, str)
    if flat:
        ref = _field_value(TaskFile, "environment", {"environment": env})
        args = data.get("environment_args", {})
        if isinstance(ref, str) and isinstance(args, dict):
            spec = _valid(EnvironmentComponent, {"ref": ref, "args": args})
            if spec is not None:
                components.append(_Component(("environment",), spec, ("environment_args",)))
                env_complete = True
    elif isinstance(env, list):
        env_complete = bool(env)
        for i, raw in enumerate(env):
            spec = _valid(EnvironmentComponent, raw)
            if spec is None:
                env_complete = False
            else:
                components.append(_Component(("environment", i), spec, ("environment", i, "args")))
    view = _View(folder, None, tools, declared, complete, components, env_complete, flat)
    grader = data.get("grader")
    if isinstance(grader, dict):
        from capplan.trials.tasks.taskfile import Grader

        actions = grader.get("expected_actions")
        for i, raw in enumerate(actions if isinstance(actions, list) else []):
            action = _valid(ExpectedAction, raw)
            if action is not None:
                view.actions.append((i, action))
        view.expected_state = _field_value(Grader, "expected_state", grader)
        per_turn = grader.get("per_turn")
        for i, raw in enumerate(per_turn if isinstance(per_turn, list) else []):
            turn = _valid(TurnExpectation, raw)
            if turn is not None:
                view.per_turn.append((i, turn))
        function = _field_value(Grader, "function", grader)
        view.function = GraderFunction(ref=function) if isinstance(function, str) else function
        if isinstance(function, GraderFunction):
            view.function_loc = ("grader", "function", "ref")
    user = data.get("user")
    if isinstance(user, dict) and user.get("mode") == "scripted":
        scripted = _valid(ScriptedUser, user)
        view.user_turns = len(scripted.turns) if scripted is not None else None
    choice = _field_value(TaskFile, "tool_choice", data)
    view.tool_choice = choice if isinstance(choice, NamedToolChoice) else None
    view.requires = tuple(_field_value(TaskFile, "requires", data) or ())
    view.code_timeout_s = _field_value(TaskFile, "tool_timeout_s", data) or DEFAULT_TIMEOUT_S
    return view


# --- the checks ------------------------------------------------------------------------------------


@dataclass
class _Found:
    """What was learnt of one component, from its source or by importing it."""

    methods: dict[str, Signature | None]  # its tool candidates (public, not ignored)
    public: set[str]  # every public method
    functions: dict[str, Signature | None] | None  # every method, for setup; None: not knowable
    uncertain: set[str]  # names that may or may not be methods ("*": the list may be incomplete)
    state_keys: frozenset[str] | None
    state_reason: str | None


class _Checks:
    def __init__(self, source: SourceFile, view: _View) -> None:
        self.source = source
        self.view = view
        self.diags: list[Diagnostic] = []
        self.bad_setup: set[Loc] = set()  # components whose setup is already an error: not called
        #: the user's components' classes after an import check (None: one did not load)
        self.user_classes: list[type[Any]] | None = []

    def diag(self, loc: Loc, code: str, message: str, hint: str | None = None) -> None:
        self.diags.append(self.source.diag(loc, code, message, hint))

    def unchecked(self, loc: Loc, message: str) -> None:
        self.diags.append(self.source.diag(loc, "not-checked-statically", message, IMPORT_FLAG_HINT,
                                           severity="warning"))

    # -- the two modes ----------------------------------------------------------------------

    def static(self) -> list[Diagnostic]:
        """Every check, from the modules' source: nothing is imported, run or constructed."""
        bad_tools = self._tools()
        self._requires()
        found: list[_Found | None] = []
        for component in self.view.components:
            found.append(self._static_component(component))
        self._methods(found, bad_tools)
        self._grader(bad_tools, [f.state_keys if f else None for f in found],
                     [f.state_reason if f else "the component was not read" for f in found], found)
        self._peers_only_for_users()
        for component in self.view.user_components:
            if self._ref_allowed((*component.loc, "ref"), component.spec.ref):
                self.unchecked(component.loc, f"the user's component {component.spec.ref} and its tools were not "
                                              "checked")
        function = self.view.function
        if function is not None and self._ref_allowed(self._function_loc(), function.ref, grader=True):
            try:
                self._grader_args(static_environment.grader_function(function.ref, self.view.folder))
            except StaticLookupError as exc:
                self.diag(self._function_loc(), "grader-import", str(exc),
                          "the module is looked up by path in the task file's folder")
            except NotStatic as exc:
                self.unchecked(self._function_loc(), f"grader {function.ref} was not checked: {exc}")
        return self.diags

    def imported(self, *, construct: bool = True) -> tuple[list[Diagnostic], list[type[Any]] | None]:
        """Every check, importing the modules (each under the task-code deadline); also the classes (None when one
        did not load).

        ``construct`` (``capplan lint --import-environments``): also construct the components, run their setup
        and read their state. ``capplan trial run`` validates with ``construct=False``: nothing is constructed
        or called (constructor args are checked against the signature, state keys from the source where it
        can be read); a trial constructs its environment on its task-code worker.
        """
        view = self.view
        bad_tools = self._tools()
        self._requires()
        runner = TaskCodeRunner(name="task-import")
        try:
            loaded_classes: list[type[Any] | None] = []
            found: list[_Found | None] = []
            for component in view.components:
                cls = self._import_component(component, runner)
                loaded_classes.append(cls)
                found.append(self._imported_found(component, cls) if cls is not None else None)
            classes = [c for c in loaded_classes if c is not None]
            self._methods(found, bad_tools)
            keys: list[frozenset[str] | None] = [None] * len(view.components)
            reasons: list[str | None] = ["the component was not constructed"] * len(view.components)
            if construct:
                instances = self._construct(loaded_classes)
                if instances is not None and view.components_complete:
                    keys, reasons = self._imported_state(instances)
            else:
                for component, cls in zip(view.components, loaded_classes):
                    if cls is not None:
                        self._constructor_args(component, cls)
                if view.components_complete:
                    keys, reasons = self._source_state_keys()
            self._grader(bad_tools, keys, reasons, found, imported=True)
            self.user_classes = self._user_side(runner)
            function = view.function
            if function is not None and self._ref_allowed(self._function_loc(), function.ref, grader=True) \
                    and self._import_free(self._function_loc()):
                try:
                    resolved = _hung_watch(runner).call(f"importing {function.ref}", _resolve_function, function.ref, view.folder,
                                           view.requires, timeout_s=view.code_timeout_s)
                except (TaskCodeFailed, TaskCodeTimedOut, TaskCodeCancelled) as exc:
                    self.diag(self._function_loc(), "grader-import", _import_failure(exc),
                              _IMPORT_HANG_HINT if isinstance(exc, TaskCodeTimedOut) else None)
                else:
                    self._grader_args(_function_signature(resolved))
        finally:
            runner.close()
        loaded = classes if len(classes) == len(view.components) and view.components_complete else None
        return self.diags, loaded

    # -- what the task's code may be --------------------------------------------------------

    def _requires(self) -> None:
        """Every distribution the task declares is installed (read from its metadata; nothing is imported)."""
        for i, name in enumerate(self.view.requires):
            if not installed(name):
                self.diag(("requires", i), "requires-missing", f"distribution {name!r} is not installed",
                          f"install it (pip install {name}) in the environment capplan runs in")

    def _ref_allowed(self, loc: Loc, ref: str, *, grader: bool = False) -> bool:
        """Whether ``ref`` names code a task may name (:mod:`capplan.trials.tasks.code_refs`); else a located error."""
        where, _ = ref_parts(ref)
        folder = self.view.folder
        base = folder if folder.is_dir() else Path.cwd()  # as the import looks (a Ray worker: the working dir)
        try:
            if is_path_ref(ref):
                check_path(where, base)
            elif static_environment.find_module_file(where, base) is None:
                check_module(where, self.view.requires, grader=grader)
        except RefNotAllowed as exc:
            self.diag(loc, exc.code, str(exc), exc.hint)
            return False
        return True

    # -- tools -----------------------------------------------------------------------------

    def _tools(self) -> set[int]:
        """Duplicate names, each tool's parameter schema and when it is offered; the tools whose schema is unusable."""
        bad: set[int] = set()
        seen: set[str] = set()
        view = self.view
        for i, tool in view.tools:
            if tool.name in seen:
                self.diag(("tools", i, "name"), "duplicate-tool", f"tool {tool.name!r} is declared twice")
            seen.add(tool.name)
            if not _schema_ok(self, i, tool.parameters):
                bad.add(i)
            if (tool.available_from_turn is not None and view.user_turns is not None
                    and tool.available_from_turn >= view.user_turns):
                self.diag(("tools", i, "available_from_turn"), "tool-never-offered",
                          f"tool {tool.name!r} is offered from user turn {tool.available_from_turn} (0-based), but "
                          f"the scripted user has {view.user_turns} turn(s)",
                          f"use a turn index below {view.user_turns}, or drop the tool")
        if view.tool_choice is not None and view.tools_complete and view.tool_choice.name not in view.declared:
            self.diag(("tool_choice", "name"), "unknown-tool",
                      f"tool_choice names tool {view.tool_choice.name!r}, which the task does not declare",
                      did_you_mean(view.tool_choice.name, view.declared))
        return bad

    def _methods(self, found: list[_Found | None], bad_tools: set[int]) -> None:
        """Declared tools against the components' methods: each served by exactly one, none left undeclared."""
        view = self.view
        known = all(f is not None for f in found) and view.components_complete
        open_list = not known or any("*" in f.uncertain for f in found if f is not None)
        every = sorted({n for f in found if f is not None for n in f.methods})
        for i, tool in view.tools:
            owners = [(c, f) for c, f in zip(view.components, found) if f is not None and tool.name in f.methods]
            if len(owners) > 1:
                names = " and ".join(c.spec.component_name for c, _ in owners)
                self.diag(("tools", i, "name"), "duplicate-tool-owner",
                          f"tool {tool.name!r} is a method of more than one component ({names})",
                          "list it under ignore_methods: of the components that must not serve it")
                continue
            if not owners:
                if open_list or any(tool.name in f.uncertain for f in found if f is not None):
                    continue  # defined in a way lint cannot read: the warning about the class says so
                self.diag(("tools", i, "name"), "unknown-tool", self._no_method(tool.name),
                          did_you_mean(tool.name, every))
                continue
            signature = owners[0][1].methods[tool.name]
            if signature is not None and i not in bad_tools:
                self._signature(("tools", i, "parameters"), tool.name, tool.parameters, signature)
        for component, f in zip(view.components, found):
            if f is None:
                continue
            for name in sorted(set(f.methods) - view.declared):
                where = ("tools",) if view.flat else component.loc
                self.diag(where, "undeclared-method",
                          f"{self._what(component)} has public method {name!r}, which the task does not declare",
                          "declare it under tools:, list it under ignore_methods: (component form), or rename it "
                          "with a leading underscore if it is not a tool")
            if "*" not in f.uncertain:
                for j, name in enumerate(component.spec.ignore_methods):
                    if name not in f.public and name not in f.uncertain:
                        self.diag((*component.loc, "ignore_methods", j), "unknown-method",
                                  f"{self._what(component)} has no public method {name!r} to ignore",
                                  did_you_mean(name, f.public))

    # -- the user's own side (dual control) -------------------------------------------------

    def _peers_only_for_users(self) -> None:
        for component in self.view.components:
            if component.spec.peers and not self.view.flat:
                self.diag((*component.loc, "peers"), "environment-peers",
                          "peers: hands a user component the agent's components; an agent component has none",
                          "move the component under user.environment:, or drop peers:")

    def _user_side(self, runner: TaskCodeRunner) -> list[type[Any]] | None:
        """The user's tools and components, as the agent's are checked; their classes (None when one did not load)."""
        view = self.view
        self._peers_only_for_users()
        bad: set[int] = set()
        for i, tool in view.user_tools:
            if not _schema_ok(self, i, tool.parameters, base=("user", "tools")):
                bad.add(i)
        agent_names = [c.spec.component_name for c in view.components]
        classes: list[type[Any] | None] = []
        found: list[_Found | None] = []
        declared = view.user_declared
        for component in view.user_components:
            for parameter, name in component.spec.peers.items():
                if name not in agent_names:
                    self.diag((*component.loc, "peers", parameter), "environment-peers",
                              f"peers names component {name!r}, which the agent's environment does not have",
                              did_you_mean(name, agent_names))
                if parameter in component.spec.args:
                    self.diag((*component.loc, "peers", parameter), "environment-peers",
                              f"{parameter!r} is given by both args: and peers:", "keep one of them")
            cls = self._import_component(component, runner)
            classes.append(cls)
            if cls is None:
                found.append(None)
                continue
            self._constructor_args(component, cls)
            try:
                public, functions = _class_signatures(cls)
            except BaseException as exc:  # listing members runs the class's descriptors: the task author's code
                self.diag(component.loc, "environment-import",
                          f"listing the methods of {component.spec.ref} raised {type(exc).__name__}: {exc}")
                found.append(None)
                continue
            self._setup(component, functions, set())
            candidates = _candidates(component.spec, set(public), declared)
            found.append(_Found({n: public[n] for n in candidates}, set(public), functions, set(), None, None))
        for i, tool in view.user_tools:
            owners = [(c, f) for c, f in zip(view.user_components, found) if f is not None and tool.name in f.methods]
            if len(owners) > 1:
                self.diag(("user", "tools", i, "name"), "duplicate-tool-owner",
                          f"user tool {tool.name!r} is a method of more than one user component",
                          "list it under ignore_methods: of the components that must not serve it")
            elif not owners and all(f is not None for f in found):
                every = sorted({n for f in found if f is not None for n in f.methods})
                self.diag(("user", "tools", i, "name"), "unknown-tool",
                          f"no user component has a method {tool.name!r}", did_you_mean(tool.name, every))
            elif owners and i not in bad and (signature := owners[0][1].methods[tool.name]) is not None:
                self._signature(("user", "tools", i, "parameters"), tool.name, tool.parameters, signature)
        for component, f in zip(view.user_components, found):
            for name in sorted(set(f.methods) - declared) if f is not None else []:
                self.diag(component.loc, "undeclared-method",
                          f"user component {component.spec.component_name!r} ({component.spec.ref}) has public method "
                          f"{name!r}, which user.tools does not declare",
                          "declare it under user.tools:, or list it under ignore_methods:")
        loaded = [c for c in classes if c is not None]
        return loaded if len(loaded) == len(classes) else None

    def _no_method(self, name: str) -> str:
        if self.view.flat and self.view.components:
            return f"environment {self.view.components[0].spec.ref} has no method {name!r}"
        return f"no environment component has a method {name!r}"

    def _what(self, component: _Component) -> str:
        if self.view.flat:
            return f"environment {component.spec.ref}"
        return f"component {component.spec.component_name!r} ({component.spec.ref})"

    def _signature(self, loc: Loc, name: str, schema: dict[str, Any], signature: Signature) -> None:
        if signature.var_keyword:
            return
        accepted = set(signature.accepted)
        props = set(_properties(schema))
        for prop in sorted(props - accepted):
            self.diag((*loc, "properties", prop), "unknown-parameter", f"method {name}() has no parameter {prop!r}",
                      did_you_mean(prop, accepted))
        missing = sorted(signature.required - props)
        if missing:
            self.diag(loc, "missing-parameter",
                      f"method {name}() requires {', '.join(map(repr, missing))}, which the schema does not declare")

    # -- components, from source ------------------------------------------------------------

    def _static_component(self, component: _Component) -> _Found | None:
        spec = component.spec
        ref_loc = (*component.loc, "ref") if not self.view.flat else component.loc
        if not self._ref_allowed(ref_loc, spec.ref):
            return None
        try:
            env = static_environment.environment_class(spec.ref, self.view.folder)
        except StaticLookupError as exc:
            self.diag(ref_loc, "environment-import", str(exc),
                      "a module is looked up by path in the task file's folder (pkg/mod.py or pkg/mod/__init__.py); "
                      "a .py ref is a file relative to the task file")
            return None
        except NotStatic as exc:
            self.unchecked(ref_loc, f"environment {spec.ref} was not checked: {exc}")
            return None
        uncertain = set(env.uncertain) | ({"*"} if env.open_reason else set())
        if env.open_reason is not None:
            self.unchecked(ref_loc, f"environment {spec.ref} may have public methods lint cannot see ({env.open_reason})")
        if env.uncertain:
            names = sorted(env.uncertain)
            shown = ", ".join(map(repr, names[:10])) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
            verb = "is a method (a tool)" if len(names) == 1 else "are methods (tools)"
            self.unchecked(ref_loc, f"environment {spec.ref}: whether {shown} {verb} depends on a decorator or an "
                                    "assignment lint cannot read")
        if env.init is not None:
            self._arguments(component, env.init)
        functions = None if env.open_reason else env.functions
        self._setup(component, functions, uncertain)
        candidates = _candidates(spec, set(env.methods), self.view.declared)
        hook = STATE_HOOK in env.methods and STATE_HOOK not in self.view.declared
        keys = env.state_keys if not hook else None
        reason = env.state_reason if not hook else f"{spec.component_name} has a state() method: its keys are known " \
                                                    "only by calling it"
        return _Found({n: env.methods[n] for n in candidates}, set(env.methods), functions, uncertain, keys, reason)

    def _arguments(self, component: _Component, init: Signature) -> None:
        """A component's args against its constructor's signature (what constructing it would have raised)."""
        given = set(component.spec.args) | set(component.spec.peers)  # peers are constructor arguments too
        ref = component.spec.ref
        if not init.var_keyword:
            for key in sorted(given - set(init.accepted)):
                self.diag((*component.args_loc, key), "environment-args", f"{ref}() has no parameter {key!r}",
                          did_you_mean(key, init.accepted))
        missing = sorted(init.required - given)
        if missing:
            self.diag(component.args_loc, "environment-args",
                      f"{ref}() requires {', '.join(map(repr, missing))}, which "
                      f"{'environment_args' if self.view.flat else 'args'} does not give")

    def _setup(self, component: _Component, functions: Mapping[str, Signature | None] | None,
               uncertain: set[str]) -> None:
        setup = component.spec.setup
        if setup is None:
            return
        loc = (*component.loc, "setup", "method")
        if functions is None or setup.method in uncertain:
            self.unchecked(loc, f"setup method {setup.method!r} of {component.spec.ref} was not checked")
            return
        if setup.method not in functions:
            self.bad_setup.add(component.loc)
            self.diag(loc, "setup-method", f"{component.spec.ref} has no method {setup.method!r} to call as setup",
                      did_you_mean(setup.method, [n for n in functions if not n.startswith("__")]))
            return
        signature = functions[setup.method]
        if signature is None or signature.var_keyword:
            return
        args_loc = (*component.loc, "setup", "args")
        if not set(setup.args) <= set(signature.accepted) or not signature.required <= set(setup.args):
            self.bad_setup.add(component.loc)
        for key in sorted(set(setup.args) - set(signature.accepted)):
            self.diag((*args_loc, key), "setup-args", f"{setup.method}() has no parameter {key!r}",
                      did_you_mean(key, signature.accepted))
        missing = sorted(signature.required - set(setup.args))
        if missing:
            self.diag(args_loc, "setup-args",
                      f"{setup.method}() requires {', '.join(map(repr, missing))}, which setup.args does not give")

    # -- components, imported --------------------------------------------------------------

    def _import_component(self, component: _Component, runner: TaskCodeRunner) -> type[Any] | None:
        ref_loc = (*component.loc, "ref") if not self.view.flat else component.loc
        ref = component.spec.ref
        if not self._ref_allowed(ref_loc, ref) or not self._import_free(ref_loc):
            return None  # never imported
        try:  # the import runs the module's code: under the task-code deadline, as any task code
            cls: type[Any] = _hung_watch(runner).call(f"importing {ref}", load_component_class, ref, self.view.folder,
                                                      self.view.requires, timeout_s=self.view.code_timeout_s)
        except (TaskCodeFailed, TaskCodeTimedOut, TaskCodeCancelled) as exc:
            self.diag(ref_loc, "environment-import", _import_failure(exc),
                      _IMPORT_HANG_HINT if isinstance(exc, TaskCodeTimedOut) else
                      "a module is imported from its file in the task file's folder (pkg/mod.py or "
                      "pkg/mod/__init__.py), else as a module of a distribution under requires:; a .py ref is a "
                      "file in the task file's folder")
            return None
        return cls

    def _import_free(self, loc: Loc) -> bool:
        """False (with a located error) while an earlier import of this process is still running past its deadline.

        A hung import keeps the import lock: every later one would wait its whole deadline behind it, task
        after task, so they are refused at once instead.
        """
        hung = _still_hung()
        if hung is None:
            return True
        self.diag(loc, "environment-import", f"not imported: {hung} is still running past its deadline, and every "
                  "import of task code waits behind it", _IMPORT_HANG_HINT)
        return False

    def _constructor_args(self, component: _Component, cls: type[Any]) -> None:
        """The component's args against its constructor's signature, read without constructing anything."""
        try:
            params = list(inspect.signature(cls).parameters.values())
        except BaseException:  # noqa: BLE001 - an unreadable signature (C classes, odd metaclasses): not checked
            return
        kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        self._arguments(component, Signature(
            tuple(p.name for p in params if p.kind in kinds),
            frozenset(p.name for p in params if p.kind in kinds and p.default is inspect.Parameter.empty),
            any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)))

    def _source_state_keys(self) -> tuple[list[frozenset[str] | None], list[str | None]]:
        """Each component's state keys as its source shows them (None where it cannot be read): nothing constructed."""
        keys: list[frozenset[str] | None] = []
        reasons: list[str | None] = []
        for component in self.view.components:
            spec = component.spec
            try:
                env = static_environment.environment_class(spec.ref, self.view.folder)
            except (StaticLookupError, NotStatic):
                keys.append(None)
                reasons.append("the component was not constructed")
                continue
            hook = STATE_HOOK in env.methods and STATE_HOOK not in self.view.declared
            keys.append(env.state_keys if not hook else None)
            reasons.append(env.state_reason if not hook else "the component was not constructed")
        return keys, reasons

    def _imported_found(self, component: _Component, cls: type[Any]) -> _Found | None:
        spec = component.spec
        try:
            public, functions = _class_signatures(cls)
        except BaseException as exc:  # listing members runs the class's descriptors: the task author's code
            self.diag(component.loc, "environment-import",
                      f"listing the methods of {spec.ref} raised {type(exc).__name__}: {exc}")
            return None
        self._setup(component, functions, set())
        candidates = _candidates(spec, set(public), self.view.declared)
        return _Found({n: public[n] for n in candidates}, set(public), functions, set(), None, None)

    def _construct(self, classes: list[type[Any] | None]) -> list[Any] | None:
        """Each loaded component constructed and set up (each failure a diagnostic); None unless all were."""
        instances: list[Any] = []
        for component, cls in zip(self.view.components, classes):
            if cls is None:
                continue
            spec = component.spec
            try:
                instance = cls(**copy.deepcopy(spec.args))  # the parsed task is shared: task code gets copies
            except BaseException as exc:  # the constructor is the task author's code, SystemExit included
                what = "environment_args" if self.view.flat else "args"
                self.diag(component.args_loc, "environment-args",
                          f"{spec.ref}(**{what}) raised {type(exc).__name__}: {exc}")
                continue
            if spec.setup is not None and component.loc in self.bad_setup:
                continue  # calling it would only raise what its diagnostic says
            if spec.setup is not None:
                try:
                    getattr(instance, spec.setup.method)(**copy.deepcopy(spec.setup.args))
                except BaseException as exc:  # the setup is the task author's code
                    self.diag((*component.loc, "setup"), "environment-setup",
                              f"{spec.component_name}.{spec.setup.method}(**setup.args) raised "
                              f"{type(exc).__name__}: {exc}")
                    continue
            instances.append(instance)
        return instances if len(instances) == len(self.view.components) else None

    def _imported_state(self, instances: list[Any]) -> tuple[list[frozenset[str] | None], list[str | None]]:
        view = self.view
        specs = [c.spec for c in view.components]
        env = TrialEnvironment(list(zip(specs, instances)), {}, flat=view.flat, declared=view.declared)
        try:
            state = env.state()
        except StateEncodingError as exc:
            index = next((i for i, c in enumerate(view.components) if c.spec.component_name == exc.component), 0)
            self.diags.append(self.source.diag(
                view.components[index].loc, "state-encoding", f"the state cannot be recorded: {exc}",
                None if view.reads_state else "a trial records why its state is missing; no grader here reads it",
                severity="error" if view.reads_state else "warning"))
            return [None] * len(instances), ["the state could not be encoded"] * len(instances)
        if view.flat:
            return [frozenset(state)], [None]
        return ([frozenset(state.get(s.component_name, {})) for s in specs], [None] * len(specs))

    # -- the grader ------------------------------------------------------------------------

    def _grader(self, bad_tools: set[int], keys: list[frozenset[str] | None], reasons: list[str | None],
                found: list[_Found | None], imported: bool = False) -> None:
        view = self.view
        names = {t.name: (i, t) for i, t in view.tools}
        for i, action in view.actions:
            loc: Loc = ("grader", "expected_actions", i)
            if action.name not in view.declared:
                self.diag((*loc, "name"), "unknown-tool",
                          f"expected action names tool {action.name!r}, which the task does not declare",
                          did_you_mean(action.name, sorted(view.declared)))
                continue
            if action.name not in names or names[action.name][0] in bad_tools:
                continue  # its tool did not validate, or its schema is already an error
            props = set(_properties(names[action.name][1].parameters))
            for arg in sorted(set(action.arguments) - props):
                self.diag((*loc, "arguments", arg), "unknown-parameter",
                          f"tool {action.name!r} has no parameter {arg!r}", did_you_mean(arg, props))
        if view.function is not None:
            loc = (*view.function_loc[:2], "args")
            for key in sorted(set(view.function.args) & set(GRADER_KEYWORDS)):
                self.diag((*loc, key), "grader-args", f"{key!r} is what capplan passes the grader itself",
                          "rename the argument")
        if view.expected_state is not None:
            self._state_keys(("grader", "expected_state"), view.expected_state, keys, reasons)
        for i, turn in view.per_turn:
            if view.user_turns is not None and i >= view.user_turns:
                self.diag(("grader", "per_turn", i), "per-turn-count",
                          f"per_turn entry {i} is for user turn {i} (0-based), but the scripted user has "
                          f"{view.user_turns} turn(s)", "one entry per user turn, first to last")
                continue
            if turn.expected_state is not None:
                self._state_keys(("grader", "per_turn", i, "expected_state"), turn.expected_state, keys, reasons)

    def _state_keys(self, loc: Loc, expected: dict[str, Any], keys: list[frozenset[str] | None],
                    reasons: list[str | None]) -> None:
        view = self.view
        if not view.components_complete or not view.components:
            return
        if view.flat:
            self._keys_in(loc, expected, keys[0], reasons[0], "the environment's state")
            return
        by_name = {c.spec.component_name: i for i, c in enumerate(view.components)}
        for name, value in expected.items():
            if name not in by_name:
                self.diag((*loc, name), "unknown-state-key",
                          f"the state has no component {name!r} (the state of a component list is keyed by "
                          "component name)", did_you_mean(name, by_name))
                continue
            if isinstance(value, dict):
                index = by_name[name]
                self._keys_in((*loc, name), value, keys[index], reasons[index], f"component {name!r}'s state")

    def _keys_in(self, loc: Loc, expected: dict[str, Any], keys: frozenset[str] | None, reason: str | None,
                 what: str) -> None:
        if keys is None:
            if reason is not None and reason not in ("the component was not read", "the component was not constructed",
                                                     "the state could not be encoded"):
                self.unchecked(loc, f"{'.'.join(map(str, loc))} keys were not checked: {reason}")
            return
        for key in sorted(set(expected) - keys):
            self.diag((*loc, key), "unknown-state-key", f"{what} has no key {key!r}", did_you_mean(key, keys))

    def _grader_args(self, signature: Signature | None) -> None:
        """A custom grader's ``args`` against its signature: after (trajectory, final_state, task), keywords
        it declares, never one capplan passes itself (metadata, checkpoints, turn)."""
        function = self.view.function
        if function is None or signature is None:
            return
        loc = (*self.view.function_loc[:2], "args")
        accepted = set(signature.accepted) - set(GRADER_KEYWORDS)
        if not signature.var_keyword:
            for key in sorted(set(function.args) - accepted - set(GRADER_KEYWORDS)):
                self.diag((*loc, key), "grader-args", f"grader {function.ref}() has no keyword parameter {key!r}",
                          did_you_mean(key, accepted))
        missing = sorted(signature.required - set(function.args) - set(GRADER_KEYWORDS))
        if missing:
            self.diag(loc if function.args else self.view.function_loc, "grader-args",
                      f"grader {function.ref}() requires {', '.join(map(repr, missing))}, which its args do not give")

    def _function_loc(self) -> Loc:
        return self.view.function_loc


def _schema_ok(checks: _Checks, i: int, parameters: dict[str, Any], *, base: Loc = ("tools",)) -> bool:
    """The tool's parameters are a usable object schema (each problem is a diagnostic)."""
    problem = _schema_problem(json.dumps(_without_prose(parameters), sort_keys=True, default=str))
    if problem is None:
        return True
    where, code, message, hint = problem
    checks.diag((*base, i, "parameters", *where), code, message, hint)
    return False


#: keywords whose value the meta-schema only requires to be a string: every string checks the same
_PROSE = frozenset({"description", "title", "$comment"})


def _without_prose(value: Any) -> Any:
    """``value`` with every string-valued description / title / comment emptied: the schema check's cache key
    (tasks of a benchmark share tool schemas whose descriptions differ task by task)."""
    if isinstance(value, dict):
        return {k: "" if k in _PROSE and isinstance(v, str) else _without_prose(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_prose(v) for v in value]
    return value


@speed_memo(maxsize=4096)
def _schema_problem(schema_json: str) -> tuple[tuple[str | int, ...], str, str, str | None] | None:
    """What is wrong with a tool's parameter schema, or None; cached: a pack's tasks share their tools."""
    schema = json.loads(schema_json)
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return tuple(exc.absolute_path), "tool-schema", f"not a valid JSON Schema: {_schema_message(exc)}", None
    except RecursionError:
        return (), "tool-schema", "the schema is nested too deeply", None
    if schema.get("type", "object") != "object":
        return ("type",), "tool-schema", "tool parameters must be an object schema", \
            "use `type: object` with `properties:`"
    if not isinstance(schema.get("properties", {}), dict):
        return ("properties",), "tool-schema", "properties must be a mapping of parameter names to schemas", None
    return None


#: the signatures of a class's methods, by class: a pack's tasks share their component classes
_SIGNATURES: dict[type[Any], tuple[dict[str, Signature | None], dict[str, Signature | None]]] = {}
_SIGNATURES_LOCK = threading.Lock()


def _class_signatures(cls: type[Any]) -> tuple[dict[str, Signature | None], dict[str, Signature | None]]:
    """(public methods, every method) of ``cls`` with their keyword signatures; the caller contains what raises."""
    with _SIGNATURES_LOCK:
        hit = _SIGNATURES.get(cls)
    if hit is not None:
        return hit
    public = {name: signature_of(member, cls, name) for name, member in tool_methods(cls).items()}
    functions = {name: signature_of(member, cls, name)
                 for name, member in inspect.getmembers(cls, predicate=inspect.isfunction)}
    with _SIGNATURES_LOCK:
        return _SIGNATURES.setdefault(cls, (public, functions))


def _function_signature(function: Callable[..., Any]) -> Signature | None:
    """An imported grader's keywords: its parameters after (trajectory, final_state, task); None when unreadable."""
    try:
        params = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return None
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    rest = [p for p in params if p.kind in positional][3:] + [p for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY]
    return Signature(tuple(p.name for p in rest), frozenset(p.name for p in rest if p.default is inspect.Parameter.empty),
                     any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params))


def signature_of(method: Callable[..., Any], cls: type[Any], name: str) -> Signature | None:
    """The keyword view of an imported method (``self`` dropped unless it is a staticmethod)."""
    try:
        params = list(inspect.signature(method).parameters.values())
    except (TypeError, ValueError):
        return None
    if not isinstance(inspect.getattr_static(cls, name, None), staticmethod):
        params = params[1:]  # drop self
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    accepted = tuple(p.name for p in params if p.kind in kinds)
    required = frozenset(p.name for p in params if p.kind in kinds and p.default is inspect.Parameter.empty)
    return Signature(accepted, required, any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params))


def _schema_message(exc: jsonschema.SchemaError) -> str:
    """The validator's complaint without the offending value (which could be anything, a secret included)."""
    validator = str(exc.validator)
    if validator == "type":
        return f"must be of type {exc.validator_value!r}"
    if validator == "enum":
        return "is not one of the allowed values"
    return f"fails the {validator!r} rule of the JSON Schema meta-schema"


def _properties(schema: dict[str, Any]) -> dict[str, Any]:
    props = schema.get("properties", {})
    return props if isinstance(props, dict) else {}


def resolve_function(target: str, task_dir: Path | None = None, requires: Sequence[str] = ()) -> Any:
    """Import ``package.module:function`` or ``rel/path.py:function`` (by path from ``task_dir``, else of a
    distribution in ``requires``); :class:`LookupError` names what is missing or may not be named."""
    return _resolve_function(target, task_dir, requires)


_IMPORT_HANG_HINT = ("a task module's import must return within the task-code deadline (the task's tool_timeout_s, "
                     f"else {DEFAULT_TIMEOUT_S:g} s); a module that blocks at import cannot be a task's code")


#: runners whose imports passed their deadline in this process (their abandoned imports may still hold the lock)
_HUNG_RUNNERS: list[TaskCodeRunner] = []
_HUNG_LOCK = threading.Lock()


class _HungWatch:
    """A runner whose timed-out calls are remembered process-wide (see :meth:`_Checks._import_free`)."""

    def __init__(self, runner: TaskCodeRunner) -> None:
        self.runner = runner

    def call(self, what: str, function: Callable[..., Any], *args: Any, timeout_s: float) -> Any:
        try:
            return self.runner.call(what, function, *args, timeout_s=timeout_s)
        except TaskCodeTimedOut:
            with _HUNG_LOCK:
                _HUNG_RUNNERS.append(self.runner)
            raise


def _hung_watch(runner: TaskCodeRunner) -> _HungWatch:
    return _HungWatch(runner)


def _still_hung() -> str | None:
    """What the oldest import still running past its deadline is (None when none is)."""
    with _HUNG_LOCK:
        for runner in list(_HUNG_RUNNERS):
            running = runner.abandoned_running()
            if running:
                return running[0]
            _HUNG_RUNNERS.remove(runner)  # it returned at last: the lock is free again
    return None


def _import_failure(exc: TaskCodeFailed | TaskCodeTimedOut | TaskCodeCancelled) -> str:
    """What an import under the runner came to: the load error's own message, or what happened."""
    if isinstance(exc, TaskCodeFailed) and exc.kind in ("EnvironmentLoadError", "LookupError", "RefNotAllowed"):
        return exc.message
    return str(exc)

"""Loading and linting task files: every problem in a file, located, before any call is made.

Beyond the schema, a task is checked against its environment: the class must exist, its
constructor must accept ``environment_args``, the declared tools and the environment's public
methods must be the same set, each tool's parameters must be ones its method accepts, and the
grader may only name tools, arguments, state keys and functions that exist.

Two ways to check, the same findings: ``capplan lint`` reads the environment's and grader's
source (:mod:`capplan.trials.static_environment`: nothing a file names is imported, run or constructed);
``capplan trial run``, which runs the task's code anyway, and ``capplan lint
--import-environments`` import the modules by path and construct the environment.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema

from capplan.core.diagnostics import Diagnostic, InputError, did_you_mean
from capplan.core.pydantic_errors import parse
from capplan.core.yaml_source import SourceFile, read_source, source_from_bytes
from capplan.trials import static_environment
from capplan.trials.environment import EnvironmentLoadError, final_state, load_class, tool_methods
from capplan.trials.environment import resolve_function as _resolve_function
from capplan.trials.static_environment import NotStatic, Signature, StaticLookupError
from capplan.trials.task_kind import looks_like_task  # noqa: F401  (its home before task_kind; kept importable here)
from capplan.trials.taskfile import TaskFile

#: What the warnings about an unchecked part say, so a user finds the flag that checks it.
IMPORT_FLAG_HINT = ("capplan lint --import-environments checks it by running the task's code (imports its "
                    "environment and grader modules, constructs the environment)")


@dataclass(frozen=True)
class LoadedTask:
    """A validated task and where it came from."""

    task: TaskFile
    path: Path
    text: str
    environment: type[Any]

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def pack(self) -> str:
        return self.task.pack or self.path.resolve().parent.name


def load_task(path: Path) -> LoadedTask:
    """Read, validate and check a task file, importing its code; raises :class:`InputError` with every problem.

    For ``capplan trial run`` only: the environment and grader modules are imported (by path,
    see :func:`capplan.trials.environment.import_task_module`) and the environment is constructed.
    """
    source = read_source(path)
    return _checked(source, path, path.read_text(encoding="utf-8"))


def load_task_text(text: str, path: str) -> LoadedTask:
    """The same, for task content carried in a trial spec (``path`` locates errors and imports)."""
    return _checked(source_from_bytes(text.encode("utf-8"), path), Path(path), text)


def lint_task(path: Path, *, import_environments: bool = False) -> list[Diagnostic]:
    """Every diagnostic for one task file (``capplan lint``).

    Nothing the file names is imported or run unless ``import_environments`` is set: the
    environment and grader are checked from their source, and what that cannot decide is a
    warning naming ``--import-environments``.
    """
    try:
        source = read_source(path)
        task = _parsed(source, path)
    except InputError as exc:
        return list(exc.diagnostics)
    diags, bad_tools = _check_tools(source, task)
    if import_environments:
        diags += _imported_checks(source, task, bad_tools)[0]
    else:
        diags += _static_checks(source, task, bad_tools)
    return diags


def _parsed(source: SourceFile, path: Path) -> TaskFile:
    task = parse(source, TaskFile)
    task._folder = path.resolve().parent  # noqa: SLF001  (set once, where the file is read)
    return task


def _checked(source: SourceFile, path: Path, text: str) -> LoadedTask:
    task = _parsed(source, path)
    diags, bad_tools = _check_tools(source, task)
    found, cls = _imported_checks(source, task, bad_tools)
    diags += found
    if diags:
        raise InputError(diags)
    assert cls is not None
    return LoadedTask(task, path, text, cls)


def _imported_checks(source: SourceFile, task: TaskFile, bad_tools: set[int]) -> tuple[list[Diagnostic], type[Any] | None]:
    """The checks that import the environment and grader modules and construct the environment."""
    diags: list[Diagnostic] = []
    try:
        cls = load_class(_single_environment(task), task.folder)
    except EnvironmentLoadError as exc:
        diags.append(source.diag(("environment",), "environment-import", str(exc),
                                 "the module is imported from its file in the task file's folder "
                                 "(pkg/mod.py or pkg/mod/__init__.py), else as an installed module"))
        return diags, None
    try:
        methods = {name: signature_of(member, cls, name) for name, member in tool_methods(cls).items()}
    except BaseException as exc:  # listing members runs the class's descriptors: the task author's code
        diags.append(source.diag(("environment",), "environment-import",
                                 f"listing the methods of {task.environment} raised {type(exc).__name__}: {exc}"))
        return diags, None
    diags += _check_methods(source, task, methods, set(), bad_tools)
    instance: Any = None
    try:
        instance = cls(**task.environment_args)
    except BaseException as exc:  # the constructor is the task author's code, SystemExit included
        diags.append(source.diag(("environment_args",), "environment-args",
                                 f"{task.environment}(**environment_args) raised {type(exc).__name__}: {exc}"))
    diags += _check_actions(source, task, bad_tools)
    grader = task.grader
    if grader is not None and grader.expected_state is not None and instance is not None:
        try:
            keys: set[str] | None = set(final_state(instance))
        except BaseException as exc:  # the state is the task author's objects
            diags.append(source.diag(("environment_args",), "environment-args",
                                     f"reading the state of {task.environment} raised {type(exc).__name__}: {exc}"))
            keys = None
        if keys is not None:
            diags += _check_state_keys(source, grader.expected_state, keys)
    if grader is not None and grader.function is not None:
        try:
            _resolve_function(grader.function_ref.ref, task.folder)  # type: ignore[union-attr]
        except LookupError as exc:
            diags.append(source.diag(("grader", "function"), "grader-import", str(exc)))
    return diags, cls


def _static_checks(source: SourceFile, task: TaskFile, bad_tools: set[int]) -> list[Diagnostic]:
    """The same checks from the modules' source: nothing is imported, run or constructed."""
    folder = task.folder
    assert folder is not None
    diags: list[Diagnostic] = []
    env: static_environment.StaticClass | None = None
    try:
        env = static_environment.environment_class(_single_environment(task), folder)
    except StaticLookupError as exc:
        diags.append(source.diag(("environment",), "environment-import", str(exc),
                                 "the module is looked up by path in the task file's folder "
                                 "(pkg/mod.py or pkg/mod/__init__.py)"))
    except NotStatic as exc:
        diags.append(_unchecked(source, ("environment",), f"environment {task.environment} was not checked: {exc}"))
    if env is not None:
        diags += _check_methods(source, task, env.methods, env.uncertain | ({"*"} if env.open_reason else set()),
                                bad_tools)
        if env.open_reason is not None:
            diags.append(_unchecked(source, ("environment",), f"environment {task.environment} may have public "
                                    f"methods lint cannot see ({env.open_reason})"))
        if env.uncertain:
            names = sorted(env.uncertain)
            shown = ", ".join(map(repr, names[:10])) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
            verb = "is a method (a tool)" if len(names) == 1 else "are methods (tools)"
            diags.append(_unchecked(source, ("environment",), f"environment {task.environment}: whether {shown} "
                                    f"{verb} depends on a decorator or an assignment lint cannot read"))
        if env.init is not None:
            diags += _check_arguments(source, task, env.init)
    diags += _check_actions(source, task, bad_tools)
    grader = task.grader
    if grader is not None and grader.expected_state is not None and env is not None:
        if env.state_keys is not None:
            diags += _check_state_keys(source, grader.expected_state, set(env.state_keys))
        else:
            diags.append(_unchecked(source, ("grader", "expected_state"),
                                    f"expected_state keys were not checked: {env.state_reason}"))
    if grader is not None and grader.function is not None:
        try:
            static_environment.grader_function(grader.function_ref.ref, folder)  # type: ignore[union-attr]
        except StaticLookupError as exc:
            diags.append(source.diag(("grader", "function"), "grader-import", str(exc),
                                     "the module is looked up by path in the task file's folder"))
        except NotStatic as exc:
            diags.append(_unchecked(source, ("grader", "function"), f"grader {grader.function} was not checked: {exc}"))
    return diags


def _single_environment(task: TaskFile) -> str:
    components = task.components
    if len(components) != 1 or not task.flat_state:
        raise EnvironmentLoadError("an environment of several components is not loaded by this version")
    return components[0].ref


def _unchecked(source: SourceFile, loc: tuple[str | int, ...], message: str) -> Diagnostic:
    return source.diag(loc, "not-checked-statically", message, IMPORT_FLAG_HINT, severity="warning")


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


def _check_tools(source: SourceFile, task: TaskFile) -> tuple[list[Diagnostic], set[int]]:
    """Duplicate names and each tool's parameter schema; also the indexes of tools whose schema is unusable."""
    diags: list[Diagnostic] = []
    bad: set[int] = set()
    seen: set[str] = set()
    for i, tool in enumerate(task.tools):
        if tool.name in seen:
            diags.append(source.diag(("tools", i, "name"), "duplicate-tool", f"tool {tool.name!r} is declared twice"))
        seen.add(tool.name)
        try:
            jsonschema.Draft202012Validator.check_schema(tool.parameters)
        except jsonschema.SchemaError as exc:
            where = ("tools", i, "parameters", *exc.absolute_path)
            diags.append(source.diag(where, "tool-schema", f"not a valid JSON Schema: {_schema_message(exc)}"))
            bad.add(i)
            continue
        except RecursionError:
            diags.append(source.diag(("tools", i, "parameters"), "tool-schema", "the schema is nested too deeply"))
            bad.add(i)
            continue
        if tool.parameters.get("type", "object") != "object":
            diags.append(source.diag(("tools", i, "parameters", "type"), "tool-schema",
                                     "tool parameters must be an object schema", "use `type: object` with `properties:`"))
            bad.add(i)
        elif not isinstance(tool.parameters.get("properties", {}), dict):
            bad.add(i)
    return diags, bad


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


def _check_methods(source: SourceFile, task: TaskFile, methods: dict[str, Signature | None], uncertain: set[str],
                   bad_tools: set[int]) -> list[Diagnostic]:
    """Declared tools against the environment's public methods (``"*"`` in ``uncertain``: the list may be incomplete)."""
    diags: list[Diagnostic] = []
    declared = {t.name for t in task.tools}
    for i, tool in enumerate(task.tools):
        if tool.name not in methods:
            if tool.name in uncertain or "*" in uncertain:
                continue  # defined in a way lint cannot read: the warning about the class says so
            diags.append(source.diag(("tools", i, "name"), "unknown-tool",
                                     f"environment {task.environment} has no method {tool.name!r}",
                                     did_you_mean(tool.name, methods)))
            continue
        signature = methods[tool.name]
        if signature is not None and i not in bad_tools:
            diags += _check_signature(source, ("tools", i, "parameters"), tool.name, tool.parameters, signature)
    for name in sorted(set(methods) - declared):
        diags.append(source.diag(("tools",), "undeclared-method",
                                 f"environment {task.environment} has public method {name!r}, which the task does not declare",
                                 "declare it under tools:, or rename it with a leading underscore if it is not a tool"))
    return diags


def _check_signature(source: SourceFile, loc: tuple[str | int, ...], name: str, schema: dict[str, Any],
                     signature: Signature) -> list[Diagnostic]:
    if signature.var_keyword:
        return []
    accepted = set(signature.accepted)
    props = set(_properties(schema))
    diags = [
        source.diag((*loc, "properties", prop), "unknown-parameter", f"method {name}() has no parameter {prop!r}",
                    did_you_mean(prop, accepted))
        for prop in sorted(props - accepted)
    ]
    missing = sorted(signature.required - props)
    if missing:
        diags.append(source.diag(loc, "missing-parameter",
                                 f"method {name}() requires {', '.join(map(repr, missing))}, which the schema does not declare"))
    return diags


def _check_arguments(source: SourceFile, task: TaskFile, init: Signature) -> list[Diagnostic]:
    """``environment_args`` against the constructor's signature (what constructing it would have raised)."""
    diags: list[Diagnostic] = []
    given = set(task.environment_args)
    if not init.var_keyword:
        for key in sorted(given - set(init.accepted)):
            diags.append(source.diag(("environment_args", key), "environment-args",
                                     f"{task.environment}() has no parameter {key!r}", did_you_mean(key, init.accepted)))
    missing = sorted(init.required - given)
    if missing:
        diags.append(source.diag(("environment_args",), "environment-args",
                                 f"{task.environment}() requires {', '.join(map(repr, missing))}, "
                                 "which environment_args does not give"))
    return diags


def _check_actions(source: SourceFile, task: TaskFile, bad_tools: set[int]) -> list[Diagnostic]:
    grader = task.grader
    if grader is None:
        return []
    diags: list[Diagnostic] = []
    names = [t.name for t in task.tools]
    for i, action in enumerate(grader.expected_actions or []):
        tool = task.tool(action.name)
        if tool is None:
            diags.append(source.diag(("grader", "expected_actions", i, "name"), "unknown-tool",
                                     f"expected action names tool {action.name!r}, which the task does not declare",
                                     did_you_mean(action.name, names)))
            continue
        if task.tools.index(tool) in bad_tools:
            continue  # its schema is already an error
        props = set(_properties(tool.parameters))
        for arg in sorted(set(action.arguments) - props):
            diags.append(source.diag(("grader", "expected_actions", i, "arguments", arg), "unknown-parameter",
                                     f"tool {action.name!r} has no parameter {arg!r}", did_you_mean(arg, props)))
    return diags


def _check_state_keys(source: SourceFile, expected: dict[str, Any], keys: set[str]) -> list[Diagnostic]:
    return [source.diag(("grader", "expected_state", key), "unknown-state-key",
                        f"the environment's state has no key {key!r}", did_you_mean(key, keys))
            for key in sorted(set(expected) - keys)]


def resolve_function(target: str, task_dir: Path | None = None) -> Any:
    """Import ``package.module:function`` (by path from ``task_dir``); :class:`LookupError` names what is missing."""
    return _resolve_function(target, task_dir)

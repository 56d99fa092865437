"""Loading and linting task files: every problem in a file, located, before any call is made.

Beyond the schema, a task is checked against its environment: the class must import, its
constructor must accept ``environment_args``, the declared tools and the environment's public
methods must be the same set, each tool's parameters must be ones its method accepts, and the
grader may only name tools, arguments and state keys that exist.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema

from compiler.diagnostics import Diagnostic, InputError, did_you_mean
from compiler.pydantic_errors import parse
from compiler.yaml_source import SourceFile, read_source, source_from_bytes
from trials.environment import EnvironmentLoadError, final_state, load_class, tool_methods
from trials.task_kind import looks_like_task  # noqa: F401  (its home before task_kind; kept importable here)
from trials.taskfile import TaskFile


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
    """Read, validate and check a task file; raises :class:`InputError` with every problem."""
    source = read_source(path)
    return _checked(source, path, path.read_text(encoding="utf-8"))


def load_task_text(text: str, path: str) -> LoadedTask:
    """The same, for task content carried in a trial spec (``path`` locates errors and imports)."""
    return _checked(source_from_bytes(text.encode("utf-8"), path), Path(path), text)


def lint_task(path: Path) -> list[Diagnostic]:
    """Every diagnostic for one task file (``capplan lint``)."""
    try:
        load_task(path)
    except InputError as exc:
        return list(exc.diagnostics)
    return []


def _checked(source: SourceFile, path: Path, text: str) -> LoadedTask:
    task = parse(source, TaskFile)
    diags = _check_tools(source, task)
    cls: type[Any] | None = None
    try:
        cls = load_class(task.environment, path.resolve().parent)
    except EnvironmentLoadError as exc:
        diags.append(source.diag(("environment",), "environment-import", str(exc),
                                 "the module is imported from the task file's folder first, then sys.path"))
    if cls is not None:
        diags += _check_environment(source, task, cls)
    if diags:
        raise InputError(diags)
    assert cls is not None
    return LoadedTask(task, path, text, cls)


def _check_tools(source: SourceFile, task: TaskFile) -> list[Diagnostic]:
    diags: list[Diagnostic] = []
    seen: set[str] = set()
    for i, tool in enumerate(task.tools):
        if tool.name in seen:
            diags.append(source.diag(("tools", i, "name"), "duplicate-tool", f"tool {tool.name!r} is declared twice"))
        seen.add(tool.name)
        try:
            jsonschema.Draft202012Validator.check_schema(tool.parameters)
        except jsonschema.SchemaError as exc:
            where = ("tools", i, "parameters", *exc.absolute_path)
            diags.append(source.diag(where, "tool-schema", f"not a valid JSON Schema: {exc.message}"))
            continue
        if tool.parameters.get("type", "object") != "object":
            diags.append(source.diag(("tools", i, "parameters", "type"), "tool-schema",
                                     "tool parameters must be an object schema", "use `type: object` with `properties:`"))
    return diags


def _check_environment(source: SourceFile, task: TaskFile, cls: type[Any]) -> list[Diagnostic]:
    diags: list[Diagnostic] = []
    methods = tool_methods(cls)
    declared = {t.name for t in task.tools}
    for i, tool in enumerate(task.tools):
        if tool.name not in methods:
            diags.append(source.diag(("tools", i, "name"), "unknown-tool",
                                     f"environment {task.environment} has no method {tool.name!r}",
                                     did_you_mean(tool.name, methods)))
            continue
        diags += _check_signature(source, ("tools", i, "parameters"), tool.name, tool.parameters, methods[tool.name])
    for name in sorted(set(methods) - declared):
        diags.append(source.diag(("tools",), "undeclared-method",
                                 f"environment {task.environment} has public method {name!r}, which the task does not declare",
                                 "declare it under tools:, or rename it with a leading underscore if it is not a tool"))
    try:
        instance = cls(**task.environment_args)
    except Exception as exc:  # the constructor is the task author's code
        diags.append(source.diag(("environment_args",), "environment-args",
                                 f"{task.environment}(**environment_args) raised {type(exc).__name__}: {exc}"))
        instance = None
    if task.grader is not None:
        diags += _check_grader(source, task, instance)
    return diags


def _check_signature(source: SourceFile, loc: tuple[str | int, ...], name: str, schema: dict[str, Any],
                     method: Any) -> list[Diagnostic]:
    params = list(inspect.signature(method).parameters.values())[1:]  # drop self
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return []
    accepted = {p.name for p in params if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)}
    required = {p.name for p in params if p.default is inspect.Parameter.empty and p.name in accepted}
    props = set(schema.get("properties", {}))
    diags = [
        source.diag((*loc, "properties", prop), "unknown-parameter", f"method {name}() has no parameter {prop!r}",
                    did_you_mean(prop, accepted))
        for prop in sorted(props - accepted)
    ]
    missing = sorted(required - props)
    if missing:
        diags.append(source.diag(loc, "missing-parameter",
                                 f"method {name}() requires {', '.join(map(repr, missing))}, which the schema does not declare"))
    return diags


def _check_grader(source: SourceFile, task: TaskFile, instance: Any) -> list[Diagnostic]:
    grader = task.grader
    assert grader is not None
    diags: list[Diagnostic] = []
    names = [t.name for t in task.tools]
    for i, action in enumerate(grader.expected_actions or []):
        tool = task.tool(action.name)
        if tool is None:
            diags.append(source.diag(("grader", "expected_actions", i, "name"), "unknown-tool",
                                     f"expected action names tool {action.name!r}, which the task does not declare",
                                     did_you_mean(action.name, names)))
            continue
        props = set(tool.parameters.get("properties", {}))
        for arg in sorted(set(action.arguments) - props):
            diags.append(source.diag(("grader", "expected_actions", i, "arguments", arg), "unknown-parameter",
                                     f"tool {action.name!r} has no parameter {arg!r}", did_you_mean(arg, props)))
    if grader.expected_state is not None and instance is not None:
        keys = set(final_state(instance))
        for key in sorted(set(grader.expected_state) - keys):
            diags.append(source.diag(("grader", "expected_state", key), "unknown-state-key",
                                     f"the environment's state has no key {key!r}", did_you_mean(key, keys)))
    if grader.function is not None:
        try:
            resolve_function(grader.function)
        except LookupError as exc:
            diags.append(source.diag(("grader", "function"), "grader-import", str(exc)))
    return diags


def resolve_function(target: str) -> Any:
    """Import ``package.module:function``; :class:`LookupError` names what is missing."""
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise LookupError(f"cannot import module {module_name!r}: {exc}") from None
    function = getattr(module, attr, None)
    if not callable(function):
        raise LookupError(f"module {module_name!r} has no function {attr!r}")
    return function

"""A task's environment and grader, read from their source with ``ast``: nothing is imported or run.

``capplan lint`` runs on pull requests, so it must not execute a module a task file names. The
module is found by path under the task file's folder (``pkg.mod`` is ``pkg/mod/__init__.py`` or
``pkg/mod.py`` there, never looked up through ``sys.path``), its source is parsed (at most
:data:`MAX_SOURCE_BYTES`), and the class is read off the tree: its public methods and their
signatures (methods of base classes defined in the same module included), its constructor's
signature and the public attributes its constructor assigns (the state right after
construction, which is what the import-based check saw).

Python can define a class in ways a reader of the source cannot follow (a base class from
another module, a decorator, ``setattr``). Each such case is reported as what it is, a part
that was not checked, never guessed into an error: :class:`NotStatic` when nothing can be said,
and ``open_reason`` / ``state_reason`` when only part of the class is known.
"""

from __future__ import annotations

import ast
import os
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from capplan.core.input_limits import InputLimitError, read_limited

#: Largest environment or grader module the static check reads; a task module is hand-written code.
MAX_SOURCE_BYTES = 1024 * 1024
#: Base classes and class decorators that add no public method and set no instance attribute.
_INERT_BASES = {"object", "ABC", "abc.ABC", "Generic", "typing.Generic", "Protocol", "typing.Protocol"}
_INERT_DECORATORS = {"final", "typing.final", "typing_extensions.final"}
_DATACLASS = {"dataclass", "dataclasses.dataclass"}
_INERT_METACLASSES = {"ABCMeta", "abc.ABCMeta"}
#: Method decorators whose result ``inspect.isfunction`` does not accept: not tools.
_NOT_FUNCTION_DECORATORS = {"classmethod", "property", "cached_property", "functools.cached_property",
                            "abc.abstractproperty", "abstractproperty"}
_STATIC_DECORATORS = {"staticmethod"}
_TRANSPARENT_DECORATORS = {"abstractmethod", "abc.abstractmethod", "override", "typing.override",
                           "typing_extensions.override", "final", "typing.final"}


class NotStatic(Exception):
    """The module or name cannot be checked without importing it (the message says why)."""


class StaticLookupError(Exception):
    """The module was read and the name is definitely not what the task says (a located error)."""


@dataclass(frozen=True)
class Signature:
    """What keyword arguments a callable takes (``self`` already dropped)."""

    accepted: tuple[str, ...]  # parameters that can be passed by keyword, in order
    required: frozenset[str]  # of those, the ones without a default
    var_keyword: bool  # ``**kwargs``: any keyword is accepted


@dataclass(frozen=True)
class Member:
    """One name in a class body: a function (tool candidate), something else, or not knowable."""

    kind: str  # "function", "other" (data, property, classmethod) or "unknown"
    signature: Signature | None = None  # for "function"; None when a decorator hides it
    node: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    static: bool = False


@dataclass(frozen=True)
class StaticClass:
    """What the source says about the environment class."""

    methods: dict[str, Signature | None]  # public functions: the tools; None = signature not knowable
    uncertain: set[str]  # public names that may or may not be functions
    open_reason: str | None  # why a method may be missing from ``methods`` (None: the list is complete)
    init: Signature | None  # constructor keywords; None when not decidable
    state_keys: frozenset[str] | None  # public attributes after construction; None when not decidable
    state_reason: str | None = None
    functions: dict[str, Signature | None] = field(default_factory=dict)  # every def, private ones included (setup)


@dataclass
class _ClassInfo:
    node: ast.ClassDef
    members: dict[str, Member] = field(default_factory=dict)
    bases: list[_ClassInfo | None] = field(default_factory=list)  # None: defined elsewhere
    open_reasons: list[str] = field(default_factory=list)  # a method may be missing from the class read
    changes: list[str] = field(default_factory=list)  # a decorator or metaclass may rewrite the class
    dataclass: bool = False
    dataclass_init: bool = True


@dataclass
class _Module:
    key: tuple[str, int, int]  # resolved path, mtime, size: what the caches are keyed on
    path: Path
    bindings: dict[str, tuple[str, ast.AST | None]]  # top-level name -> (kind, node)
    star_import: bool


def find_module_file(module: str, folder: Path) -> Path | None:
    """``pkg.mod`` under ``folder``: ``pkg/mod/__init__.py``, else ``pkg/mod.py``; None when neither is there."""
    parts = module.split(".")
    if not all(p.isidentifier() for p in parts):
        return None
    base = folder.joinpath(*parts)
    for candidate in (base / "__init__.py", base.with_name(parts[-1] + ".py")):
        if candidate.is_file():
            return candidate
    return None


def environment_class(target: str, folder: Path) -> StaticClass:
    """``module:Class`` or ``rel/path.py:Class`` read from ``folder``; :class:`NotStatic` or
    :class:`StaticLookupError` when it cannot be."""
    module_name, _, class_name = target.rpartition(":")
    module = _module_of(module_name, folder)
    key = (*module.key, class_name)
    with _CACHE_LOCK:
        hit = _CLASSES.get(key)
    if hit is not None:  # the tasks of one pack share their environment: read it once
        return hit
    node = _resolve_class(module, module_name, class_name)
    try:
        found = _summarise(_class_info(node, module, {}, depth=0))
    except RecursionError:  # every walk here is bounded; this is the net under them
        raise NotStatic(f"class {class_name!r} is nested too deeply to read statically") from None
    with _CACHE_LOCK:
        _CLASSES[key] = found
    return found


def grader_function(target: str, folder: Path) -> Signature | None:
    """Check that ``module:function`` is a function defined at the top of its module under ``folder``; its
    signature when it is a plain ``def`` (None for a class or a decorated function)."""
    module_name, _, name = target.rpartition(":")
    module = _module_of(module_name, folder)
    kind, node = module.bindings.get(name, ("missing", None))
    if kind == "function" and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return _after_three(node.args) if not node.decorator_list else None
    if kind == "class":
        return None
    if kind == "assign" and isinstance(node, ast.Lambda):
        return _after_three(node.args)
    if kind == "missing" and not module.star_import:
        functions = sorted(n for n, (k, _) in module.bindings.items() if k == "function" and not n.startswith("_"))
        raise StaticLookupError(f"module {module_name!r} has no function {name!r}"
                                + (f" (functions: {', '.join(functions[:20])})" if functions else ""))
    raise NotStatic(f"{name!r} in module {module_name!r} is {_binding_text(kind)}, which lint cannot follow statically")


def _after_three(args: ast.arguments) -> Signature:
    """A grader's keywords: its parameters after the three positional ones (trajectory, final_state, task)."""
    positional = [*args.posonlyargs, *args.args]
    first_default = len(positional) - len(args.defaults)
    rest = [(a.arg, i >= first_default) for i, a in enumerate(positional)][3:]
    rest += [(a.arg, d is not None) for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    return Signature(tuple(n for n, _ in rest), frozenset(n for n, has in rest if not has), args.kwarg is not None)


# --- reading a module ---------------------------------------------------------------------------

_CACHE: dict[tuple[str, int, int], _Module] = {}
_CLASSES: dict[tuple[str, int, int, str], StaticClass] = {}
_CACHE_LOCK = threading.Lock()


def _module_of(module_name: str, folder: Path) -> _Module:
    """A module by name (``pkg.mod``) or, for a name ending in ``.py``, the file at that path under ``folder``."""
    if not module_name.endswith(".py"):
        return _module(module_name, folder)
    path = (folder / module_name).resolve()
    if not path.is_file():
        raise StaticLookupError(f"no file {module_name} in the task file's folder")
    return _module_at(path, module_name)


def _module(module_name: str, folder: Path) -> _Module:
    path = find_module_file(module_name, folder)
    if path is None:
        raise NotStatic(f"module {module_name!r} is not in the task file's folder, so lint cannot read it statically")
    return _module_at(path, module_name)


def _module_at(path: Path, module_name: str) -> _Module:
    try:
        st = os.stat(path)
    except OSError as exc:
        raise NotStatic(f"module {module_name!r} cannot be read ({exc.strerror})") from None
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
    if hit is not None:
        return hit
    try:
        raw = read_limited(path, MAX_SOURCE_BYTES)
    except InputLimitError as exc:
        raise NotStatic(f"module {module_name!r} ({path.name}) is not read statically: {exc}") from None
    except OSError as exc:
        raise NotStatic(f"module {module_name!r} cannot be read ({exc.strerror})") from None
    try:
        tree = ast.parse(raw, filename=path.name)
    except SyntaxError as exc:  # the import would fail the same way; the line text is not echoed
        raise StaticLookupError(f"module {module_name!r} ({path.name}) does not parse: line {exc.lineno}: {exc.msg}") from None
    except (ValueError, UnicodeDecodeError):
        raise StaticLookupError(f"module {module_name!r} ({path.name}) is not valid Python source") from None
    except (RecursionError, MemoryError):
        raise NotStatic(f"module {module_name!r} ({path.name}) is nested too deeply to read statically") from None
    bindings: dict[str, tuple[str, ast.AST | None]] = {}
    star = _bind_statements(tree.body, bindings, conditional=False)
    module = _Module(key, path, bindings, star)
    with _CACHE_LOCK:
        _CACHE[key] = module
    return module


def _bind_statements(body: Iterable[ast.stmt], bindings: dict[str, tuple[str, ast.AST | None]],
                     conditional: bool) -> bool:
    """Record what each top-level name is bound to, in order (the last binding wins, as at run time).

    Names bound inside ``if`` / ``try`` / ``with`` / loops are "unknown": which branch runs is not
    knowable from the source. Returns whether a ``from x import *`` was seen.
    """
    star = False
    for stmt in body:
        named: list[tuple[str, str, ast.AST | None]] = []
        if isinstance(stmt, ast.ClassDef):
            named.append((stmt.name, "class", stmt))
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            named.append((stmt.name, "function", stmt))
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for alias in stmt.names:
                if alias.name == "*":
                    star = True
                else:
                    named.append(((alias.asname or alias.name).split(".")[0], "import", None))
        elif isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                for name in _target_names(target):
                    simple = isinstance(target, ast.Name)
                    named.append((name, "assign" if simple else "unknown", stmt.value if simple else None))
        elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
            value = stmt.value
            if isinstance(stmt.target, ast.Name) and (value is not None or isinstance(stmt, ast.AugAssign)):
                named.append((stmt.target.id, "assign" if isinstance(stmt, ast.AnnAssign) else "unknown", value))
        elif isinstance(stmt, ast.Delete):
            for target in stmt.targets:
                named += [(n, "unknown", None) for n in _target_names(target)]
        else:
            inner: dict[str, tuple[str, ast.AST | None]] = {}
            for block in _blocks(stmt):
                star |= _bind_statements(block, inner, conditional=True)
            for sub in ast.walk(stmt):  # loop targets, ``with ... as x``, walrus, ``except E as x``
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    inner.setdefault(sub.id, ("unknown", None))
                elif isinstance(sub, ast.ExceptHandler) and sub.name:
                    inner.setdefault(sub.name, ("unknown", None))
            named += [(n, "unknown", None) for n in inner]
        for name, kind, node in named:
            bindings[name] = ("unknown", None) if conditional else (kind, node)
    return star


def _blocks(stmt: ast.stmt) -> Iterator[list[ast.stmt]]:
    for name in ("body", "orelse", "finalbody"):
        block = getattr(stmt, name, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            yield block
    for handler in getattr(stmt, "handlers", []) or []:
        yield handler.body
    for case in getattr(stmt, "cases", []) or []:
        yield case.body


def _target_names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for elt in target.elts for n in _target_names(elt)]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return []


def _binding_text(kind: str) -> str:
    return {"import": "imported from another module", "assign": "bound by an assignment",
            "unknown": "bound conditionally (inside if / try / a loop)", "missing": "not bound at the top level",
            "class": "a class", "function": "a function"}[kind]


_MAX_DOTTED_PARTS = 32


def _dotted(expr: ast.expr) -> str | None:
    """``a.b.c`` for a Name / Attribute chain (also a subscripted or called one, ``Generic[T]``), else None.

    Iterative and bounded: a module may hold a chain thousands of attributes long.
    """
    parts: list[str] = []
    node: ast.expr = expr
    while len(parts) <= _MAX_DOTTED_PARTS:
        if isinstance(node, (ast.Subscript, ast.Call)):
            node = node.value if isinstance(node, ast.Subscript) else node.func
        elif isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Name):
            parts.append(node.id)
            return ".".join(reversed(parts))
        else:
            return None
    return None


def _shown(expr: ast.expr) -> str:
    name = _dotted(expr)
    return name[:80] if name else "an expression"


# --- the class ------------------------------------------------------------------------------------

_MAX_BASE_DEPTH = 32


def _resolve_class(module: _Module, module_name: str, class_name: str) -> ast.ClassDef:
    seen: set[str] = set()
    name = class_name
    while True:
        kind, node = module.bindings.get(name, ("missing", None))
        if kind == "class" and isinstance(node, ast.ClassDef):
            return node
        if kind == "assign" and isinstance(node, ast.Name) and node.id not in seen:  # ``Alias = Real``
            seen.add(name)
            name = node.id
            continue
        if kind == "function":
            raise StaticLookupError(f"{module_name}:{class_name} is a function, not a class")
        if kind == "missing" and not module.star_import:
            classes = sorted(n for n, (k, _) in module.bindings.items() if k == "class" and not n.startswith("_"))
            raise StaticLookupError(f"module {module_name!r} has no class {class_name!r}"
                                    + (f" (classes: {', '.join(classes[:20])})" if classes else ""))
        raise NotStatic(f"{class_name!r} in module {module_name!r} is {_binding_text(kind)}, "
                        "which lint cannot follow statically")


def _class_info(node: ast.ClassDef, module: _Module, infos: dict[int, _ClassInfo], depth: int) -> _ClassInfo:
    hit = infos.get(id(node))
    if hit is not None:
        return hit
    info = _ClassInfo(node)
    infos[id(node)] = info
    for decorator in node.decorator_list:
        name = _dotted(decorator)
        if name in _DATACLASS:
            info.dataclass = True
            if isinstance(decorator, ast.Call) and any(
                    k.arg == "init" and not (isinstance(k.value, ast.Constant) and k.value.value is True)
                    for k in decorator.keywords):
                info.dataclass_init = False
        elif name not in _INERT_DECORATORS:
            info.changes.append(f"class decorator {_shown(decorator)} may change the class")
    for keyword in node.keywords:
        if keyword.arg != "metaclass" or _dotted(keyword.value) not in _INERT_METACLASSES:
            info.changes.append(f"class keyword {keyword.arg or '**'}= may change the class")
    for base in node.bases:
        name = _dotted(base)
        if name in _INERT_BASES:
            continue
        kind, target = module.bindings.get(name or "", ("missing", None))
        if kind == "class" and isinstance(target, ast.ClassDef) and target is not node and depth < _MAX_BASE_DEPTH:
            info.bases.append(_class_info(target, module, infos, depth + 1))
        else:
            info.bases.append(None)
            info.open_reasons.append(f"base class {_shown(base)} is not defined in the module")
    _read_body(node, info)
    return info


def _read_body(node: ast.ClassDef, info: _ClassInfo) -> None:
    members = info.members
    for stmt in node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            members[stmt.name] = _function_member(stmt)
        elif isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                for name in _target_names(target):
                    members[name] = _value_member(stmt.value if isinstance(target, ast.Name) else None, members)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None and isinstance(stmt.target, ast.Name):
                members[stmt.target.id] = _value_member(stmt.value, members)
        elif isinstance(stmt, ast.AugAssign):
            for name in _target_names(stmt.target):
                members[name] = Member("unknown")
        elif isinstance(stmt, (ast.Expr, ast.Pass)):
            continue
        else:  # a class, import, if / try / loop in the class body: names it binds are not followed
            for sub in ast.walk(stmt):
                for name in _stmt_names(sub):
                    members[name] = Member("unknown")
            if not isinstance(stmt, ast.ClassDef):
                info.open_reasons.append(f"the class body has a {type(stmt).__name__.lower()} statement "
                                         f"(line {stmt.lineno}) lint does not follow")


def _stmt_names(node: ast.AST) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"]
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
        return [node.id]
    return []


def _function_member(stmt: ast.FunctionDef | ast.AsyncFunctionDef) -> Member:
    static = False
    for decorator in stmt.decorator_list:
        name = _dotted(decorator)
        if name in _NOT_FUNCTION_DECORATORS or (name or "").endswith((".setter", ".getter", ".deleter")):
            return Member("other")
        if name in _STATIC_DECORATORS:
            static = True
        elif name not in _TRANSPARENT_DECORATORS:
            return Member("unknown")
    return Member("function", signature_of(stmt.args, drop_first=not static), stmt, static)


def _value_member(value: ast.expr | None, members: dict[str, Member]) -> Member:
    if isinstance(value, ast.Lambda):
        return Member("function", signature_of(value.args, drop_first=True))
    if isinstance(value, ast.Name) and value.id in members:  # ``alias = method``
        return members[value.id]
    if isinstance(value, (ast.Constant, ast.List, ast.Tuple, ast.Dict, ast.Set, ast.JoinedStr,
                          ast.ListComp, ast.DictComp, ast.SetComp)):
        return Member("other")
    if isinstance(value, ast.Call) and _dotted(value.func) in ("field", "dataclasses.field"):
        return Member("other")  # a dataclass field: data, never a method
    return Member("unknown")


def signature_of(args: ast.arguments, drop_first: bool) -> Signature:
    """The keyword view of a ``def``'s parameters, as ``inspect.signature`` would give it."""
    positional = [*args.posonlyargs, *args.args]
    n_posonly = len(args.posonlyargs)
    first_default = len(positional) - len(args.defaults)
    named = [(a.arg, i >= first_default, i < n_posonly) for i, a in enumerate(positional)]
    if drop_first and named:
        named = named[1:]
    named += [(a.arg, d is not None, False) for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    accepted = tuple(name for name, _, posonly in named if not posonly)
    required = frozenset(name for name, has_default, posonly in named if not posonly and not has_default)
    return Signature(accepted, required, args.kwarg is not None)


def _mro(info: _ClassInfo) -> Iterator[_ClassInfo | None]:
    """Depth-first, left to right, each class once (the MRO of every single-inheritance chain)."""
    seen: set[int] = set()
    stack: list[_ClassInfo | None] = [info]
    while stack:
        current = stack.pop()
        if current is None:
            yield None
            continue
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        stack.extend(reversed(current.bases))


def _summarise(info: _ClassInfo) -> StaticClass:
    order = list(_mro(info))
    members: dict[str, Member] = {}
    reasons: list[str] = []
    closed = True  # no class of unknown content precedes the ones read so far
    for current in order:
        if current is None:
            closed = False
            continue
        reasons += current.open_reasons + current.changes
        for name, member in current.members.items():
            # a name first seen after an unknown base may be overridden by that base: not knowable
            members.setdefault(name, member if closed else Member("unknown"))
    public = {n: m for n, m in members.items() if not n.startswith("_")}
    methods = {n: m.signature for n, m in public.items() if m.kind == "function"}
    functions = {n: m.signature for n, m in members.items() if m.kind == "function"}
    uncertain = {n for n, m in public.items() if m.kind == "unknown"}
    open_reason = "; ".join(dict.fromkeys(reasons)) or None
    changes = [r for c in order if c is not None for r in c.changes]
    if changes:  # a decorator or metaclass may replace the constructor
        return StaticClass(methods, uncertain, open_reason, None, None, changes[0], functions)
    if any(c is not None and "__new__" in c.members for c in order):
        return StaticClass(methods, uncertain, open_reason, None, None, "the class defines __new__", functions)
    ctor = _constructor(order, 0)
    if isinstance(ctor, str):
        return StaticClass(methods, uncertain, open_reason, None, None, ctor, functions)
    keys: set[str] = set()
    reason = _assigned_attributes(ctor, order, members, keys)
    init = ctor[0].signature if isinstance(ctor[0], Member) else ctor[0]
    if isinstance(ctor[0], Member) and ctor[0].kind != "function":
        return StaticClass(methods, uncertain, open_reason, None, None, "__init__ is decorated or not a plain def",
                           functions)
    state = None if reason is not None else frozenset(k for k in keys if not k.startswith("_"))
    return StaticClass(methods, uncertain, open_reason, init, state, reason, functions)


#: the constructor found: the ``__init__`` member, or a dataclass's generated one as a signature, and
#: the index in the MRO of the class it belongs to
_Ctor = tuple[Member | Signature, int]


def _constructor(order: list[_ClassInfo | None], start: int) -> _Ctor | str:
    """The ``__init__`` instances of ``order[start]`` run (object's when none); a str says why it is not knowable."""
    for index in range(start, len(order)):
        current = order[index]
        if current is None:
            return "the constructor may come from a base class defined elsewhere"
        member = current.members.get("__init__")
        if member is not None:
            return member, index
        if current.dataclass and current.dataclass_init:
            return _dataclass_fields(order[index:]), index
    return Signature((), frozenset(), False), len(order)  # object.__init__: no keyword at all


def _dataclass_fields(order: list[_ClassInfo | None]) -> Signature:
    """The generated ``__init__`` of a dataclass: its fields, bases' first."""
    accepted: dict[str, bool] = {}
    for current in reversed(order):
        if current is None or not current.dataclass:
            continue
        for stmt in current.node.body:
            if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.target, ast.Name):
                continue
            if (_dotted(stmt.annotation) or "").split(".")[-1] in ("ClassVar", "KW_ONLY", "InitVar"):
                continue
            accepted[stmt.target.id] = stmt.value is None
    required = frozenset(n for n, needs in accepted.items() if needs)
    return Signature(tuple(accepted), required, False)


_MAX_FOLLOWED = 64


def _assigned_attributes(ctor: _Ctor, order: list[_ClassInfo | None], members: dict[str, Member],
                         keys: set[str]) -> str | None:
    """Add to ``keys`` every ``self.X`` construction assigns, following ``self.m()`` and ``super().__init__()``.

    Returns why that is not knowable, or None when ``keys`` is complete.
    """
    todo: list[_Ctor] = [ctor]
    done: set[int] = set()
    while todo:
        what, level = todo.pop()
        if isinstance(what, Signature):  # a dataclass's generated __init__: its fields, then __post_init__
            keys.update(what.accepted)
            post = members.get("__post_init__")
            if post is not None:
                todo.append((post, _level_of(post, order)))
            continue
        node = what.node
        if what.kind != "function" or node is None:
            return "the constructor calls a method lint cannot read"
        if id(node) in done:
            continue
        done.add(id(node))
        if len(done) > _MAX_FOLLOWED:
            return "the constructor calls more methods than lint follows"
        positional = [*node.args.posonlyargs, *node.args.args]
        if what.static or not positional:
            continue
        me = positional[0].arg
        for sub in ast.walk(node):
            if isinstance(sub, ast.AnnAssign) and sub.value is None:
                continue
            if isinstance(sub, ast.Attribute) and _is_name(sub.value, me):
                if sub.attr in ("__dict__", "__setattr__", "__class__"):
                    return f"the constructor uses self.{sub.attr}"
                if isinstance(sub.ctx, ast.Store):
                    keys.add(sub.attr)
            elif isinstance(sub, ast.Call):
                problem = _call(sub, me, order, members, level, todo)
                if problem is not None:
                    return problem
            elif isinstance(sub, (ast.Assign, ast.AnnAssign, ast.NamedExpr, ast.Return, ast.Yield)) \
                    and _is_name(sub.value, me):
                return "the constructor hands self to another name"
    return None


def _level_of(member: Member, order: list[_ClassInfo | None]) -> int:
    for index, current in enumerate(order):
        if current is not None and any(m is member for m in current.members.values()):
            return index
    return 0


def _call(call: ast.Call, me: str, order: list[_ClassInfo | None], members: dict[str, Member], level: int,
          todo: list[_Ctor]) -> str | None:
    func = _dotted(call.func)
    if func in ("setattr", "vars", "object.__setattr__", "__import__", "exec", "eval", "globals", "locals"):
        return f"the constructor calls {func}()"
    if isinstance(call.func, ast.Attribute) and _is_name(call.func.value, me):
        target = members.get(call.func.attr)
        if target is None:
            return f"the constructor calls self.{call.func.attr}(), which the class does not define"
        if target.kind != "other":
            todo.append((target, _level_of(target, order)))
    elif (isinstance(call.func, ast.Attribute) and call.func.attr == "__init__"
          and isinstance(call.func.value, ast.Call) and _dotted(call.func.value.func) == "super"):
        parent = _constructor(order, level + 1)
        if isinstance(parent, str):
            return parent
        todo.append(parent)
    args = [*call.args, *(k.value for k in call.keywords)]
    if any(_is_name(a, me) or (isinstance(a, ast.Starred) and _is_name(a.value, me)) for a in args):
        if func not in ("isinstance", "type", "id", "repr", "str", "len", "print"):
            return f"the constructor passes self to {_shown(call.func)}()"
    return None


def _is_name(expr: ast.AST | None, name: str) -> bool:
    return isinstance(expr, ast.Name) and expr.id == name

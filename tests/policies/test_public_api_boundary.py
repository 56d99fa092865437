"""Per-family policies reach the engine through public names only.

The audit set comes from the policy registry (every class registered from ``capplan.executor.families``,
plus every other class those modules define), so a new family module is covered without a list
to update. Four checks:

1. no ``_``-prefixed name is imported from (or read off) an engine module;
2. no ``_``-prefixed attribute of a base class is overridden;
3. no ``self._x`` / ``cls._x`` / ``super()._x`` read of a name the class does not define itself;
4. no class registered from the engine side extends another registered class (that shape is a
   per-family subclass living on the wrong side of the boundary).

Each checker is also run on a planted violation, so a checker that stopped finding anything
would fail here rather than pass silently.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
from types import ModuleType
from typing import Any

import pytest

from capplan.executor.registry import policy_targets

FAMILIES = "capplan.executor.families."
ENGINE = "capplan.executor."
MY_SLOTS = ("schema_sanitizer", "prompt_policy", "response_policy", "assistant_text_policy")


def registered() -> list[tuple[str, str, str]]:
    return sorted((slot, name, target) for slot, names in policy_targets().items() for name, target in names.items())


def load(target: str) -> type[Any]:
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            pytest.skip(f"{module_name} is not in this tree yet")
        raise
    cls: type[Any] = getattr(module, attr)
    return cls


FAMILY_MODULES = sorted({t.partition(":")[0] for _, _, t in registered() if t.startswith(FAMILIES)})
ENGINE_TARGETS = [t for _, _, t in registered() if t.startswith(ENGINE) and not t.startswith(FAMILIES)]


def family_module(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            pytest.skip(f"{name} is not in this tree yet")
        raise


def own_classes(module: ModuleType) -> list[type[Any]]:
    return [c for _, c in inspect.getmembers(module, inspect.isclass) if c.__module__ == module.__name__]


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


# --- the checkers ------------------------------------------------------------------------------


def private_imports(tree: ast.Module, namespace: dict[str, Any]) -> list[str]:
    """Private names imported from, or read off, engine modules."""
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("capplan.executor"):
            found += [f"from {node.module} import {a.name}" for a in node.names if is_private(a.name)]
        elif isinstance(node, ast.Import):
            found += [
                f"import {a.name}"
                for a in node.names
                if a.name.startswith("capplan.executor") and any(is_private(part) for part in a.name.split("."))
            ]
        elif isinstance(node, ast.Attribute) and is_private(node.attr) and isinstance(node.value, ast.Name):
            target = namespace.get(node.value.id)
            if isinstance(target, ModuleType) and target.__name__.startswith("capplan.executor"):
                found.append(f"{node.value.id}.{node.attr}")
    return found


def private_overrides(cls: type[Any]) -> list[str]:
    """Private methods of ``cls`` that shadow a method a base class defines."""
    return [
        f"{cls.__qualname__}.{name} shadows {base.__qualname__}.{name}"
        for name, member in vars(cls).items()
        if is_private(name) and _is_method(member)
        for base in cls.__mro__[1:]
        if _is_method(vars(base).get(name))
    ]


def _is_method(member: Any) -> bool:
    return inspect.isfunction(member) or isinstance(member, (classmethod, staticmethod, property))


def private_reads(class_node: ast.ClassDef) -> list[str]:
    """``self._x`` / ``cls._x`` / ``super()._x`` reads of names the class body does not define."""
    local: set[str] = set()
    for stmt in class_node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            local.add(stmt.name)
        elif isinstance(stmt, ast.Assign):
            local |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            local.add(stmt.target.id)
    for node in ast.walk(class_node):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _is_self_or_cls(node.value):
            local.add(node.attr)
    found: list[str] = []
    for node in ast.walk(class_node):
        if not (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and is_private(node.attr)):
            continue
        via_super = (
            isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name) and node.value.func.id == "super"
        )
        if via_super or (_is_self_or_cls(node.value) and node.attr not in local):
            found.append(f"{class_node.name}: {ast.unparse(node)}")
    return found


def _is_self_or_cls(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id in ("self", "cls")


def class_node(module: ModuleType, cls: type[Any]) -> ast.ClassDef:
    tree = ast.parse(inspect.getsource(module))
    return next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == cls.__name__)


# --- the four checks over the registry ---------------------------------------------------------


def test_the_audit_set_is_derived_from_the_registry() -> None:
    assert {"capplan.executor.families.gemini", "capplan.executor.families.cohere", "capplan.executor.families.minimax"} <= set(FAMILY_MODULES)


@pytest.mark.parametrize("module_name", FAMILY_MODULES)
def test_no_private_symbol_imports(module_name: str) -> None:
    module = family_module(module_name)
    tree = ast.parse(inspect.getsource(module))
    assert private_imports(tree, vars(module)) == []


@pytest.mark.parametrize("module_name", FAMILY_MODULES)
def test_no_private_base_method_override(module_name: str) -> None:
    module = family_module(module_name)
    assert [v for cls in own_classes(module) for v in private_overrides(cls)] == []


@pytest.mark.parametrize("module_name", FAMILY_MODULES)
def test_no_private_attribute_access_on_self_or_super(module_name: str) -> None:
    module = family_module(module_name)
    assert [v for cls in own_classes(module) for v in private_reads(class_node(module, cls))] == []


@pytest.mark.parametrize("target", ENGINE_TARGETS)
def test_no_per_model_subclass_is_registered_engine_side(target: str) -> None:
    cls = load(target)
    others: list[type[Any]] = []
    for _, _, other in registered():
        module_name = other.partition(":")[0]
        try:
            importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue
            raise
        others.append(load(other))
    assert [o.__qualname__ for o in others if o is not cls and issubclass(cls, o)] == []


@pytest.mark.parametrize(
    ("slot", "name", "target"), [r for r in registered() if r[0] in MY_SLOTS], ids=lambda v: str(v)
)
def test_registered_classes_carry_their_slot_and_registry_name(slot: str, name: str, target: str) -> None:
    cls = load(target)
    assert (cls.slot, cls.name) == (slot, name)
    cls()  # constructible from plan data with no parameters


# --- the checkers find planted violations --------------------------------------------------------


def test_private_imports_are_found() -> None:
    import capplan.executor.policies.strict_schema as engine

    source = textwrap.dedent(
        """
        from capplan.executor.policies.strict_schema import _inline, StrictSchema
        import capplan.executor.policies._hidden
        engine._collapse_decimal({})
        """
    )
    found = private_imports(ast.parse(source), {"engine": engine})
    assert found == [
        "from capplan.executor.policies.strict_schema import _inline",
        "import capplan.executor.policies._hidden",
        "engine._collapse_decimal",
    ]


def test_private_overrides_are_found() -> None:
    from capplan.executor.policies.strict_schema import StrictSchema

    class Shadowing(StrictSchema):
        def _rewrite(self, node: Any, tool: str, path: Any) -> Any:
            return node

    assert private_overrides(Shadowing) == [
        "test_private_overrides_are_found.<locals>.Shadowing._rewrite shadows StrictSchema._rewrite"
    ]


def test_private_reads_are_found() -> None:
    source = textwrap.dedent(
        """
        class Family(Base):
            _OWN = 1

            def __init__(self):
                self._mine = 2

            def run(self):
                return self._OWN, self._mine, self._engine_state, cls._other, super()._helper()
        """
    )
    node = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef))
    assert private_reads(node) == ["Family: self._engine_state", "Family: cls._other", "Family: super()._helper"]

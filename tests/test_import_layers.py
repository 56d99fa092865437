"""The import graph of capplan's own modules: acyclic, and layered as the design card draws it.

core ← executor ← trials ← cli and core ← compiler ← cli; the compiler may use the executor's
plan model and registry; the replay harness stands on core alone. Every import counts — at
module level, inside a function, under ``if TYPE_CHECKING:`` — because an import moved into a
function to dodge a cycle is still a cycle, and a type-only import of a higher layer still
couples the lower one to it. The modules are read with :mod:`ast`, never imported.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: the layer folders (each is ``capplan.<name>``) and the data package they may read
LAYERS = ("core", "compiler", "executor", "trials", "conformance", "probes", "cli", "evals")
SCANNED = (*LAYERS, "presets")

#: the executor modules the compiler builds plans from: the plan model, the registry, and the
#: value models a plan embeds (bindings, value rules, policy parameters, rate limits, probes,
#: reasoning settings). Anything else in the executor runs requests and is none of its business.
COMPILER_MAY_USE = frozenset({
    "capplan.executor",
    "capplan.executor.plan",
    "capplan.executor.registry",
    "capplan.executor.binding",
    "capplan.executor.value_rules",
    "capplan.executor.policy_params",
    "capplan.executor.rate_limits",
    "capplan.executor.probe",
    "capplan.executor.reasoning",
    "capplan.executor.wire_dialect",  # which wire a route speaks, recorded in the plan's `wire`
})

#: which capplan packages each layer may import (itself always); None: any
ALLOWED: dict[str, frozenset[str] | None] = {
    "core": frozenset(),
    "executor": frozenset({"core"}),
    "compiler": frozenset({"core", "presets", "executor"}),  # executor: only COMPILER_MAY_USE
    "trials": frozenset({"core", "executor"}),
    # the conformance emulators and runner drive the executor and the trial loop; nothing below imports them
    "conformance": frozenset({"core", "executor", "trials", "presets"}),
    # live capability probes ask a route through the executor's client; only the command line imports them.
    # evals: the reasoning-carrier questions run the replay eval's own steps (reused, never copied)
    "probes": frozenset({"core", "executor", "evals"}),
    "cli": None,
    "evals": frozenset({"core"}),
    "presets": frozenset(),
}


def _module_files() -> dict[str, Path]:
    """``capplan.x.y`` → its file, for every module under the real layer folders."""
    found: dict[str, Path] = {}
    for layer in SCANNED:
        for path in sorted((ROOT / layer).rglob("*.py")):
            rel = path.relative_to(ROOT).with_suffix("")
            parts = list(rel.parts)
            if "__pycache__" in parts:
                continue
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(("capplan", *parts))] = path
    return found


MODULES = _module_files()


def _package_of(module: str, path: Path) -> str:
    """The package a relative import in ``module`` (read from ``path``) starts from."""
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _known(name: str) -> str | None:
    """The longest prefix of ``name`` that is a capplan module (``a.b.func`` → ``a.b``)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _imports(module: str, path: Path) -> Iterator[tuple[str, int]]:
    """``(imported capplan module, line)`` for every import statement anywhere in ``module``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if (target := _known(alias.name)) is not None:
                    yield target, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _package_of(module, path)
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module or ""
            if not source.startswith("capplan"):
                continue
            for alias in node.names:
                # ``from pkg import sub`` imports the submodule when ``sub`` is one
                sub = f"{source}.{alias.name}"
                target = sub if sub in MODULES else _known(source)
                if target is not None:
                    yield target, node.lineno


def _graph() -> dict[str, dict[str, int]]:
    """module → {imported module: first line importing it}; self-imports left out."""
    graph: dict[str, dict[str, int]] = {}
    for module in MODULES:
        edges: dict[str, int] = {}
        for target, line in _imports(module, MODULES[module]):
            if target != module:
                edges.setdefault(target, line)
        graph[module] = edges
    return graph


GRAPH = _graph()


def _cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """One cycle (as a path that returns to its start) through each strongly connected group."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def connect(start: str) -> None:
        # iterative Tarjan: the graph has hundreds of modules and recursion depth is not free
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group: set[str] = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.add(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        groups.append(group)

    for module in sorted(graph):
        if module not in index:
            connect(module)
    return [_path_within(graph, group) for group in sorted(groups, key=min)]


def _path_within(graph: dict[str, dict[str, int]], group: set[str]) -> list[str]:
    """A shortest cycle through the group's first module, by breadth-first search inside it."""
    start = min(group)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for child in sorted(graph[node]):
                if child not in group:
                    continue
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if child not in came_from:
                    came_from[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"no cycle found in the group {sorted(group)}")  # Tarjan said there is one


def _describe(path: list[str]) -> str:
    """``a:LINE -> b:LINE -> a``: each module with the line where it imports the next."""
    return " -> ".join([*(f"{a}:{GRAPH[a][b]}" for a, b in zip(path, path[1:])), path[-1]])


def _layer(module: str) -> str:
    return module.split(".")[1]


def test_every_layer_folder_is_scanned() -> None:
    # a folder that silently held no modules would make every check below pass
    for layer in SCANNED:
        assert f"capplan.{layer}" in MODULES, f"{layer}/__init__.py not found under {ROOT}"
    assert len(MODULES) > 200
    assert "capplan.core.yaml_source" in GRAPH["capplan.compiler.loading"]


def test_the_scanner_sees_every_kind_of_import(tmp_path: Path) -> None:
    # function-level, relative and ``from package import submodule`` imports all become edges;
    # a name that is not a module counts as its module
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from __future__ import annotations\n"
        "import capplan.core.canonical\n"
        "from capplan.core import redaction\n"
        "from .diagnostics import did_you_mean\n"
        "from . import safe_names\n"
        "def later() -> None:\n"
        "    from capplan.core.strict_json import loads\n",
        encoding="utf-8",
    )
    targets = {target for target, _ in _imports("capplan.core.probe", probe)}
    assert targets == {"capplan.core.canonical", "capplan.core.redaction", "capplan.core.diagnostics",
                       "capplan.core.safe_names", "capplan.core.strict_json"}


def test_a_cycle_is_reported_as_its_path() -> None:
    graph = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3, "d": 4}, "d": {}}
    assert _cycles(graph) == [["a", "b", "c", "a"]]
    assert _cycles({"a": {"b": 1}, "b": {}}) == []


def test_no_import_cycle() -> None:
    cycles = _cycles(GRAPH)
    assert not cycles, "import cycles (module:line of its import of the next):\n" + "\n".join(_describe(c) for c in cycles)


def _unit(module: str) -> str:
    """The sub-package a module belongs to (``capplan.trials.report.formats`` → ``capplan.trials.report``);
    a module at a layer's top level is its own unit."""
    parts = module.split(".")
    return ".".join(parts[:3]) if len(parts) >= 4 else module


def test_no_import_cycle_between_sub_packages() -> None:
    # a sub-package is a unit a reader learns whole: two of them that import each other are one
    units: dict[str, dict[str, int]] = {}
    for module, edges in GRAPH.items():
        mine = units.setdefault(_unit(module), {})
        for target, line in edges.items():
            if _unit(target) != _unit(module):
                mine.setdefault(_unit(target), line)
    for unit in list(units.values()):
        for target in unit:
            units.setdefault(target, {})
    cycles = _cycles(units)
    assert not cycles, "import cycles between sub-packages:\n" + "\n".join(" -> ".join(c) for c in cycles)


@pytest.mark.parametrize("layer", [name for name in SCANNED if ALLOWED[name] is not None])
def test_layer_imports_only_what_is_below_it(layer: str) -> None:
    allowed = ALLOWED[layer]
    assert allowed is not None
    wrong: list[str] = []
    for module, edges in sorted(GRAPH.items()):
        if _layer(module) != layer:
            continue
        for target, line in sorted(edges.items()):
            other = _layer(target)
            if other == layer:
                continue
            if other not in allowed or (layer == "compiler" and other == "executor" and target not in COMPILER_MAY_USE):
                wrong.append(f"{MODULES[module].relative_to(ROOT)}:{line}: {module} imports {target}")
    assert not wrong, f"{layer}/ may import only {sorted(allowed) or 'no other capplan package'}:\n" + "\n".join(wrong)


#: the trial runner's vocabulary: the modules at its top level that every sub-package may use
TRIAL_VOCABULARY = frozenset({"spec", "outcome", "terminal", "usage_problem", "safe_text"})
#: trials/'s sub-packages (and its two entry points) → what each may import of trials/, besides the
#: vocabulary; the order of the trials package docstring, bottom up
TRIALS_ALLOWED: dict[str, frozenset[str]] = {
    "usersim": frozenset(),
    "tasks": frozenset(),
    "run_folder": frozenset({"tasks"}),
    "grading": frozenset({"tasks", "run_folder"}),
    "loop": frozenset({"tasks", "run_folder", "usersim"}),
    "runner": frozenset({"tasks", "run_folder", "grading", "loop", "usersim"}),
    "backends": frozenset({"tasks", "run_folder", "grading", "loop", "usersim", "runner"}),
    "report": frozenset({"run_folder"}),
    "importers": frozenset({"tasks", "run_folder", "grading", "loop"}),
    "driver": frozenset({"tasks", "run_folder", "grading", "loop", "usersim", "runner", "backends", "report"}),
    "api": frozenset({"tasks", "run_folder", "grading", "loop", "usersim", "runner", "backends", "report", "driver"}),
}


def _trial_unit(module: str) -> str | None:
    """``capplan.trials.loop.tools`` → ``loop``; a top-level module → its name; the package itself → None."""
    parts = module.split(".")
    return parts[2] if len(parts) >= 3 else None


def test_every_trials_unit_has_its_place() -> None:
    # a new top-level module or sub-package must be placed in the order, or the test below says nothing of it
    units = {_trial_unit(module) for module in MODULES if module.startswith("capplan.trials.")}
    assert units - {None} == set(TRIALS_ALLOWED) | TRIAL_VOCABULARY
    for unit in TRIALS_ALLOWED:
        module = f"capplan.trials.{unit}"
        if module in MODULES and MODULES[module].name == "__init__.py":
            doc = ast.get_docstring(ast.parse(MODULES[module].read_text(encoding="utf-8"))) or ""
            assert "May import:" in doc, f"{MODULES[module].relative_to(ROOT)}: its docstring must say what it may import"


def test_trials_sub_packages_import_only_what_is_below_them() -> None:
    wrong: list[str] = []
    for module, edges in sorted(GRAPH.items()):
        unit = _trial_unit(module) if _layer(module) == "trials" else None
        for target, line in sorted(edges.items()):
            other = _trial_unit(target) if _layer(target) == "trials" else None
            if unit is None or other is None or other == unit:
                continue
            if unit in TRIAL_VOCABULARY:
                allowed = TRIAL_VOCABULARY
            else:
                allowed = TRIALS_ALLOWED[unit] | TRIAL_VOCABULARY
            if other not in allowed:
                wrong.append(f"{MODULES[module].relative_to(ROOT)}:{line}: trials.{unit} imports {target}")
    assert not wrong, "trials/ sub-packages import only what is below them (tests/test_import_layers.py TRIALS_ALLOWED):\n" + "\n".join(wrong)

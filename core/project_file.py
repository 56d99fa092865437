"""The project file: ``capplan.yaml`` (or ``[tool.capplan]`` in ``pyproject.toml``) at the project root.

It names what every command would otherwise be given by flags: the run config, the overlays, the
base data folder, the plans and golden folders, and default trial options. Commands read it when
present and an explicit flag beats it (``capplan.cli.common``). It is found by walking up from the
working directory to the first folder holding ``capplan.yaml`` or a ``pyproject.toml`` with a
``[tool.capplan]`` table; the walk stops at the filesystem root and at the git root (the first
folder with ``.git``, which is still looked in), so a checkout never picks up a file above it.

Like every input it is strict: unknown keys are located errors with did-you-mean, and every path
it names is relative to the project root and must stay inside it.
"""

# no `from __future__ import annotations`: pydantic then reads these annotations as objects

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from capplan.core.default_factories import empty_list
from capplan.core.diagnostics import Diagnostic, InputError, errors_only
from capplan.core.input_limits import MAX_CONFIG_BYTES, InputLimitError, read_limited
from capplan.core.project_lookup import PYPROJECT
from capplan.core.yaml_source import Loc, SourceFile, limit_diagnostic, read_source


#: a path in the project file: relative, POSIX separators, never empty
RelPath = Annotated[str, StringConstraints(min_length=1, max_length=4096, pattern=r"^[^\x00-\x1f\x7f]+$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False, defer_build=True)


class TrialDefaults(_Strict):
    """Defaults of ``capplan trial run``; each flag given on the command line beats its entry here."""

    tasks: list[RelPath] | None = Field(None, min_length=1, description="Task files or folders (the TASKS arguments).")
    plans: list[RelPath] | None = Field(None, min_length=1, description="Agent plan files (--plan, repeated).")
    user_plan: RelPath | None = Field(None, description="Plan of the user simulator's model (--user-plan).")
    out: RelPath | None = Field(None, description="Run folder (--out).")
    trials: int | None = Field(None, ge=1, le=10_000, description="Trials per plan × task (--trials).")
    concurrency: int | None = Field(None, ge=1, le=4096, description="Trials running at once (--concurrency).")
    max_turns: int | None = Field(None, ge=1, le=10_000, description="Run-level cap on agent turns (--max-turns).")
    max_cost: float | None = Field(None, ge=0, le=1e9, description="Spend bound in USD: no call is sent once this "
                                                                  "much is spent or reserved (--max-cost).")
    backend: Literal["local", "ray"] | None = Field(None, description="Where trials execute (--backend).")


class ProjectFile(_Strict):
    """``capplan.yaml``: paths are relative to the folder the file is in (the project root)."""

    run_config: RelPath | None = Field(None, description="Run config naming the models (--config).")
    overlays: list[RelPath] = Field(default_factory=empty_list, description="Operator overlay files, in order (--presets-file).")
    data: RelPath | None = Field(None, description="Base data folder instead of the bundled one (--data).")
    plans: RelPath | None = Field(None, description="Folder compile writes plans to (compile --out).")
    golden: RelPath | None = Field(None, description="Golden plans folder (compile --check / --update-golden).")
    trial: TrialDefaults | None = Field(None, description="Defaults of `capplan trial run`.")


@dataclass(frozen=True)
class Project:
    """A project file that validated: where it is, its root, and its settings."""

    path: Path
    root: Path
    settings: ProjectFile
    #: the file's parse, for locating problems found after validation (missing files)
    source: SourceFile

    def resolve(self, rel: str) -> Path:
        """``rel`` (a path from the file) as a path from the working directory: relative when it can be."""
        full = (self.root / rel).resolve()
        try:
            return Path(os.path.relpath(full))
        except ValueError:  # another drive (Windows)
            return full


def read_project_source(path: Path, display: str | None = None) -> SourceFile:
    """The project file's data with positions: YAML, or the ``[tool.capplan]`` table of a pyproject."""
    if path.name != PYPROJECT:
        return read_source(path, display)
    return _read_pyproject(path, display or str(path))


def _read_pyproject(path: Path, display: str) -> SourceFile:
    import hashlib
    import tomllib

    try:
        raw = read_limited(path, MAX_CONFIG_BYTES)
        data = tomllib.loads(raw.decode("utf-8"))
    except InputLimitError as exc:
        raise InputError([limit_diagnostic(display, exc)]) from None
    except OSError as exc:
        raise InputError([Diagnostic(display, 1, 1, "file-unreadable", str(exc.strerror or exc))]) from None
    except UnicodeDecodeError as exc:
        raise InputError([Diagnostic(display, 1, 1, "binary-file", f"not UTF-8 text ({exc.reason})")]) from None
    except tomllib.TOMLDecodeError as exc:
        line, col = _toml_error_position(str(exc))
        raise InputError([Diagnostic(display, line, col, "toml-syntax", str(exc).split(" (at line")[0])]) from None
    table = data.get("tool", {}).get("capplan") if isinstance(data.get("tool"), dict) else None
    if not isinstance(table, dict):
        raise InputError([Diagnostic(display, 1, 1, "not-a-mapping", "[tool.capplan] must be a table of keys",
                                     hint="write it as a [tool.capplan] section with key = value lines")])
    text = raw.decode("utf-8")
    return SourceFile(display, hashlib.sha256(raw).hexdigest(), table, _toml_positions(text))


def _toml_error_position(message: str) -> tuple[int, int]:
    found = re.search(r"at line (\d+), column (\d+)", message)
    return (int(found[1]), int(found[2])) if found else (1, 1)


def _toml_positions(text: str) -> dict[Loc, tuple[int, int]]:
    """Where each key of ``[tool.capplan]`` and its sub-tables is: enough to locate a problem.

    TOML's parser keeps no positions; the keys capplan reads are simple ``key = value`` lines
    under ``[tool.capplan]`` or ``[tool.capplan.<table>]`` headers, which a line scan finds.
    """
    positions: dict[Loc, tuple[int, int]] = {}
    table: Loc | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        header = re.match(r"^\s*\[\s*([A-Za-z0-9_.\-\s]+?)\s*\]\s*(#.*)?$", line)
        if header:
            parts = tuple(p.strip() for p in header[1].split("."))
            table = parts[2:] if parts[:2] == ("tool", "capplan") else None
            if table is not None:
                positions.setdefault(table, (number, 1))
            continue
        key = re.match(r"^(\s*)([A-Za-z0-9_\-]+)\s*=", line)
        if key and table is not None:
            positions.setdefault((*table, key[2]), (number, len(key[1]) + 1))
    return positions


def load_project(path: Path, display: str | None = None) -> tuple[Project | None, list[Diagnostic]]:
    """Validate the project file at ``path``: the project (None on any error) and every problem.

    Besides the schema, every path must stay inside the project root, and the run config,
    overlays, data folder and task paths it names must exist. The path checks run on what the
    file says even where the schema refused a sibling key, so one run reports every problem.
    """
    from capplan.core.pydantic_errors import parse

    shown = display or str(path)
    try:
        source = read_project_source(path, shown)
    except InputError as exc:
        return None, list(exc.diagnostics)
    root = path.resolve().parent
    problems = path_problems(source, root, path.name)
    try:
        settings = parse(source, ProjectFile)
    except InputError as exc:
        return None, sorted(list(exc.diagnostics) + problems)
    return (None if errors_only(problems) else Project(path, root, settings, source)), problems


#: where the file names paths, whether it is a list of them, and what each must be: an existing
#: file, folder, either ("exists"), or anything yet to be written ("any")
_PATH_FIELDS: tuple[tuple[Loc, bool, str], ...] = (
    (("run_config",), False, "file"), (("overlays",), True, "file"), (("data",), False, "folder"),
    (("plans",), False, "any"), (("golden",), False, "any"), (("trial", "tasks"), True, "exists"),
    (("trial", "plans"), True, "any"), (("trial", "user_plan"), False, "any"), (("trial", "out"), False, "any"),
)


def path_problems(source: SourceFile, root: Path, file_name: str) -> list[Diagnostic]:
    """Paths outside the project root, and named inputs that do not exist, located.

    Read off the file's data, not the validated model: a mistyped key elsewhere does not hide a
    path that leads out of the project (values of the wrong type are the schema's to report).
    """
    out: list[Diagnostic] = []
    for loc, many, kind in _PATH_FIELDS:
        value: Any = source.data
        for part in loc:
            value = value.get(part) if isinstance(value, dict) else None
        if many:
            named: list[tuple[Loc, Any]] = [((*loc, i), v) for i, v in enumerate(value)] if isinstance(value, list) else []
        else:
            named = [(loc, value)]
        for where, rel in named:
            if isinstance(rel, str) and rel:
                problem = _path_problem(root, rel, kind)
                if problem is not None:
                    code, message, hint = problem
                    out.append(source.diag(where, code, message, hint.replace("FILE", file_name)))
    return out


#: a value quoted back in a message: what paths look like (a folder, a file with an extension),
#: short; anything else (a pasted key in the wrong field) is located but never repeated
_QUOTABLE_PATH = re.compile(r"[\w./ -]{1,200}")


def _shown(rel: str) -> str:
    if _QUOTABLE_PATH.fullmatch(rel) and ("/" in rel or "." in Path(rel).name):
        return rel
    return "(the value at this position; not repeated, as it does not look like a path)"


def _path_problem(root: Path, rel: str, kind: str) -> tuple[str, str, str] | None:
    full = (root / rel).resolve()
    shown = _shown(rel)
    if Path(rel).is_absolute() or not full.is_relative_to(root):
        return ("path-outside-project", "the path leads outside the project root",
                "write a path relative to FILE's folder, inside it")
    if kind == "file" and not full.is_file():
        return "missing-file", f"no such file: {shown}", "create it (capplan init writes a starter project) or fix the path"
    if kind == "folder" and not full.is_dir():
        return "missing-file", f"no such folder: {shown}", "create it or fix the path"
    if kind == "exists" and not full.exists():
        return "missing-file", f"no such file or folder: {shown}", "create it or fix the path"
    return None


def _task_files(path: Path) -> list[Path]:
    """The YAML files a task path stands for (a folder: every *.yaml below it, hidden folders left out)."""
    if not path.is_dir():
        return [path]
    return sorted(p for p in path.rglob("*.yaml")
                  if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts))


def project_defaults(project: Project) -> dict[str, Any]:
    """Click's ``default_map`` for every command that takes what the project file names.

    Keyed by command name, then by the option's parameter name; paths are given relative to the
    working directory, so messages name them as the user would.
    """
    s = project.settings
    inputs: dict[str, Any] = {}
    if s.run_config is not None:
        inputs["run_config"] = project.resolve(s.run_config)
    if s.overlays:
        inputs["overlays"] = tuple(project.resolve(p) for p in s.overlays)
    if s.data is not None:
        inputs["data_dir"] = project.resolve(s.data)
    compile_map = dict(inputs)
    if s.plans is not None:
        compile_map["out_dir"] = project.resolve(s.plans)
    if s.golden is not None:
        compile_map["golden_dir"] = project.resolve(s.golden)
    lint_map: dict[str, Any] = {k: v for k, v in inputs.items() if k in ("run_config", "data_dir")}
    task_paths = (s.trial.tasks if s.trial is not None else None) or []
    tasks = [f for rel in task_paths for f in _task_files(project.root / rel)]
    lint_map["files"] = tuple(p for p in (project.resolve(project.path.name), inputs.get("run_config"),
                                          *inputs.get("overlays", ()), *map(project.resolve, map(str, tasks)))
                              if p is not None)
    run_map: dict[str, Any] = {}
    if s.run_config is not None:
        run_map["run_config"] = inputs["run_config"]
    t = s.trial
    if t is not None:
        if t.tasks:
            run_map["tasks"] = tuple(project.resolve(p) for p in t.tasks)
        if t.plans:
            run_map["plans"] = tuple(project.resolve(p) for p in t.plans)
        for field in ("user_plan", "out"):
            value = getattr(t, field)
            if value is not None:
                run_map[field] = project.resolve(value)
        for field, param in (("trials", "n_trials"), ("concurrency", "concurrency"), ("max_turns", "max_turns"),
                             ("max_cost", "max_cost"), ("backend", "backend")):
            value = getattr(t, field)
            if value is not None:
                run_map[param] = value
    return {"compile": compile_map, "explain": dict(inputs), "diff": dict(inputs), "lint": lint_map,
            "trial": {"run": run_map}}

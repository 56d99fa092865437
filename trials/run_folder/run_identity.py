"""What defines a run's experiment, as ``run.json`` records it, and what a resume changed.

A run folder holds trials of one experiment: its plans, task files, user plan, turn cap,
trial count, run config, the environment and grader code the tasks import, and the capplan
and litellm versions. A resume that changes any of them would merge two setups into one
summary row, so :func:`changes` lists every difference and the run folder refuses it.

Paths are never recorded as the machine spells them: a file is named relative to its
project root (the nearest folder above it holding ``.git``, else the current directory, as
compiled plans name their sources), or ``external:<folder>/<file>`` outside it.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import sys
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime, UTC
from pathlib import Path

import yaml

from capplan.core.redaction import redact_text
from capplan.core.reference_mode import reference_mode, speed_memo
from capplan.trials.tasks.environment import module_files
from capplan.trials.run_folder.records import RunInstalledModule, RunManifest, RunSettings
from capplan.trials.spec import TrialSpec

try:
    _Loader: type[yaml.SafeLoader] = yaml.CSafeLoader
except AttributeError:  # PyYAML built without libyaml
    _Loader = yaml.SafeLoader

_INSTALLED = {"site-packages", "dist-packages"}


def new_run_id() -> str:
    return uuid.uuid4().hex


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def project_root(path: Path) -> Path:
    """The nearest folder above ``path`` holding ``.git``; else the current directory.

    The same notion as ``capplan.compiler.project_root`` (which this layer may not import),
    searched from the file rather than from the current directory: a task pack in a checkout
    is named the same from wherever the command runs.
    """
    here = path.resolve()
    for folder in here.parents:
        if (folder / ".git").exists():
            return folder
    return Path.cwd().resolve()


def relative_name(path: Path) -> str:
    """``path`` relative to its project root, or ``external:<folder>/<file>`` outside it (or installed)."""
    full = path.resolve()
    try:
        rel = full.relative_to(project_root(full))
    except ValueError:
        return f"external:{full.parent.name}/{full.name}"
    if _INSTALLED & set(rel.parts):
        return f"external:{full.parent.name}/{full.name}"
    return rel.as_posix()


def redacted_command(argv: Sequence[str] | None = None) -> list[str]:
    """The command line with credentials redacted and absolute paths made project-relative."""
    args = list(sys.argv if argv is None else argv)
    if not args:
        return []
    shown = [os.path.basename(args[0])]
    for arg in args[1:]:
        option, eq, value = arg.partition("=") if arg.startswith("--") else ("", "", arg)
        if os.path.isabs(value):
            value = relative_name(Path(value))
        shown.append(redact_text(f"{option}{eq}{value}"))
    return shown


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _targets(task_text: str) -> list[str]:
    """The ``module:name`` targets a (validated) task file imports: its environment, its grader function."""
    data = yaml.load(task_text, Loader=yaml.SafeLoader if reference_mode() else _Loader)  # libyaml: speed only
    if not isinstance(data, dict):
        return []
    grader = data.get("grader")
    function = grader.get("function") if isinstance(grader, dict) else None
    environment = data.get("environment")
    # the component list's refs and a grader's {ref: ...} form (a path.py ref is digested as that file)
    components = [c.get("ref") for c in environment if isinstance(c, dict)] if isinstance(environment, list) else [environment]
    function = function.get("ref") if isinstance(function, dict) else function
    return [t for t in (*components, function) if isinstance(t, str)]


def task_modules(specs: Sequence[TrialSpec]) -> tuple[dict[str, str], dict[str, RunInstalledModule]]:
    """The environment and grader modules of the specs' tasks: files by project-relative path, installed ones by name."""
    files: dict[str, str] = {}
    installed: dict[str, RunInstalledModule] = {}
    providers: Mapping[str, list[str]] | None = None
    seen: set[tuple[str, str]] = set()
    for spec in specs:
        if (spec.task_path, spec.task_sha256) in seen:
            continue
        seen.add((spec.task_path, spec.task_sha256))
        folder = Path(spec.task_path).resolve().parent
        for target in _targets(spec.task_text):
            module = target.rpartition(":")[0]
            found = module_files(module, folder)
            if found is not None:
                for path in found:
                    files[relative_name(path)] = _sha256(path)
                continue
            if module in installed:
                continue
            if providers is None:
                providers = _installed_providers()
            dists = sorted(providers.get(module.split(".")[0], []))
            dist = dists[0] if dists else None
            installed[module] = RunInstalledModule(distribution=dist, version=_version(dist) if dist else None)
    return dict(sorted(files.items())), dict(sorted(installed.items()))


@speed_memo(maxsize=1)
def _installed_providers() -> Mapping[str, list[str]]:
    """Which distributions provide each importable top-level module: reads every installed distribution's
    file list (seconds with many installed), so once per process; read only, never changed."""
    return importlib.metadata.packages_distributions()


def build_settings(specs: Sequence[TrialSpec], run_config: Path | None = None) -> RunSettings:
    """The run's identity beyond plans and task files, from its specs (and the ``--config`` file, when given)."""
    files, installed = task_modules(specs)
    users = {s.user_plan_fingerprint for s in specs}
    caps = {s.max_turns_cap for s in specs}
    return RunSettings(
        user_plan_fingerprint=users.pop() if len(users) == 1 else None,
        max_turns=caps.pop() if len(caps) == 1 else None,
        trials=max((s.index for s in specs), default=0) + 1,
        run_config_sha256=_sha256(run_config) if run_config is not None else None,
        module_files=files, installed_modules=installed,
        capplan_version=_version("capplan"), litellm_version=_version("litellm"),
    )


def _short(value: object) -> str:
    if value is None:
        return "none"
    text = str(value)
    return text[:12] + "…" if len(text) > 16 else text


def changes(recorded: RunManifest, plans: dict[str, str], tasks: dict[str, tuple[str, str]],
            settings: RunSettings) -> list[str]:
    """What differs between the recorded run and this one (``tasks``: id -> (sha256, pack)); empty when nothing."""
    found: list[str] = []
    for key in sorted(set(recorded.plans) | set(plans)):
        was, now = recorded.plans.get(key), plans.get(key)
        if was is None:
            found.append(f"--plan: model {key!r} added")
        elif now is None:
            found.append(f"--plan: model {key!r} removed")
        elif was != now:
            found.append(f"--plan: model {key!r} has another plan (fingerprint {_short(was)} -> {_short(now)})")
    for task_id in sorted(set(recorded.tasks) | set(tasks)):
        old, new = recorded.tasks.get(task_id), tasks.get(task_id)
        if old is None:
            found.append(f"task {task_id!r} added")
        elif new is None:
            found.append(f"task {task_id!r} removed (or renamed)")
        elif old.sha256 != new[0]:
            found.append(f"task {task_id!r}: the task file changed (sha256 {_short(old.sha256)} -> {_short(new[0])})")
        elif old.pack != new[1]:
            found.append(f"task {task_id!r}: pack {old.pack!r} -> {new[1]!r}")
    was_s = recorded.settings
    if was_s is None:
        return found
    for label, a, b in (("--user-plan", was_s.user_plan_fingerprint, settings.user_plan_fingerprint),
                        ("--max-turns", was_s.max_turns, settings.max_turns),
                        ("--trials", was_s.trials, settings.trials),
                        ("--config (run config sha256)", was_s.run_config_sha256, settings.run_config_sha256),
                        ("capplan version", was_s.capplan_version, settings.capplan_version),
                        ("litellm version", was_s.litellm_version, settings.litellm_version)):
        if a != b:
            found.append(f"{label}: {_short(a)} -> {_short(b)}")
    for name in sorted(set(was_s.module_files) | set(settings.module_files)):
        a_digest, b_digest = was_s.module_files.get(name), settings.module_files.get(name)
        if a_digest == b_digest:
            continue
        what = "added" if a_digest is None else "removed" if b_digest is None else "changed"
        found.append(f"module file {name} {what}")
    for name in sorted(set(was_s.installed_modules) | set(settings.installed_modules)):
        a_mod, b_mod = was_s.installed_modules.get(name), settings.installed_modules.get(name)
        if a_mod != b_mod:
            def shown(m: RunInstalledModule | None) -> str:
                return "none" if m is None else f"{m.distribution or '?'} {m.version or '?'}"
            found.append(f"installed module {name}: {shown(a_mod)} -> {shown(b_mod)}")
    return found

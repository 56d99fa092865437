"""``capplan trial run --config RUN.yaml``: the run config, and its ``rate_limits`` checked against the run.

A limit names a provider (a providers.yaml binding key) and a key (a credential env-var name).
A name that is neither a bundled binding nor used by one of the run's plans is a located
error with did-you-mean: a mistyped name would otherwise leave the provider unlimited.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from capplan.core.diagnostics import Diagnostic, InputError, did_you_mean
from capplan.compiler.loading import PROVIDERS_FILE, bundled_dir, display_path, load_file
from capplan.executor.plan import Plan
from capplan.executor.rate_limits import RateLimits

if TYPE_CHECKING:
    from capplan.compiler.inputs.run_config import RunConfig
    from capplan.compiler.loading import Loaded

#: What a key variable's name looks like; anything else may be the key itself, pasted by mistake.
_VARIABLE_NAME = re.compile(r"[A-Z_][A-Z0-9_]{0,127}")


def load_run_config(path: Path) -> Loaded[RunConfig]:
    """The run config, validated with located errors exactly as ``capplan compile`` does."""
    from capplan.compiler.inputs.run_config import RunConfig  # noqa: F811 (the runtime import; the other is for types)

    loaded, diags = load_file(path, RunConfig, display_path(path, None))
    if loaded is None or any(d.severity == "error" for d in diags):
        raise InputError(diags)
    problems = engine_problems(loaded, path)
    if problems:
        raise InputError(problems)
    return loaded


def engine_problems(loaded: Loaded[RunConfig], path: Path) -> list[Diagnostic]:
    """What is wrong with the overlays ``engine.presets_file`` names, located in the run config.

    A trial run does not compile (its plans are already made), but a file it was given must not
    name overlays that ``capplan compile`` would refuse: each must be a file beside the run
    config that validates as an operator overlay.
    """
    from capplan.compiler.inputs.overlay_file import OverlayFile

    configured = loaded.model.engine.presets_file
    named = [(("engine", "presets_file"), configured)] if isinstance(configured, str) else \
        [(("engine", "presets_file", i), rel) for i, rel in enumerate(configured or [])]
    hint = ("engine.presets_file names operator overlays relative to the run config's folder (capplan compile "
            "applies them); fix the path, or remove the entry")
    problems: list[Diagnostic] = []
    for loc, rel in named:
        target = path.parent / rel
        if not rel.strip() or not target.is_file():
            problem = "is empty; it must name an overlay file" if not rel.strip() else \
                f"{rel!r} is a folder, not an overlay file" if target.is_dir() else \
                f"{rel!r} is not a regular file (a device, FIFO or socket)" if target.exists() else \
                f"{rel!r} does not exist (looked for {target})"
            problems.append(loaded.source.diag(loc, "missing-file", problem, hint))
            continue
        _, diags = load_file(target, OverlayFile, display_path(target, None))
        problems += [d for d in diags if d.severity == "error"]
    return problems


def load_rate_limits(loaded: Loaded[RunConfig], plans: Sequence[Plan]) -> RateLimits:
    """The run config's limits; every problem in the file is raised together."""
    from capplan.compiler.inputs.providers_file import ProvidersFile

    bundled, _ = load_file(bundled_dir() / PROVIDERS_FILE, ProvidersFile, display_path(Path(PROVIDERS_FILE), "bundled"))
    bindings = bundled.model.root if bundled is not None else {}
    providers = set(bindings) | {p.binding.key or p.model.provider.split("/")[0].lower() for p in plans}
    keys = {b.api_key_env for b in bindings.values() if b.api_key_env}
    keys |= {p.binding.binding.api_key_env for p in plans if p.binding.binding.api_key_env}
    limits = loaded.model.rate_limits
    problems: list[Diagnostic] = []
    for name in limits.providers:
        if name not in providers:
            problems.append(loaded.source.diag(("rate_limits", "providers", name), "unknown-provider",
                                               f"no provider binding is called {name!r}",
                                               did_you_mean(name, providers)))
    for position, name in enumerate(limits.keys, 1):
        if name in keys:
            continue
        if not _VARIABLE_NAME.fullmatch(name):
            # located by its line, named by its position: the entry is never printed back
            line, col = loaded.source.position(("rate_limits", "keys", name))
            problems.append(Diagnostic(loaded.source.display, line, col, "unknown-key-variable",
                                       f"entry {position} is not an environment variable name (not shown: it may be "
                                       "a key pasted in by mistake)", "rate_limits.keys",
                                       "name the variable that holds the key"
                                       + (f"; the run's bindings read {', '.join(sorted(keys))}" if keys else "")))
            continue
        problems.append(loaded.source.diag(("rate_limits", "keys", name), "unknown-key-variable",
                                           f"no provider binding reads its key from {name!r}",
                                           did_you_mean(name, keys)))
    if problems:
        raise InputError(problems)
    return limits

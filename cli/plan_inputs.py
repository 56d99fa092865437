"""The plans a command that holds plans to something is given: plan files, folders, or a compile.

``capplan conformance`` and ``capplan probe`` both take PLANS (files or folders of plan files),
or, with none, the models ``--config`` / ``--presets-file`` / ``--data`` compile to (the bundled
catalogue by default). Giving both is a usage error of the command's own kind.
"""

from __future__ import annotations

from pathlib import Path

from capplan.cli.common import print_diagnostics
from capplan.compiler.manifest import MANIFEST_FILE
from capplan.core.diagnostics import Diagnostic, InputError
from capplan.core.errors import UserError
from capplan.executor.plan import Plan


def named_plans(paths: tuple[Path, ...], run_config: Path | None, overlays: tuple[Path, ...],
                data_dir: Path | None, *, command: str, code: str,
                usage_error: type[UserError]) -> list[tuple[str, Path | None, Plan]]:
    """``(where it came from, its file or None when compiled, plan)`` for each plan the command is given.

    A path that is neither a file nor a folder of plans is a located problem under ``code``, all
    reported at once; a corrupt or tampered plan file is a located ``PlanLoadError`` (exit 2).
    """
    if not paths:
        from capplan.compiler.compile import compile_paths

        result = compile_paths(data_dir=data_dir, run_config=run_config, overlays=list(overlays), model=None)
        print_diagnostics(result.warnings)
        where = str(run_config) if run_config is not None else "bundled:catalogue.yaml"
        return [(f"{where} (model {key})", None, plan) for key, plan in sorted(result.plans.items())]
    if run_config or overlays or data_dir:
        raise usage_error("--config, --presets-file and --data compile plans; give them or PLANS, not both",
                          location=command)
    files: list[Path] = []
    problems: list[Diagnostic] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.glob("*.json") if p.is_file() and p.name != MANIFEST_FILE)
            if not found:
                problems.append(Diagnostic(str(path), 1, 1, code, "the folder holds no plan file (*.json)",
                                           hint="compile plans into it first: capplan compile --out " + str(path)))
            files += found
        elif path.is_file():
            files.append(path)
        else:
            problems.append(Diagnostic(str(path), 1, 1, code, "no such plan file or folder",
                                       hint="give plan files or folders of plans, or nothing for the bundled catalogue"))
    if problems:
        raise InputError(problems)
    return [(str(file), file, Plan.load(file)) for file in files]

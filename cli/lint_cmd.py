"""``capplan lint``: check input files and report every problem, located."""

from __future__ import annotations

import os
from pathlib import Path

import click

from capplan.cli.common import format_option, project_file_used
from capplan.cli.errors import CommandExit, ExitCode
from capplan.core.diagnostics import render_all
from capplan.core.diagnostics import Diagnostic
from capplan.compiler.lint import KINDS, bundled_index_note, lint_file, once_each


@click.command("lint")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--kind", type=click.Choice((*KINDS, "task")), default="auto", show_default=True,
              help="What the files are; auto guesses from the file name and top-level keys.")
@click.option("--data", "data_dir", type=click.Path(path_type=Path, file_okay=False),
              help="Base data to check overlays and run configs against (default: bundled).")
@click.option("--config", "run_config", type=click.Path(path_type=Path, dir_okay=False),
              help="Run config to check overlays against: each is compiled with it, and globs, "
                   "litellm_models keys and bindings that no model of it uses are reported.")
@click.option("--import-environments", is_flag=True, default=False,
              help="Task files: runs the task's code (imports environment and grader modules, constructs the "
                   "environment) to check them, instead of reading their source. Never on files you have not read.")
@format_option("text", "json", "github")
def lint_cmd(files: tuple[Path, ...], kind: str, data_dir: Path | None, run_config: Path | None,
             import_environments: bool, fmt: str) -> None:
    """Check preset, overlay, providers, pricing, run-config and trial task files.

    Every problem in every file is reported in one pass, sorted by position, as
    `file:line:col: error[CODE]: key.path: message` with a `hint:` line. Lint runs every check
    compile runs that needs only the file and the base data: overlays are checked against the
    base presets and bindings (shadowed or hidden presets, replaced presets, mistyped provider
    keys, globs written as model ids); a presets file's requires_capplan is checked against this
    capplan. With --config, each overlay is also compiled with that run config, and globs that
    match no model name, litellm_models keys no model id uses and unused bindings are reported.
    Run configs are compiled without writing anything. A clean run prints a one-line summary.
    bundled_index.json (capplan's parse index of its bundled YAML) is skipped with a note.

    Evidence ages. A param_value_rules rule or litellm_models declaration whose evidence names
    no YYYY-MM-DD day warns (evidence-undated). An overlay's probe_evidence entries (the
    snippets `capplan probe --out` writes) older than probe_evidence_checks.max_age_days (default
    180; set it in the overlay) warn (probe-evidence-stale), as reasoning_replay measurements
    older than reasoning_replay_checks.max_age_days do; with --config, a probed route no model
    of the run is on warns (probe-evidence-unused).

    Task files are checked against their environment class and grader from the modules' source,
    found by path in the task file's folder: nothing a file names is imported, run or
    constructed. A tool the environment lacks, a public method the task does not declare, a
    parameter the method does not take, an expected_state key the constructor never sets or a
    grader function the module lacks is an error; what the source cannot show (a module outside
    the folder, a base class from elsewhere, setattr) is a not-checked-statically warning.
    --import-environments runs the task's code (imports environment and grader modules,
    constructs the environment) for those checks instead.

    \b
      capplan lint examples/overlays/*.yaml
      capplan lint --config examples/run.yaml examples/overlays/ops-overlay.yaml
      capplan lint probes/gpt-5.overlay.yaml
    \b
    --format github   workflow annotations (::error file=…,line=…,col=…::…) for pull requests
    --format json     {"version": 1, "diagnostics": [{file, line, col, code, severity, path,
                      message, hint}, …]}: stable; new fields may be added, none removed

    Exit codes: 0 clean, 1 warnings only, 2 errors (including unreadable files).
    """
    diagnostics: list[Diagnostic] = []
    skipped = 0
    project = project_file_used()
    if project is not None and project.resolve() not in {f.resolve() for f in files}:
        files = (*files, Path(os.path.relpath(project)))  # lint checks the project file whenever one is in use
    for path in files:
        note = bundled_index_note(path) if kind == "auto" else None
        if note is not None:  # capplan's own parse index (presets/*.json matches it): a note, never a failure
            click.echo(f"capplan lint: {note}", err=True)
            skipped += 1
            continue
        if project is not None and path.resolve() == project.resolve():  # whatever its name (--project FILE)
            diagnostics += lint_file(path, "project")
            continue
        diagnostics += (_lint_task(path, import_environments) if _is_task(path, kind)
                        else lint_file(path, kind, data_dir, run_config))
    checked = len(files) - skipped
    diagnostics = once_each(diagnostics)  # a run config linted beside an overlay compiled with it: reported once
    output = render_all(diagnostics, fmt)
    if output or fmt == "json":
        click.echo(output)
    if fmt == "text":
        errors = sum(d.severity == "error" for d in diagnostics)
        summary = (f"{checked} file(s) checked: no problems" if not diagnostics
                   else f"{checked} file(s) checked: {errors} error(s), {len(diagnostics) - errors} warning(s)")
        click.echo(f"capplan lint: {summary}", err=bool(diagnostics))
    if any(d.severity == "error" for d in diagnostics):
        # the diagnostics are printed already, each located: the status is all that is left to say
        raise CommandExit(ExitCode.INPUT)
    if diagnostics:
        raise CommandExit(ExitCode.FINDINGS)


def _is_task(path: Path, kind: str) -> bool:
    if kind != "auto":
        return kind == "task"
    from capplan.trials.tasks.task_kind import looks_like_task_file

    return looks_like_task_file(path)  # False when unreadable: the regular lint reports why


def _lint_task(path: Path, import_environments: bool) -> list[Diagnostic]:
    from capplan.trials.tasks.loading import lint_task

    return lint_task(path, import_environments=import_environments)

"""``capplan compile``: compile models into plan files."""

from __future__ import annotations

from pathlib import Path

import click

from capplan.cli.common import input_options, next_hint, print_diagnostics
from capplan.cli.errors import CommandExit, ExitCode
from capplan.compiler.compile import compile_into, load_selected
from capplan.compiler.golden import REGEN_COMMAND, GoldenChecker, default_golden_dir
from capplan.compiler.plan_output import PlanSetWriter
from capplan.core.diagnostics import Diagnostic, InputError


@click.command("compile")
@input_options
@click.option("--model", metavar="KEY|PROVIDER/NAME",
              help="Compile one model: a key of the catalogue / run config, or an ad-hoc PROVIDER/NAME.")
@click.option("--out", "out_dir", type=click.Path(path_type=Path, file_okay=False), default=Path("plans"),
              show_default=True, help="Folder the plans are written to, one <model key>.json each, plus "
              "manifest.json; replaced as a whole, atomically.")
@click.option("--keep-others", is_flag=True,
              help="Keep plans (and other files) already in --out instead of removing those not compiled now.")
@click.option("--check", is_flag=True, help="Write nothing; compare with the golden plans and exit 1 on any difference.")
@click.option("--update-golden", is_flag=True, help="Rewrite the golden plans (and delete unused ones).")
@click.option("--golden", "golden_dir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Golden folder for --check / --update-golden (default: golden/plans in the project root, "
                   "the nearest folder with .git from the current directory, else the current directory).")
def compile_cmd(run_config: Path | None, overlays: tuple[Path, ...], data_dir: Path | None, model: str | None,
                out_dir: Path, keep_others: bool, check: bool, update_golden: bool, golden_dir: Path | None) -> None:
    """Compile model configuration into fingerprinted plan files.

    \b
    With no options, compiles the bundled catalogue against the bundled presets:
      capplan compile --out plans/
    A run config with an operator overlay:
      capplan compile --config examples/run.yaml --presets-file examples/overlays/ops-overlay.yaml --out plans/
    Against another base data set (a folder with model_presets.yaml, providers.yaml, catalogue.yaml
    and pricing.json, e.g. a data package's data/ folder; here the bundled one):
      capplan compile --data presets/ --out plans/
    In CI, fail when committed golden plans are stale:
      capplan compile --check

    Nothing is written when any input has an error. Identical inputs give byte-identical plans,
    wherever the command runs from: plans name input files relative to the project root (the
    nearest folder with .git), and the input digests go to --out's manifest.json. --out is
    replaced atomically and then holds exactly the compiled set (stale plans are removed and
    listed) unless --keep-others.
    Exit codes: 0 ok, 1 --check found differences, 2 input or output error (--check without a
    golden folder included).
    """
    if check and update_golden:
        raise click.UsageError("--check and --update-golden are exclusive")
    inputs, models = load_selected(data_dir=data_dir, run_config=run_config, overlays=list(overlays), model=model)
    # each plan is written (or compared) as soon as it is built and then let go: a compile of
    # thousands of models holds one plan at a time
    if check:
        def open_check(keys: set[str]) -> GoldenChecker:
            folder = golden_dir or default_golden_dir()
            require_golden_folder(folder, given=golden_dir is not None)
            return GoldenChecker(folder)

        checked = compile_into(inputs, models, open_check)
        print_diagnostics(checked.compiled.warnings)
        checker = checked.target()
        report = checker.finish(None if model is not None else checked.compiled.manifest)
        if model is not None:
            report.unused = []
        for line in report.lines():
            click.echo(line, err=True)
        if not report.clean:
            click.echo(f"golden plans in {checker.folder} differ; review the change, then run: {REGEN_COMMAND}",
                       err=True)
            raise CommandExit(ExitCode.FINDINGS)
        click.echo(f"{len(checked.compiled.manifest.plans)} plan(s) match {checker.folder}")
        return

    def open_writer(keys: set[str]) -> PlanSetWriter:
        folder = (golden_dir or default_golden_dir()) if update_golden else out_dir
        return PlanSetWriter(folder, keys, keep_others=model is not None if update_golden else keep_others)

    streamed = compile_into(inputs, models, open_writer)
    print_diagnostics(streamed.compiled.warnings)
    writer = streamed.target()
    written = writer.commit(streamed.compiled.manifest)
    _report_removed(written.removed)
    keys = sorted(streamed.compiled.manifest.plans)
    if update_golden:
        click.echo(f"wrote {len(keys)} golden plan(s) to {writer.folder}")
        return
    click.echo(f"compiled {len(keys)} plan(s) into {out_dir}")
    next_hint(_next_after_compile(out_dir, keys))


def _next_after_compile(out_dir: Path, keys: list[str]) -> str:
    """A trial run on the plans just written: the project's own when it names one, else a template."""
    ctx = click.get_current_context()
    trial_defaults = (ctx.find_root().default_map or {}).get("trial", {}).get("run", {})
    if "tasks" in trial_defaults and "plans" in trial_defaults:
        return "capplan trial run    # the tasks and plans capplan.yaml names"
    first = keys[0] if keys else "MODEL"
    return f"capplan trial run TASKS --plan {out_dir / (first + '.json')} --out runs/first"


def _report_removed(removed: list[str]) -> None:
    for name in removed:
        click.echo(f"removed stale plan: {name} (its model was not compiled; --keep-others keeps it)", err=True)


def require_golden_folder(folder: Path, *, given: bool) -> None:
    """Refuse ``--check`` against a golden folder that is not there, in one located line.

    Without it every plan would be listed as a "missing golden plan", which hides the one thing
    wrong: the project has no golden plans yet (or the command runs outside the project).
    """
    if folder.is_dir():
        return
    what = "is not a folder" if folder.exists() else "does not exist"
    where = "the --golden folder" if given else "the golden folder (golden/plans of the project root, the nearest folder with .git)"
    raise InputError([Diagnostic(str(folder), 1, 1, "golden-missing", f"{where} {what}, so there is nothing to check against",
                                 hint=f"run from your project, pass --golden FOLDER, or write the golden plans first: "
                                      f"{REGEN_COMMAND} (then commit them)")])

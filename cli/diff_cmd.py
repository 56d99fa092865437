"""``capplan diff``: what changed between two plans, two plan folders, or a git revision and now."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

from capplan.cli.common import format_option, input_options
from capplan.cli.errors import CommandExit, ExitCode
from capplan.compiler.diff.blast import blast_radius
from capplan.compiler.diff.checkers import CHECKERS, parse_names, select_checkers
from capplan.compiler.diff.engine import diff_plan_sets, with_lines
from capplan.compiler.project_root import find_project_root
from capplan.compiler.provenance_lines import disk_index
from capplan.compiler.diff.errors import DiffInputError
from capplan.compiler.diff.fail_on import FAIL_ON, failing
from capplan.compiler.diff.model import DiffReport
from capplan.compiler.diff.plan_files import PlanDoc, load_side
from capplan.compiler.diff.render import FORMATS, render_blast, render_report

_EPILOG = "\b\nChecks:\n" + "\n".join(f"  {c.name:<15} {c.description}" for c in CHECKERS.values()) + """

\b
Exit codes: 0 no differences, 1 differences, 2 bad input (missing or non-plan file, tampered plan,
incompatible plan_version, unknown check, missing git revision, inputs that do not compile),
3 credential routing changed and --fail-on credential-routing was given.

\b
Conformance: every model whose plan changed is held, on both sides, to the conformance corpus
(as `capplan conformance` does, offline against loopback emulators), and each cell that flips is
listed after the diff (rule id, plan, old -> new, the provider's text); a flip to rejected is
listed first and said loudly ("NOW REJECTED"; ::error with --format github). In JSON the flips
are under conformance_flips (present when a cell flips). The exit codes stay the diff's own: a
flip only happens where a plan changed, which already exits 1. --no-conformance skips it.

\b
Credential routing (always checked, whatever --checks says): a model's binding, endpoint,
api_base_env, key variables (api_key_env, api_keys_env, key_file_env), transport pin
(custom_llm_provider, kwargs_pin_transport), gateway flag (unroutable) or OpenRouter headers
(referer, title) changed, or a new model uses a route no old model did. It is listed first in
its own section (text, markdown), as credential_routing in JSON, and as ::warning annotations
titled "capplan credential-routing-changed" with --format github.
"""


@click.command("diff", epilog=_EPILOG)
@click.argument("old", required=False, type=click.Path(path_type=Path))
@click.argument("new", required=False, type=click.Path(path_type=Path))
@click.option("--base", "base_rev", metavar="REV",
              help="Compile the inputs as they are at git revision REV and as they are now, and diff the plans.")
@input_options
@click.option("--checks", metavar="NAMES", help="Comma-separated checks to run (default: all of them).")
@click.option("--ignore", metavar="NAMES", help="Comma-separated checks to skip, e.g. --ignore inputs.")
@format_option(*FORMATS)
@click.option("--summary", is_flag=True,
              help="Blast radius only: per changed input file, which models change plan and which do not.")
@click.option("--no-conformance", "no_conformance", is_flag=True,
              help="Do not hold the changed plans to the conformance corpus (see Conformance below).")
@click.option("--fail-on", "fail_on", multiple=True, type=click.Choice(FAIL_ON),
              help="Exit 3 (after printing the diff) when credential routing changed: which key a model "
                   "sends to which endpoint. For CI, where exit 1 (plans differ) passes.")
def diff_cmd(old: Path | None, new: Path | None, base_rev: str | None, run_config: Path | None,
             overlays: tuple[Path, ...], data_dir: Path | None, checks: str | None, ignore: str | None,
             fmt: str, summary: bool, no_conformance: bool, fail_on: tuple[str, ...]) -> None:
    """Semantic diff of capability plans, field by field, with the layer behind each change.

    \b
    Two plans, or two folders of plans matched by model key (the file stem):
      capplan diff golden/plans/kimi-k3.json plans/kimi-k3.json
      capplan diff golden/plans/ plans/
    What the working tree changes compared with a git revision (the CI command):
      capplan diff --base origin/main --format markdown >> "$GITHUB_STEP_SUMMARY"
      capplan diff --base HEAD --config examples/run.yaml --presets-file examples/overlays/ops-overlay.yaml --summary

    With --base, the data files (the bundled presets/ when this is a checkout of capplan,
    else the --data folder), the --config file and its engine.presets_file overlays, and the
    --presets-file overlays are each read at REV by their path in the repository and compiled
    exactly like the working tree's. A shallow clone works once REV is fetched.

    --format json is stable: see the README ("capplan diff --format json"); keys are never
    removed within a version.
    """
    status = _exit_code(lambda: _run(old, new, base_rev, run_config, overlays, data_dir, checks, ignore,
                                     fmt, summary, not no_conformance), fail_on)
    if status is not ExitCode.OK:
        raise CommandExit(status)


def _exit_code(run: Callable[[], DiffReport], fail_on: tuple[str, ...] = ()) -> ExitCode:
    """The diff's outcome as an exit code: 0 same, 1 differs, 3 a --fail-on finding.

    Bad input (2) is a UserError raised by ``run``, printed by :mod:`capplan.cli.errors`.
    """
    report = run()
    if failing(report, fail_on):
        return ExitCode.CREDENTIAL_ROUTING
    return ExitCode.FINDINGS if report.differs else ExitCode.OK


def _run(old: Path | None, new: Path | None, base_rev: str | None, run_config: Path | None,
         overlays: tuple[Path, ...], data_dir: Path | None, checks: str | None, ignore: str | None,
         fmt: str, summary: bool, conformance: bool = True) -> DiffReport:
    checkers = select_checkers(parse_names(checks), parse_names(ignore) or [])
    if base_rev is not None:
        if old is not None:
            raise DiffInputError("give either OLD NEW or --base REV, not both")
        old_docs, new_docs, old_label, new_label, notes = _from_revision(base_rev, run_config, overlays, data_dir)
    else:
        if old is None or new is None:
            raise DiffInputError("give two plan files or folders (OLD NEW), or --base REV; see `capplan diff --help`")
        if run_config or overlays or data_dir:
            raise DiffInputError("--config, --presets-file and --data only apply with --base")
        old_docs, new_docs, notes = _from_files(old, new)
        old_label, new_label = str(old), str(new)
    report = diff_plan_sets(old_docs, new_docs, checkers, old_label=old_label, new_label=new_label, notes=notes)
    report = with_lines(report, disk_index(find_project_root()))
    if summary:
        click.echo(render_blast(blast_radius(report, old_docs, new_docs), fmt), nl=False)
    else:
        rendered = render_report(report, fmt)
        if conformance and report.differs:
            # imported here: a diff of unchanged plans never starts an emulator
            from capplan.cli.conformance_flips import conformance_flips, render_flips

            rendered = render_flips(conformance_flips(report, old_docs, new_docs), fmt, rendered)
        click.echo(rendered, nl=False)
    return report


def _from_files(old: Path, new: Path) -> tuple[dict[str, PlanDoc], dict[str, PlanDoc], list[str]]:
    old_kind, old_docs = load_side(old)
    new_kind, new_docs = load_side(new)
    if old_kind != new_kind:
        raise DiffInputError(f"{old} is a {old_kind} and {new} is a {new_kind}: compare two plan files or two folders")
    if old_kind == "folder":
        return old_docs, new_docs, []
    (old_doc,), (new_doc,) = old_docs.values(), new_docs.values()
    # two files are compared whatever their names; say so when they are plans of different models
    was, now = old_doc.model_key, new_doc.model_key
    notes = [] if was == now else [f"comparing plans of two different models: {was} and {now}"]
    return {now: old_doc}, {now: new_doc}, notes


def _from_revision(rev: str, run_config: Path | None, overlays: tuple[Path, ...], data_dir: Path | None
                   ) -> tuple[dict[str, PlanDoc], dict[str, PlanDoc], str, str, list[str]]:
    # imported here: comparing plan files needs none of the compiler
    from capplan.compiler.diff.base import compile_against_base
    from capplan.compiler.diff.base_args import CompileOptions
    from capplan.compiler.loading import bundled_dir

    sides = compile_against_base(rev, CompileOptions(data_dir, run_config, overlays), cwd=Path.cwd(),
                                 bundled=bundled_dir())
    return sides.old, sides.new, sides.old_label, sides.new_label, list(sides.notes)

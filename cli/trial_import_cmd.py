"""``capplan trial import bfcl``: a published benchmark written as a pack of task files."""

from __future__ import annotations

from pathlib import Path

import click

# the categories and grader names are plain data: importing them loads neither the benchmark nor the runner
from capplan.trials.importers.bfcl.source import CATEGORIES

GRADERS = ("builtin", "bfcl", "both")


@click.group("import")
def import_cmd() -> None:
    """Write a published benchmark's tasks as capplan task files (bfcl)."""


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

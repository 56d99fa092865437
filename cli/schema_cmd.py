"""``capplan schema``: the JSON Schemas of every input format and the plan."""

from __future__ import annotations

from pathlib import Path

import click

from capplan.cli.errors import CommandExit, ExitCode
from capplan.compiler.project_root import find_project_root
from capplan.compiler.schemas import SCHEMAS, rendered
from capplan.core.diagnostics import Diagnostic, InputError

REGENERATE = "capplan schema --out"


@click.command("schema")
@click.argument("name", required=False, type=click.Choice(sorted(SCHEMAS)))
@click.option("--out", "out_dir", type=click.Path(path_type=Path, file_okay=False),
              help="Write every schema into this folder (default: print NAME to stdout).")
@click.option("--check", is_flag=True, help="Exit 1 when the schemas in --out (default: schemas/ of the project "
              "root, the nearest folder with .git) differ from the models (for CI); exit 2 when that folder is missing.")
def schema_cmd(name: str | None, out_dir: Path | None, check: bool) -> None:
    """Print or write the JSON Schemas (preset file, overlay, providers, pricing, run config, plan, request).

    \b
      capplan schema overlay                 # print one schema
      capplan schema --out schemas/          # regenerate the checked-in schemas
      capplan schema --check                 # fail when they drifted from the models

    Editors validate YAML against them with a first line such as
    `# yaml-language-server: $schema=schemas/overlay.schema.json` (`capplan init` writes
    schemas/ beside its starter files). --check without --out checks schemas/ of the project
    root (the nearest folder with .git, as for golden plans: capplan's checkout, run there).
    """
    if check:
        folder = checked_folder(out_dir)  # before rendering: a missing folder is told at once
        files = rendered()
        missing = [f for f in files if not (folder / f).is_file()]
        stale = [f for f, data in files.items() if f not in missing and (folder / f).read_bytes() != data]
        for f in missing:
            click.echo(f"missing schema: {folder / f}", err=True)
        for f in stale:
            click.echo(f"stale schema: {folder / f}", err=True)
        if stale or missing:
            click.echo(f"regenerate with: {REGENERATE} {folder}", err=True)
            raise CommandExit(ExitCode.FINDINGS)
        click.echo(f"{len(files)} schema(s) up to date")
        return
    files = rendered()
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        for f, data in sorted(files.items()):
            (out_dir / f).write_bytes(data)
        click.echo(f"wrote {len(files)} schema(s) to {out_dir}")
        return
    if name is None:
        raise click.UsageError("name a schema or pass --out DIR")
    click.echo(files[f"{name}.schema.json"].decode("utf-8"), nl=False)


def checked_folder(out_dir: Path | None) -> Path:
    """The folder ``--check`` compares: ``--out``, else schemas/ of the project root.

    The project root is the nearest folder with .git (capplan's own checkout, when run there), as
    for golden plans. An installed capplan has no schemas/ of its own, so a project without one
    is told so in one line, instead of every schema being called "stale".
    """
    if out_dir is not None:
        folder, where = out_dir, "the --out folder"
    else:
        folder = find_project_root() / "schemas"
        where = "the project's schemas folder (schemas/ of the nearest folder with .git, else of this one)"
    if folder.is_dir():
        return folder
    what = "is not a folder" if folder.exists() else "does not exist"
    raise InputError([Diagnostic(str(folder), 1, 1, "schemas-missing", f"{where} {what}, so there is nothing to check against",
                                 hint=f"write them with `{REGENERATE} {folder}` (capplan init writes them too), "
                                      "or pass --out FOLDER to check another folder")])

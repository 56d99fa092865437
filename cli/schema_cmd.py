"""``capplan schema``: the JSON Schemas of every input format and the plan."""

from __future__ import annotations

from pathlib import Path

import click

from capplan.cli.errors import CommandExit, ExitCode
from capplan.compiler.schemas import SCHEMAS, rendered, schema_dir


@click.command("schema")
@click.argument("name", required=False, type=click.Choice(sorted(SCHEMAS)))
@click.option("--out", "out_dir", type=click.Path(path_type=Path, file_okay=False),
              help="Write every schema into this folder (default: print NAME to stdout).")
@click.option("--check", is_flag=True, help="Exit 1 when schemas/ differs from the models (for CI).")
def schema_cmd(name: str | None, out_dir: Path | None, check: bool) -> None:
    """Print or write the JSON Schemas (preset file, overlay, providers, pricing, run config, plan, request).

    \b
      capplan schema overlay                 # print one schema
      capplan schema --out schemas/          # regenerate the checked-in schemas
      capplan schema --check                 # fail when they drifted from the models

    Editors validate YAML against them with a first line such as
    `# yaml-language-server: $schema=schemas/overlay.schema.json`.
    """
    files = rendered()
    if check:
        folder = out_dir or schema_dir()
        stale = [f for f, data in files.items() if not (folder / f).is_file() or (folder / f).read_bytes() != data]
        for f in stale:
            click.echo(f"stale schema: {folder / f}", err=True)
        if stale:
            click.echo("regenerate with: capplan schema --out schemas/", err=True)
            raise CommandExit(ExitCode.FINDINGS)
        click.echo(f"{len(files)} schema(s) up to date")
        return
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        for f, data in sorted(files.items()):
            (out_dir / f).write_bytes(data)
        click.echo(f"wrote {len(files)} schema(s) to {out_dir}")
        return
    if name is None:
        raise click.UsageError("name a schema or pass --out DIR")
    click.echo(files[f"{name}.schema.json"].decode("utf-8"), nl=False)

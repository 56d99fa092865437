"""``capplan trial export``: a run folder written for inspect_ai's viewer, or as JSON Lines."""

from __future__ import annotations

from pathlib import Path

import click

# plain data: importing it loads neither the runner nor the export itself
_FORMATS = ("inspect", "jsonl")


def _note(text: str) -> None:
    """What a run folder reports without failing (a torn line), and what was written, on stderr."""
    from capplan.trials.safe_text import plain

    click.echo(plain(text), err=True)


@click.command("export")
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option("--format", "fmt", type=click.Choice(_FORMATS), required=True,
              help="inspect: one inspect_ai eval log (.eval) per plan, for `inspect view`; "
                   "jsonl: one JSON object per trial, with the fields of `trial report --format csv`.")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Folder for the exported files (made when missing; never inside a run folder). "
                   "Needed for inspect; jsonl without --out prints to stdout.")
def export_cmd(runs: tuple[Path, ...], fmt: str, out: Path | None) -> None:
    """Write RUN folders in a format other tools read: inspect_ai eval logs, or JSON Lines.

    --format inspect writes one .eval file per plan of each RUN (RUNLABEL_PLANKEY.eval), in
    inspect_ai's log format, without needing inspect_ai installed: one sample per trial (id:
    the task id, epoch: the trial index + 1) with the system prompt and the conversation
    (tool calls and their arguments, tool results and their errors, reasoning), the pass
    verdict as score `capplan` (C passed, I not passed; an ungraded trial has none) and each
    grader's verdict as `grader/NAME`, token usage and cost per model (the user simulator's
    apart; an unknown cost is left out, never 0), and how an error, aborted or interrupted
    trial ended. Open them with inspect_ai's viewer (pip install inspect-ai).

    --format jsonl writes trials.jsonl (or stdout without --out): one object per trial, the
    columns of `trial report --format csv` with their JSON types.

    The run folders are only read. Every file is built before the first is written, so a run
    folder that does not read back is a located error (exit 2) with nothing written; every
    text is redacted again by value.

    \b
      capplan trial export runs/demo --format inspect --out logs/
      inspect view --log-dir logs/
      capplan trial export runs/demo --format jsonl > trials.jsonl
    """
    from typing import cast

    from capplan.trials.report.export.write import Format, export

    exported = export(list(runs), cast(Format, fmt), out, notify=_note)  # click.Choice checked the name
    if out is None:
        click.echo(exported.data.decode("utf-8"), nl=False)
        return
    for path, size in exported.files:
        _note(f"wrote {path} ({size / 1024:.0f} KiB)")
    _note(f"{exported.trials} trial(s) exported to {out}"
          + (f"; open them with: inspect view --log-dir {out}" if fmt == "inspect" else ""))

"""``capplan trial report`` and ``capplan trial view``: runs read back, compared, and shown."""

from __future__ import annotations

from pathlib import Path

import click

from capplan.core.errors import UserError

# plain data: importing them loads neither the runner nor jinja2
_FORMATS = ("md", "json", "csv")
_GROUP_BY = ("model", "task", "pack")


def _note(text: str) -> None:
    """What a run folder reports without failing (a torn line, a repeated line), on stderr."""
    from capplan.trials.safe_text import plain

    click.echo(plain(text), err=True)


class NoRunGiven(UserError):
    """``trial report`` or ``trial view`` without a RUN and without a project file that names one."""

    code = "NO_RUN"


def _runs_or_project(runs: tuple[Path, ...], command: str) -> tuple[Path, ...]:
    """RUN folders as given; none given: the project file's run folder (``trial.out``, what ``trial run`` writes)."""
    if runs:
        return runs
    from capplan.cli.common import project_in_use, project_file_used
    from capplan.core.diagnostics import InputError

    project = project_in_use()
    if project is None:
        where = project_file_used()
        raise NoRunGiven("no run folder given, and no project file names one" if where is None else
                         "no run folder given", location=f"capplan trial {command}",
                         hint=f"name the run folder: capplan trial {command} runs/demo (or run `capplan init` "
                              "and `capplan trial run`: then the project file's trial.out is the default)")
    out = project.settings.trial.out if project.settings.trial is not None else None
    if out is None:
        loc = ("trial",) if project.settings.trial is not None else ()
        raise InputError([project.source.diag(
            loc, "no-run-folder", f"`capplan trial {command}` was given no run folder, and this file sets no trial.out",
            f"name the run folder (capplan trial {command} runs/demo), or add `out: runs/NAME` under trial:")])
    folder = project.resolve(out)
    if not folder.is_dir():
        raise InputError([project.source.diag(
            ("trial", "out"), "missing-file", f"the run folder {folder} (trial.out) does not exist yet",
            f"run `capplan trial run` first (it writes there), or name another run folder: "
            f"capplan trial {command} RUN")])
    return (folder,)


@click.command("report")
@click.argument("runs", nargs=-1, required=False, type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option("--format", "fmt", type=click.Choice(_FORMATS), default=None,
              help="md (Markdown: what a pipe or a file gets without --format), json, or csv (one row per "
                   "trial). Without --format, a terminal shows the tables at its width. Without --format and "
                   "--by, one RUN re-renders and prints its summary.md as before.")
@click.option("--by", type=click.Choice(_GROUP_BY), default=None,
              help="Group the pass-rate table by model (the default), task or task pack.")
def report_cmd(runs: tuple[Path, ...], fmt: str | None, by: str | None) -> None:
    """Compare RUN folders side by side, or re-render one RUN's summary.

    With one RUN and neither --format nor --by, RUN's summary.md and summary.json are
    re-rendered from its runs.jsonl and summary.md is printed. Otherwise nothing is written:
    the runs are joined on (task id, trial index), one column per plan of each run with its
    fingerprint, and the report shows the pass rate (95 % Wilson interval, pass^k) grouped
    --by model, task or pack, a per-task matrix, and for every column after the first the
    paired difference in pass rate against the first with an exact McNemar test and a
    one-line verdict. Every name is printed with escape sequences and control characters
    removed and pipes escaped.

    On a terminal the tables are drawn at its width (a table with more columns than fit is
    shown one block per row); piped or redirected, the same report is Markdown, as with
    --format md.

    Without RUN, the project file's run folder (its trial.out, which `capplan init` sets and
    `capplan trial run` writes) is the one RUN.

    runs.jsonl is only read: a line that does not read back is a located error (exit 2); a
    torn last line is reported and left for the next run to set aside.

    \b
      capplan trial report runs/demo
      capplan trial report runs/demo runs/again             # side by side, with the paired verdict
      capplan trial report runs/demo runs/again --by task --format csv > trials.csv
    """
    runs = _runs_or_project(runs, "report")
    if len(runs) == 1 and fmt is None and by is None:
        _summary(runs[0])
        return
    from typing import cast

    from capplan.trials.report.compare import GroupBy, compare
    from capplan.trials.report.formats import Format, render
    from capplan.trials.report.run_data import load_runs

    # click.Choice has checked both values against the same names the Literal types list
    comparison = compare(load_runs(list(runs), notify=_note), by=cast(GroupBy, by or "model"))
    if fmt is None:
        _show(render(comparison, "md"))
        return
    click.echo(render(comparison, cast(Format, fmt)), nl=False)


def _show(markdown: str) -> None:
    """``markdown`` as it is off a terminal (a pipe, a file: what scripts read); on a terminal, tables at its width."""
    import sys

    if not sys.stdout.isatty():
        click.echo(markdown, nl=False)
        return
    import shutil

    from capplan.trials.report.formats import render_terminal

    click.echo(render_terminal(markdown, shutil.get_terminal_size().columns, color=True), nl=False)


def _summary(run_dir: Path) -> None:
    """Today's single-run report: summary.md and summary.json re-rendered, summary.md printed."""
    from capplan.trials.run_folder import confined
    from capplan.trials.run_folder.confined import ConfinedPathError
    from capplan.trials.driver import write_summary
    from capplan.trials.run_folder.folder import RunFolder, RunFolderError

    folder = RunFolder(run_dir, notify=_note)
    folder.check(report=True)
    try:
        write_summary(folder)
        text = confined.read_bytes(run_dir, ("summary.md",)) or b""
    except ConfinedPathError as exc:  # the folder changed since it was checked
        raise RunFolderError([exc.diagnostic()]) from None
    _show(text.decode("utf-8"))


@click.command("view")
@click.argument("runs", nargs=-1, required=False, type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="The HTML file to write. Default: report.html in the first RUN's folder (the only place "
                   "inside a run folder a page may go).")
@click.option("--open", "open_page", is_flag=True, default=False, help="Open the page in the default browser.")
@click.option("--serve", "serve", is_flag=True, default=False,
              help="Serve a live view of every run under one FOLDER (default: the current folder) on 127.0.0.1 "
                   "until Ctrl-C, instead of writing a page.")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="With --serve: the port on 127.0.0.1 (0: a free one, printed with the URL).")
def view_cmd(runs: tuple[Path, ...], out: Path | None, open_page: bool, serve: bool, port: int) -> None:
    """Write one self-contained HTML page of RUN folders: runs, model × task matrix, every trial.

    The page needs no server and no network (styles and script inline; it opens from
    file://): the run header (run id, times, capplan version, plans with fingerprints and
    effective presets, task packs with digests, spend, exit status and why); a model × task
    matrix coloured by outcome (passed, failed, error, aborted, interrupted, ungraded) with
    pass rate, 95 % interval and pass^k per model, filtered by outcome, termination reason,
    pack and text; and one view per trial, opened from its matrix cell: the conversation
    as a chat (tool calls with arguments, full tool results, harness feedback, handoff
    summaries, guard rejections), retries and waits with their reason, the grader's verdict
    per check, and per call its usage, cost, route and generation id. Every recorded text
    is shown as text, never run. The run folders are only read, but for the page itself:
    without --out it is RUN/report.html (with several RUNs, in the first one's folder).
    Without RUN, the project file's run folder (trial.out, as `capplan init` sets it).

    \b
      capplan trial view runs/demo                      # writes runs/demo/report.html
      capplan trial view runs/demo runs/again --out compare.html   # add --open to open it

    With --serve, nothing is written: a server on 127.0.0.1 only (never another interface)
    shows every run under FOLDER (name, date, models, pass rate, spend, status), refreshes
    while a run writes (new trials appear; running trials show their current turn), sorts
    trial tables by outcome, cost, tokens, latency, turns or termination, gives each trial a
    URL of its own, and compares runs or models: the paired McNemar verdict as trial report
    prints it, cost, tokens and latency per model, the tasks that flipped, and two
    conversations side by side from the first message where they differ. It reads only
    FOLDER (no link is followed out of it), loads nothing from the network, and stops on Ctrl-C.

    \b
      capplan trial view --serve runs                   # prints http://127.0.0.1:PORT/
      capplan trial view --serve runs --port 8765
    """
    if serve:
        _serve(runs, out, port, open_page)
        return
    if port:
        raise click.UsageError("--port goes with --serve")
    from capplan.trials.report.view.write import write_view

    runs = _runs_or_project(runs, "view")
    written = write_view(list(runs), out, notify=_note)
    # through _note: a run folder's name is free text, its escapes have no place on the terminal
    _note(f"wrote {written.path} ({written.size_bytes / 1024:.0f} KiB, {written.trials} trial(s))")
    if open_page:
        import webbrowser

        if not webbrowser.open(written.path.resolve().as_uri()):
            _note(f"note: no browser could be started; open {written.path.resolve()} yourself")


def _serve(runs: tuple[Path, ...], out: Path | None, port: int, open_page: bool) -> None:
    """``--serve``: one FOLDER, served until Ctrl-C (exit 0)."""
    if len(runs) > 1:
        raise click.UsageError("--serve takes one FOLDER (it shows every run under it)")
    if out is not None:
        raise click.UsageError("--serve writes nothing: leave --out out")
    from capplan.trials.report.serve.server import serve
    from capplan.trials.safe_text import plain

    folder = runs[0] if runs else Path(".")

    def announce(url: str) -> None:
        # on stdout, one line, the URL last: a script can read it; the folder's name made plain
        click.echo(f"serving {plain(folder)} (127.0.0.1 only; Ctrl-C stops) at {url}")
        if open_page:
            import webbrowser

            webbrowser.open(url)

    serve(folder, port, announce=announce)

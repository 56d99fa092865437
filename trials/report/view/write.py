"""Read the runs, render the page, write it: the whole of ``capplan trial view`` but its options.

Without ``--out`` the page is ``report.html`` at the top of the first run folder given (with
several runs, the comparison lives beside the first one's records). That is the one name a
view may take inside a run folder: ``trial run`` never writes, reads or refuses it, so a resume
goes on as before. Any other place inside a run folder is refused: a run folder holds only what
capplan writes. The page is written atomically (:mod:`capplan.trials.run_folder.confined`: the name
checked, no link followed; a link at ``report.html`` is refused, never written through).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from capplan.core.errors import UserError
from capplan.trials.run_folder import confined
from capplan.trials.run_folder.confined import ConfinedPathError
from capplan.trials.report.run_data import LoadedRun, load_runs
from capplan.trials.report.view.page import render_page
from capplan.trials.report.view.payload import build_payload


#: the page's name at the top of a run folder, where ``trial view`` writes it by default
VIEW_FILE = "report.html"


class ViewOutputError(UserError):
    """``--out`` names a place the page must not be written."""

    code = "VIEW_OUT"


@dataclass(frozen=True)
class WrittenView:
    """What was written."""

    path: Path
    size_bytes: int
    trials: int
    runs: tuple[LoadedRun, ...]


def _inside_a_run(out: Path, runs: list[LoadedRun]) -> LoadedRun | None:
    parent = out.resolve().parent
    for run in runs:
        root = run.path.resolve()
        if parent == root or root in parent.parents:
            return run
    return None


def render_runs(runs: list[LoadedRun]) -> str:
    """The page's HTML for ``runs``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        __version__ = version("capplan")
    except PackageNotFoundError:  # a checkout without an install
        __version__ = "(not installed)"
    from capplan.trials.safe_text import plain

    labels = ", ".join(plain(run.label) for run in runs)  # a folder name's escapes have no place in a title
    payload = build_payload(runs, generated_by=f"capplan {__version__} trial view")
    return render_page(payload, title=f"capplan trial view: {labels}")


def write_view(paths: list[Path], out: Path | None = None,
               notify: Callable[[str], None] | None = None) -> WrittenView:
    """Read the run folders at ``paths`` and write their page to ``out`` (default: the first run's report.html)."""
    runs = load_runs(paths, notify=notify)
    if out is None:
        folder, name = runs[0].path, VIEW_FILE
    else:
        inside = _inside_a_run(out, runs)
        if inside is not None and not (out.name == VIEW_FILE and out.resolve().parent == inside.path.resolve()):
            raise ViewOutputError(f"--out {out} is inside the run folder {inside.path}", location=str(out),
                                  hint=f"a run folder holds only what capplan writes, the page only as its top-level "
                                       f"{VIEW_FILE} (leave --out out for that); or write the page beside it, "
                                       f"e.g. --out {VIEW_FILE}")
        if out.is_dir():
            raise ViewOutputError(f"--out {out} is a folder", location=str(out), hint="name the HTML file to write, "
                                  "e.g. --out report.html")
        folder, name = (inside.path, VIEW_FILE) if inside is not None else (out.parent if str(out.parent) else Path("."),
                                                                            out.name)
        os.makedirs(folder, exist_ok=True)
    html = render_runs(runs).encode("utf-8")
    target = folder / name
    try:
        # a run folder's own root: the page is one more name in it, written as its files are
        confined.write_atomic(folder, (name,), html, mode=0o644)
    except ConfinedPathError as exc:
        diag = exc.diagnostic()
        raise ViewOutputError(diag.message, location=str(target), hint=diag.hint) from None
    return WrittenView(path=target if out is None else out, size_bytes=len(html),
                       trials=sum(len(r.trials) for r in runs), runs=tuple(runs))

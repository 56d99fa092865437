"""Read the runs, render the page, write it: the whole of ``capplan trial view`` but its options.

The page is written atomically inside the folder that holds it (:mod:`capplan.trials.confined`:
the name checked, no link followed). It is never written into a run folder: a run folder
holds only what ``trial run`` writes, and a foreign file there would make the next resume
refuse the folder.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from capplan.core.errors import UserError
from capplan.trials import confined
from capplan.trials.confined import ConfinedPathError
from capplan.trials.report.run_data import LoadedRun, load_runs
from capplan.trials.view.page import render_page
from capplan.trials.view.payload import build_payload


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
    from capplan.trials.report.text import plain

    labels = ", ".join(plain(run.label) for run in runs)  # a folder name's escapes have no place in a title
    payload = build_payload(runs, generated_by=f"capplan {__version__} trial view")
    return render_page(payload, title=f"capplan trial view: {labels}")


def write_view(paths: list[Path], out: Path, notify: Callable[[str], None] | None = None) -> WrittenView:
    """Read the run folders at ``paths`` and write their page to ``out``."""
    runs = load_runs(paths, notify=notify)
    inside = _inside_a_run(out, runs)
    if inside is not None:
        raise ViewOutputError(f"--out {out} is inside the run folder {inside.path}", location=str(out),
                              hint="a run folder holds only what capplan trial run writes; write the page beside it, "
                                   "e.g. --out report.html")
    if out.is_dir():
        raise ViewOutputError(f"--out {out} is a folder", location=str(out), hint="name the HTML file to write, "
                              "e.g. --out report.html")
    html = render_runs(runs).encode("utf-8")
    folder = out.parent if str(out.parent) else Path(".")
    os.makedirs(folder, exist_ok=True)
    try:
        confined.write_atomic(folder, (out.name,), html, mode=0o644)
    except ConfinedPathError as exc:
        diag = exc.diagnostic()
        raise ViewOutputError(diag.message, location=str(out), hint=diag.hint) from None
    return WrittenView(path=out, size_bytes=len(html), trials=sum(len(r.trials) for r in runs), runs=tuple(runs))

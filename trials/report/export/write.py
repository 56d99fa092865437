"""Where an export goes: ``--out`` checked, every file built before the first is written.

``--out`` is a folder (made when missing) outside every run folder exported: a run folder
holds only what capplan writes. Each file is written atomically inside it, by name, through
:mod:`capplan.trials.run_folder.confined` (the name checked, no link followed; a link planted
at a file's name is refused, never written through). Every file is built in memory first,
so a run folder that does not read back (a damaged line, a trial file that is not capplan's)
is a located error with nothing written. Files of the same name from an earlier export are
replaced; nothing else in ``--out`` is touched.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from capplan.core.errors import UserError
from capplan.trials.report.compare import Column, columns_of
from capplan.trials.report.export import inspect_log, jsonl
from capplan.trials.report.run_data import LoadedRun, load_runs
from capplan.trials.run_folder import confined
from capplan.trials.run_folder.confined import ConfinedPathError

Format = Literal["inspect", "jsonl"]
FORMATS: tuple[Format, ...] = ("inspect", "jsonl")
#: the JSONL export's file name inside --out
JSONL_FILE = "trials.jsonl"


class ExportOutputError(UserError):
    """``--out`` names a place an export must not be written."""

    code = "EXPORT_OUT"


@dataclass(frozen=True)
class Exported:
    """What was written (or, without --out, what was built)."""

    files: tuple[tuple[Path, int], ...]  # path and size in bytes
    trials: int
    data: bytes = b""  # the JSONL text, when it goes to stdout


def _slug(text: str) -> str:
    """``text`` as a safe file-name part (a run folder's name is free text)."""
    slug = re.sub(r"[^A-Za-z0-9._+=@,-]+", "-", text).strip("-.")
    slug = re.sub(r"\.{2,}", ".", slug)[:80]
    return slug if slug and slug[0].isalnum() else f"run-{slug}".rstrip("-")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("capplan")
    except PackageNotFoundError:  # a checkout without an install
        return "(not installed)"


def _check_out(out: Path, runs: list[LoadedRun]) -> None:
    """Refuse an --out that is a file, or that lies in (or is) a run folder being exported."""
    if out.exists() and not out.is_dir():
        raise ExportOutputError(f"--out {out} is a file", location=str(out),
                                hint="name a folder for the exported files (made when missing)")
    where = out.resolve()
    for run in runs:
        root = run.path.resolve()
        if where == root or root in where.parents:
            raise ExportOutputError(f"--out {out} is inside the run folder {run.path}", location=str(out),
                                    hint="a run folder holds only what capplan writes; export beside it, "
                                         f"e.g. --out {run.path.name or 'run'}-export")


def _planned(runs: list[LoadedRun], fmt: Format) -> list[tuple[str, LoadedRun | None, Column | None]]:
    """The export's file names, and what each is made of, before anything is read or built."""
    if fmt == "jsonl":
        return [(JSONL_FILE, None, None)]
    by_label = {run.label: run for run in runs}
    planned: list[tuple[str, LoadedRun | None, Column | None]] = []
    seen: dict[str, int] = {}
    for column in columns_of(runs):
        if not column.trials:
            continue  # a plan with no trial line yet has no samples to show: no log
        stem = f"{_slug(column.run)}_{column.plan_key}"
        seen[stem] = seen.get(stem, 0) + 1  # two folder names can make the same slug: never one file for both
        name = f"{stem}.eval" if seen[stem] == 1 else f"{stem}-{seen[stem]}.eval"
        planned.append((name, by_label[column.run], column))
    return planned


def build(runs: list[LoadedRun], fmt: Format) -> list[tuple[str, bytes]]:
    """Every file of the export, by name, built in memory (nothing written yet)."""
    if fmt == "jsonl":
        return [(JSONL_FILE, jsonl.render(columns_of(runs)))]
    version = _version()
    files = []
    for name, run, column in _planned(runs, fmt):
        assert run is not None and column is not None
        header, samples = inspect_log.eval_log(run, column, jsonl.row, version)
        files.append((name, inspect_log.eval_file(header, samples)))
    return files


def export(paths: list[Path], fmt: Format, out: Path | None,
           notify: Callable[[str], None] | None = None) -> Exported:
    """Read the run folders at ``paths`` and write their export into ``out`` (JSONL: returned when ``out`` is None)."""
    runs = load_runs(paths, notify=notify)
    trials = sum(len(run.trials) for run in runs)
    if out is None:
        if fmt != "jsonl":
            raise ExportOutputError("--format inspect needs --out FOLDER", location="--out",
                                    hint="e.g. --out logs/, then: inspect view --log-dir logs/")
        [(_, data)] = build(runs, fmt)
        return Exported(files=(), trials=trials, data=data)
    _check_out(out, runs)
    names = [name for name, _, _ in _planned(runs, fmt)]
    for name in names:
        try:
            confined.check_segment(name, "export file name")
        except ValueError as exc:  # a plan key that passed the run folder's reader cannot fail this
            raise ExportOutputError(str(exc), location=str(out / "?"),
                                    hint="rename the run folder to letters, digits and . _ -") from None
    for name in names:  # every refusal before the first write: nothing written
        target = out / name
        if target.is_symlink() or (target.exists() and not target.is_file()):
            raise ExportOutputError(f"{target} is a link or not a regular file", location=str(target),
                                    hint="an export replaces only files it wrote; remove it, or choose another --out")
    files = build(runs, fmt)
    os.makedirs(out, exist_ok=True)
    written = []
    for name, data in files:
        try:
            confined.write_atomic(out, (name,), data, mode=0o644)
        except ConfinedPathError as exc:
            diag = exc.diagnostic()
            raise ExportOutputError(diag.message, location=str(out / name), hint=diag.hint) from None
        written.append((out / name, len(data)))
    return Exported(files=tuple(written), trials=trials)

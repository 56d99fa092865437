"""Which files ``diff --base`` reads, and how both sides spell them.

Both sides get the same argument strings (relative to the current folder when the file is in
the repository, absolute when it is not), so display paths, provenance and input roles match
and only real changes show.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass, field
from pathlib import Path

from capplan.compiler.diff.git_revision import GitRepo
from capplan.compiler.loading import CATALOGUE_FILE, PRESETS_FILE, PRICING_FILE, PROVIDERS_FILE

DATA_FILES = (PRESETS_FILE, PROVIDERS_FILE, PRICING_FILE)


@dataclass(frozen=True)
class CompileOptions:
    """What a compilation reads, as the user gave it (``--data``, ``--config``, ``--presets-file``)."""

    data_dir: Path | None = None
    run_config: Path | None = None
    overlays: tuple[Path, ...] = ()


@dataclass
class SideArgs:
    """compile_paths arguments shared by both sides, and the repository files behind them."""

    data_dir: str | None = None
    run_config: str | None = None
    overlays: list[str] = field(default_factory=list)
    required: list[str] = field(default_factory=list)  # repo paths the base side cannot do without
    config: str | None = None  # repo path of the run config, when the repository holds it
    optional: dict[str, str] = field(default_factory=dict)  # repo path -> its --presets-file argument
    notes: list[str] = field(default_factory=list)


def resolve_arguments(repo: GitRepo, options: CompileOptions, cwd: Path, bundled: Path) -> SideArgs:
    """How both sides name each input, which repository files REV must supply, and notes."""
    args = SideArgs()

    def spell(path: Path, what: str) -> tuple[str, str | None]:
        """The argument both sides use, and the file's repo path (None: outside the repository)."""
        full = path if path.is_absolute() else cwd / path
        rel = repo.relative(full)
        if rel is None:
            args.notes.append(f"{what} {path} is outside the repository, so both sides read it from disk")
            return str(full.resolve()), None
        return os.path.relpath(repo.root / rel, cwd), rel

    data = options.data_dir
    if data is None and repo.relative(bundled) is not None:
        data = bundled  # the bundled data is versioned here (a checkout of capplan itself)
    if data is not None:
        args.data_dir, rel = spell(data, "--data folder")
        if rel is not None:
            args.required += [posixpath.join(rel, name) for name in DATA_FILES]
    else:
        args.notes.append(f"the bundled presets, providers and pricing come from the installed capplan "
                          f"({bundled}), which this repository does not hold, so both sides use the same files")
    if options.run_config is not None:
        args.run_config, args.config = spell(options.run_config, "--config")
    elif (catalogue := repo.relative(bundled / CATALOGUE_FILE)) is not None:
        # the catalogue is what `compile` reads without --config; named explicitly so REV's copy is used
        args.run_config = os.path.relpath(repo.root / catalogue, cwd)
        args.required.append(catalogue)
    else:
        args.notes.append(f"the catalogue comes from the installed capplan ({bundled / CATALOGUE_FILE}), which "
                          "this repository does not hold, so both sides compile the same models")
    for overlay in options.overlays:
        arg, rel = spell(overlay, "--presets-file")
        args.overlays.append(arg)
        if rel is not None:
            args.optional[rel] = arg
    return args

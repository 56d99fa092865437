"""``capplan diff --base REV``: compile the inputs as they are at REV and in the working tree.

Both sides are compiled with the same options and the same path spellings, so every display
path, provenance entry and input role lines up and only real changes show. REV's files are
written into a temporary copy of the repository layout, and the base side is compiled from
the matching folder of that copy. A file outside the repository is not versioned by it: both
sides read it from disk, and a note says so.
"""

from __future__ import annotations

import contextlib
import posixpath
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from capplan.compiler.compile import Compiled, compile_paths
from capplan.core.diagnostics import InputError
from capplan.compiler.diff.errors import DiffInputError, SideCompileError
from capplan.compiler.diff.base_args import CompileOptions, SideArgs, resolve_arguments
from capplan.compiler.diff.plan_files import PlanDoc, doc_of
from capplan.compiler.diff.git_revision import GitRepo

WORKING_TREE = "working tree"


@dataclass(frozen=True)
class BaseDiffInput:
    """The two plan sets, their labels, and what the reader should know about how they were made."""

    old: dict[str, PlanDoc]
    new: dict[str, PlanDoc]
    old_label: str
    new_label: str
    notes: tuple[str, ...]


def compile_against_base(rev: str, options: CompileOptions, *, cwd: Path, bundled: Path) -> BaseDiffInput:
    """Compile REV's inputs and the working tree's; ``bundled`` is the installed bundled-data folder."""
    repo = GitRepo.discover(cwd)
    commit = repo.resolve(rev)
    old_label = f"{rev} ({commit[:12]})"
    args = resolve_arguments(repo, options, cwd.resolve(), bundled)
    with tempfile.TemporaryDirectory(prefix="capplan-base-") as tmp:
        tree = Path(tmp) / "tree"
        base_args, has_models = _materialise(repo, commit, rev, args, tree)
        where = tree / (repo.relative(cwd) or ".")
        where.mkdir(parents=True, exist_ok=True)
        old = _compile(base_args, where, tree, f"the base side ({old_label})") if has_models else None
    new = _compile(args, cwd, repo.root, f"the {WORKING_TREE}")
    return BaseDiffInput(_docs(old, old_label), _docs(new, WORKING_TREE), old_label, WORKING_TREE,
                         tuple(args.notes + base_args.notes))


def _materialise(repo: GitRepo, commit: str, rev: str, args: SideArgs, tree: Path) -> tuple[SideArgs, bool]:
    """Write REV's copies under ``tree``; returns the base side's arguments and whether it has models."""
    base = SideArgs(args.data_dir, args.run_config, list(args.overlays))

    def fetch(rel: str) -> bytes | None:
        blob = repo.read(commit, rel)
        if blob is not None:
            target = tree / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(blob)
        return blob

    for rel in args.required:
        if fetch(rel) is None:
            raise DiffInputError(f"{rel} did not exist at {rev}, and the base side cannot be compiled without it")
    has_models = True
    if args.config is not None:
        blob = fetch(args.config)
        if blob is None:
            base.notes.append(f"{args.config} did not exist at {rev}: the base side has no models")
            has_models = False
        else:
            for rel in _configured_overlays(args.config, blob, rev):
                # an overlay that REV's config names but REV lacks is REV's own error; its compile says so
                fetch(rel)
    for rel, arg in args.optional.items():
        if fetch(rel) is None:
            base.overlays.remove(arg)
            base.notes.append(f"{rel} did not exist at {rev}: the base side is compiled without it")
    return base, has_models


def _configured_overlays(config: str, blob: bytes, rev: str) -> list[str]:
    """Repo paths of the overlays REV's run config names in ``engine.presets_file``."""
    try:
        data = YAML(typ="safe", pure=True).load(blob)
    except YAMLError:
        return []  # the base side's compile reports the located syntax error
    engine = data.get("engine") if isinstance(data, dict) else None
    named = engine.get("presets_file") if isinstance(engine, dict) else None
    entries = [named] if isinstance(named, str) else [n for n in named or [] if isinstance(n, str)]
    out = []
    for entry in entries:
        rel = posixpath.normpath(posixpath.join(posixpath.dirname(config), entry))
        if rel == ".." or rel.startswith("../") or posixpath.isabs(entry):
            raise DiffInputError(f"{config} at {rev} names the overlay {entry!r}, which is outside the repository; "
                                 "--base can only read files the repository holds")
        out.append(rel)
    return out


def _compile(args: SideArgs, where: Path, root: Path, side: str) -> Compiled:
    try:
        # compiled from `where`, with the side's own project root, so every file name matches across sides
        with contextlib.chdir(where):
            return compile_paths(
                data_dir=Path(args.data_dir) if args.data_dir else None,
                run_config=Path(args.run_config) if args.run_config else None,
                overlays=[Path(o) for o in args.overlays], root=root)
    except InputError as exc:
        raise SideCompileError(side, exc.diagnostics) from None


def _docs(compiled: Compiled | None, label: str) -> dict[str, PlanDoc]:
    if compiled is None:
        return {}
    return {key: doc_of(plan, label, compiled.manifest) for key, plan in compiled.plans.items()}

"""Compare plans with, and write them to, a golden folder.

Golden files are written only by ``capplan compile --update-golden``; a stale or missing one
fails with that exact command in the message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from capplan.compiler.manifest import MANIFEST_FILE, Manifest
from capplan.compiler.project_root import find_project_root, is_installed_path
from capplan.core.diagnostics import Diagnostic, InputError
from capplan.executor.plan import Plan

REGEN_COMMAND = "capplan compile --update-golden"


def default_golden_dir(start: Path | None = None) -> Path:
    """``golden/plans`` of the project the command runs in, never of the installed package.

    The project root is found from the current directory (see
    :func:`capplan.compiler.project_root.find_project_root`), so an installed capplan checks and
    updates the golden plans of the repository it is run in; a root inside an installed package
    folder (``site-packages``) is refused: ``--update-golden`` must never write there.
    """
    root = find_project_root(start)
    if is_installed_path(root):
        raise InputError([Diagnostic(str(root), 1, 1, "golden-in-installed-package",
                                     "the project root for golden plans is inside an installed package folder",
                                     hint="run capplan compile from your project (the folder with .git), "
                                          "or pass --golden FOLDER")])
    return root / "golden" / "plans"


def plan_files(folder: Path) -> list[Path]:
    """The plan files of a folder (every ``*.json`` but the manifest)."""
    return sorted(p for p in folder.glob("*.json") if p.name != MANIFEST_FILE) if folder.is_dir() else []


@dataclass
class GoldenReport:
    """How a set of plans compares with a golden folder."""

    changed: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (self.changed or self.missing or self.unused)

    def lines(self) -> list[str]:
        out = [f"stale golden plan: {n}" for n in self.changed if n != MANIFEST_FILE]
        out += [f"stale golden manifest: {n} (input digests)" for n in self.changed if n == MANIFEST_FILE]
        out += [f"missing golden plan: {n}" for n in self.missing]
        out += [f"unused golden plan (no such model): {n}" for n in self.unused]
        return out


def compare(plans: dict[str, Plan], folder: Path, manifest: Manifest | None = None) -> GoldenReport:
    """Byte-for-byte comparison of ``plans`` (and ``manifest``, when given) with ``folder``."""
    report = GoldenReport()
    existing = {p.name for p in plan_files(folder)}
    expected = {f"{key}.json": plan.to_bytes() for key, plan in plans.items()}
    if manifest is not None:
        expected[MANIFEST_FILE] = manifest.to_bytes()
        if (folder / MANIFEST_FILE).is_file():
            existing.add(MANIFEST_FILE)
    for name, data in sorted(expected.items()):
        if name not in existing:
            report.missing.append(name)
        elif (folder / name).read_bytes() != data:
            report.changed.append(name)
    report.unused = sorted(existing - set(expected))
    return report

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
    checker = GoldenChecker(folder)
    for key, plan in plans.items():
        checker.add(key, plan)
    return checker.finish(manifest)


class GoldenChecker:
    """Compares plans with a golden folder one at a time, as a compile builds them.

    Each plan's bytes are compared with its golden file when the plan is added and then let go,
    so ``capplan compile --check`` holds one plan at a time (``benchmarks/compiler_speed.py``,
    memory row); only the names seen and those that differ are kept.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._existing = {p.name for p in plan_files(folder)}
        self._seen: set[str] = set()
        self._report = GoldenReport()

    def add(self, key: str, plan: Plan) -> None:
        """Compare one plan with its golden file."""
        self._compare(f"{key}.json", plan.to_bytes())

    def abort(self) -> None:
        """Nothing to undo: a check writes nothing."""

    def finish(self, manifest: Manifest | None = None) -> GoldenReport:
        """The report, with ``manifest`` compared too when given and every golden plan not seen as unused."""
        if manifest is not None:
            if (self.folder / MANIFEST_FILE).is_file():
                self._existing.add(MANIFEST_FILE)
            self._compare(MANIFEST_FILE, manifest.to_bytes())
        report = self._report
        report.changed.sort()
        report.missing.sort()
        report.unused = sorted(self._existing - self._seen)
        return report

    def _compare(self, name: str, data: bytes) -> None:
        self._seen.add(name)
        if name not in self._existing:
            self._report.missing.append(name)
        elif (self.folder / name).read_bytes() != data:
            self._report.changed.append(name)

"""Compare plans with, and write them to, a golden folder.

Golden files are written only by ``capplan compile --update-golden``; a stale or missing one
fails with that exact command in the message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from executor.plan import Plan

REGEN_COMMAND = "capplan compile --update-golden"


def default_golden_dir() -> Path:
    """``golden/plans`` of the checkout capplan runs from."""
    return Path(__file__).resolve().parents[1] / "golden" / "plans"


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
        out = [f"stale golden plan: {n}" for n in self.changed]
        out += [f"missing golden plan: {n}" for n in self.missing]
        out += [f"unused golden plan (no such model): {n}" for n in self.unused]
        return out


def compare(plans: dict[str, Plan], folder: Path) -> GoldenReport:
    """Byte-for-byte comparison of ``plans`` with ``folder``."""
    report = GoldenReport()
    existing = {p.name for p in folder.glob("*.json")} if folder.is_dir() else set()
    for key, plan in sorted(plans.items()):
        path = folder / f"{key}.json"
        if path.name not in existing:
            report.missing.append(path.name)
        elif path.read_bytes() != plan.to_bytes():
            report.changed.append(path.name)
    report.unused = sorted(existing - {f"{k}.json" for k in plans})
    return report


def write_plans(plans: dict[str, Plan], folder: Path, *, prune: bool = False) -> list[Path]:
    """Write every plan as ``<key>.json``; with ``prune``, delete plan files of other models."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for key, plan in sorted(plans.items()):
        path = folder / f"{key}.json"
        path.write_bytes(plan.to_bytes())
        written.append(path)
    if prune:
        keep = {f"{k}.json" for k in plans}
        for stale in folder.glob("*.json"):
            if stale.name not in keep:
                stale.unlink()
    return written

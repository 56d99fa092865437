"""``capplan diff``'s conformance check: the cells a change flips, for the plans it changed.

Only models whose plan changed on both sides are held to the bundled corpus, old and new, through
the same runner as ``capplan conformance``; a plan on a protocol no emulator speaks, the offline
mock, or an older plan shape that cannot be rebuilt is left out with a note. The compiler never
imports conformance (the layers forbid it), so this lives with the command.

A flip is ``(plan, rule_id, old status -> new status)``; a flip to ``rejected`` carries the
provider's text, the scenario and the request. The diff's exit codes do not change: a flip only
happens where a plan changed, which already exits 1; ``capplan conformance`` is the CI gate.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from capplan.compiler.diff.model import DiffReport
from capplan.compiler.diff.plan_files import PlanDoc
from capplan.conformance.corpus import load_corpus
from capplan.conformance.emulators import checks_by_protocol, emulators
from capplan.conformance.routes import Target, target_of
from capplan.conformance.runner import Cell, PlanInput, run_conformance, workers_default
from capplan.executor.plan import Plan


@dataclass(frozen=True)
class Flip:
    """One cell that changed status between the two sides."""

    plan: str
    rule_id: str
    old: str
    new: str
    #: the provider's text (the rejected side's), or why the cell is not applicable now
    detail: str
    scenario: str | None = None
    request: int | None = None

    @property
    def to_rejected(self) -> bool:
        return self.new == "rejected"

    def line(self) -> str:
        where = f" (scenario {self.scenario}, request {self.request})" if self.scenario is not None else ""
        head = "NOW REJECTED: " if self.to_rejected else ""
        return f"{head}{self.plan} x {self.rule_id}: {self.old} -> {self.new}: {self.detail}{where}"

    def as_json(self) -> dict[str, object]:
        return {"plan": self.plan, "rule_id": self.rule_id, "old": self.old, "new": self.new, "detail": self.detail,
                "scenario": self.scenario, "request": self.request}


@dataclass(frozen=True)
class FlipReport:
    flips: tuple[Flip, ...]
    notes: tuple[str, ...]
    checked: tuple[str, ...]


def _plan_of(doc: PlanDoc) -> Plan | None:
    """The plan a diff side holds (its body without the run's input digests), or None when it cannot be rebuilt."""
    if doc.shape_problem is not None:
        return None
    try:
        return Plan.seal({k: v for k, v in doc.body.items() if k in Plan.model_fields and k != "fingerprint"})
    except ValueError:
        return None


def conformance_flips(report: DiffReport, old: Mapping[str, PlanDoc], new: Mapping[str, PlanDoc]) -> FlipReport:
    """Run conformance on both sides of every changed plan and list the cells that flip."""
    spoken = emulators()
    notes: list[str] = []
    pairs: list[tuple[PlanInput, PlanInput]] = []
    for model in report.models:
        if not model.changes or model.key not in old or model.key not in new:
            continue
        before, after = _plan_of(old[model.key]), _plan_of(new[model.key])
        if before is None or after is None:
            notes.append(f"{model.key}: a plan of an older shape; not held to the conformance corpus")
            continue
        targets = [target_of(before), target_of(after)]
        if not all(isinstance(t, Target) and t.protocol in spoken for t in targets):
            continue  # the mock, or a protocol no emulator speaks: `capplan conformance` says which
        pairs.append((PlanInput(model.key, before, old[model.key].path), PlanInput(model.key, after, new[model.key].path)))
    if not pairs:
        return FlipReport((), tuple(notes), ())
    corpus = load_corpus(checks=checks_by_protocol())
    workers = workers_default()
    was = run_conformance([p for p, _ in pairs], corpus, emulators=spoken, workers=workers)
    now = run_conformance([p for _, p in pairs], corpus, emulators=spoken, workers=workers)
    return FlipReport(tuple(_flips(was.cells, now.cells)), tuple(notes), tuple(p.key for p, _ in pairs))


def _flips(old: Sequence[Cell], new: Sequence[Cell]) -> list[Flip]:
    before = {(c.plan, c.rule_id): c for c in old}
    flips = []
    for cell in new:
        previous = before.get((cell.plan, cell.rule_id))
        if previous is None or previous.status == cell.status:
            continue
        shown = cell if cell.status != "accepted" else previous  # the side that says what is wrong
        flips.append(Flip(cell.plan, cell.rule_id, previous.status, cell.status, shown.detail, shown.scenario,
                          shown.request))
    # flips to rejected first: those are what a review must see
    return sorted(flips, key=lambda f: (not f.to_rejected, f.plan, f.rule_id))


def render_flips(flips: FlipReport, fmt: str, rendered: str) -> str:
    """``rendered`` (the diff in ``fmt``) with the flips added; unchanged when nothing flipped."""
    if not flips.flips:
        return rendered
    if fmt == "json":
        doc = json.loads(rendered)
        doc["conformance_flips"] = [f.as_json() for f in flips.flips]
        return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    rejected = sum(f.to_rejected for f in flips.flips)
    if fmt == "github":
        lines = []
        for flip in flips.flips:
            kind = "error" if flip.to_rejected else "notice"
            body = flip.line().replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
            lines.append(f"::{kind} title=capplan conformance flip {flip.rule_id}::{body}")
        return rendered + "\n".join(lines) + "\n"
    head = f"Conformance: {len(flips.flips)} cell(s) flip"
    if rejected:
        head += f", {rejected} to REJECTED (the provider would refuse these plans' requests)"
    if fmt == "markdown":
        body = "\n".join(f"- {f.line()}" for f in flips.flips)
        return f"{rendered}\n## {head}\n\n{body}\n"
    body = "\n".join(f"  {f.line()}" for f in flips.flips)
    return f"{rendered}\n{head}:\n{body}\n"

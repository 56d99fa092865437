"""Plain text for a terminal: one line per change, indented under its model."""

from __future__ import annotations

from capplan.compiler.diff.blast import BlastRadius
from capplan.compiler.diff.model import DiffReport, ModelDiff
from capplan.compiler.diff.render.values import show, where


def render_report(report: DiffReport) -> str:
    """Changed, added and removed models with their changes, then the totals."""
    lines = [f"capplan diff: {report.old_label} → {report.new_label}"]
    lines += [f"note: {n}" for n in report.notes]
    lines += _credential_routing(report)
    if report.inputs:
        lines.append("inputs (run level, from manifest.json; every plan of the run shares them):")
        lines += [f"  {c.field}: {show(c.old)} → {show(c.new)}" for c in report.inputs]
    for m in report.with_status("removed", "added", "changed"):
        lines += _model(m)
    lines.append(totals(report))
    return "\n".join(lines) + "\n"


def _credential_routing(report: DiffReport) -> list[str]:
    """First, so nobody scrolls past it: which key is now sent where."""
    if not report.credential_routing:
        return []
    out = [f"CREDENTIAL ROUTING CHANGED ({len(report.credential_routing)}): which key is sent where; "
           "review each before merging:"]
    for r in report.credential_routing:
        c = r.change
        layer = f"  [{where(c)}]" if c.source else ""
        out.append(f"  {r.model}  {r.aspect}  {c.field}: {show(c.old)} → {show(c.new)}{layer}")
    return out


def _model(m: ModelDiff) -> list[str]:
    if m.status == "added":
        return [f"{m.key}: added ({m.new_path})"]
    if m.status == "removed":
        return [f"{m.key}: removed (was {m.old_path})"]
    out = [f"{m.key}: changed"]
    if m.version_changed:
        out.append(f"  plan_version: {m.old_version} → {m.new_version}")
    width = max((len(c.check) for c in m.changes), default=0)
    for c in m.changes:
        layer = f"  [{where(c)}]" if c.source else ""
        out.append(f"  {c.check:<{width}}  {c.field}: {show(c.old)} → {show(c.new)}{layer}")
    return out


def totals(report: DiffReport) -> str:
    n = report.counts()
    if not report.differs:
        return f"no differences in {n['unchanged']} model(s) (checks: {', '.join(report.checks)})"
    return (f"{n['changed']} changed, {n['added']} added, {n['removed']} removed, {n['unchanged']} unchanged; "
            f"{len(report.inputs)} input change(s)")


def render_blast(blast: BlastRadius) -> str:
    """Per changed input: the models whose plan it changes and the ones it leaves alone."""
    lines = [f"capplan blast radius: {blast.old_label} → {blast.new_label}"]
    lines += [f"note: {n}" for n in blast.notes]
    if blast.credential_routing:
        lines.append("CREDENTIAL ROUTING CHANGED for: " + ", ".join(blast.credential_routing)
                     + " (the full diff lists the fields; review before merging)")
    if not blast.inputs:
        lines.append("no input file changed")
    for imp in blast.inputs:
        lines.append(f"{imp.path} ({imp.status}; {', '.join(imp.roles)})")
        lines.append(f"  changes the plan of {len(imp.affects)}: {', '.join(imp.affects) or '-'}")
        lines.append(f"  does not change {len(imp.does_not_change)}: {', '.join(imp.does_not_change) or '-'}")
    if blast.unattributed:
        lines.append("changed, cause not traced to one input: " + ", ".join(blast.unattributed))
    if blast.added:
        lines.append("models added: " + ", ".join(blast.added))
    if blast.removed:
        lines.append("models removed: " + ", ".join(blast.removed))
    lines.append(f"{len(blast.changed)} model(s) change plan, {len(blast.unchanged)} do not")
    return "\n".join(lines) + "\n"

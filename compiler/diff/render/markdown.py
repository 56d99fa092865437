"""GitHub-flavoured markdown for a pull-request comment or ``$GITHUB_STEP_SUMMARY``.

A summary table comes first, so a reviewer sees the scale of a change at a glance; per-model
details follow, folded into ``<details>`` when they are long. Input digests, which are the
same for every model, are listed once instead of in every model's table.
"""

from __future__ import annotations

import re

from capplan.compiler.diff.blast import BlastRadius
from capplan.compiler.diff.model import Change, DiffReport, ModelDiff
from capplan.compiler.diff.render.values import show, where

#: a model's table is folded when it has more rows than this, or when many models changed
COLLAPSE_ROWS = 6
COLLAPSE_MODELS = 10


def code(text: str) -> str:
    """An inline code span that survives backticks and pipes inside a table cell."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}".replace("|", "\\|")


def render_report(report: DiffReport) -> str:
    """Heading, notes, counts, per-model table, input changes, then the details of each model."""
    out = [f"## capplan diff: {code(report.old_label)} → {code(report.new_label)}", ""]
    out += [f"> **note:** {n}" for n in report.notes] + ([""] if report.notes else [])
    out += _credential_routing(report)
    n = report.counts()
    if not report.differs:
        out.append(f"No plan differences in {n['unchanged']} model(s). Checks: {', '.join(report.checks)}.")
        return "\n".join(out) + "\n"
    out += ["| models | count |", "|:--|--:|"]
    out += [f"| {label} | {n[status]} |" for status, label in _STATUS_LABELS.items()]
    out.append("")
    listed = report.with_status("removed", "added", "changed")
    if listed:
        out += ["| model | status | checks | changes |", "|:--|:--|:--|--:|"]
        for m in listed:
            rows = _rows(m)
            checks = ", ".join(dict.fromkeys(c.check for c in rows))
            if m.version_changed:
                checks = ", ".join(filter(None, [f"plan_version {m.old_version} → {m.new_version}", checks]))
            out.append(f"| {code(m.key)} | {m.status} | {checks} | {len(rows) or ''} |")
        out.append("")
    out += _inputs_section(report)
    fold_all = len(report.with_status("changed")) > COLLAPSE_MODELS
    for m in report.with_status("changed"):
        out += _details(m, fold_all)
    return "\n".join(out).rstrip("\n") + "\n"


_STATUS_LABELS = {"changed": "changed", "added": "added", "removed": "removed", "unchanged": "unchanged"}


def _rows(m: ModelDiff) -> list[Change]:
    return [c for c in m.changes if c.check != "inputs"]


def _table(changes: list[Change]) -> list[str]:
    out = ["| check | field | old | new | layer |", "|:--|:--|:--|:--|:--|"]
    for c in changes:
        layer = where(c)
        out.append(f"| {c.check} | {code(c.field)} | {code(show(c.old))} | {code(show(c.new))} | "
                   f"{code(layer) if layer else ''} |")
    return out


def _details(m: ModelDiff, fold: bool) -> list[str]:
    rows = _rows(m)
    version = [f"plan_version {m.old_version} → {m.new_version}", ""] if m.version_changed else []
    body = version + (_table(rows) if rows else [])
    if fold or len(rows) > COLLAPSE_ROWS:
        return [f"<details><summary><b>{m.key}</b>: {len(rows)} change(s)</summary>", "", *body, "", "</details>", ""]
    return [f"### {code(m.key)}", "", *body, ""]


def _credential_routing(report: DiffReport) -> list[str]:
    """Its own section, before everything else: which key is now sent where."""
    if not report.credential_routing:
        return []
    out = ["### Credential routing changed", "",
           "> **Review before merging:** these fields decide which credential each model sends, to which "
           "endpoint and with which headers.", "",
           "| model | what | field | old | new | layer |", "|:--|:--|:--|:--|:--|:--|"]
    for r in report.credential_routing:
        c = r.change
        layer = where(c)
        out.append(f"| {code(r.model)} | {r.aspect} | {code(c.field)} | {code(show(c.old))} | {code(show(c.new))} | "
                   f"{code(layer) if layer else ''} |")
    return out + [""]


def _inputs_section(report: DiffReport) -> list[str]:
    """Input-digest changes, once for the run (every plan of a run shares its inputs)."""
    if not report.inputs:
        return []
    out = ["**Inputs** (run level, from `manifest.json`: the files the plans were compiled from)", "",
           "| field | old | new |", "|:--|:--|:--|"]
    out += [f"| {code(c.field)} | {code(show(c.old))} | {code(show(c.new))} |" for c in report.inputs]
    return out + [""]


def render_blast(blast: BlastRadius) -> str:
    """A table of changed inputs with counts, then the model lists of each (long lists folded)."""
    out = [f"## capplan blast radius: {code(blast.old_label)} → {code(blast.new_label)}", ""]
    out += [f"> **note:** {n}" for n in blast.notes] + ([""] if blast.notes else [])
    if blast.credential_routing:
        out += ["### Credential routing changed", "",
                f"> **Review before merging:** the credential routing of {_keys(blast.credential_routing)} changed "
                "(which key is sent to which endpoint); the full diff lists the fields.", ""]
    if not blast.inputs:
        out += ["No input file changed.", ""]
    else:
        out += ["| input | status | plans changed | plans not changed |", "|:--|:--|--:|--:|"]
        out += [f"| {code(i.path)} | {i.status} | {len(i.affects)} | {len(i.does_not_change)} |" for i in blast.inputs]
        out.append("")
        for i in blast.inputs:
            out += [f"### {code(i.path)}", "", f"Changes the plan of: {_keys(i.affects)}", ""]
            out += _folded(f"Does not change ({len(i.does_not_change)})", i.does_not_change)
    if blast.unattributed:
        out += [f"Changed, cause not traced to one input: {_keys(blast.unattributed)}", ""]
    if blast.added:
        out += [f"Models added: {_keys(blast.added)}", ""]
    if blast.removed:
        out += [f"Models removed: {_keys(blast.removed)}", ""]
    out.append(f"**{len(blast.changed)}** model(s) change plan, **{len(blast.unchanged)}** do not.")
    return "\n".join(out) + "\n"


def _keys(keys: tuple[str, ...]) -> str:
    return ", ".join(code(k) for k in keys) or "none"


def _folded(title: str, keys: tuple[str, ...]) -> list[str]:
    if not keys:
        return [f"{title}: none", ""]
    return [f"<details><summary>{title}</summary>", "", _keys(keys), "", "</details>", ""]

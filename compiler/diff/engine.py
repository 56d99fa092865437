"""Match two plan sets by model key and run the selected checkers on every pair."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace

from capplan.compiler.diff.checkers import INPUTS, Checker
from capplan.compiler.diff.credential_routing import located, routing_changes
from capplan.compiler.diff.model import Change, DiffReport, ModelDiff
from capplan.compiler.diff.plan_files import PlanDoc, check_comparable
from capplan.compiler.provenance_lines import LineIndex


def diff_plan_sets(old: Mapping[str, PlanDoc], new: Mapping[str, PlanDoc], checkers: Sequence[Checker], *,
                   old_label: str, new_label: str, notes: Sequence[str] = ()) -> DiffReport:
    """Every model key of either side: added, removed, or compared field by field."""
    models = []
    for key in sorted(set(old) | set(new)):
        before, after = old.get(key), new.get(key)
        if before is None or after is None:
            models.append(_one_sided(key, before, after))
            continue
        models.append(diff_pair(key, before, after, checkers))
    extra = list(notes)
    versions = {(m.old_version, m.new_version) for m in models if m.version_changed}
    for was, now in sorted(versions):
        extra.append(f"plan_version changed from {was} to {now}; the shapes match, so fields are compared")
    models, inputs = _run_level_inputs(models)
    routing = routing_changes({k: d.body for k, d in old.items()}, {k: d.body for k, d in new.items()})
    return DiffReport(old_label, new_label, tuple(c.name for c in checkers), tuple(models), tuple(extra), inputs,
                      routing)


def _run_level_inputs(models: list[ModelDiff]) -> tuple[list[ModelDiff], tuple[Change, ...]]:
    """Input digests are facts about the run (every plan of a run shares them): each distinct
    change is reported once, and a model keeps only the changes of its own plan."""
    seen: dict[tuple[str, str, str], Change] = {}
    kept = []
    for m in models:
        for c in m.changes:
            if c.check == INPUTS:
                seen.setdefault((c.field, _canon(c.old), _canon(c.new)), c)
        kept.append(replace(m, changes=tuple(c for c in m.changes if c.check != INPUTS)))
    return kept, tuple(seen[k] for k in sorted(seen))


def _canon(value: object) -> str:
    return json.dumps(value, sort_keys=True, default=repr)  # ABSENT (a missing field) spells itself


def diff_pair(key: str, old: PlanDoc, new: PlanDoc, checkers: Sequence[Checker]) -> ModelDiff:
    """One model's changes, in checker order."""
    check_comparable(old, new)
    changes = tuple(change for checker in checkers for change in checker.check(old.body, new.body))
    return ModelDiff(key, old.path, new.path, old.version, new.version, changes)


def _one_sided(key: str, old: PlanDoc | None, new: PlanDoc | None) -> ModelDiff:
    return ModelDiff(key, old.path if old else None, new.path if new else None,
                     old.version if old else None, new.version if new else None)


def with_lines(report: DiffReport, lines: LineIndex) -> DiffReport:
    """``report`` with each change's layer at its line in the input files as they are now."""
    models = tuple(replace(m, changes=tuple(replace(c, located=lines.locate(c.source)) if c.source else c
                                            for c in m.changes)) for m in report.models)
    return replace(report, models=models, credential_routing=located(report.credential_routing, lines.locate))

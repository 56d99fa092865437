"""How probe evidence names a route, and the checks of a ``probe_evidence:`` block the schema cannot make.

Kept apart from :mod:`capplan.compiler.probe_evidence` (which applies the block to plans and needs
the loaded inputs) so that loading an overlay can check its block without importing that.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from capplan.core.diagnostics import Diagnostic, did_you_mean
from capplan.core.yaml_source import SourceFile
from capplan.executor.value_rules import PARAM_CHOICES, rule_value_problem, value_key

if TYPE_CHECKING:  # the overlay's models are imported where an overlay is read
    from capplan.compiler.inputs.overlay_file import OverlayFile
    from capplan.compiler.inputs.probe_block import ProbedRoute

BLOCK = "probe_evidence"


@dataclass(frozen=True, order=True)
class RouteKey:
    """What selects the plans a measurement applies to: provider key, wire protocol, model as sent."""

    provider: str
    protocol: str
    model: str

    def text(self) -> str:
        return f"provider {self.provider}, {self.protocol}, model {self.model}"


def entry_key(route: ProbedRoute) -> RouteKey:
    return RouteKey(route.provider, route.protocol, route.model)


def check_probe_block(source: SourceFile, model: OverlayFile) -> list[Diagnostic]:
    """What the schema cannot say: each value is one its parameter takes, once per entry; each route once per file."""
    out: list[Diagnostic] = []
    seen: dict[RouteKey, int] = {}
    for index, entry in enumerate(model.probe_evidence):
        key = entry_key(entry)
        if key in seen:
            out.append(source.diag((BLOCK, index), "probe-evidence-duplicate",
                                   f"route {key.text()} is listed twice in this file (first as "
                                   f"{BLOCK}[{seen[key]}]): which answer holds is unclear",
                                   "keep the newer probe's entry; another file given later replaces it"))
        else:
            seen[key] = index
        for param, by_value in entry.values.items():
            keys: dict[str, object] = {}
            for raw in by_value:
                loc = (BLOCK, index, "values", param, raw)
                try:
                    value_key(param, raw)
                except ValueError as exc:
                    out.append(source.diag(loc, "wrong-type", str(exc)))
                    continue
                problem = rule_value_problem(param, raw)
                if problem is not None:
                    hint = did_you_mean(str(raw), PARAM_CHOICES[param]) if param in PARAM_CHOICES else None
                    out.append(source.diag(loc, "bad-rule-value", problem, hint))
                    continue
                canon = value_key(param, raw)
                if canon in keys:
                    out.append(source.diag(loc, "probe-evidence-duplicate",
                                           f"{param} {canon} is measured twice in this entry",
                                           "keep one answer per value"))
                keys[canon] = raw
    return out

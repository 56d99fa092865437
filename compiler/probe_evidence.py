"""Probe measurements become the ``param_value_rules`` of the plans on the route they were measured on.

An operator overlay's ``probe_evidence:`` block (the snippet ``capplan probe --out`` writes) lists,
per probed route, what the route answered for each value of a rulable parameter. For a plan on
that route:

- a ``refused`` value becomes ``param_value_rules.<param>.<value>: {action: reject}`` whose
  ``evidence`` sentence carries the date, the capplan version, the route, the request fingerprint,
  the status and the provider's exact text (a ``reject`` the layers wrote gets the new evidence);
- an ``accepted`` value lifts a ``reject`` rule the layers gave it (the route takes it today);
- an ``override`` or ``drop`` the layers gave the value stays as it is either way: it is an
  operator's choice of what to send instead, not a claim that the value is refused.

Either way the plan's provenance for ``param_value_rules.<param>.<value>`` points at the overlay
entry (layer ``probe-evidence:<date>``), so ``capplan explain`` cites the measurement and
``capplan diff`` names it as the layer of the change. A configured value the new rule refuses is
a compile error naming the measurement, as for any rule.

**Which plans an entry applies to.** A plan is on a measured route when its provider key (the
binding), its wire protocol and the model name its requests carry are the entry's. That is what a
compiled plan fixes about its route. The entry's endpoint and gateway route are recorded, and
shown in the rule's evidence, but they do not select plans: a plan is compiled once and sent at
run time to its binding's URL, to ``--api-base`` or to the gateway ``LLM_PROXY_*`` names; the
compiler cannot tell which, and ``capplan probe --check`` re-asks the route a run really uses. A
preset's glob plays no part: a plan on another provider, protocol or model name is untouched, and
an entry no plan of the compile is on is a warning naming the measured route
(:func:`unmatched_routes`), never ignored in silence.

Overlays apply in the order they were given: a later overlay's measurement of the same route and
value replaces an earlier one. Within one file a route is listed once (:func:`capplan.compiler.probe_routes.check_probe_block`).
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from capplan.compiler.loading import Inputs, Loaded
from capplan.compiler.probe_routes import BLOCK, RouteKey, entry_key
from capplan.core.diagnostics import Diagnostic
from capplan.core.yaml_source import Loc
from capplan.executor.value_rules import rule_value_problem, value_key

if TYPE_CHECKING:  # lint judges the block without paying for the plan model
    from capplan.compiler.inputs.overlay_file import OverlayFile
    from capplan.compiler.inputs.probe_block import ProbedRoute, ProbedValue
    from capplan.executor.plan import ModelIdentity, Plan, Provenance, WireRoute
    from capplan.executor.value_rules import ValueRule


@dataclass(frozen=True)
class Measured:
    """One measured value, where it is written, and the route entry it belongs to."""

    param: str
    key: str  # canonical, as param_value_rules keys it
    value: ProbedValue
    route: ProbedRoute
    loc: Loc
    overlay: Loaded[OverlayFile]

    def evidence(self) -> str:
        """The rule's ``evidence:`` sentence (see :func:`evidence_sentence`)."""
        return evidence_sentence(self.route, self.value)

    def provenance(self) -> Provenance:
        from capplan.executor.plan import Provenance

        src = self.overlay.source
        return Provenance(layer=f"probe-evidence:{self.route.date}", file=src.stable_name, key=src.key_path(self.loc))


def evidence_sentence(route: ProbedRoute, value: ProbedValue) -> str:
    """A measured value's ``evidence:`` sentence: date, version, route, fingerprint, status, exact text."""
    answer = f"HTTP {value.status} {json.dumps(value.error or '', ensure_ascii=False)}"
    return (f"{route.date}, capplan {route.capplan_version} probe of {route.route_text()}: request "
            f"sha256:{value.fingerprint} answered {answer}")


def plan_route_key(binding_key: str | None, identity: ModelIdentity, wire: WireRoute | None) -> RouteKey | None:
    """The route a plan is on, as probe evidence names routes (None: no probe can measure it)."""
    from capplan.executor.wire_dialect import wire_model_name

    if binding_key is None or wire is None or wire.provider is None:
        return None
    return RouteKey(binding_key, wire.protocol, wire_model_name(wire.provider, identity.wire_model))


def canonical_value(param: str, raw: object) -> str | None:
    """``raw`` keyed as ``param_value_rules`` keys it, or None when it is no value of ``param``."""
    if rule_value_problem(param, raw) is not None:
        return None
    return value_key(param, raw)


def measurements(overlay: Loaded[OverlayFile], index: int, route: ProbedRoute) -> Iterable[Measured]:
    for param, by_value in route.values.items():
        for raw, value in by_value.items():
            key = canonical_value(param, raw)
            if key is not None:  # a value no parameter takes is reported where it is written (probe_routes)
                yield Measured(param, key, value, route, (BLOCK, index, "values", param, raw), overlay)


def measured_for(inputs: Inputs, route: RouteKey) -> dict[tuple[str, str], Measured]:
    """Every measured value of ``route`` across overlays, by (param, value); a later overlay's wins."""
    found: dict[tuple[str, str], Measured] = {}
    for overlay in inputs.overlays:
        for index, entry in enumerate(overlay.model.probe_evidence):
            if entry_key(entry) == route:
                for item in measurements(overlay, index, entry):
                    found[(item.param, item.key)] = item
    return found


def apply_probe_evidence(inputs: Inputs, identity: ModelIdentity, binding_key: str | None, wire: WireRoute | None,
                         rules: dict[str, dict[str, ValueRule]], provenance: dict[str, Provenance]) -> None:
    """Change ``rules`` (and their provenance) by the measurements of the plan's own route."""
    if not any(ov.model.probe_evidence for ov in inputs.overlays):
        return
    route = plan_route_key(binding_key, identity, wire)
    if route is None:
        return
    from capplan.executor.value_rules import ValueRule

    for (param, key), item in sorted(measured_for(inputs, route).items()):
        path = f"param_value_rules.{param}.{key}"
        by_value = rules.get(param, {})
        existing = by_value.get(key)
        if existing is not None and existing.action != "reject":
            continue  # an override or drop already sends something else: the operator's choice stays
        if item.value.outcome == "refused":
            rules[param] = {**by_value, key: ValueRule(action="reject", evidence=item.evidence())}
        elif existing is not None:  # a reject the route takes today
            rest = {k: r for k, r in by_value.items() if k != key}
            if rest:
                rules[param] = rest
            else:
                del rules[param]
        else:
            continue  # accepted, and no rule refuses it: nothing to change, nothing to credit
        for stale in [p for p in provenance if p.startswith(path + ".")]:
            del provenance[stale]
        provenance[path] = item.provenance()


def has_probe_evidence(inputs: Inputs) -> bool:
    """Whether any overlay carries measurements (else no plan's route needs remembering)."""
    return any(ov.model.probe_evidence for ov in inputs.overlays)


def route_of(plan: Plan) -> RouteKey | None:
    """The route ``plan`` is on, as probe evidence names routes."""
    return plan_route_key(plan.binding.key, plan.model, plan.wire)


def unmatched_routes(inputs: Inputs, routes: Mapping[str, RouteKey | None]) -> list[Diagnostic]:
    """A warning for each measured route no plan of the compile is on, naming the route and near misses.

    ``routes``: each compiled model key's route (:func:`route_of`), all a compile keeps of its plans for this.
    """
    if not has_probe_evidence(inputs):
        return []
    on: dict[RouteKey, list[str]] = {}
    for key, route in routes.items():
        if route is not None:
            on.setdefault(route, []).append(key)
    out: list[Diagnostic] = []
    for overlay in inputs.overlays:
        for index, entry in enumerate(overlay.model.probe_evidence):
            wanted = entry_key(entry)
            if wanted in on:
                continue
            near = sorted(f"{k} ({r.text()})" for r, keys in on.items() for k in keys
                          if r.model == wanted.model or (r.provider, r.protocol) == (wanted.provider, wanted.protocol))
            also = f"; plans near it: {', '.join(near[:4])}{', …' if len(near) > 4 else ''}" if near else ""
            out.append(overlay.source.diag(
                (BLOCK, index), "probe-evidence-unused",
                f"no plan of this compile is on the measured route ({wanted.text()}; measured {entry.date} at "
                f"{entry.route_text()}), so its evidence changes no plan{also}",
                "compile the model that was probed (its provider key, protocol and model name must be the "
                "entry's), or remove the entry; evidence never carries to another route", severity="warning"))
    return out


def stale_probe_evidence(overlay: Loaded[OverlayFile], today: _dt.date | None = None) -> list[Diagnostic]:
    """Lint: probe evidence older than ``probe_evidence_checks.max_age_days``, or dated in the future."""
    limit = overlay.model.probe_evidence_checks.max_age_days
    day = today or _dt.datetime.now(_dt.UTC).date()
    src = overlay.source
    out: list[Diagnostic] = []
    for index, entry in enumerate(overlay.model.probe_evidence):
        age = (day - _dt.date.fromisoformat(entry.date)).days
        loc = (BLOCK, index, "date")
        if age > limit:
            out.append(src.diag(loc, "probe-evidence-stale",
                                f"route {entry_key(entry).text()} was probed {age} days ago, more than "
                                f"probe_evidence_checks.max_age_days ({limit}); providers change their contracts",
                                f"probe it again (capplan probe PLAN --out DIR{_model_flag(entry)}) and replace this "
                                "entry with the new snippet's", severity="warning"))
        elif age < 0:
            out.append(src.diag(loc, "probe-evidence-date", f"probed {-age} days in the future",
                                "check the date: a probe writes the UTC day it ran", severity="warning"))
    return out


def _model_flag(entry: ProbedRoute) -> str:
    return f" --model {entry.plan}" if entry.plan else ""

"""Measured replay verdicts become the reasoning codec's replay scope, at compile time.

An operator overlay's ``reasoning_replay:`` block (the snippet ``capplan replay report --overlay``
writes) records, per route (a provider key), model and lane, whether the endpoint reads
replayed reasoning. For a plan whose codec replays through a field the measurement covers, the
verdict for *that* field decides what the plan sends:

=====================  =================================================================
``consumes-all-turns``  ``replay: all_turns`` — every assistant turn replays its reasoning
``in-loop-only``        ``replay: in_loop`` — only the tool-call turn right before a request
``accepted-ignored``    ``replay: never`` — replayed tokens would be paid for and not read
``rejected``            ``replay: never``; a codec marked ``required`` is a compile error
=====================  =================================================================

The verdict is worked out from the row's per-carrier results for the codec's own field (the
row verdict may rest on another carrier); a row without carrier results gives its verdict.
``baseline-failed`` and ``direct-lane-not-reached`` measured nothing, so they change nothing
and say so. The codec's params carry the evidence sentence, and the provenance points at the
overlay entry, so ``capplan explain`` cites the measurement and ``capplan diff`` sees a
verdict change as a change of the codec.

Lint judges the evidence itself (:func:`evidence_warnings`): older than
``reasoning_replay_checks.max_age_days``, or measured against a fingerprint other than the one
``reasoning_replay_checks.fingerprints`` says is served now.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from capplan.compiler.inputs.overlay_file import OverlayFile, ReplayMeasurement
from capplan.compiler.loading import Inputs, Loaded
from capplan.core.diagnostics import Diagnostic

if TYPE_CHECKING:  # lint judges evidence without paying for the plan model
    from capplan.executor.plan import ModelIdentity, Provenance

SCOPE_OF_VERDICT = {"consumes-all-turns": "all_turns", "in-loop-only": "in_loop",
                    "accepted-ignored": "never", "rejected": "never"}
POSITIONS = ("in_loop", "cross_turn")


@dataclass(frozen=True)
class Found:
    """One measurement that applies to a plan, and where it is written."""

    route: str
    model: str
    lane: str
    measurement: ReplayMeasurement
    overlay: Loaded[OverlayFile]

    @property
    def loc(self) -> tuple[str, ...]:
        return ("reasoning_replay", self.route, self.model, self.lane)

    def cite(self) -> str:
        # the stable name: a plan holds no absolute path
        return f"{self.overlay.source.stable_name} reasoning_replay.{self.route}.{self.model}.{self.lane}"


def carrier_verdict(measurement: ReplayMeasurement, carrier: str) -> str | None:
    """The verdict for one carrier from the row's per-position results (``None``: not measured).

    The same rules as the eval's row verdict, restricted to that carrier: consumed across turns,
    consumed in loop only, answered (a delta) but not consumed, refused with 4xx.
    """
    if not measurement.carriers:
        return measurement.verdict
    results = measurement.carriers.get(carrier)
    if not results:
        return None
    classes = {pos: (text.split() or [""])[0] for pos, text in results.items()}
    if classes.get("cross_turn") == "consumed":
        return "consumes-all-turns"
    if classes.get("in_loop") == "consumed":
        return "in-loop-only"
    deltas = [text for text in results.values() if len(text.split()) > 1 and text.split()[1][:1] in "+-"]
    if deltas:
        return "accepted-ignored"
    if classes and all(kind == "rejected" for kind in classes.values()):
        return "rejected"
    return "baseline-failed"


def measurements_for(inputs: Inputs, identity: ModelIdentity, provider_key: str | None) -> list[Found]:
    """Every overlay measurement for the plan's route and model; a later overlay's replace an earlier's."""
    routes = [r for r in dict.fromkeys([provider_key, identity.provider]) if r]
    models = list(dict.fromkeys([identity.name, identity.wire_model, identity.model_id]))
    found: dict[tuple[str, str], list[Found]] = {}
    for overlay in inputs.overlays:
        block = overlay.model.reasoning_replay
        for route in routes:
            for model in models:
                lanes = block.get(route, {}).get(model)
                if lanes:
                    found[(route, model)] = [Found(route, model, lane, m, overlay) for lane, m in lanes.items()]
    # the most specific key wins: the provider key over the provider, the name over the ids
    for route in routes:
        for model in models:
            if (route, model) in found:
                return found[(route, model)]
    return []


def apply_replay_evidence(inputs: Inputs, identity: ModelIdentity, provider_key: str | None,
                          policies: dict[str, dict[str, Any]], provenance: dict[str, Provenance]) -> list[Diagnostic]:
    """Set the codec's replay scope from the evidence for this plan; the diagnostics on the way."""
    found = measurements_for(inputs, identity, provider_key)
    if not found:
        return []
    from capplan.executor.plan import Provenance
    from capplan.executor.policy_params import params_model
    from capplan.executor.registry import RegistryError, policy_class

    codec = policies["reasoning_codec"]
    name = codec["name"]
    first = found[0]
    src = first.overlay.source
    where = f"model {identity.key!r}"
    try:
        cls = policy_class("reasoning_codec", name)
    except RegistryError:
        return []  # an unknown codec name is reported where it is written
    carrier = getattr(cls, "replay_carrier", None)
    if carrier == "reasoning_content" and provider_key == "openrouter":
        # OpenRouter reads its own envelope: the codec replays there only through reasoning_details
        carrier = "reasoning_details" if codec["params"].get("openrouter_envelope") else None
    if carrier is None or "replay" not in params_model(cls).model_fields:
        what = f"replays through {carrier}, and has no replay scope" if carrier else "replays no reasoning"
        return [src.diag(first.loc, "replay-evidence-unused",
                         f"replay evidence for {where} changes nothing: its reasoning codec {name!r} {what}",
                         "use `reasoning_codec: reasoning_content` for an OpenAI-compatible endpoint that "
                         "returns reasoning_content, or remove the entry", severity="warning")]
    verdicts: dict[str, Found] = {}
    unmeasured: list[str] = []
    for item in found:
        verdict = carrier_verdict(item.measurement, carrier)
        if verdict in SCOPE_OF_VERDICT:
            verdicts.setdefault(verdict, item)
        else:
            unmeasured.append(f"lane {item.lane}: {verdict or f'{carrier} not measured'}")
    if len(verdicts) > 1:
        listed = "; ".join(f"{v} ({item.cite()})" for v, item in verdicts.items())
        return [src.diag(first.loc, "replay-evidence-conflict",
                         f"the lanes measured for {where} disagree about {carrier}: {listed}",
                         "keep the lane this plan is routed to (or re-measure) in the overlay")]
    if not verdicts:
        return [src.diag(first.loc, "replay-evidence-unused",
                         f"replay evidence for {where} measured no verdict for {carrier} ({', '.join(unmeasured)}); "
                         "the plan keeps its preset's replay scope",
                         "re-run `capplan replay run` for this route and model", severity="warning")]
    verdict, item = next(iter(verdicts.items()))
    params = dict(codec["params"])
    if verdict == "rejected" and params.get("required"):
        by = provenance.get("policies.reasoning_codec")
        set_by = f" (required by {by.layer}{f' {by.key}' if by and by.key else ''})" if by else ""
        return [src.diag(item.loc, "replay-carrier-rejected",
                         f"{where} needs {carrier} replayed{set_by}, but the endpoint rejects it: "
                         f"{item.measurement.evidence}",
                         "route the model to an endpoint that accepts the field, or drop `required` "
                         "from the codec's params once the route is shown to work without it")]
    params["replay"] = SCOPE_OF_VERDICT[verdict]
    params["evidence"] = f"{verdict} ({item.cite()}): {item.measurement.evidence}"
    codec["params"] = params
    provenance["policies.reasoning_codec"] = Provenance(
        layer=f"replay-evidence:{item.measurement.measured}", file=item.overlay.source.stable_name,
        key=item.overlay.source.key_path(item.loc))
    return []


def evidence_warnings(overlay: Loaded[OverlayFile], today: _dt.date | None = None) -> list[Diagnostic]:
    """Stale or foreign evidence in one overlay: too old, or measured against another fingerprint."""
    checks = overlay.model.reasoning_replay_checks
    day = today or _dt.datetime.now(_dt.timezone.utc).date()
    src = overlay.source
    out: list[Diagnostic] = []
    for route, models in overlay.model.reasoning_replay.items():
        for model, lanes in models.items():
            served = checks.fingerprints.get(route, {}).get(model)
            for lane, m in lanes.items():
                loc = ("reasoning_replay", route, model, lane)
                try:
                    measured = _dt.date.fromisoformat(m.measured)
                except ValueError:
                    out.append(src.diag((*loc, "measured"), "replay-evidence-date",
                                        "measured is not a calendar date", "write it as YYYY-MM-DD"))
                    continue
                age = (day - measured).days
                if age > checks.max_age_days:
                    out.append(src.diag((*loc, "measured"), "replay-evidence-stale",
                                        f"measured {age} days ago, more than reasoning_replay_checks.max_age_days "
                                        f"({checks.max_age_days}); templates and servers change",
                                        "re-run `capplan replay run` for this route and model and merge the new "
                                        "snippet", severity="warning"))
                elif age < 0:
                    out.append(src.diag((*loc, "measured"), "replay-evidence-date",
                                        f"measured {-age} days in the future", "check the date", severity="warning"))
                if served is not None and m.fingerprint != served:
                    got = "no fingerprint" if m.fingerprint is None else "another fingerprint"
                    out.append(src.diag(loc, "replay-evidence-fingerprint",
                                        f"measured against {got} than the one reasoning_replay_checks.fingerprints "
                                        f"says {route} serves {model} with now",
                                        "re-measure against the endpoint as it is served now", severity="warning"))
    return out

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

Evidence holds on the route it was measured on. A preset matches by a glob on the model's name,
which says nothing about the route, so a preset writes its codec's scope per route under
``by_route`` (:func:`scope_to_route`): a plan keeps its own route's entry as ``replay``,
``evidence`` and ``evidence_route``, and a plan on a route the preset has no entry for keeps
none of it, with a warning naming the routes that were measured. Overlay measurements apply
after that and record their route the same way.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from capplan.compiler.loading import Inputs, Loaded
from capplan.core.diagnostics import Diagnostic
from capplan.core.yaml_source import SourceFile

if TYPE_CHECKING:  # lint judges evidence without paying for the plan model
    from capplan.compiler.inputs.overlay_file import OverlayFile, ReplayMeasurement
    from capplan.compiler.provenance_lines import Located
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
    if "consumed" in (classes.get("in_loop"), classes.get("loop_steps")):
        return "in-loop-only"
    deltas = [text for text in results.values() if len(text.split()) > 1 and text.split()[1][:1] in "+-"]
    if deltas:
        return "accepted-ignored"
    if classes and all(kind == "rejected" for kind in classes.values()):
        return "rejected"
    return "baseline-failed"


def measurements_for(inputs: Inputs, identity: ModelIdentity, provider_key: str | None) -> list[Found]:
    """Every overlay measurement for the plan's route and model; a later overlay's replace an earlier's."""
    routes = plan_routes(identity, provider_key)
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


def plan_routes(identity: ModelIdentity, provider_key: str | None) -> list[str]:
    """The names the plan's route goes by, most specific first: its provider key, then its provider."""
    return [r for r in dict.fromkeys([provider_key, identity.provider]) if r]


def scope_to_route(identity: ModelIdentity, provider_key: str | None, policies: dict[str, dict[str, Any]],
                   provenance: dict[str, Provenance], locate: Callable[[], Located]) -> list[Diagnostic]:
    """Keep the codec's evidence for the plan's own route only; a warning when the preset has none for it.

    ``by_route`` becomes the plan's ``replay``, ``evidence`` and ``evidence_route`` (and leaves the
    plan); a flat ``evidence_route`` naming another route is dropped with its scope and evidence.
    No warning where the codec replays nothing on the plan's route anyway (OpenRouter without
    the envelope): the scope is moot there.
    """
    codec = policies["reasoning_codec"]
    params = codec["params"]
    by_route = params.get("by_route")
    measured_on = params.get("evidence_route")
    if not by_route and not measured_on:
        return []
    if not (by_route is None or (isinstance(by_route, dict) and all(
            isinstance(e, dict) and {"replay", "evidence"} <= set(e) for e in by_route.values()))):
        return []  # malformed: the codec's params check reports it where it is written
    routes = plan_routes(identity, provider_key)
    params = {k: v for k, v in params.items() if k != "by_route"}
    codec["params"] = params
    scoped: dict[str, dict[str, Any]] = by_route or {}
    chosen = next((r for r in routes if r in scoped), None)
    if chosen is not None:
        entry = scoped[chosen]
        params.update(replay=entry["replay"], evidence=entry["evidence"], evidence_route=chosen)
        prov = provenance.get("policies.reasoning_codec")
        if prov is not None and prov.key:
            provenance["policies.reasoning_codec"] = prov.model_copy(
                update={"key": f"{prov.key}.params.by_route.{chosen}"})
        return []
    if by_route is None and measured_on in routes:
        return []
    measured = sorted(by_route) if by_route else [str(measured_on)]
    for key in ("evidence", "evidence_route"):
        params.pop(key, None)
    if measured_on is not None and not by_route:
        params.pop("replay", None)
    if (provider_key == "openrouter" and codec.get("name") == "reasoning_content"
            and not params.get("openrouter_envelope")):
        return []
    where = locate()
    replay = params.get("replay", "all_turns")
    route = routes[0] if routes else "?"
    return [Diagnostic(where.file or "<run config>", where.line or 1, 1, "replay-evidence-route",
                       f"model {identity.key!r}: the reasoning codec's replay evidence ({where.layer}) was measured "
                       f"on route {', '.join(measured)}, not on this plan's route {route}; it does not apply here, "
                       f"so the plan replays {replay} with no evidence",
                       "policies.reasoning_codec.params.by_route",
                       f"measure {route} (`capplan replay run`, then `capplan replay report --overlay "
                       f"--overlay-route {route}`) and merge the snippet, or add `by_route.{route}` with its own "
                       "dated evidence (a measurement or a conformance rule)", severity="warning")]


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
    if "evidence_route" in params_model(cls).model_fields:
        params["evidence_route"] = item.route
    codec["params"] = params
    provenance["policies.reasoning_codec"] = Provenance(
        layer=f"replay-evidence:{item.measurement.measured}", file=item.overlay.source.stable_name,
        key=item.overlay.source.key_path(item.loc))
    return []


def unscoped_evidence(source: SourceFile, blocks: Iterable[tuple[tuple[str | int, ...], Any]]) -> list[Diagnostic]:
    """Lint: a preset's replay evidence written without its route (a warning for each).

    A ``match:`` glob selects models by name on every route, so flat ``evidence`` would go with
    the scope to routes it was never measured on. ``providers:`` blocks are scoped by their key.
    """
    out: list[Diagnostic] = []
    for loc, block in blocks:
        ref = getattr(block, "reasoning_codec", None)
        if ref is None or loc[0] == "providers":
            continue
        params = ref.params
        if params.get("evidence") and not params.get("evidence_route"):
            globs = ", ".join(getattr(block, "match", None) or ()) or "every model"
            out.append(source.diag((*loc, "reasoning_codec", "params", "evidence"), "replay-evidence-route",
                                   f"replay evidence without the route it was measured on: {globs} would carry it "
                                   "to every route",
                                   "write `replay` and `evidence` under `by_route.<provider key it was measured on>` "
                                   "(e.g. by_route.llamacpp for a local llama-server)", severity="warning"))
    return out


def evidence_warnings(overlay: Loaded[OverlayFile], today: _dt.date | None = None) -> list[Diagnostic]:
    """Stale or foreign evidence in one overlay: too old, or measured against another fingerprint."""
    checks = overlay.model.reasoning_replay_checks
    day = today or _dt.datetime.now(_dt.UTC).date()
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

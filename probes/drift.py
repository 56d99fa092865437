"""Drift: today's answers against what the plan claims, one readable line per difference.

A question drifts when the plan says a value is refused (a rule, or a params policy that leaves
the parameter out) and the route accepts it today, or the route refuses a value the plan sends.
``not measured`` and ``skipped`` questions are listed, never counted: a 429 says nothing about
the value. A parameter capplan never sends (``stop``, ``response_format``) carries no claim.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from capplan.probes.evidence import ProbeRecord, QuestionResult


@dataclass(frozen=True)
class DriftReport:
    """The drift lines of one probe and the questions it could not compare."""

    drifted: tuple[str, ...]
    unmeasured: tuple[str, ...]

    @property
    def has_drift(self) -> bool:
        return bool(self.drifted)


def shown(result: QuestionResult) -> str:
    """``temperature 0`` for the question ``temperature=0``."""
    return result.id.replace("=", " ", 1)


def drift(record: ProbeRecord) -> DriftReport:
    """Compare every measured answer of ``record`` with its plan's claim."""
    drifted: list[str] = []
    unmeasured: list[str] = []
    if record.results and record.results[0].outcome.kind == "refused":
        first = record.results[0]
        drifted.append(f"{record.plan_key}: the plan's own request ({shown(first)}) is refused with "
                       f"{first.outcome.status} {json.dumps(first.outcome.detail or '')}: no other answer can be compared")
        return DriftReport(tuple(drifted), ())
    for result in record.results:
        outcome, claim = result.outcome, result.claim
        if outcome.kind in ("not measured", "skipped"):
            unmeasured.append(f"{record.plan_key}: {shown(result)}: {outcome.kind} ({outcome.detail})")
            continue
        if claim.kind == "refused" and outcome.kind == "accepted":
            drifted.append(f"{record.plan_key}: {shown(result)}: plan says refused ({claim.why}), "
                           "route accepts it today")
        elif claim.kind == "accepted" and outcome.kind == "refused":
            fix = "plan has no rule" if result.rule_key is not None else "no param_value_rules entry can hold it"
            drifted.append(f"{record.plan_key}: {shown(result)}: route refuses it with {outcome.status} "
                           f"{json.dumps(outcome.detail or '')}: {fix}")
    return DriftReport(tuple(drifted), tuple(unmeasured))

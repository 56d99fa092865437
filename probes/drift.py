"""Drift: today's answers against what the plan claims, one readable line per difference.

A question drifts when the plan says a value is refused (a rule, or a params policy that leaves
the parameter out) and the route accepts it today, or the route refuses a value the plan sends
(a tool-schema feature its sanitiser keeps is one). ``not measured`` and ``skipped`` questions
are listed, never counted: a 429 says nothing about the value. A parameter capplan never sends
(``stop``, ``response_format``, the output cap under the name the plan does not use) carries no
claim.

The usage census drifts when a usage field the plan reads came back in none of the accepted
answers: "usage: plan reads X, route returned none of it in N answers".
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from capplan.probes.evidence import ProbeRecord, QuestionResult, answers_with
from capplan.probes.questions import CAP_NAME
from capplan.probes.schema_features import PARAM as TOOL_SCHEMA


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
                       f"{first.outcome.status} {json.dumps(first.outcome.detail or '')}: no other answer can be compared"
                       + _other_cap_name(record))
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
            if result.param == TOOL_SCHEMA:
                fix = f"{claim.why.split(':')[0]}; {result.notes[0] if result.notes else 'no rule can hold it'}"
            elif result.rule_key is not None:
                fix = "plan has no rule"
            else:
                fix = "no param_value_rules entry can hold it"
            drifted.append(f"{record.plan_key}: {shown(result)}: route refuses it with {outcome.status} "
                           f"{json.dumps(outcome.detail or '')}: {fix}")
    usage_drift, usage_unmeasured = _usage(record)
    return DriftReport(tuple(drifted + usage_drift), tuple(unmeasured + usage_unmeasured))


def _usage(record: ProbeRecord) -> tuple[list[str], list[str]]:
    """The usage fields the plan reads that no accepted answer carried."""
    seen = record.answered_usage()
    if not record.usage_reads:
        return [], []
    if not seen:
        return [], [f"{record.plan_key}: usage: no accepted answer to read usage fields from"]
    lines = []
    for read in record.usage_reads:
        if answers_with(seen, read) == 0:
            lines.append(f"{record.plan_key}: usage: plan reads {' or '.join(read.names)} ({read.why}), "
                         f"route returned none of it in {len(seen)} answers")
    return lines, []


def _other_cap_name(record: ProbeRecord) -> str:
    """Where the plan's own request is refused: whether the route took the cap under the other name.

    Only an acceptance is news: the other name's request carries the plan's settings too, so a
    refusal of both may be about any of them (a temperature the route refuses), not the cap.
    """
    for result in record.results:
        if result.param == CAP_NAME and result.outcome.kind == "accepted":
            name = result.id.partition("=")[2]
            return f" (the route accepts the output cap as {name})"
    return ""

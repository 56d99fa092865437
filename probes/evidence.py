"""What a probe measured: per question its outcome, dated and scoped to the route that answered.

A route's identity is what the answer is evidence about: the wire protocol, the endpoint URL
(credentials taken out), the model name as the request body carries it, and the gateway route
when the call went through one. ``<plan key>.probe.json`` holds it beside every question's
outcome; nothing in it is a secret (error texts are redacted by value before they get here).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from capplan.core.canonical import canonical_bytes
from capplan.probes.usage_census import UsageRead, UsageSeen

OutcomeKind = Literal["accepted", "refused", "not measured", "skipped"]
#: the format of ``<plan key>.probe.json``; raised when a field changes meaning. 2: questions that
#: are not one parameter's value (``output_cap_name``, ``tool_schema``), each question's
#: ``usage_fields`` / ``usage_problem``, and the record's ``usage`` census
RECORD_VERSION = 2
#: the most characters of a provider's error text kept (a hostile route may answer megabytes)
MAX_ERROR_CHARS = 1000


@dataclass(frozen=True)
class RouteIdentity:
    """The route a probe's answers are evidence about."""

    protocol: str
    endpoint: str
    model: str
    transport: str
    gateway_route: str | None = None

    def text(self) -> str:
        """One line for an ``evidence:`` string: ``openai-responses https://… model gpt-5``."""
        via = f" via gateway route {self.gateway_route}" if self.gateway_route else ""
        return f"{self.protocol} {self.endpoint} model {self.model}{via}"

    def as_json(self) -> dict[str, Any]:
        return {"protocol": self.protocol, "endpoint": self.endpoint, "model": self.model,
                "transport": self.transport, "gateway_route": self.gateway_route}


@dataclass(frozen=True)
class Outcome:
    """What the route answered one question: ``detail`` is the provider's exact error text for a
    refusal, the reason for ``not measured`` and ``skipped``, None for ``accepted``."""

    kind: OutcomeKind
    status: int | None = None
    detail: str | None = None


@dataclass(frozen=True)
class Claim:
    """What the plan says about one question's value: ``refused`` (a rule, or a policy that leaves
    it out), ``accepted`` (sent as asked), or ``none`` (capplan never sends the parameter)."""

    kind: Literal["refused", "accepted", "none"]
    why: str


@dataclass(frozen=True)
class QuestionResult:
    """One question, what was sent for it, what the plan claims and what the route answered."""

    id: str
    param: str
    rule_key: str | None
    fingerprint: str | None
    outcome: Outcome
    claim: Claim
    notes: tuple[str, ...] = ()
    #: the usage fields an accepted answer carried (None: not accepted)
    usage: UsageSeen | None = None

    def as_json(self) -> dict[str, Any]:
        usage = self.usage
        return {"id": self.id, "param": self.param, "rule_key": self.rule_key, "fingerprint": self.fingerprint,
                "outcome": self.outcome.kind, "status": self.outcome.status, "detail": self.outcome.detail,
                "claim": self.claim.kind, "claim_why": self.claim.why, "notes": list(self.notes),
                "usage_fields": list(usage.fields) if usage is not None else None,
                "usage_problem": usage.problem if usage is not None else None}


@dataclass(frozen=True)
class ProbeRecord:
    """Everything one probe of one plan found."""

    plan_key: str
    plan_fingerprint: str
    date: str
    capplan_version: str
    route: RouteIdentity
    results: tuple[QuestionResult, ...]
    #: why the probe stopped before the last question (a budget), or None
    stopped: str | None = None
    #: requests sent, and the worst-case dollars they reserved (what a shared budget has left)
    sent: int = 0
    reserved_usd: float = 0.0
    #: the usage fields the plan reads (what the census is compared with)
    usage_reads: tuple[UsageRead, ...] = ()

    @property
    def baseline_accepted(self) -> bool:
        """Whether the plan's own request (the first question) was accepted: without that, a
        refusal of one value says nothing about the value."""
        return bool(self.results) and self.results[0].outcome.kind == "accepted"

    def counts(self) -> dict[str, int]:
        out = {"accepted": 0, "refused": 0, "not measured": 0, "skipped": 0}
        for result in self.results:
            out[result.outcome.kind] += 1
        return out

    def to_bytes(self) -> bytes:
        return canonical_bytes({
            "record_version": RECORD_VERSION, "plan": self.plan_key, "plan_fingerprint": self.plan_fingerprint,
            "date": self.date, "capplan_version": self.capplan_version, "route": self.route.as_json(),
            "stopped": self.stopped, "sent": self.sent, "counts": self.counts(), "questions": [r.as_json() for r in self.results],
            "usage": self.usage_summary(),
        })

    def answered_usage(self) -> list[UsageSeen]:
        """The usage census of every accepted answer, in question order."""
        return [r.usage for r in self.results if r.outcome.kind == "accepted" and r.usage is not None]

    def usage_summary(self) -> dict[str, Any]:
        """How many accepted answers carried each usage field, and each field the plan reads with its count."""
        seen = self.answered_usage()
        fields = Counter(name for usage in seen for name in usage.fields)
        return {
            "answers": len(seen),
            "fields": dict(sorted(fields.items())),
            "plan_reads": [{**read.as_json(), "answers_with": answers_with(seen, read)} for read in self.usage_reads],
        }


def answers_with(seen: list[UsageSeen], read: UsageRead) -> int:
    """How many of the answers ``seen`` carried any of the names ``read`` allows."""
    return sum(1 for usage in seen if any(name in usage.fields for name in read.names))


def total_usd(costs: Iterable[float | None]) -> float | None:
    """The sum of worst-case costs, or None when any is unknown (a plan with no price): an unknown
    part makes the total unknown, never a smaller number."""
    total = 0.0
    for cost in costs:
        if cost is None:
            return None
        total += cost
    return total


def bounded(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"

"""The question families beside the parameter questions: reasoning carriers and cache markers.

What the command line needs of both, in one place: which apply to a plan (and why not), what a dry
run lists, running them within what the parameter questions left of the budget, their part of
``<plan key>.probe.json``, and their drift lines. Each family lives in its own module
(:mod:`.carriers`, :mod:`.cache`); this one only puts them side by side.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from capplan.executor.client import Client
from capplan.probes.cache import CachePlan, CacheRecord, cache_drift, plan_cache, run_cache
from capplan.probes.carriers import CarrierPlan, CarrierRecord, carrier_drift, plan_carriers, run_carriers
from capplan.probes.evidence import total_usd
from capplan.probes.runner import ProbePlan

#: the families ``--family`` chooses from (``params``: the parameter questions of :mod:`.questions`)
FAMILIES = ("params", "carriers", "cache")


@dataclass(frozen=True)
class FamilyPlans:
    """One plan's carrier and cache questions: planned, or why not (None: the family was not chosen)."""

    carriers: CarrierPlan | str | None
    cache: CachePlan | str | None

    def worst_usd(self) -> float | None:
        """The most both families can cost (None: the plan has no price)."""
        parts: list[float | None] = []
        if isinstance(self.carriers, CarrierPlan):
            parts.append(self.carriers.worst_usd())
        if isinstance(self.cache, CachePlan):
            parts.append(self.cache.total_worst_usd())
        return total_usd(parts)

    def dry_run_lines(self, protocol: str, model: str) -> tuple[list[str], int]:
        """The requests these families would send, one line each, and how many there are."""
        lines: list[str] = []
        count = 0
        if isinstance(self.carriers, str):
            lines.append(f"  carriers: skipped: {self.carriers}")
        elif self.carriers is not None:
            for request in self.carriers.requests:
                count += 1
                lines.append(f"  {request.id}: {protocol} model {model} sha256:{request.fingerprint} "
                             f"worst case {_usd(request.worst_usd)}")
        if isinstance(self.cache, str):
            lines.append(f"  cache: skipped: {self.cache}")
        elif self.cache is not None:
            for name in ("first", "repeat"):
                count += 1
                lines.append(f"  cache:{name}: {protocol} model {model} sha256:{self.cache.fingerprint} "
                             f"worst case {_usd(self.cache.worst_usd)}")
        return lines, count


#: why a parameter question is skipped when ``--family`` leaves ``params`` out (a dry run does not list them)
NOT_ASKED = "not asked: --family leaves params out"


def without_params(probe: ProbePlan) -> ProbePlan:
    """``probe`` with every parameter question skipped (``--family`` leaves ``params`` out)."""
    return replace(probe, questions=tuple(replace(p, skipped=NOT_ASKED) for p in probe.questions))


def _usd(value: float | None) -> str:
    return "unknown" if value is None else f"${value:.6f}"


def plan_families(client: Client, probe: ProbePlan, families: tuple[str, ...]) -> FamilyPlans:
    """Plan the chosen families for ``client``'s plan."""
    return FamilyPlans(plan_carriers(client, probe) if "carriers" in families else None,
                       plan_cache(client) if "cache" in families else None)


@dataclass(frozen=True)
class FamilyRecord:
    """What the families found for one plan."""

    plans: FamilyPlans
    carriers: CarrierRecord | None
    cache: CacheRecord | None

    @property
    def sent(self) -> int:
        return (self.carriers.sent if self.carriers else 0) + (self.cache.sent if self.cache else 0)

    @property
    def reserved_usd(self) -> float:
        return (self.carriers.reserved_usd if self.carriers else 0.0) + (self.cache.reserved_usd if self.cache else 0.0)

    @property
    def replay_overlay(self) -> str | None:
        """The ``reasoning_replay:`` overlay text, when a carrier verdict was measured."""
        return self.carriers.overlay if self.carriers else None

    def as_json(self) -> dict[str, Any]:
        """The families' part of ``<plan key>.probe.json`` (a family not chosen is absent)."""
        out: dict[str, Any] = {}
        for name, planned, record in (("carriers", self.plans.carriers, self.carriers),
                                      ("cache", self.plans.cache, self.cache)):
            if isinstance(planned, str):
                out[name] = {"skipped": planned}
            elif record is not None:
                out[name] = record.as_json()
        return out

    def summary_lines(self) -> list[str]:
        lines = []
        if self.carriers is not None:
            shown = ", ".join(f"{r.carrier} {r.verdict}" for r in self.carriers.results)
            lines.append(f"  carriers: {shown}" + (f" (stopped: {self.carriers.stopped})" if self.carriers.stopped else ""))
        if self.cache is not None:
            cache = self.cache
            markers = f"markers {cache.markers_verdict}"
            if cache.first.kind == "refused":
                markers += f", HTTP {cache.first.status}: {cache.first.detail}"
            lines.append(f"  cache: {markers}; repeat call {cache.cached_verdict}"
                         + (f" ({cache.cached_tokens} cached tokens)" if cache.cached_tokens else ""))
        return lines

    def drift(self) -> tuple[list[str], list[str]]:
        """``(drift lines, lines for what could not be compared)``."""
        drifted: list[str] = []
        unmeasured: list[str] = []
        if self.carriers is not None and isinstance(self.plans.carriers, CarrierPlan):
            found = carrier_drift(self.carriers, self.plans.carriers.plan)
            drifted += found.drifted
            unmeasured += found.unmeasured
        if self.cache is not None:
            cached = cache_drift(self.cache)
            drifted += cached.drifted
            unmeasured += cached.unmeasured
        return drifted, unmeasured


def run_families(client: Client, plans: FamilyPlans, *, max_requests: int | None,
                 max_cost: float | None) -> FamilyRecord:
    """Run the carrier questions, then the cache question, each within what is left of the budget."""
    carriers = cache = None
    if isinstance(plans.carriers, CarrierPlan):
        carriers = run_carriers(client, plans.carriers, max_requests=max_requests, max_cost=max_cost)
        if max_requests is not None:
            max_requests = max(max_requests - carriers.sent, 0)
        if max_cost is not None:
            max_cost = max(max_cost - carriers.reserved_usd, 0.0)
    if isinstance(plans.cache, CachePlan):
        cache = run_cache(client, plans.cache, max_requests=max_requests, max_cost=max_cost)
    return FamilyRecord(plans, carriers, cache)

"""A trial's cost and token totals as its records carry them.

A call the provider answered but nobody priced (no usage cost, no pricing entry) makes its
role's total unknown: ``None``, never a made-up 0, so no summary or budget can read it as
free. A call that raised was not answered and bills nothing, so it leaves the total known.
Amounts are rounded to 1e-9 USD: float sums otherwise write ``0.0025675000000000003``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from capplan.trials.records import CallRecord, LineUsage, UsageRecord

#: the resolution amounts are written at (a billionth of a dollar)
USD_DIGITS = 9


def round_usd(value: float) -> float:
    return round(value, USD_DIGITS)


def known_cost(calls: Iterable[CallRecord], roles: Sequence[str]) -> float | None:
    """The roles' summed cost, or None when an answered call's cost is unknown."""
    total = 0.0
    for call in calls:
        if call.role not in roles or call.outcome == "failed":
            continue
        if call.cost_usd is None:
            return None
        total += call.cost_usd
    return round_usd(total)


def rounded_calls(calls: Iterable[CallRecord]) -> list[CallRecord]:
    """The calls with their costs at the files' resolution."""
    return [c if c.cost_usd is None else c.model_copy(update={"cost_usd": round_usd(c.cost_usd)}) for c in calls]


def line_usage(usage: UsageRecord) -> LineUsage:
    """The counters a run line keeps; cache reads come as ``cached_tokens`` (OpenAI) or
    ``cache_read_input_tokens`` (Anthropic) depending on the route, never both."""
    return LineUsage(prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens,
                     reasoning_tokens=usage.reasoning_tokens,
                     cache_read_tokens=usage.cache_read_input_tokens or usage.cached_tokens,
                     cache_write_tokens=usage.cache_creation_input_tokens)

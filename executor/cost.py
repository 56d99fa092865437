"""What a call cost, and on whose authority.

``litellm``: the provider reported it (``usage.cost``) or litellm priced the response
(``response_cost``). ``pricing``: computed here from the plan's pricing entry. ``unknown``:
neither, and ``cost_usd`` is None rather than a made-up zero. A response without token counts
(no usage block, or one whose counters are all zero: litellm fills zeros when the provider
sent none) is ``unknown`` too: a prompt always has tokens, so pricing it would invent $0.

A provider is untrusted: a reported cost that is not a finite number between 0 and
:data:`~capplan.executor.provider_bounds.MAX_COST_USD`, a priced cost above that ceiling, or any token counter out of its bounds
(:mod:`capplan.executor.provider_bounds`) makes the cost ``unknown`` and is returned as a
problem line by :func:`checked_cost`, never a negative or infinite dollar figure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from capplan.executor.plan import PricingEntry
from capplan.executor.result import CostSource
from capplan.executor.provider_bounds import MAX_COST_USD, cost_problem, quoted
from capplan.executor.usage import Usage

_PER = 1_000_000


def response_cost(response: Any, usage: Usage, pricing: PricingEntry | None) -> tuple[float | None, CostSource]:
    """The call's cost in USD and where that figure came from."""
    cost, source, _ = checked_cost(response, usage, pricing)
    return cost, source


def checked_cost(response: Any, usage: Usage,
                 pricing: PricingEntry | None) -> tuple[float | None, CostSource, tuple[str, ...]]:
    """The call's cost, where it came from, and why it is unknown when a provider's figure was refused."""
    if usage.unknown():
        # the tokens are not known, so neither is what they cost, whoever says otherwise
        return None, "unknown", (f"the cost is unknown: usage counter(s) {', '.join(usage.unknown())} out of bounds",)
    reported, where = _upstream_cost(response)
    if where is not None:
        problem = _cost_problem(reported, where)
        if problem is not None:
            return None, "unknown", (problem,)
        return float(reported), "litellm", ()
    if pricing is not None and has_token_counts(usage):
        cost = priced(usage, pricing)
        if cost > MAX_COST_USD:
            return None, "unknown", (f"the cost priced from the plan's pricing (${cost:.2f}) is above the ceiling of "
                                     f"${MAX_COST_USD:.0f} per call: the token counts are not believable",)
        return cost, "pricing", ()
    return None, "unknown", ()


def _cost_problem(value: Any, where: str) -> str | None:
    why = cost_problem(value)
    return None if why is None else f"{where} is {why} ({quoted(value)}): the cost is unknown"


def has_token_counts(usage: Usage) -> bool:
    """Whether the provider reported any tokens (a real call always has prompt tokens)."""
    return bool(usage.prompt_tokens) or bool(usage.completion_tokens)


def priced(usage: Usage, pricing: PricingEntry) -> float:
    """Cost from a pricing entry (USD per million tokens).

    ``prompt_tokens`` includes cache reads and writes on every route, so those are split out
    and charged at their own rates; a rate pricing.json does not list is charged at the input
    rate, which is what an uncached token costs.
    """
    # every counter is known here: checked_cost prices only a usage with none unknown
    cache_read = usage.cache_read_input_tokens or usage.cached_tokens or 0
    cache_write = usage.cache_creation_input_tokens or 0
    uncached = max((usage.prompt_tokens or 0) - cache_read - cache_write, 0)
    read_rate = pricing.cache_read if pricing.cache_read is not None else pricing.input
    write_rate = pricing.cache_write if pricing.cache_write is not None else pricing.input
    total = (
        uncached * pricing.input
        + cache_read * read_rate
        + cache_write * write_rate
        + (usage.completion_tokens or 0) * pricing.output
    )
    return total / _PER


def _upstream_cost(response: Any) -> tuple[Any, str | None]:
    """The cost the provider (or litellm) reported, and where; ``(None, None)`` when neither did.

    A present ``usage.cost`` is the provider's word whatever its type: a string or a negative
    figure there is a problem to record, not a reason to price the call from the plan instead.
    """
    usage = _get(response, "usage")
    reported = _get(usage, "cost") if usage is not None else None
    if reported is not None:
        return reported, "usage.cost"
    hidden = _get(response, "_hidden_params")
    if isinstance(hidden, Mapping) and hidden.get("response_cost") is not None:
        return hidden.get("response_cost"), "litellm's response_cost"
    return None, None


def _get(obj: Any, name: str) -> Any:
    if type(obj) is dict:  # the direct transport's answers: a plain dict, no ABC check needed
        return obj.get(name)
    if isinstance(obj, Mapping):
        return obj.get(name)
    try:
        return getattr(obj, name, None)
    except Exception:  # a provider object whose property raises reports nothing
        return None

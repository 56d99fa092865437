"""What a call cost, and on whose authority.

``litellm``: the provider reported it (``usage.cost``) or litellm priced the response
(``response_cost``). ``pricing``: computed here from the plan's pricing entry. ``unknown``:
neither, and ``cost_usd`` is None rather than a made-up zero. A response without token counts
(no usage block, or one whose counters are all zero: litellm fills zeros when the provider
sent none) is ``unknown`` too: a prompt always has tokens, so pricing it would invent $0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from capplan.executor.plan import PricingEntry
from capplan.executor.result import CostSource
from capplan.executor.usage import Usage

_PER = 1_000_000


def response_cost(response: Any, usage: Usage, pricing: PricingEntry | None) -> tuple[float | None, CostSource]:
    """The call's cost in USD and where that figure came from."""
    upstream = _upstream_cost(response)
    if upstream is not None:
        return upstream, "litellm"
    if pricing is not None and has_token_counts(usage):
        return priced(usage, pricing), "pricing"
    return None, "unknown"


def has_token_counts(usage: Usage) -> bool:
    """Whether the provider reported any tokens (a real call always has prompt tokens)."""
    return usage.prompt_tokens > 0 or usage.completion_tokens > 0


def priced(usage: Usage, pricing: PricingEntry) -> float:
    """Cost from a pricing entry (USD per million tokens).

    ``prompt_tokens`` includes cache reads and writes on every route, so those are split out
    and charged at their own rates; a rate pricing.json does not list is charged at the input
    rate, which is what an uncached token costs.
    """
    cache_read = usage.cache_read_input_tokens or usage.cached_tokens
    cache_write = usage.cache_creation_input_tokens
    uncached = max(usage.prompt_tokens - cache_read - cache_write, 0)
    read_rate = pricing.cache_read if pricing.cache_read is not None else pricing.input
    write_rate = pricing.cache_write if pricing.cache_write is not None else pricing.input
    total = (
        uncached * pricing.input
        + cache_read * read_rate
        + cache_write * write_rate
        + usage.completion_tokens * pricing.output
    )
    return total / _PER


def _upstream_cost(response: Any) -> float | None:
    usage = _get(response, "usage")
    reported = _number(_get(usage, "cost")) if usage is not None else None
    if reported is not None:
        return reported
    hidden = _get(response, "_hidden_params")
    return _number(hidden.get("response_cost")) if isinstance(hidden, Mapping) else None


def _get(obj: Any, name: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def _number(value: Any) -> float | None:
    # a bool is an int to Python, but never a price
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None

"""A trial's cost and token totals as its records carry them.

A call whose cost the provider never reported and nobody could price makes its role's total
unknown: ``None``, never a made-up 0, so no summary can read it as free. That is a call the
provider answered without a cost or usage, and every attempt that went to the transport and
failed (a 500, a timeout, a dropped connection, a cut-short body): the provider may have billed
it, and capplan cannot know. Only a call that raised before anything was sent is known to have
cost nothing (``cost_source: none``, ``cost_usd: 0.0``). Tokens follow the same rule: a call
without reported token counts has ``usage: null`` and makes its role's counters unknown.
Amounts are rounded to 1e-9 USD: float sums otherwise write ``0.0025675000000000003``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from capplan.executor.usage import TOKEN_COUNTERS
from capplan.trials.run_folder.records import CallRecord, LineUsage, RunLine, UsageRecord

#: the resolution amounts are written at (a billionth of a dollar)
USD_DIGITS = 9


def round_usd(value: float) -> float:
    return round(value, USD_DIGITS)


def known_cost(calls: Iterable[CallRecord], roles: Sequence[str]) -> float | None:
    """The roles' summed cost, or None when any of their calls' cost is unknown."""
    total = 0.0
    for call in calls:
        if call.role not in roles:
            continue
        if call.cost_usd is None:
            return None
        total += call.cost_usd
    return round_usd(total)


def known_part(calls: Iterable[CallRecord], roles: Sequence[str]) -> float:
    """What the roles' calls of known cost spent: the lower bound of a total :func:`known_cost` calls unknown."""
    return round_usd(sum(c.cost_usd for c in calls if c.role in roles and c.cost_usd is not None))


def known_spend(line: RunLine) -> float:
    """Every dollar a run line knows was spent: its costs, or where one is unknown, that role's known part."""
    agent = line.cost_usd if line.cost_usd is not None else line.cost_known_usd
    user = line.user_cost_usd if line.user_cost_usd is not None else line.user_cost_known_usd
    return (agent or 0.0) + (user or 0.0) + (line.judge_cost_usd or 0.0)


def unknown_cost_calls(calls: Iterable[CallRecord], roles: Sequence[str] | None = None) -> int:
    """How many of the roles' calls (every role's by default) have no known cost."""
    return sum(1 for c in calls if c.cost_usd is None and (roles is None or c.role in roles))


def cost_source(calls: Sequence[CallRecord], roles: Sequence[str]) -> str:
    """Where the roles' total came from: one source, ``mixed``, ``none`` (no call answered), or ``unknown``."""
    if known_cost(calls, roles) is None:
        return "unknown"
    sources = {c.cost_source for c in calls if c.role in roles and c.status == "ok"}
    if not sources:
        return "none"
    return sources.pop() if len(sources) == 1 else "mixed"


def known_usage(calls: Iterable[CallRecord], roles: Sequence[str]) -> UsageRecord | None:
    """The roles' counters summed field-wise, or None when any of their calls reported none."""
    totals = dict.fromkeys(TOKEN_COUNTERS, 0)
    for call in calls:
        if call.role not in roles:
            continue
        usage = call.usage
        if usage is None:
            return None
        for name in TOKEN_COUNTERS:  # summed as ints, one record at the end: a record per call cost a validation each
            totals[name] += getattr(usage, name)
    return UsageRecord(**totals)


def total_tokens(usage: UsageRecord | None) -> int | None:
    """Prompt + completion tokens of a counters block; None when the block is unknown."""
    return None if usage is None else usage.prompt_tokens + usage.completion_tokens


def rounded_calls(calls: Iterable[CallRecord]) -> list[CallRecord]:
    """The calls with their costs at the files' resolution."""
    return [c if c.cost_usd is None or (rounded := round_usd(c.cost_usd)) == c.cost_usd
            else c.model_copy(update={"cost_usd": rounded}) for c in calls]


def line_usage(usage: UsageRecord | None) -> LineUsage | None:
    """The counters a run line keeps; cache reads come as ``cached_tokens`` (OpenAI) or
    ``cache_read_input_tokens`` (Anthropic) depending on the route, never both; None when unknown."""
    if usage is None:
        return None
    return LineUsage(prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens,
                     reasoning_tokens=usage.reasoning_tokens,
                     cache_read_tokens=usage.cache_read_input_tokens or usage.cached_tokens,
                     cache_write_tokens=usage.cache_creation_input_tokens)

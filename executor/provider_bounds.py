"""The bounds a provider's figures are held to: a provider is untrusted, and one absurd number would swamp every total.

Shared by the executor, which checks each answer (:mod:`capplan.executor.usage`,
:mod:`capplan.executor.cost`), and the run folder's readers, which meet figures an older capplan
recorded unchecked. Standard library only: the record models import it.
"""

from __future__ import annotations

import math
from typing import Any

#: The most tokens one counter of one call may report: a thousand times the largest context window
#: offered today (1M tokens); a larger figure is not a count, and pricing it would invent a bill.
MAX_TOKENS = 10**9
#: The most one call may cost, in USD. The dearest call priced today (a 1M-token prompt and a
#: 128k-token answer at $150 / $600 per million) is about $230; a figure above this ceiling is
#: not a bill but a provider's mistake or lie.
MAX_COST_USD = 1000.0
#: How much of a refused value a problem line quotes.
_MAX_QUOTED = 40


def token_count_problem(value: Any) -> str | None:
    """Why ``value`` is not a token count (``None`` when it is one: a whole number in [0, MAX_TOKENS])."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"not a number but {type(value).__name__}"
    if isinstance(value, float) and not math.isfinite(value):
        return "not finite"
    if value < 0:
        return "negative"
    if value > MAX_TOKENS:
        return f"above the bound of {MAX_TOKENS} tokens"
    if isinstance(value, float) and not value.is_integer():
        return "not a whole number of tokens"
    return None


def cost_problem(value: Any) -> str | None:
    """Why ``value`` is not a call's cost (``None`` when it is one: a finite number in [0, MAX_COST_USD])."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"not a number but {type(value).__name__}"
    if not math.isfinite(value):
        return "not finite"
    if value < 0:
        return "negative"
    if value > MAX_COST_USD:
        return f"above the ceiling of ${MAX_COST_USD:.0f} per call"
    return None


def quoted(value: Any) -> str:
    """A provider's value as a problem line quotes it: its repr, cut to a few dozen characters."""
    try:
        text = repr(value)
    except Exception:  # a provider object whose repr raises
        text = f"<{type(value).__name__}>"
    return text if len(text) <= _MAX_QUOTED else text[:_MAX_QUOTED] + "..."

"""The most one request can cost: what a ``--max-cost`` budget reserves before the request is sent.

Output: the request's own output cap (``max_tokens``, ``max_completion_tokens`` or
``max_output_tokens``, whichever the plan's parameter policy sent), else the plan's default
``request_defaults.max_tokens``, at the plan's output price. Input: the UTF-8 bytes of the
request's messages, system text and tools as JSON, at the plan's input price; a byte-level
tokenizer makes at most one token per byte, and the JSON's quotes and braces stand in for the few
tokens each message's framing costs. Cache discounts are not assumed. ``None`` when the plan has
no price or no output cap: such a request has no bound. A mock plan's request goes nowhere and
costs nothing: its bound is 0.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from capplan.executor import mock_provider
from capplan.executor.plan import Plan

#: request keys whose value caps the output tokens (the params policy may rename max_tokens)
OUTPUT_CAP_KEYS = ("max_tokens", "max_completion_tokens", "max_output_tokens")
_INPUT_KEYS = ("messages", "system", "tools", "input", "instructions")


def output_cap(plan: Plan, kwargs: Mapping[str, Any]) -> int | None:
    """The most output tokens the request allows: its own cap, else the plan's default."""
    caps = [v for k in OUTPUT_CAP_KEYS for v in [kwargs.get(k)] if isinstance(v, int) and not isinstance(v, bool)]
    if caps:
        return max(caps)
    return plan.request_defaults.max_tokens


def input_tokens_bound(kwargs: Mapping[str, Any]) -> int:
    """An upper bound on the request's input tokens: the UTF-8 bytes of what the model reads, as JSON."""
    shown = {k: kwargs[k] for k in _INPUT_KEYS if k in kwargs}
    return len(json.dumps(shown, ensure_ascii=False, separators=(",", ":"), default=str).encode("utf-8"))


def worst_case_usd(plan: Plan, kwargs: Mapping[str, Any]) -> float | None:
    """The most the request can cost at ``plan``'s prices (None: no price or no output cap)."""
    if mock_provider.is_mock(plan.model.provider):
        return 0.0
    pricing = plan.pricing
    cap = output_cap(plan, kwargs)
    if pricing is None or cap is None:
        return None
    return (input_tokens_bound(kwargs) * float(pricing.input) + cap * float(pricing.output)) / 1_000_000


def unbounded_reason(plan: Plan) -> str | None:
    """Why a budget cannot bound ``plan``'s calls (None: it can)."""
    if mock_provider.is_mock(plan.model.provider):
        return None
    if plan.pricing is None:
        return "it has no pricing entry, so a call's worst-case cost is unknown"
    if plan.request_defaults.max_tokens is None:
        return "it has no default output cap (request_defaults.max_tokens), so a call's output is unbounded"
    return None

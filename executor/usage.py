"""Token and cache accounting read off a litellm response, and the OpenRouter generation id.

:class:`UsageExtractor` is the one reader of ``response.usage``; nothing else branches on which
provider filled which counter. It never raises: a missing counter reads as 0; a counter outside its bounds
(not an integer, negative, not finite, or above :data:`~capplan.executor.provider_bounds.MAX_TOKENS` — a provider is untrusted)
reads as ``None``, unknown, and is named in the problems :meth:`UsageExtractor.extract_checked`
returns; the raw block is kept verbatim in ``provider_raw``, so nothing the provider reported is
lost.

Cost is not a usage field: where a call's cost comes from (provider-reported or priced from the
plan) is a property of the result, decided once in ``capplan.executor.cost``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from capplan.executor.provider_bounds import MAX_TOKENS, quoted, token_count_problem

logger = logging.getLogger("capplan.usage")

#: litellm re-keys upstream response headers as ``llm_provider-<name>``.
LITELLM_HEADER_PREFIX = "llm_provider-"
#: The header OpenRouter names its generation with (not ``x-openrouter-generation-id``).
OPENROUTER_GENERATION_HEADER = "x-generation-id"


@dataclass(frozen=True)
class Usage:
    """Normalised token counters for one call, or the field-wise sum over several.

    A counter is ``None`` when the provider reported a value outside its bounds: unknown, and so
    is any sum it is part of. ``provider_raw`` is the JSON-safe raw usage block of the call; a sum
    keeps the right-hand operand's (per-call blocks differ in shape, so merging them would produce junk).
    """

    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    reasoning_tokens: int | None = 0
    cached_tokens: int | None = 0
    cache_creation_input_tokens: int | None = 0
    cache_read_input_tokens: int | None = 0
    provider_raw: dict[str, Any] = field(default_factory=dict)

    def __add__(self, other: object) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        counters = {name: _sum(getattr(self, name), getattr(other, name)) for name in TOKEN_COUNTERS}
        return Usage(**counters, provider_raw=other.provider_raw)

    def unknown(self) -> tuple[str, ...]:
        """The counters a provider reported out of bounds (``None``)."""
        return tuple(name for name in TOKEN_COUNTERS if getattr(self, name) is None)


#: The token counters, in the order :class:`Usage` declares them: the one list of their names. The trial
#: records' ``UsageRecord`` declares the same fields in this order (its JSON keys follow it; a test holds
#: the two equal), and everything that copies or sums counters iterates this tuple.
TOKEN_COUNTERS: tuple[str, ...] = tuple(f.name for f in fields(Usage) if f.name != "provider_raw")


def _sum(left: int | None, right: int | None) -> int | None:
    return None if left is None or right is None else left + right


class UsageExtractor:
    """Reads a :class:`Usage` from a litellm ``ModelResponse`` or a response dict."""

    def extract(self, response: Any) -> Usage:
        """The call's usage; a counter absent in the response is 0, one out of bounds ``None``."""
        return self.extract_checked(response)[0]

    def extract_checked(self, response: Any) -> tuple[Usage, tuple[str, ...]]:
        """The call's usage and one problem line per counter the provider reported out of bounds."""
        usage = _get(response, "usage")
        if usage is None:
            return Usage(), ()
        problems: list[str] = []
        prompt_details = _get(usage, "prompt_tokens_details")
        completion_details = _get(usage, "completion_tokens_details")

        def count(container: Any, name: str, path: str = "") -> int | None:
            return _count(container, name, path, problems)

        # Anthropic direct reports cache counters top-level; OpenRouter zeroes those and
        # re-surfaces them nested. Top-level wins whenever it is non-zero (or unknown).
        write_top = count(usage, "cache_creation_input_tokens")
        read_top = count(usage, "cache_read_input_tokens")
        return Usage(
            prompt_tokens=count(usage, "prompt_tokens"),
            completion_tokens=count(usage, "completion_tokens"),
            reasoning_tokens=count(completion_details, "reasoning_tokens", "completion_tokens_details."),
            cached_tokens=count(prompt_details, "cached_tokens", "prompt_tokens_details."),
            cache_creation_input_tokens=write_top if write_top != 0
            else count(prompt_details, "cache_write_tokens", "prompt_tokens_details."),
            cache_read_input_tokens=read_top if read_top != 0
            else count(prompt_details, "cache_read_tokens", "prompt_tokens_details."),
            provider_raw=_raw_block(usage),
        ), tuple(problems)


def extract_openrouter_generation_id(response: Any) -> str | None:
    """The ``x-generation-id`` OpenRouter sent with ``response``, or ``None``.

    litellm keeps upstream headers in ``response._hidden_params["additional_headers"]`` under
    ``llm_provider-<name>``; names are matched with that prefix stripped and case-folded. Only
    OpenRouter sends the header, so its presence is the whole test: direct routes yield ``None``.
    """
    hidden = _get(response, "_hidden_params")
    headers = _get(hidden, "additional_headers")
    if not isinstance(headers, Mapping):
        return None
    for key, value in headers.items():
        if not isinstance(key, str):
            continue
        name = key.casefold().removeprefix(LITELLM_HEADER_PREFIX)
        if name == OPENROUTER_GENERATION_HEADER and isinstance(value, str) and value:
            return value
    return None


def _get(obj: Any, name: str) -> Any:
    if obj is None:
        return None
    if type(obj) is dict:  # the direct transport's answers: a plain dict, no ABC check needed
        return obj.get(name)
    if isinstance(obj, Mapping):
        return obj.get(name)
    try:
        return getattr(obj, name, None)
    except Exception:  # a provider object whose property raises must not fail the call
        return None


def _count(container: Any, name: str, path: str, problems: list[str]) -> int | None:
    value = _get(container, name)
    if value is None:
        return 0
    if type(value) is int and 0 <= value <= MAX_TOKENS:  # what nearly every answer holds: a count in bounds
        return value
    why = token_count_problem(value)
    if why is None:
        return int(value)
    problem = f"usage.{path}{name} is {why} ({quoted(value)}): the count is unknown"
    logger.warning("%s; kept in provider_raw", problem)
    problems.append(problem)
    return None


def _raw_block(usage: Any) -> dict[str, Any]:
    try:
        safe = _json_safe(usage)
    except Exception:  # a provider object that cannot be dumped still must not fail the call
        return {"unreadable": repr(usage)}
    return safe if isinstance(safe, dict) else {"value": safe}


def _json_safe(value: Any) -> Any:
    """``value`` as plain JSON types; objects through ``model_dump`` or their attributes."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return _json_safe(dump())
    if hasattr(value, "__dict__"):
        return {k: _json_safe(v) for k, v in vars(value).items() if not k.startswith("_")}
    return repr(value)

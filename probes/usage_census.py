"""The usage-field census: which usage fields a route's accepted answers carry, by name only.

Every accepted answer's ``usage`` object is read for the names of its fields that have a value
(``prompt_tokens``, and one level down ``prompt_tokens_details.cached_tokens``,
``completion_tokens_details.reasoning_tokens``, Responses' ``input_tokens_details.cached_tokens``
...): never the values, which say nothing about the route's contract. A field whose value is
``null`` counts as absent (litellm's usage objects name every field they know, most of them null).

What the plan reads is decided from the plan (:func:`plan_reads`): the input and output counts
always (cost, budgets and telemetry are made of them), the cached-input count where the plan
prices cached reads, and the reasoning count where the plan's own request asks for reasoning. A
field the plan reads that the route returned in none of its accepted answers is drift.

Everything a route sends is bounded here: at most :data:`MAX_FIELDS` names per answer, each at
most :data:`MAX_NAME_CHARS` characters of printable text, read from at most
:data:`MAX_ITEMS_READ` entries per object, two levels deep; anything past that is counted, not read.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from capplan.executor.plan import Plan
from capplan.executor.wire_dialect import is_responses

#: the most field names kept from one answer's usage object
MAX_FIELDS = 64
#: the most characters of one field name kept
MAX_NAME_CHARS = 80
#: the most entries of one object looked at (a hostile route may send a million keys)
MAX_ITEMS_READ = 256

#: the chat names the Responses mapping adds beside the route's own counters
#: (``capplan.executor.responses_response``): not what the route sent, so left out of its census
RESPONSES_MAPPING_ADDS = frozenset({"prompt_tokens", "completion_tokens", "prompt_tokens_details",
                                    "completion_tokens_details"})


@dataclass(frozen=True)
class UsageSeen:
    """The usage fields one accepted answer carried (``fields``), or why none could be read (``problem``)."""

    fields: tuple[str, ...] = ()
    problem: str | None = None


@dataclass(frozen=True)
class UsageRead:
    """A usage field the plan reads: any one of ``names`` (as the route names it) will do."""

    names: tuple[str, ...]
    why: str

    def as_json(self) -> dict[str, Any]:
        return {"names": list(self.names), "why": self.why}


def census(answer: Any, protocol: str, redact: Callable[[str], str]) -> UsageSeen:
    """The usage fields of one accepted answer (the transport's raw answer, chat-shaped)."""
    usage = _get(answer, "usage")
    if usage is None:
        return UsageSeen(problem="the answer has no usage object")
    usage = _plain(usage)
    if not isinstance(usage, Mapping):
        return UsageSeen(problem=f"the usage is {_kind(usage)}, not an object")
    names: list[str] = []
    left_out = 0
    responses = is_responses(protocol)
    for key, value in _items(usage):
        if responses and key in RESPONSES_MAPPING_ADDS:
            continue
        nested = _plain(value)
        if isinstance(nested, Mapping):
            inner = [f"{key}.{sub}" for sub, item in _items(nested) if item is not None]
            found = inner
        else:
            found = [key] if nested is not None else []
        for name in found:
            if len(names) < MAX_FIELDS:
                names.append(_bounded_name(redact(name)))
            else:
                left_out += 1
    problem = f"{left_out} more fields left out (at most {MAX_FIELDS} are kept)" if left_out else None
    return UsageSeen(tuple(sorted(set(names))), problem)


def plan_reads(plan: Plan, *, asks_reasoning: bool) -> tuple[UsageRead, ...]:
    """The usage fields ``plan``'s usage mapping relies on, named as its route sends them.

    ``asks_reasoning``: whether the plan's own request asks for reasoning (its params policy sends
    an effort), so that the reasoning count is part of what its answers are billed and reported by.
    """
    responses = plan.wire is not None and is_responses(plan.wire.protocol)
    prompt, completion = ("input_tokens", "output_tokens") if responses else ("prompt_tokens", "completion_tokens")
    reads = [UsageRead((prompt,), "every call's cost and budget count it"),
             UsageRead((completion,), "every call's cost and budget count it")]
    if plan.pricing is not None and plan.pricing.cache_read is not None:
        cached = (("input_tokens_details.cached_tokens",) if responses else
                  ("prompt_tokens_details.cached_tokens", "cache_read_input_tokens", "prompt_tokens_details.cache_read_tokens"))
        reads.append(UsageRead(cached, "the plan prices cached input apart (pricing.cache_read)"))
    if asks_reasoning:
        reasoning = "output_tokens_details.reasoning_tokens" if responses else "completion_tokens_details.reasoning_tokens"
        reads.append(UsageRead((reasoning,), "the plan's requests ask for reasoning"))
    return tuple(reads)


def _get(obj: Any, name: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name)
    try:
        return getattr(obj, name, None)
    except Exception:  # noqa: BLE001 (a provider object whose property raises reads as absent)
        return None


def _plain(value: Any) -> Any:
    """A provider object (litellm's pydantic usage) as a mapping; plain values as they are."""
    if value is None or isinstance(value, (Mapping, str, int, float, bool, list, tuple)):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return dump()
        except Exception:  # noqa: BLE001 (an object that cannot be dumped is read as what it is)
            return value
    return value


def _items(mapping: Mapping[Any, Any]) -> list[tuple[str, Any]]:
    return [(str(key), value) for key, value in itertools.islice(mapping.items(), MAX_ITEMS_READ)]


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "a list"
    return type(value).__name__


def _bounded_name(name: str) -> str:
    shown = "".join(ch if ch.isprintable() else "?" for ch in name[:MAX_NAME_CHARS])
    return shown + ("…" if len(name) > MAX_NAME_CHARS else "")

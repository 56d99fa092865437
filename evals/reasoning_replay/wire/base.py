"""What every wire format hands back after a call, and helpers the formats share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from capplan.evals.reasoning_replay.wire.knobs import Knobs


@dataclass
class Parsed:
    """The measurable parts of one response, whatever the wire format."""

    response_id: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None
    provider_cost: float | None = None
    answer: str = ""
    reasoning_text: str = ""
    provider: str | None = None
    # what the endpoint says it is (system_fingerprint: server build, model, template); lets a
    # later reader tell whether a verdict was measured against what is served now
    fingerprint: str | None = None


class Wire(Protocol):
    """Builds request bodies for one wire format and reads its responses."""

    kind: str

    def path(self, model: str) -> str:
        """Request path under the route's base URL."""

    def body(self, model: str, payload: list[dict[str, Any]], knobs: Knobs, max_tokens: int,
             extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """The JSON body for a conversation."""

    def parse(self, body: dict[str, Any]) -> Parsed:
        """Usage, texts and id of a JSON response."""


def as_int(value: Any) -> int | None:
    """An integer token count, or None when the field is missing or not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


def dig(data: Any, *keys: str | int) -> Any:
    """``data[k1][k2]…`` or None, without caring which level is missing or mistyped."""
    for key in keys:
        if isinstance(key, int):
            if not isinstance(data, list) or len(data) <= key:
                return None
        elif not isinstance(data, dict):
            return None
        data = data[key] if isinstance(key, int) else data.get(key)
    return data


def provider_cost(usage: Any) -> float | None:
    """Billed USD when the provider reports it: ``usage.cost``, or xAI's 1e-10 USD ticks."""
    if not isinstance(usage, dict):
        return None
    cost = usage.get("cost")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool):
        return float(cost)
    ticks = usage.get("cost_in_usd_ticks")
    if isinstance(ticks, (int, float)) and not isinstance(ticks, bool):
        return ticks / 1e10
    return None


def merge(base: dict[str, Any], extra: dict[str, Any] | None) -> dict[str, Any]:
    """``base`` with ``extra`` merged in, nested dicts merged key by key."""
    for key, value in (extra or {}).items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            base[key] = merge(dict(base[key]), value)
        else:
            base[key] = value
    return base

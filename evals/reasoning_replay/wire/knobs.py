"""Generation settings of one model on one route, and the fixes a baseline 400 can ask for.

Fixes are applied to the baseline only, before any carrier is sent, so every measured
request of a model goes out with the same settings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from capplan.evals.reasoning_replay.routes import Route

EFFORTS = ("low", "medium", "high")
# Gemini 2.5 takes a token budget where Gemini 3 takes a level.
GEMINI_BUDGETS = {"low": 512, "medium": 2048, "high": 8192}


@dataclass(frozen=True)
class Knobs:
    """The request settings that are not the conversation."""

    temperature: float | None = 0.0
    effort: str | None = "low"
    # chat: "reasoning" | "reasoning_effort"; "responses"; "gemini_level" | "gemini_budget"; "none"
    effort_style: str = "none"
    max_tokens_key: str = "max_tokens"

    def with_effort(self, effort: str | None) -> Knobs:
        """The same settings asking for another reasoning effort."""
        return replace(self, effort=effort)

    @property
    def escalates(self) -> bool:
        """Whether raising the effort means anything on this route."""
        return self.effort_style != "none"

    def as_record(self) -> dict[str, Any]:
        """A JSON-ready copy for calls.jsonl."""
        return {"temperature": self.temperature, "effort": self.effort,
                "effort_style": self.effort_style, "max_tokens_key": self.max_tokens_key}

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> Knobs:
        """Inverse of :meth:`as_record` (used when a run resumes)."""
        return cls(temperature=data.get("temperature"), effort=data.get("effort"),
                   effort_style=str(data.get("effort_style") or "none"),
                   max_tokens_key=str(data.get("max_tokens_key") or "max_tokens"))


def default_knobs(route: Route) -> Knobs:
    """Low reasoning effort, temperature 0 where the route accepts it."""
    temperature = 0.0 if route.send_temperature else None
    if route.kind == "responses":
        return Knobs(temperature=temperature, effort="low", effort_style="responses")
    if route.kind == "gemini":
        return Knobs(temperature=temperature, effort="low", effort_style="gemini_level")
    style = route.effort_style
    return Knobs(temperature=temperature, effort=None if style == "none" else "low",
                 effort_style=style, max_tokens_key=route.max_tokens_key)


def _drop_temperature(k: Knobs) -> Knobs:
    return replace(k, temperature=None)


def _completion_tokens(k: Knobs) -> Knobs:
    return replace(k, max_tokens_key="max_completion_tokens")


def _gemini_budget(k: Knobs) -> Knobs:
    return replace(k, effort_style="gemini_budget") if k.effort_style == "gemini_level" else k


def _no_effort(k: Knobs) -> Knobs:
    return replace(k, effort=None, effort_style="none")


# (what the error text mentions, the change that answers it), tried in order.
_FIXES = (
    (re.compile(r"temperature", re.I), _drop_temperature),
    (re.compile(r"max_tokens", re.I), _completion_tokens),
    (re.compile(r"thinking_?level|thinking level", re.I), _gemini_budget),
    (re.compile(r"reasoning|effort|thinking", re.I), _no_effort),
)


def fix_for(knobs: Knobs, error: str) -> Knobs | None:
    """Settings that avoid the parameter a 400 complains about, or None when none applies."""
    for pattern, fix in _FIXES:
        if pattern.search(error):
            changed = fix(knobs)
            if changed != knobs:
                return changed
    return None

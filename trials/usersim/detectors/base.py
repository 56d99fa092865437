"""What a reply detector is, and what it hands back when it flags a reply."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

EXCERPT_LIMIT = 240
"""Longest excerpt a finding carries: enough to judge the hit, never a whole long reply."""

_ELLIPSIS = "\u2026"


def bounded_excerpt(text: str, limit: int = EXCERPT_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, the cut marked so a reader never mistakes it
    for the reply's own ending."""
    if len(text) <= limit:
        return text
    return text[: limit - len(_ELLIPSIS)] + _ELLIPSIS


@dataclass(frozen=True, slots=True)
class Finding:
    """One detector's verdict on a reply it flags: a reason code and the matched text."""

    reason: str
    excerpt: str


@runtime_checkable
class ReplyDetector(Protocol):
    """One inspection a generated user reply must survive.

    ``name`` is the name the defect is recorded under; a detector must hold no per-reply
    state, because one instance is shared by every guard.
    """

    @property
    def name(self) -> str:
        """Registered detector name, e.g. ``fourth_wall``."""
        ...

    def inspect(self, text: str) -> Finding | None:
        """The defect found in ``text``, or None when the reply is clean."""
        ...

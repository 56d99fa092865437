"""Episode-unique tool-call ids.

A provider mints tool-call ids as model output, and some reuse them across turns (one names
each call ``<tool>:<index within the turn>``). The id is the only key joining a call to its
result, so the loop assigns ids at ingestion: an id seen for the first time is kept (a no-op
for providers that mint fresh ids), the n-th further occurrence becomes ``<id>#<n>``. Both the
history sent back and the trajectory carry the assigned id. An empty id is named by position.
"""

from __future__ import annotations

from collections import Counter


class ToolCallIds:
    """Assigns ids for one trial; not shared between trials."""

    def __init__(self) -> None:
        self._seen: Counter[str] = Counter()
        self._assigned: set[str] = set()

    def assign(self, provider_id: str) -> str:
        base = provider_id or "call"
        candidate = base
        while candidate in self._assigned:
            self._seen[base] += 1
            candidate = f"{base}#{self._seen[base]}"
        self._assigned.add(candidate)
        return candidate

"""How a cell ended, and whether a rerun with the same ``--out`` should try it again."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Answers that a later attempt can change: nothing arrived, an auth hiccup, throttling,
# upstream trouble. Anything else (a 400, a 404, a 200 without usage) is the provider's answer.
TRANSIENT = frozenset({0, 401, 408, 429, 500, 502, 503, 504, 529})


@dataclass(frozen=True)
class CellOutcome:
    """``state``: done, no-carrier, baseline-failed, budget-exhausted, not-started or error."""

    state: str
    final: bool
    reason: str = ""


class CellFailed(Exception):
    """Raised inside a cell when it cannot go on; carries the outcome to record."""

    def __init__(self, outcome: CellOutcome) -> None:
        super().__init__(outcome.reason)
        self.outcome = outcome


def baseline_failure(record: dict[str, Any], what: str = "baseline") -> CellOutcome:
    """The outcome of a cell whose baseline request did not give a usable measurement."""
    status = int(record.get("status") or 0)
    error = str(record.get("error") or "no usable answer")
    reason = f"{what} {'got HTTP ' + str(status) if status else 'failed'}: {error}"
    # A 4xx or a well-formed 200 without usage is the provider's answer; a 2xx that is not
    # JSON is a proxy's error page and may not recur.
    final = status not in TRANSIENT and (bool(record.get("ok")) or not 200 <= status < 300)
    return CellOutcome("baseline-failed", final=final, reason=reason)

"""The spending cap of an output folder.

Every run that shares ``--out`` shares one budget: the spend starts from the sum of
``cost.jsonl``. Before a call, its worst-case cost (the whole body as prompt, ``max_tokens``
of output) is reserved; the call is not made when the reservation would pass the cap.
After the call the reservation is replaced by the real cost, so concurrent workers can
never jointly overshoot on estimates.
"""

from __future__ import annotations

import threading
from typing import Any

from capplan.evals.reasoning_replay.errors import BudgetExhausted
from capplan.evals.reasoning_replay.store.jsonl import JsonlFile


class Budget:
    """Reserve-then-settle spending against ``cap`` USD."""

    def __init__(self, costs: JsonlFile, cap: float) -> None:
        self.costs = costs
        self.cap = cap
        records, self.problems = costs.read()
        self.spent = sum(_usd(r) for r in records)
        self.reserved = 0.0
        self._lock = threading.Lock()

    def reserve(self, amount: float) -> None:
        """Hold ``amount`` for a call about to be made; raises BudgetExhausted if it cannot fit."""
        with self._lock:
            if self.spent + self.reserved + amount > self.cap:
                raise BudgetExhausted(
                    f"budget reached: ${self.spent:.4f} spent in this output folder (+${self.reserved:.4f} "
                    f"in flight), the next call could cost up to ${amount:.4f}, cap ${self.cap:.2f}; "
                    f"rerun with a higher --budget to resume")
            self.reserved += amount

    def settle(self, reserved: float, record: dict[str, Any]) -> None:
        """Swap a reservation for the real cost and append the cost record."""
        with self._lock:
            self.reserved = max(0.0, self.reserved - reserved)
            self.spent += _usd(record)
        self.costs.append(record)

    def release(self, reserved: float) -> None:
        """Give a reservation back when the call was never sent."""
        with self._lock:
            self.reserved = max(0.0, self.reserved - reserved)


def _usd(record: dict[str, Any]) -> float:
    value = record.get("usd")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0

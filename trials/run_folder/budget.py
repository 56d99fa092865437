"""``--max-cost`` as a bound on what a run spends, checked before every send.

Committed spend is what earlier invocations spent (finished, interrupted and died-in-flight
trials, from the run folder), plus every call this invocation journalled (its known cost; an
answered call of unknown cost counts at its reservation), plus the worst case of each call in
flight (:func:`capplan.executor.cost_bound.worst_case_usd`), reserved when its send is journalled
and released when its outcome is. A send is refused once the committed spend has reached the
budget: the run stops (running trials end as interrupted, at this refused call or their next
turn) and no further trial starts. A trial makes one call at a time, so a run ends at most one
worst-case call per running trial past its budget.
"""

from __future__ import annotations

import threading

from capplan.trials.run_folder.costs import round_usd
from capplan.trials.terminal import Terminal
from capplan.trials.outcome import TerminationReason


class BudgetSpent(Terminal):
    """A send refused because ``--max-cost`` is reached: the trial ends interrupted (it reruns on resume)."""

    def __init__(self, committed: float, budget: float) -> None:
        self.committed = committed
        self.budget = budget  # a worker process raises it again from these two
        super().__init__(TerminationReason.INTERRUPTED,
                         f"the run's --max-cost ${budget} was reached (${committed:.6f} committed); the call was not sent")


class Budget:
    """The committed spend of one invocation against ``max_cost`` (thread-safe)."""

    def __init__(self, max_cost: float, spent_before: float, stop: threading.Event | None = None) -> None:
        self.max_cost = max_cost
        self._before = spent_before
        self._stop = stop
        self._lock = threading.Lock()
        self._journalled = 0.0
        self._reserved: dict[str, float] = {}
        self.reached = False

    def committed(self) -> float:
        """Everything spent or possibly being spent now (reservations of calls in flight included)."""
        with self._lock:
            return self._committed()

    def _committed(self) -> float:
        return round_usd(self._before + self._journalled + sum(self._reserved.values()))

    def exhausted(self) -> bool:
        return self.committed() >= self.max_cost

    def reserve(self, request_id: str, worst_usd: float) -> None:
        """Hold ``worst_usd`` for a call about to be sent; raises :class:`BudgetSpent` (and stops the run) if spent."""
        with self._lock:
            committed = self._committed()
            if committed >= self.max_cost:
                self.reached = True
            else:
                self._reserved[request_id] = worst_usd
                return
        if self._stop is not None:
            self._stop.set()
        raise BudgetSpent(committed, self.max_cost)

    def settle(self, request_id: str | None, cost_usd: float | None, answered: bool) -> None:
        """A call's outcome: its reservation becomes its cost (kept whole when an answered call's cost is unknown)."""
        with self._lock:
            held = self._reserved.pop(request_id, 0.0) if request_id is not None else 0.0
            if cost_usd is not None:
                self._journalled += cost_usd
            elif answered:
                self._journalled += held

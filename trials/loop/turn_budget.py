"""The per-trial turn budget, with the spec's precedence.

A task that pins ``max_turns`` is authoritative for its own semantics; the run's cap only
ceilings it. Otherwise the plan's ``default_max_turns`` (else 50) is the base, ceilinged by
the run cap. A turn is one accepted agent generation; resamples do not count.
"""

from __future__ import annotations

DEFAULT_MAX_TURNS = 50


def resolve_max_turns(task_max_turns: int | None, run_cap: int | None, plan_default: int | None) -> int:
    """The effective budget for one trial."""
    if task_max_turns is not None:
        return min(task_max_turns, run_cap) if run_cap is not None else task_max_turns
    base = plan_default if plan_default is not None else DEFAULT_MAX_TURNS
    return min(base, run_cap) if run_cap is not None else base


def budget_spent(turns: int, max_turns: int) -> bool:
    """Whether ``turns`` accepted agent turns exhaust the budget: no further agent turn, and no user reply to one."""
    return turns >= max_turns

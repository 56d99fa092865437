"""What one plan object needs at run time, made once per plan and shared by every client of it.

Policies are stateless after construction (their parameters are plan data) and the transport
holds only plan facts, so a new client for a plan already seen reuses them: constructing a
client then costs a few small objects, and a warning a policy gives once per instance (a dropped
temperature) is given once per plan, not once per client. Entries are keyed by the plan object's
identity and keep the plan alive; ``Plan.load`` hands out one object per distinct file content.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

from capplan.executor.plan import Plan

T = TypeVar("T")

_SIZE = 256
_entries: OrderedDict[tuple[int, str], tuple[Plan, Any]] = OrderedDict()
_lock = threading.Lock()


def per_plan(plan: Plan, what: str, make: Callable[[Plan], T]) -> T:
    """``make(plan)``, computed once per plan object and ``what`` (bounded LRU, thread-safe)."""
    key = (id(plan), what)
    with _lock:
        hit = _entries.get(key)
        if hit is not None and hit[0] is plan:
            _entries.move_to_end(key)
            value: T = hit[1]
            return value
    made = make(plan)
    with _lock:
        _entries[key] = (plan, made)
        while len(_entries) > _SIZE:
            _entries.popitem(last=False)
    return made

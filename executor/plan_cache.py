"""The plan cache: what the executor keeps per plan for the life of the process.

Two bounded, thread-safe LRUs, and one function that empties both:

* **verified plans**, by the sha256 of their file bytes. Loading the same bytes again (a new
  client per trial, a worker per task) needs only their digest: the verdict on identical bytes
  cannot differ, so ``Plan.load`` hands out one object per distinct file content;
* **per-plan run-time objects** (policy set, transport), by plan identity and a name. Policies
  are stateless after construction (their parameters are plan data) and the transport holds
  only plan facts, so a new client for a plan already seen reuses them: constructing a client
  then costs a few small objects, and a warning a policy gives once per instance (a dropped
  temperature) is given once per plan, not once per client. Entries keep their plan alive, so
  its id cannot be reused while they live.

Nothing here is correctness-bearing: ``clear_plan_cache`` at any moment only costs the next
load and the next client their first-time work again. It stays on in the reference mode
(:mod:`capplan.core.reference_mode`) all the same: a warning given once per plan is behaviour a
user sees, and the two modes must not differ in it.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

# The cache holds plans without knowing their class: plan.py imports this module, and a cache
# that imported the plan model back would make the two one import circle.
P = TypeVar("P")
T = TypeVar("T")

#: entries each LRU keeps (a process rarely holds more than a few dozen plans)
SIZE = 256

_lock = threading.Lock()
_verified: OrderedDict[bytes, object] = OrderedDict()
_per_plan: OrderedDict[tuple[int, str], tuple[object, Any]] = OrderedDict()


def verified_plan(raw: bytes) -> object | None:
    """The plan already verified from exactly these file bytes, if any."""
    key = hashlib.sha256(raw).digest()
    with _lock:
        plan = _verified.get(key)
        if plan is not None:
            _verified.move_to_end(key)
        return plan


def remember_verified(raw: bytes, plan: object) -> None:
    """Record that ``raw`` verified as ``plan`` (the registry check still runs on every load)."""
    key = hashlib.sha256(raw).digest()
    with _lock:
        _verified[key] = plan
        _trim(_verified)


def per_plan(plan: P, what: str, make: Callable[[P], T]) -> T:
    """``make(plan)``, computed once per plan object and ``what``."""
    key = (id(plan), what)
    with _lock:
        hit = _per_plan.get(key)
        if hit is not None and hit[0] is plan:
            _per_plan.move_to_end(key)
            value: T = hit[1]
            return value
    made = make(plan)  # outside the lock: making a policy set may load plugins
    with _lock:
        _per_plan[key] = (plan, made)
        _trim(_per_plan)
    return made


def clear_plan_cache() -> None:
    """Forget every verified plan and per-plan object (tests that count first-time work)."""
    with _lock:
        _verified.clear()
        _per_plan.clear()


def _trim(entries: OrderedDict[Any, Any]) -> None:
    # oldest first out; the caller holds the lock
    while len(entries) > SIZE:
        entries.popitem(last=False)

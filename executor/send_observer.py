"""The seam between an attempt and the wire: whoever runs the executor is told of each send before it happens.

A trial run journals every send before its bytes leave (so a process killed with a request in
flight leaves "sent, outcome unknown" behind, not nothing) and checks its ``--max-cost`` budget
there. The executor must not import the trial runner, so the runner installs an observer here (a
context variable: each trial runs its calls in its own thread) and the attempt log calls it with
the request about to go out. An observer that raises stops the send: nothing goes on the wire and
the exception is the call's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from capplan.core.ids import uuid4_hex

if TYPE_CHECKING:
    from capplan.executor.plan import Plan


@dataclass(frozen=True)
class Send:
    """One request about to be sent.

    ``attempt`` numbers it within its ``generate`` (1-based, every send counted: the number the
    call's record will carry); ``request_id`` names it on the record of its outcome too.
    ``kwargs`` is the request as built, credentials included: read it, never record it; ``plan``
    the plan it was built from (its prices bound what it can cost).
    """

    request_id: str
    attempt: int
    kwargs: Mapping[str, Any]
    plan: Plan | None = None


SendObserver = Callable[[Send], None]

_OBSERVER: ContextVar[SendObserver | None] = ContextVar("capplan_send_observer", default=None)


@contextmanager
def observing_sends(observer: SendObserver | None) -> Iterator[None]:
    """Run the calls made inside the block with ``observer`` told of each send before it happens."""
    token = _OBSERVER.set(observer)
    try:
        yield
    finally:
        _OBSERVER.reset(token)


def current_observer() -> SendObserver | None:
    """The observer of the calls made in this thread now (None: nobody asked)."""
    return _OBSERVER.get()


def new_request_id() -> str:
    return uuid4_hex()

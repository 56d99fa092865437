"""The specs a multi-process backend hands out: attempts to run again first, then the driver's feed.

Shared by the Ray driver and the local worker pool. The driver's feed is pulled one spec at a time,
only when a worker has room (the budget stop works by ending it); a trial whose worker died goes
back to the front.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator

from capplan.trials.spec import TrialSpec


class Feed:
    """Retries first, then the pending specs, one at a time."""

    def __init__(self, pending: Iterator[TrialSpec]) -> None:
        self.pending = pending
        self.retry: deque[TrialSpec] = deque()
        self.exhausted = False

    def next(self) -> TrialSpec | None:
        """The next spec to start, or None when there is none now (the feed may be exhausted)."""
        if self.retry:
            return self.retry.popleft()
        if self.exhausted:
            return None
        spec = next(self.pending, None)
        self.exhausted = spec is None
        return spec

    @property
    def done(self) -> bool:
        """Nothing is left to start: the feed is exhausted and no attempt waits to run again."""
        return self.exhausted and not self.retry

    def fill(self, free: Callable[[], int | None], submit: Callable[[TrialSpec, int], None]) -> None:
        """Start specs while ``free()`` names a worker with room, each on that worker, until none is left now."""
        while (worker := free()) is not None:
            spec = self.next()
            if spec is None:
                return
            submit(spec, worker)

"""Per-route pacing: every worker that talks to one route shares one clock."""

from __future__ import annotations

import threading
import time


class RateLimiter:
    """Spaces request starts at least ``1/rps`` seconds apart (``rps <= 0`` disables pacing)."""

    def __init__(self, rps: float) -> None:
        self.interval = 1.0 / rps if rps > 0 else 0.0
        self._next = 0.0
        self._lock = threading.Lock()

    def wait(self) -> None:
        """Block until this caller may start a request."""
        if not self.interval:
            return
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self.interval
        if start > now:
            time.sleep(start - now)


_limiters: dict[str, RateLimiter] = {}
_registry_lock = threading.Lock()


def limiter_for(route_name: str, rps: float) -> RateLimiter:
    """The one limiter of a route in this process, created on first use."""
    with _registry_lock:
        limiter = _limiters.get(route_name)
        if limiter is None or limiter.interval != (1.0 / rps if rps > 0 else 0.0):
            limiter = _limiters[route_name] = RateLimiter(rps)
        return limiter

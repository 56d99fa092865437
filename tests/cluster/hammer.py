"""A Ray actor that calls through the limiter gate as fast as it is admitted."""

from __future__ import annotations

import os
import time
from typing import Any

from capplan.trials.backends.cluster.limiter_actor import RayCallGate


class Hammer:
    """One worker process: acquire, hold the "call" for ``hold_s``, release, repeat."""

    def __init__(self, limiter: Any, name: str) -> None:
        self.gate = RayCallGate(limiter, name)

    def ready(self) -> int:
        return os.getpid()

    def run(self, provider: str, key: str, start_at: float, seconds: float, hold_s: float) -> list[tuple[float, float]]:
        """(start, end) wall times of every admitted call until ``start_at + seconds``."""
        time.sleep(max(0.0, start_at - time.time()))
        calls = []
        while time.time() < start_at + seconds:
            ticket = self.gate.acquire(provider, key)
            began = time.time()
            time.sleep(hold_s)
            calls.append((began, time.time()))
            self.gate.release(ticket, rate_limited=False, retry_after_s=None)
        return calls

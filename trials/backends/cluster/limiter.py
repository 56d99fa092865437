"""The run-wide call limiter: requests per minute and calls in flight, per provider and per key.

One instance serves every worker of a run (on Ray it lives in one actor), so adding workers
adds waiting, not 429s. Each call passes two lanes, its provider's and its key's (the key is
named by its env var, never its value). Admission is FIFO: a caller first takes a concurrency
seat in each lane, then reserves the next start slot the lanes' rates allow and sleeps until
it; reserving slots in arrival order keeps the rate exact without a thundering herd.

A 429 reported by any caller pauses the lane for everyone (Retry-After, else the configured
pause) and halves its rate; each later success wins a little of the rate back.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from capplan.executor.rate_limits import CallLimit, RateLimits

#: How far 429s may stretch a lane's interval, and how much of it each success gives back.
MAX_SLOWDOWN = 16.0
RECOVERY_PER_SUCCESS = 0.95


@dataclass
class _Lane:
    """One provider or one key: its seats, its next free start slot, its 429 state."""

    limit: CallLimit
    in_flight: int = 0
    seat_waiters: deque[asyncio.Future[None]] = field(default_factory=deque)
    next_start: float = 0.0
    paused_until: float = 0.0
    slowdown: float = 1.0
    granted: int = 0
    rate_limited: int = 0
    waited_s: float = 0.0

    @property
    def interval(self) -> float:
        rpm = self.limit.requests_per_minute
        return 0.0 if rpm is None else 60.0 / rpm * self.slowdown

    def seat_free(self) -> bool:
        cap = self.limit.max_concurrent
        return cap is None or self.in_flight < cap

    def stats(self) -> dict[str, Any]:
        return {
            "granted": self.granted,
            "rate_limited": self.rate_limited,
            "in_flight": self.in_flight,
            "waiting": len(self.seat_waiters),
            "waited_s": round(self.waited_s, 3),
            "slowdown": round(self.slowdown, 3),
        }


@dataclass(frozen=True)
class _Ticket:
    lanes: tuple[str, ...]
    holder: str


class Limiter:
    """Admits calls under the run's limits; every method runs on one asyncio loop."""

    def __init__(
        self,
        limits: RateLimits,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.limits = limits
        self._clock = clock
        self._sleep = sleep
        self._lanes: dict[str, _Lane] = {}
        self._tickets: dict[int, _Ticket] = {}
        self._ids = itertools.count(1)
        self.requests_served = 0

    async def acquire(self, provider: str, key: str | None, holder: str) -> int:
        """Wait until a call to ``provider`` through ``key`` may start; the ticket goes back to ``release``."""
        self.requests_served += 1
        names = [self._lane_name("provider", provider)]
        if key:
            names.append(self._lane_name("key", key))
        lanes = [self._lane(name) for name in names]
        started = self._clock()
        seated: list[_Lane] = []
        try:
            for lane in lanes:  # always provider then key, so two callers never hold each other's seat
                await self._take_seat(lane)
                seated.append(lane)
            await self._wait_for_slot(lanes)
        except BaseException:
            for lane in seated:
                self._free_seat(lane)
            raise
        waited = self._clock() - started
        for lane in lanes:
            lane.granted += 1
            lane.waited_s += waited
        ticket = next(self._ids)
        self._tickets[ticket] = _Ticket(tuple(names), holder)
        return ticket

    def release(self, ticket: int, *, rate_limited: bool = False, retry_after_s: float | None = None) -> None:
        """The call is over; a 429 pauses and slows its lanes for every caller."""
        self.requests_served += 1
        held = self._tickets.pop(ticket, None)
        if held is None:  # already freed with its holder (a worker reported dead)
            return
        now = self._clock()
        for name in held.lanes:
            lane = self._lanes[name]
            if rate_limited:
                lane.rate_limited += 1
                pause = retry_after_s if retry_after_s is not None else self.limits.rate_limited_pause_s
                lane.paused_until = max(lane.paused_until, now + min(pause, 600.0))
                lane.slowdown = min(MAX_SLOWDOWN, lane.slowdown * 2)
            else:
                lane.slowdown = max(1.0, lane.slowdown * RECOVERY_PER_SUCCESS)
            self._free_seat(lane)

    def release_holder(self, holder: str) -> int:
        """Free every seat a dead worker held; returns how many."""
        dead = [ticket for ticket, held in self._tickets.items() if held.holder == holder]
        for ticket in dead:
            self.release(ticket)
        return len(dead)

    def stats(self) -> dict[str, Any]:
        """Per-lane counters and the limiter's own load (requests served)."""
        return {
            "requests_served": self.requests_served,
            "lanes": {name: lane.stats() for name, lane in sorted(self._lanes.items())},
        }

    def _lane_name(self, kind: str, name: str) -> str:
        return f"{kind}:{name}"

    def _lane(self, name: str) -> _Lane:
        lane = self._lanes.get(name)
        if lane is None:
            kind, _, bare = name.partition(":")
            table = self.limits.providers if kind == "provider" else self.limits.keys
            lane = self._lanes[name] = _Lane(table.get(bare, CallLimit()))
        return lane

    async def _take_seat(self, lane: _Lane) -> None:
        if lane.seat_free() and not lane.seat_waiters:
            lane.in_flight += 1
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        lane.seat_waiters.append(waiter)
        try:
            await waiter  # _free_seat hands the seat over already counted
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self._free_seat(lane)
            else:
                lane.seat_waiters.remove(waiter)
            raise

    def _free_seat(self, lane: _Lane) -> None:
        lane.in_flight -= 1
        while lane.seat_waiters and lane.seat_free():
            waiter = lane.seat_waiters.popleft()
            if not waiter.done():
                lane.in_flight += 1
                waiter.set_result(None)

    async def _wait_for_slot(self, lanes: list[_Lane]) -> None:
        while True:
            now = self._clock()
            slot = max([now] + [max(lane.next_start, lane.paused_until) for lane in lanes])
            for lane in lanes:
                lane.next_start = slot + lane.interval
            if slot > now:
                await self._sleep(slot - now)
            # a 429 reported while we slept pauses us too, even though our slot was already reserved
            if all(lane.paused_until <= self._clock() for lane in lanes):
                return

"""The limiter's admission rules on a virtual clock: rates, seats, FIFO order, 429 slow-down."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from capplan.executor.rate_limits import CallLimit, RateLimits
from capplan.trials.backends.cluster.limiter import Limiter


class VirtualClock:
    """Time that moves only when a coroutine sleeps; sleepers wake in deadline order."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        deadline = self.now + seconds
        # yield until every other runnable coroutine has also reached a sleep, then jump
        await asyncio.sleep(0)
        self.now = max(self.now, deadline)


def run(limits: RateLimits, body: Callable[[Limiter, VirtualClock], Awaitable[Any]]) -> Any:
    clock = VirtualClock()
    limiter = Limiter(limits, clock=clock, sleep=clock.sleep)
    return asyncio.run(body(limiter, clock))


def test_requests_per_minute_spaces_starts_exactly() -> None:
    limits = RateLimits(providers={"openai": CallLimit(requests_per_minute=600)})

    async def body(limiter: Limiter, clock: VirtualClock) -> list[float]:
        starts = []
        for _ in range(5):
            ticket = await limiter.acquire("openai", None, "w1")
            starts.append(clock.now)
            limiter.release(ticket)
        return starts

    assert run(limits, body) == pytest.approx([0.0, 0.1, 0.2, 0.3, 0.4])


def test_the_tighter_of_provider_and_key_rate_wins() -> None:
    limits = RateLimits(
        providers={"openrouter": CallLimit(requests_per_minute=6000)},
        keys={"OPENROUTER_API_KEY": CallLimit(requests_per_minute=60)},
    )

    async def body(limiter: Limiter, clock: VirtualClock) -> list[float]:
        starts = []
        for _ in range(3):
            limiter.release(await limiter.acquire("openrouter", "OPENROUTER_API_KEY", "w1"))
            starts.append(clock.now)
        # another key of the same provider is limited only by the provider's rate
        limiter.release(await limiter.acquire("openrouter", "OTHER_KEY", "w1"))
        starts.append(clock.now)
        return starts

    assert run(limits, body) == pytest.approx([0.0, 1.0, 2.0, 2.01])


def test_max_concurrent_holds_callers_in_arrival_order() -> None:
    limits = RateLimits(providers={"anthropic": CallLimit(max_concurrent=2)})

    async def body(limiter: Limiter, clock: VirtualClock) -> tuple[list[str], dict[str, Any]]:
        order: list[str] = []
        tickets: dict[str, int] = {}

        async def call(name: str) -> None:
            tickets[name] = await limiter.acquire("anthropic", None, name)
            order.append(name)

        tasks = [asyncio.create_task(call(n)) for n in "abcd"]
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert order == ["a", "b"]
        stats = limiter.stats()["lanes"]["provider:anthropic"]
        limiter.release(tickets["b"])
        await asyncio.sleep(0)
        limiter.release(tickets["a"])
        await asyncio.gather(*tasks)
        return order, stats

    order, stats = run(limits, body)
    assert order == ["a", "b", "c", "d"]
    assert stats["in_flight"] == 2 and stats["waiting"] == 2


def test_a_429_pauses_every_caller_and_halves_the_rate() -> None:
    limits = RateLimits(providers={"openai": CallLimit(requests_per_minute=60)}, rate_limited_pause_s=5)

    async def body(limiter: Limiter, clock: VirtualClock) -> list[float]:
        first = await limiter.acquire("openai", None, "w1")
        limiter.release(first, rate_limited=True)  # at t=0: pause to t=5, interval 1 s -> 2 s
        starts = []
        for _ in range(2):
            limiter.release(await limiter.acquire("openai", None, "w2"))
            starts.append(clock.now)
        return starts

    starts = run(limits, body)
    assert starts[0] == pytest.approx(5.0)
    assert starts[1] - starts[0] == pytest.approx(2.0)  # the slot after the pause was reserved at half rate


def test_retry_after_beats_the_configured_pause() -> None:
    async def body(limiter: Limiter, clock: VirtualClock) -> float:
        limiter.release(await limiter.acquire("gemini", None, "w1"), rate_limited=True, retry_after_s=12)
        limiter.release(await limiter.acquire("gemini", None, "w2"))
        return clock.now

    assert run(RateLimits(), body) == pytest.approx(12.0)


def test_a_pause_reported_while_a_caller_sleeps_holds_it_too() -> None:
    limits = RateLimits(providers={"openai": CallLimit(requests_per_minute=60)}, rate_limited_pause_s=3)

    async def body(limiter: Limiter, clock: VirtualClock) -> float:
        first = await limiter.acquire("openai", None, "w1")  # t=0; the next slot is t=1
        second = asyncio.create_task(limiter.acquire("openai", None, "w2"))
        await asyncio.sleep(0)
        limiter.release(first, rate_limited=True)  # still t=0: paused to t=3
        limiter.release(await second)
        return clock.now

    assert run(limits, body) >= 3.0


def test_a_dead_workers_seats_are_freed_and_its_late_release_ignored() -> None:
    limits = RateLimits(keys={"K": CallLimit(max_concurrent=1)})

    async def body(limiter: Limiter, clock: VirtualClock) -> dict[str, Any]:
        ticket = await limiter.acquire("openai", "K", "dead-worker")
        waiting = asyncio.create_task(limiter.acquire("openai", "K", "live-worker"))
        await asyncio.sleep(0)
        assert not waiting.done()
        assert limiter.release_holder("dead-worker") == 1
        limiter.release(await waiting)
        limiter.release(ticket)  # the dead worker's message arriving late changes nothing
        stats: dict[str, Any] = limiter.stats()["lanes"]["key:K"]
        return stats

    stats = run(limits, body)
    assert stats["in_flight"] == 0 and stats["granted"] == 2


def test_a_cancelled_waiter_gives_its_place_back() -> None:
    limits = RateLimits(providers={"openai": CallLimit(max_concurrent=1)})

    async def body(limiter: Limiter, clock: VirtualClock) -> int:
        held = await limiter.acquire("openai", None, "w1")
        gone = asyncio.create_task(limiter.acquire("openai", None, "w2"))
        await asyncio.sleep(0)
        gone.cancel()
        with pytest.raises(asyncio.CancelledError):
            await gone
        limiter.release(held)
        limiter.release(await limiter.acquire("openai", None, "w3"))
        in_flight: int = limiter.stats()["lanes"]["provider:openai"]["in_flight"]
        return in_flight

    assert run(limits, body) == 0

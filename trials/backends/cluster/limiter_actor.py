"""The limiter as a Ray actor, and the gate a worker's provider calls pass through.

The actor is asynchronous: a caller waiting for its slot costs a coroutine, not a thread, so
thousands of calls across the cluster can queue on it at once. It lives on the head node,
holds no credential (lanes are named by provider and env-var name), and is restarted empty
if it dies; a worker's gate retries its acquire against the restarted actor.
"""

from __future__ import annotations

from typing import Any

from capplan.executor.rate_limits import RateLimits
from capplan.trials.backends.cluster.limiter import Limiter

#: Concurrent method calls the actor accepts: every call waiting for a slot holds one.
ACTOR_MAX_CONCURRENCY = 10_000
_ACQUIRE_ATTEMPTS = 3


class LimiterActor:
    """Ray actor body around ``Limiter``; ``start_limiter`` turns it into an actor."""

    def __init__(self, limits_json: str) -> None:
        self.limiter = Limiter(RateLimits.model_validate_json(limits_json))

    async def acquire(self, provider: str, key: str | None, holder: str) -> int:
        """Returns when the call may start."""
        return await self.limiter.acquire(provider, key, holder)

    async def release(self, ticket: int, rate_limited: bool, retry_after_s: float | None) -> None:
        """The call finished; ``rate_limited`` slows the lanes for everyone."""
        self.limiter.release(ticket, rate_limited=rate_limited, retry_after_s=retry_after_s)

    async def release_holder(self, holder: str) -> int:
        """Free what a dead worker held."""
        return self.limiter.release_holder(holder)

    async def stats(self) -> dict[str, Any]:
        """Lane counters and the actor's load."""
        return self.limiter.stats()


def start_limiter(limits: RateLimits, *, name: str) -> Any:
    """Start the run's limiter actor on the head node and return its handle."""
    import ray

    actor = ray.remote(LimiterActor).options(
        name=name,
        num_cpus=0,
        max_concurrency=ACTOR_MAX_CONCURRENCY,
        max_restarts=-1,
        resources={"node:__internal_head__": 0.001},
    )
    return actor.remote(limits.model_dump_json())


class RayCallGate:
    """A worker's synchronous view of the limiter actor; ``holder`` names the worker."""

    def __init__(self, actor: Any, holder: str) -> None:
        self.actor = actor
        self.holder = holder

    def acquire(self, provider: str, key: str | None) -> int:
        """Block until the cluster-wide limits admit one call."""
        import ray

        failure: Exception | None = None
        for _ in range(_ACQUIRE_ATTEMPTS):
            try:
                ticket: int = ray.get(self.actor.acquire.remote(provider, key, self.holder))
                return ticket
            except ray.exceptions.RayActorError as exc:
                # the actor died and restarts empty; asking again waits for the new one
                failure = exc
        assert failure is not None
        raise failure

    def release(self, ticket: int, *, rate_limited: bool, retry_after_s: float | None) -> None:
        """Report the call's end without waiting for the actor."""
        self.actor.release.remote(ticket, rate_limited, retry_after_s)

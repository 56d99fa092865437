"""A ``completion`` callable that passes every provider attempt through the run's limiter.

It wraps the function the executor's client calls per attempt (``Client(completion=...)``),
so each retry of the client's own controller waits for its slot again, and a 429 any attempt
meets is reported to the limiter, which slows that provider for every worker.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from capplan.executor.plan import Plan


class CallGate(Protocol):
    """Admission to the run's limits (the Ray actor's gate, or an in-process one)."""

    def acquire(self, provider: str, key: str | None) -> int: ...

    def release(self, ticket: int, *, rate_limited: bool, retry_after_s: float | None) -> None: ...


def limit_lanes(plan: Plan) -> tuple[str, str | None]:
    """The provider and key lanes a plan's calls pass: binding key (else provider head), key env-var name."""
    provider = plan.binding.key or plan.model.provider.split("/")[0].lower()
    return provider, plan.binding.binding.api_key_env


def is_rate_limited(exc: BaseException) -> bool:
    """A typed 429 anywhere on the exception's cause chain (never a guess from message text)."""
    seen: BaseException | None = exc
    while seen is not None:
        if getattr(seen, "status_code", None) == 429 or type(seen).__name__ == "RateLimitError":
            return True
        seen = seen.__cause__
    return False


def retry_after_s(exc: BaseException) -> float | None:
    """The provider's Retry-After in seconds, when it sent a numeric one."""
    response = getattr(exc, "response", None)
    headers: Any = getattr(response, "headers", None)
    if headers is None or not hasattr(headers, "get"):
        return None
    value = headers.get("retry-after")
    try:
        seconds = float(value) if value is not None else None
    except (TypeError, ValueError):
        return None  # an HTTP date: the configured pause applies
    return seconds if seconds is not None and seconds >= 0 else None


class LimitedCompletion:
    """``completion(**kwargs)`` under the limiter's admission for one plan's lanes."""

    def __init__(self, completion: Callable[..., Any], gate: CallGate, plan: Plan) -> None:
        self._completion = completion
        self._gate = gate
        self.provider, self.key = limit_lanes(plan)
        # a lane pauses for a provider's Retry-After no longer than a retry would wait for it
        self._retry_after_max_s = plan.binding.binding.retry_after_max_s

    def __call__(self, **kwargs: Any) -> Any:
        ticket = self._gate.acquire(self.provider, self.key)
        limited, wait = False, None
        try:
            return self._completion(**kwargs)
        except Exception as exc:
            limited = is_rate_limited(exc)
            asked = retry_after_s(exc) if limited else None
            wait = min(asked, self._retry_after_max_s) if asked is not None else None
            raise
        finally:
            self._gate.release(ticket, rate_limited=limited, retry_after_s=wait)

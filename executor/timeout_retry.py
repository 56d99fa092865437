"""The transport-timeout retry: a call that timed out is sent again a bounded number of times.

It sits inside the outer controller and owns timeouts entirely: when its attempts are spent it
raises :class:`~capplan.executor.errors.ApiTimeoutError`, which the outer controller does not retry, so
the worst case stays ``(retries + 1) × timeout`` plus short waits rather than five times that.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from capplan.executor.errors import ApiTimeoutError

#: Extra attempts after a timeout, per outer attempt.
DEFAULT_TIMEOUT_RETRIES = 2


def is_timeout(exc: BaseException) -> bool:
    """A read/connect timeout of the transport (litellm, openai, httpx or the stdlib's)."""
    if isinstance(exc, ApiTimeoutError):
        return False
    for module, name in (("litellm", "Timeout"), ("openai", "APITimeoutError"), ("httpx", "TimeoutException")):
        cls = getattr(sys.modules.get(module), name, None)
        if isinstance(cls, type) and isinstance(exc, cls):
            return True
    return isinstance(exc, TimeoutError)


def call_with_timeout_retry(
    call: Callable[[], Any],
    *,
    retries: int = DEFAULT_TIMEOUT_RETRIES,
    sleep: Callable[[float], None],
    timeout_s: float | None = None,
) -> Any:
    """``call()``, repeated on a transport timeout up to ``retries`` more times (waits 1 to 5 s).

    A plain loop, not a tenacity controller: one is otherwise built and stepped through for every
    provider call, and nearly every call is answered on its first attempt. The waits are tenacity's
    ``wait_exponential(multiplier=1, min=1, max=5)``: 1, 2, 4, then 5 seconds.
    """
    attempt = 1
    while True:
        try:
            return call()
        except Exception as exc:
            if not is_timeout(exc):
                raise
            if attempt > retries:
                limit = f" (timeout={timeout_s}s)" if timeout_s is not None else ""
                raise ApiTimeoutError(f"provider call timed out on {retries + 1} attempt(s){limit}") from exc
        sleep(float(min(max(2 ** (attempt - 1), 1), 5)))
        attempt += 1

"""The transport-timeout retry: a call that timed out is sent again a bounded number of times.

It sits inside the outer controller and owns timeouts entirely: when its attempts are spent it
raises :class:`~capplan.executor.errors.ApiTimeoutError`, which the outer controller does not retry, so
the worst case stays ``(retries + 1) × timeout`` plus short waits rather than five times that.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import tenacity

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
    """``call()``, repeated on a transport timeout up to ``retries`` more times (waits 1 to 5 s)."""
    controller = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(retries + 1),
        wait=tenacity.wait_exponential(multiplier=1, min=1, max=5),
        retry=tenacity.retry_if_exception(is_timeout),
        sleep=sleep,
        reraise=True,
    )
    try:
        for attempt in controller:
            with attempt:
                return call()
    except Exception as exc:
        if is_timeout(exc):
            limit = f" (timeout={timeout_s}s)" if timeout_s is not None else ""
            raise ApiTimeoutError(f"provider call timed out on {retries + 1} attempt(s){limit}") from exc
        raise
    raise AssertionError("unreachable: tenacity either returned or raised")  # pragma: no cover

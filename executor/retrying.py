"""The outer retry controller around one provider call.

The spec's default controller: five attempts, exponential waits of 4 to 60 seconds, and retries
only for failures a second attempt can fix (rate limits, timeouts, connection errors, 5xx). A
request the provider refused as malformed (400, unsupported params, context window) fails at
once: sending it again would fail the same way.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable

import tenacity

log = logging.getLogger(__name__)

_TRANSIENT_STATUS = frozenset({408, 409, 429})
_TRANSIENT_LITELLM = (
    "APIConnectionError",
    "Timeout",
    "RateLimitError",
    "InternalServerError",
    "ServiceUnavailableError",
    "BadGatewayError",
)


def is_transient(exc: BaseException) -> bool:
    """Whether another attempt of the same request can succeed."""
    litellm = sys.modules.get("litellm")
    if litellm is not None:
        classes = tuple(getattr(litellm, name) for name in _TRANSIENT_LITELLM if hasattr(litellm, name))
        if isinstance(exc, classes):
            return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status in _TRANSIENT_STATUS or status >= 500)


def default_retrying(sleep: Callable[[float], None]) -> tenacity.Retrying:
    """A fresh controller per call; ``sleep`` is injectable so tests never wait."""
    return tenacity.Retrying(
        stop=tenacity.stop_after_attempt(5),
        wait=tenacity.wait_exponential(multiplier=2, min=4, max=60),
        retry=tenacity.retry_if_exception(is_transient),
        sleep=sleep,
        reraise=True,
        before_sleep=_log_retry,
    )


def _log_retry(state: tenacity.RetryCallState) -> None:
    exc = state.outcome.exception() if state.outcome else None
    wait = state.next_action.sleep if state.next_action else 0.0
    log.warning("provider call failed (attempt %d): %s; retrying in %.1fs", state.attempt_number, exc, wait)

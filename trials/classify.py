"""A raised exception becomes a termination reason.

Kept in one small module so the executor's ``classify_loop_error`` can replace it wholesale.
Only typed evidence makes a rate limit (an exception class or an HTTP 429 status anywhere on
the ``__cause__`` chain): ``RATE_LIMIT`` excludes a trial from every rate, and prose is not
strong enough evidence to spend that. The same holds for timeouts and for connections that
never reached the provider. A context-window refusal is its own typed reason. Any other
provider error is ``API_ERROR`` (the loop replays it in place under its own budget); an
exception that is not a provider error at all is a harness ``ERROR``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

from trials.outcome import TerminationReason


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    node: BaseException | None = exc
    while node is not None and id(node) not in seen:
        seen.add(id(node))
        yield node
        node = node.__cause__


def _litellm_types(*names: str) -> tuple[type[BaseException], ...]:
    litellm = sys.modules.get("litellm")
    if litellm is None:
        return ()
    return tuple(getattr(litellm, n) for n in names if isinstance(getattr(litellm, n, None), type))


def is_context_window_error(exc: BaseException) -> bool:
    """Whether the provider refused the prompt as longer than the model's window."""
    types = _litellm_types("ContextWindowExceededError")
    return any(isinstance(link, types) for link in _chain(exc)) if types else False


def classify_loop_error(exc: BaseException) -> TerminationReason:
    """The termination reason for an exception raised by a generation."""
    rate = _litellm_types("RateLimitError")
    timeout = _litellm_types("Timeout")
    connection = _litellm_types("APIConnectionError")
    window = _litellm_types("ContextWindowExceededError")
    api = _litellm_types("APIError", "BadRequestError", "InternalServerError", "ServiceUnavailableError",
                         "BadGatewayError", "NotFoundError", "AuthenticationError", "PermissionDeniedError",
                         "UnprocessableEntityError", "APIResponseValidationError")
    has_status = False
    for link in _chain(exc):
        status = getattr(link, "status_code", None)
        if (rate and isinstance(link, rate)) or status == 429:
            return TerminationReason.RATE_LIMIT
        if window and isinstance(link, window):
            return TerminationReason.CONTEXT_WINDOW_EXCEEDED
        if (timeout and isinstance(link, timeout)) or isinstance(link, TimeoutError):
            return TerminationReason.API_TIMEOUT
        if connection and isinstance(link, connection):  # litellm stamps these 500; nothing reached a model
            return TerminationReason.INFRA_ERROR
        if isinstance(link, ConnectionError):
            return TerminationReason.INFRA_ERROR
        has_status = has_status or isinstance(status, int)
        if api and isinstance(link, api):
            return TerminationReason.API_ERROR
    return TerminationReason.API_ERROR if has_status else TerminationReason.ERROR

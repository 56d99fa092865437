"""The outer retry controllers around one provider call.

``default``: five attempts, exponential waits of 4 to 60 seconds. ``probe`` (run-level
``rate_limit_probe``): a 429 waits a fixed, jittered interval and is retried until the call's
time budget is spent; any other retryable error keeps the same five-attempt exponential, with
its own attempt count, on the *global* attempt number, so a 5xx after a long 429 stretch resumes
the curve rather than restarting it (waits only ever get longer).

Both retry only what a second attempt can fix (rate limits, timeouts, connection errors, 5xx).
A request the provider refused (a 4xx other than 408, 409 and 429: malformed, unsupported params,
context window) fails at once, and so does one refused for its setup (401, 403, 404, missing
credentials, a refused gateway key, a 2xx that is no completion, a failure rule of the binding or
gateway: see :func:`~capplan.executor.loop_errors.configuration_problem`), even when litellm
labels it an ``InternalServerError``. A spent key chain and an exhausted timeout retry are terminal here too: no wait clears them.
Both controllers share one ``before_sleep`` hook, so retry logs and probe telemetry are the
same on either path. Neither retries sooner than the ``Retry-After`` a failed attempt's response
asked for (numeric form), cut to the binding's ``retry_after_max_s``.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import tenacity

from capplan.core.reference_mode import reference_mode
from capplan.executor.binding import DEFAULT_RETRY_AFTER_MAX_S, FailureRule
from capplan.executor.errors import ApiTimeoutError, CredentialSpentError, ProviderConnectionError, ProviderTimeoutError
from capplan.executor.loop_errors import configuration_problem
from capplan.executor.probe import RateLimitProbeConfig, rate_limit_wait
from capplan.executor.probe_stats import ProbeStats
from capplan.executor.rate_limit import Patterns, cause_chain, is_transient_rate_limit, retry_after_s, wire_status

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 5
_TRANSIENT_STATUS = frozenset({408, 409, 429})
T = TypeVar("T")
_TRANSIENT_LITELLM = (
    "APIConnectionError",
    "Timeout",
    "RateLimitError",
    "InternalServerError",
    "ServiceUnavailableError",
    "BadGatewayError",
)


def is_refused(exc: BaseException) -> bool:
    """Whether the provider refused the request itself: a 4xx off the wire other than 408, 409 and 429.

    The same request sent again is refused again, so no controller (nor the trial loop's replay)
    sends it twice.
    """
    status = wire_status(exc)
    return status is not None and 400 <= status < 500 and status not in _TRANSIENT_STATUS


def is_transient(exc: BaseException, rules: tuple[FailureRule, ...] = ()) -> bool:
    """Whether another attempt of the same request can succeed (by type or HTTP status).

    ``rules`` are the failure rules of the call's binding and gateway: an answer one of them
    matches says the setup is wrong, which no wait fixes.
    """
    if any(isinstance(link, (CredentialSpentError, ApiTimeoutError)) for link in cause_chain(exc)):
        return False
    if configuration_problem(exc, rules) is not None:
        return False  # no wait fixes a key, an endpoint or a model name
    status = wire_status(exc)
    if status is not None:
        # the upstream's own status: litellm may have relabelled a 400 from its message text
        return status in _TRANSIENT_STATUS or status >= 500
    if any(isinstance(link, (ProviderConnectionError, ProviderTimeoutError)) for link in cause_chain(exc)):
        return True  # the direct transport's dropped connection or timed-out attempt: litellm's APIConnectionError, Timeout
    litellm = sys.modules.get("litellm")
    if litellm is not None:
        classes = tuple(getattr(litellm, name) for name in _TRANSIENT_LITELLM if hasattr(litellm, name))
        return isinstance(exc, classes)
    return False


def exponential() -> tenacity.wait.wait_base:
    """The standard wait: 2 × 2^(n-1) seconds on attempt n, clamped to [4, 60]."""
    return tenacity.wait_exponential(multiplier=2, min=4, max=60)


def honouring_retry_after(wait: Callable[[tenacity.RetryCallState], float],
                          cap_s: float = DEFAULT_RETRY_AFTER_MAX_S) -> Callable[[tenacity.RetryCallState], float]:
    """``wait``, but never shorter than the ``Retry-After`` the failed attempt's response asked for, cut to ``cap_s``.

    A provider asking for five minutes is answered by the binding's ``retry_after_max_s``, not by a
    silent five-minute sleep; the attempt record keeps both what it asked and what was waited.
    """

    def waited(state: tenacity.RetryCallState) -> float:
        planned = float(wait(state))
        exc = state.outcome.exception() if state.outcome is not None else None
        asked = retry_after_s(exc) if exc is not None else None
        return max(planned, min(asked, cap_s)) if asked is not None else planned

    return waited


@dataclass(frozen=True)
class RetryContext:
    """What one call's controller needs besides the policy: 429 patterns, clock, sleep, telemetry."""

    patterns: Patterns = ()
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    wall_clock: Callable[[], float] = time.time
    probe_stats: ProbeStats | None = None
    role: str = "agent"
    model: str = ""
    #: Applied to every logged message: provider errors can echo the credential they were sent.
    redact: Callable[[str], str] = str
    #: The failure rules of the call's binding and gateway: a match is never retried.
    rules: tuple[FailureRule, ...] = ()
    #: The binding's cap on a provider's Retry-After.
    retry_after_max_s: float = DEFAULT_RETRY_AFTER_MAX_S


def controlled(controller: tenacity.Retrying | Callable[[], tenacity.Retrying], attempt: Callable[[], T]) -> T:
    """What ``attempt()`` returns under ``controller``: ``for step in controller: with step: result = attempt()``.

    Seam *first attempt* (off in the reference mode, which runs that loop as written;
    ``benchmarks/trial_loop.py``: building tenacity's controller and stepping its state machine around
    an attempt that succeeds cost more than any other part of a call's bookkeeping, and nearly every
    call succeeds at once): the first attempt runs at once. A success is returned: the loop's next
    step would only read the result back. A failure goes onto the controller's call state as the
    loop's attempt records it, and the controller's own steps take over from there (retry, stop,
    wait, ``before_sleep``, re-raise), as in the loop. ``controller`` may be a function that makes
    it, called only then: for a controller whose decisions read no clock of their own (the default
    one's count attempts), when it is made changes nothing it decides; one that reads a clock when
    made (the probe's per-call budget) is passed made.
    """
    if reference_mode():
        steps = controller if isinstance(controller, tenacity.Retrying) else controller()
        results: list[T] = []
        for step in steps:
            with step:
                results.append(attempt())
        return results[-1]
    # a made controller is begun before the attempt, as its own loop begins it
    begun = _begun(controller) if isinstance(controller, tenacity.Retrying) else None
    try:
        return attempt()
    except BaseException:  # noqa: BLE001 - as tenacity's attempt does: the controller decides what is raised
        failure = sys.exc_info()
    if begun is None:
        assert not isinstance(controller, tenacity.Retrying)
        begun = _begun(controller())
    made, state = begun
    state.set_exception(failure)  # type: ignore[arg-type]  # an exception was being handled
    while True:
        do = made.iter(retry_state=state)
        if isinstance(do, tenacity.DoAttempt):
            with tenacity.AttemptManager(retry_state=state):
                result = attempt()
        elif isinstance(do, tenacity.DoSleep):
            state.prepare_for_next_attempt()
            made.sleep(do)
        else:
            return result  # the controller returned: the last attempt succeeded


def _begun(controller: tenacity.Retrying) -> tuple[tenacity.Retrying, tenacity.RetryCallState]:
    """``controller`` begun, with the call state its own loop makes next."""
    controller.begin()
    return controller, tenacity.RetryCallState(controller, fn=None, args=(), kwargs={})


def default_retrying(sleep: Callable[[float], None], context: RetryContext | None = None) -> tenacity.Retrying:
    """A fresh default controller per call; ``sleep`` is injectable so tests never wait."""
    context = context or RetryContext(sleep=sleep)
    return tenacity.Retrying(
        stop=tenacity.stop_after_attempt(MAX_ATTEMPTS),
        wait=honouring_retry_after(exponential(), context.retry_after_max_s),
        retry=tenacity.retry_if_exception(lambda exc: _retryable(exc, context)),
        sleep=sleep,
        reraise=True,
        before_sleep=_before_sleep(context, probe_active=False),
    )


def probe_retrying(config: RateLimitProbeConfig, context: RetryContext, *, rng_seed: int | None = None) -> tenacity.Retrying:
    """A fresh probe controller per call (its clock and 429 count are per call)."""
    import random

    patterns = context.patterns
    started = context.clock()
    seen_429 = 0
    wait_429 = rate_limit_wait(config, random.Random(rng_seed) if rng_seed is not None else None)
    wait_other = exponential()

    def is_429(state: tenacity.RetryCallState) -> bool:
        exc = state.outcome.exception() if state.outcome is not None else None
        return exc is not None and is_transient_rate_limit(exc, patterns)

    def stop(state: tenacity.RetryCallState) -> bool:
        nonlocal seen_429
        if is_429(state):
            seen_429 += 1
            return context.clock() - started >= config.per_call_budget_s
        return state.attempt_number - seen_429 >= MAX_ATTEMPTS

    def wait(state: tenacity.RetryCallState) -> float:
        return float(wait_429(state) if is_429(state) else wait_other(state))

    return tenacity.Retrying(
        stop=stop,
        wait=honouring_retry_after(wait, context.retry_after_max_s),
        retry=tenacity.retry_if_exception(lambda exc: _retryable(exc, context)),
        sleep=context.sleep,
        reraise=True,
        before_sleep=_before_sleep(context, probe_active=True),
    )


def _retryable(exc: BaseException, context: RetryContext) -> bool:
    if is_transient(exc, context.rules):
        return True
    # a 429 shown only by text is retried, unless a failure rule says the setup is wrong
    return is_transient_rate_limit(exc, context.patterns) and configuration_problem(exc, context.rules) is None


def _before_sleep(context: RetryContext, *, probe_active: bool) -> Callable[[tenacity.RetryCallState], None]:
    def hook(state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        wait = float(state.next_action.sleep) if state.next_action else 0.0
        log.warning("provider call failed (attempt %d): %s: %s; retrying in %.1fs",
                    state.attempt_number, type(exc).__name__, context.redact(str(exc)), wait)
        # only a probing client contributes to the census: a judge or fallback call is not the measurement
        if probe_active and context.probe_stats is not None and exc is not None and is_transient_rate_limit(exc, context.patterns):
            context.probe_stats.record_retry(role=context.role, model=context.model, wait_s=wait, ts=context.wall_clock())

    return hook

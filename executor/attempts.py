"""The attempt log of one ``Client.generate``: every provider call it made, failed ones included.

The retry controllers (the outer one in :mod:`capplan.executor.retrying`, the timeout retry in
:mod:`capplan.executor.timeout_retry`) and key rotation all call the provider through one
observed completion and wait through one observed sleep, so the log sees each attempt and the
backoff before it without either controller knowing about it. A generation that answers carries
its log on the result (``GenerationResult.attempts``); one that raises carries it on the
exception, read back with :func:`attempts_of`, so a trial records the attempts it paid for
either way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from capplan.executor.binding import FailureRule
from capplan.executor.errors import ApiTimeoutError, CredentialSpentError, ProviderProtocolError
from capplan.executor.failure_rules import LITELLM_PROTOCOL_RULES, matching_rule
from capplan.executor.keys import is_per_key_limit
from capplan.executor.rate_limit import Patterns, cause_chain, is_transient_rate_limit, retry_after_s, wire_status
from capplan.executor.result import Attempt
from capplan.executor.send_observer import Send, current_observer, new_request_id
from capplan.executor.timeout_retry import is_timeout

if TYPE_CHECKING:
    from capplan.executor.plan import Plan

#: The attribute a raised exception carries its attempts under (read with :func:`attempts_of`).
_ATTR = "capplan_attempts"


def error_class(exc: BaseException, patterns: Patterns = (), rules: tuple[FailureRule, ...] = ()) -> str:
    """The retry-relevant kind of a failed attempt: what a reader of the record groups retries by.

    ``infrastructure`` (a 2xx that was no completion, or a failure rule of that class) or
    ``configuration`` (a failure rule of the binding or gateway), ``rate_limit``, ``timeout``,
    ``server_error`` (5xx), ``connection``, ``credential`` (a key over its per-key limit, a spent
    key chain or a refused gateway key), ``auth`` (401/403), ``not_found`` (404), ``client_error``
    (another 4xx) or ``other``.
    """
    if any(isinstance(link, ProviderProtocolError) for link in cause_chain(exc)):
        return "infrastructure"
    rule = matching_rule(exc, (*rules, *LITELLM_PROTOCOL_RULES))
    if rule is not None:
        return rule.failure_class
    if is_transient_rate_limit(exc, patterns):
        return "rate_limit"
    chain = list(cause_chain(exc))
    if any(isinstance(link, CredentialSpentError) for link in chain) or is_per_key_limit(exc):
        return "credential"
    if any(isinstance(link, ApiTimeoutError) or is_timeout(link) for link in chain):
        return "timeout"
    status = wire_status(exc)
    if status is not None:
        if status == 429:
            return "rate_limit"
        if status >= 500:
            return "server_error"
        if status == 408:
            return "timeout"
        if status in (401, 403):
            return "auth"
        if status == 404:
            return "not_found"
        if 400 <= status < 500:
            return "client_error"
    if type(exc).__name__ == "APIConnectionError" or any(isinstance(link, ConnectionError) for link in chain):
        return "connection"
    return "other"


def attempts_of(exc: BaseException) -> tuple[Attempt, ...]:
    """The attempts a failed ``generate`` made before raising ``exc`` (empty when it made none)."""
    found = getattr(exc, _ATTR, ())
    return found if isinstance(found, tuple) else ()


class AttemptLog:
    """Collects one generation's attempts; not shared between calls (each ``generate`` makes its own)."""

    def __init__(self, clock: Callable[[], float], sleep: Callable[[float], None], patterns: Patterns = (),
                 plan: Plan | None = None, rules: tuple[FailureRule, ...] = ()) -> None:
        self._clock = clock
        self._sleep = sleep
        self._patterns = patterns
        # taken when the generation starts: the caller's observer (a trial's journal) hears every send
        self._observer = current_observer()
        self._plan = plan
        self._rules = rules
        self._pending_wait = 0.0
        self.attempts: list[Attempt] = []
        #: The round trip of the attempt that answered (probe telemetry measures that call alone).
        self.last_latency_s = 0.0

    @property
    def wait_s(self) -> float:
        """Backoff slept so far, between attempts."""
        return sum(a.wait_s for a in self.attempts) + self._pending_wait

    @property
    def latency_s(self) -> float:
        """Every attempt's round trip plus the backoff between them: what the caller waited."""
        return sum(a.latency_s for a in self.attempts) + self.wait_s

    def sleep(self, seconds: float) -> None:
        """The controllers' sleep: the wait is charged to the next attempt."""
        self._pending_wait += seconds
        self._sleep(seconds)

    def call(self, completion: Callable[..., Any], kwargs: dict[str, Any], key_index: int | None) -> Any:
        """``completion(**kwargs)`` with the attempt on the log, whether it answers or raises."""
        request_id = new_request_id()
        if self._observer is not None:
            # before the bytes go out: a process killed from here on leaves the send on the record;
            # an observer that raises (a spent budget) stops it, and no attempt was made
            self._observer(Send(request_id, len(self.attempts) + 1, kwargs, self._plan))
        wait, self._pending_wait = self._pending_wait, 0.0
        started = self._clock()
        try:
            response = completion(**kwargs)
        except Exception as exc:
            self.attempts.append(Attempt(
                status="error", wait_s=wait, latency_s=self._clock() - started,
                error_class=error_class(exc, self._patterns, self._rules), error_type=type(exc).__name__,
                key_index=key_index, request_id=request_id, retry_after_s=retry_after_s(exc),
            ))
            raise
        self.last_latency_s = self._clock() - started
        self.attempts.append(Attempt(status="ok", wait_s=wait, latency_s=self.last_latency_s, key_index=key_index,
                                     request_id=request_id))
        return response

    def attach(self, exc: BaseException) -> None:
        """Leave the attempts on ``exc`` for :func:`attempts_of`; an exception that refuses attributes keeps none."""
        try:
            setattr(exc, _ATTR, tuple(self.attempts))
        except (AttributeError, TypeError):  # pragma: no cover - builtins with __slots__ only
            pass

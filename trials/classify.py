"""A raised exception becomes a termination reason.

The decision is the executor's ``Client.classify_loop_error`` (typed evidence only for the
reasons that exclude a trial; see ``executor.loop_errors``), mapped onto the runner's enum.
One runner-level reason is decided first, as that contract leaves to the runner: a
connection that never reached the provider (litellm's ``APIConnectionError``, a refused or
reset socket) is ``INFRA_ERROR``, an abort that says nothing about the model.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from executor.loop_errors import LoopErrorDecision, LoopErrorReason
from executor.rate_limit import cause_chain
from trials.outcome import TerminationReason

Classify = Callable[[BaseException], TerminationReason]

_REASONS = {
    LoopErrorReason.CONTEXT_WINDOW_EXCEEDED: TerminationReason.CONTEXT_WINDOW_EXCEEDED,
    LoopErrorReason.API_TIMEOUT: TerminationReason.API_TIMEOUT,
    LoopErrorReason.RATE_LIMIT: TerminationReason.RATE_LIMIT,
    LoopErrorReason.API_ERROR: TerminationReason.API_ERROR,
    LoopErrorReason.ERROR: TerminationReason.ERROR,
}


def never_reached_provider(exc: BaseException) -> bool:
    """Whether the chain shows a connection failure rather than a provider's answer."""
    litellm = sys.modules.get("litellm")
    connection = getattr(litellm, "APIConnectionError", None) if litellm is not None else None
    for link in cause_chain(exc):
        if isinstance(link, ConnectionError):
            return True
        if isinstance(connection, type) and isinstance(link, connection):
            return True
    return False


def classifier(decide: Callable[[BaseException], LoopErrorDecision]) -> Classify:
    """The loop's classifier around a client's bound ``classify_loop_error``."""

    def classify(exc: BaseException) -> TerminationReason:
        if never_reached_provider(exc):
            return TerminationReason.INFRA_ERROR
        return _REASONS[decide(exc).reason]

    return classify

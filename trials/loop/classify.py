"""A raised exception becomes a termination reason.

The decision is the executor's ``Client.classify_loop_error`` (typed evidence only for the
reasons that exclude a trial; see ``capplan.executor.loop_errors``), mapped onto the runner's enum.
One runner-level reason is decided before the executor's other reasons, as that contract leaves
to the runner: a connection that never reached the provider is ``INFRA_ERROR``, an abort that
says nothing about the model. Only a ``configuration_error`` verdict comes before it: litellm
wraps some answers that were no completion (an HTML page) as a connection error. litellm re-raises a refused connection as a 500 ``InternalServerError``, so
the evidence is the typed transport exception it was raised from (``httpx.ConnectError``,
openai's ``APIConnectionError``, a ``ConnectionError``), found by following the implicit
``__context__`` links as well as ``__cause__``; a timeout is not this (the executor owns it).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from capplan.executor.loop_errors import LoopErrorDecision, LoopErrorReason
from capplan.trials.outcome import TerminationReason

Classify = Callable[[BaseException], TerminationReason]

_REASONS = {
    LoopErrorReason.CONTEXT_WINDOW_EXCEEDED: TerminationReason.CONTEXT_WINDOW_EXCEEDED,
    LoopErrorReason.CONFIGURATION_ERROR: TerminationReason.CONFIGURATION_ERROR,
    LoopErrorReason.API_TIMEOUT: TerminationReason.API_TIMEOUT,
    LoopErrorReason.RATE_LIMIT: TerminationReason.RATE_LIMIT,
    LoopErrorReason.API_ERROR: TerminationReason.API_ERROR,
    LoopErrorReason.ERROR: TerminationReason.ERROR,
}


def _links(exc: BaseException, limit: int = 16) -> list[BaseException]:
    out: list[BaseException] = []
    node: BaseException | None = exc
    while node is not None and len(out) < limit and all(node is not seen for seen in out):
        out.append(node)
        node = node.__cause__ or node.__context__
    return out


def _types(module: str, *names: str) -> tuple[type[BaseException], ...]:
    mod = sys.modules.get(module)
    found = (getattr(mod, n, None) for n in names) if mod is not None else ()
    return tuple(t for t in found if isinstance(t, type))


def never_reached_provider(exc: BaseException) -> bool:
    """Whether the chain shows a connection that failed before any provider answered."""
    timeouts: tuple[type[BaseException], ...] = (
        TimeoutError, *_types("openai", "APITimeoutError"), *_types("httpx", "TimeoutException"))
    connects: tuple[type[BaseException], ...] = (ConnectionError, *_types("openai", "APIConnectionError"), *_types("litellm", "APIConnectionError"),
                *_types("httpx", "ConnectError", "RemoteProtocolError"))
    links = _links(exc)
    if any(isinstance(link, timeouts) for link in links):
        return False
    return any(isinstance(link, connects) for link in links)


class _Classifier:
    """The loop's classifier around a client's bound ``classify_loop_error``."""

    def __init__(self, decide: Callable[[BaseException], LoopErrorDecision]) -> None:
        self.decide = decide

    def __call__(self, exc: BaseException) -> TerminationReason:
        decision = self.decide(exc)
        # an answer that says the setup is wrong wins: litellm may wrap it as a connection error
        if decision.reason is LoopErrorReason.CONFIGURATION_ERROR:
            return TerminationReason.CONFIGURATION_ERROR
        if never_reached_provider(exc):
            return TerminationReason.INFRA_ERROR
        return _REASONS[decision.reason]

    def problem(self, exc: BaseException) -> str:
        """What is wrong with the setup when ``exc`` is a configuration error ("" otherwise), for the trial's detail."""
        return self.decide(exc).problem


def classifier(decide: Callable[[BaseException], LoopErrorDecision]) -> Classify:
    """The loop's classifier around a client's bound ``classify_loop_error``."""
    return _Classifier(decide)


def problem_of(classify: Classify, exc: BaseException) -> str:
    """The setup problem ``classify`` sees in ``exc`` ("" for a classifier that does not say)."""
    return classify.problem(exc) if isinstance(classify, _Classifier) else ""

"""``classify_loop_error``: the seam a trial loop uses to decide how a failed turn ends.

Contract (stable; the trial runner depends on it):

``classify_loop_error(exc, patterns) -> LoopErrorDecision`` is pure: no I/O, no logging, never
raises, and reads only ``exc`` (its type, its ``status_code``, its ``__cause__`` chain and its
text) and ``patterns`` (a binding's compiled ``rate_limit_patterns``). Callers normally use the
bound form :meth:`capplan.executor.client.Client.classify_loop_error`, which closes over the plan's
patterns, so the compiled tuple never crosses a module boundary.

The decision's ``reason`` is one of :class:`LoopErrorReason`, checked in this order:

``context_window_exceeded``
    litellm's ``ContextWindowExceededError`` anywhere in the chain. Counts against the model.
``configuration_error``
    the provider or gateway refused the call for its configuration, or something other than the
    provider answered (:func:`configuration_problem`: a 401 / 403 / 404 off the wire, a 2xx that is
    no completion, a gateway answering 400 "No connected db.", a missing-credentials text under
    any status, litellm's 500 included, or a failure rule of the binding or gateway). Excludes the
    trial; no attempt, wait or replay can clear it, so a run stops at the first one.
``api_timeout``
    :class:`~capplan.executor.errors.ApiTimeoutError` in the chain (the transport-timeout retry is
    spent). Excludes the trial; ``evidence`` names the chain's types.
``rate_limit``
    a 429 proven by **type or status** (``openai.RateLimitError`` or ``status_code == 429``),
    never by text. Excludes the trial; ``evidence`` names the chain's types. A spent key chain
    (:class:`~capplan.executor.errors.AllApiKeysExhausted`) is *not* this: it is a configuration
    outcome, reported as ``api_error``.
``api_error``
    any other provider or transport failure: an HTTP status in the chain, a litellm / openai /
    httpx exception type, or a spent key chain. A 400 whose body talks about rate limits is
    this, not ``rate_limit``: its status is authoritative. The loop may retry it in place under
    its own bounded budget.
``error``
    everything else, counted and not retried. When the text looks like a rate limit but no
    link carries a type or status (something stringified a provider error instead of
    chaining it), ``message`` says so.

``excluded`` is True exactly for ``configuration_error``, ``api_timeout`` and ``rate_limit``: those trials leave every
benchmark rate's denominator, which is why only typed evidence can earn it. ``message`` is
one line for the trajectory; it quotes ``str(exc)``, which the executor keeps free of
credentials. Runner-level reasons (a lost trial, an episode timeout) are the runner's own and
are decided before this is called.
"""

from __future__ import annotations

import enum
import sys
from dataclasses import dataclass

from capplan.executor.binding import FailureRule
from capplan.executor.errors import (
    ApiTimeoutError,
    ContextWindowExceededError,
    CredentialSpentError,
    ProviderConnectionError,
    ProviderProtocolError,
    ProviderResponseError,
    ProviderTimeoutError,
)
from capplan.executor.failure_rules import LITELLM_PROTOCOL_RULES, Rules, matching_rule
from capplan.executor.rate_limit import Patterns, cause_chain, is_typed_rate_limit_exception, matches_rate_limit_text, wire_status


class LoopErrorReason(str, enum.Enum):
    """How a turn that raised ends the trial."""

    CONTEXT_WINDOW_EXCEEDED = "context_window_exceeded"
    CONFIGURATION_ERROR = "configuration_error"
    API_TIMEOUT = "api_timeout"
    RATE_LIMIT = "rate_limit"
    API_ERROR = "api_error"
    ERROR = "error"


@dataclass(frozen=True)
class LoopErrorDecision:
    """The classification of one loop exception."""

    reason: LoopErrorReason
    message: str
    #: True when the trial leaves the measured denominator (infrastructure, not the model).
    excluded: bool = False
    #: The chain's type names, outermost first, when ``excluded`` (what the verdict rests on).
    evidence: str = ""
    #: For ``configuration_error``: its class and what is wrong ("configuration: …", "infrastructure: …").
    problem: str = ""


def chain_types(exc: BaseException) -> str:
    """The cause chain's type names, outermost first: ``ProviderCallError <- RateLimitError``."""
    return " <- ".join(type(link).__qualname__ for link in cause_chain(exc))


def _litellm_class(name: str) -> type | None:
    litellm = sys.modules.get("litellm")
    cls = getattr(litellm, name, None) if litellm is not None else None
    return cls if isinstance(cls, type) else None


#: HTTP statuses that say the call's configuration is wrong (credentials, access, model or route).
_CONFIGURATION_STATUS = {401: "credentials refused (HTTP 401)", 403: "access denied (HTTP 403)",
                         404: "model or endpoint not found (HTTP 404)"}
#: Texts of a missing credential, whatever status carries them: litellm labels the openai SDK's
#: refusal to send without a key an InternalServerError (500).
_MISSING_CREDENTIAL_TEXTS = ("Missing credentials", "api_key client option must be set")
#: The LiteLLM proxy's answer (400) to a virtual key it cannot check: the gateway key is refused.
_GATEWAY_KEY_REFUSED_TEXT = "No connected db"


def configuration_problem(exc: BaseException, rules: Rules = ()) -> str | None:
    """What is wrong with the call's setup when ``exc`` says so, else None.

    Typed evidence first: an upstream status of 401, 403 or 404 (a 429 or a spent key chain is
    never this), and a 2xx answer that was no completion at all (the direct transport's
    :class:`~capplan.executor.errors.ProviderProtocolError`). Then the two refusals that carry no
    telling status: a missing-credentials text (under any status) and the LiteLLM proxy's 400
    "No connected db." for a key it cannot check. Then ``rules``, the failure rules the plan's
    binding and the gateway carry as data (and litellm's own reports of a non-completion answer).
    The answer names the class and kind of problem only; it never quotes the provider's text.
    """
    links = list(cause_chain(exc))
    if any(isinstance(link, (CredentialSpentError, ApiTimeoutError)) for link in links):
        return None
    protocol = next((link for link in links if isinstance(link, ProviderProtocolError)), None)
    if protocol is not None:
        return f"infrastructure: {protocol.problem}"
    for link in links:
        status = wire_status(link)
        if status in _CONFIGURATION_STATUS:
            return _CONFIGURATION_STATUS[status]
        text = str(link)
        if any(marker in text for marker in _MISSING_CREDENTIAL_TEXTS):
            return "missing credentials"
        if status == 400 and _GATEWAY_KEY_REFUSED_TEXT in text:
            return "gateway key refused (HTTP 400 No connected db.)"
    rule = matching_rule(exc, (*rules, *LITELLM_PROTOCOL_RULES))
    if rule is not None:
        return f"{rule.failure_class}: {rule.problem}"
    return None


def _is_provider_failure(exc: BaseException) -> bool:
    for link in cause_chain(exc):
        if wire_status(link) is not None:
            return True
        if isinstance(link, (ProviderConnectionError, ProviderTimeoutError, ProviderResponseError)):
            return True  # the direct transport's own failures of the wire, and an answer past the binding's limits
        module = type(link).__module__ or ""
        if module.startswith(("litellm", "openai", "httpx")):
            return True
    return False


def classify_loop_error(exc: BaseException, patterns: Patterns, rules: tuple[FailureRule, ...] = ()) -> LoopErrorDecision:
    """Classify a turn-loop exception (see the module docstring for the full contract).

    ``rules`` are the failure rules of the call's binding and gateway (:func:`configuration_problem`).
    """
    text = " ".join(str(exc).split())
    window = _litellm_class("ContextWindowExceededError")
    windows = (ContextWindowExceededError, window) if window is not None else (ContextWindowExceededError,)
    if any(isinstance(link, windows) for link in cause_chain(exc)):
        return LoopErrorDecision(LoopErrorReason.CONTEXT_WINDOW_EXCEEDED, f"Context window exceeded: {text}")
    if (problem := configuration_problem(exc, rules)) is not None:
        return LoopErrorDecision(
            LoopErrorReason.CONFIGURATION_ERROR, f"Configuration error ({problem}): {text}", excluded=True,
            evidence=chain_types(exc), problem=problem,
        )
    if any(isinstance(link, ApiTimeoutError) for link in cause_chain(exc)):
        return LoopErrorDecision(
            LoopErrorReason.API_TIMEOUT, f"API timeout: {text}", excluded=True, evidence=chain_types(exc)
        )
    if is_typed_rate_limit_exception(exc):  # vetoed by AllApiKeysExhausted anywhere before the 429
        return LoopErrorDecision(
            LoopErrorReason.RATE_LIMIT, f"Rate limit: {text}", excluded=True, evidence=chain_types(exc)
        )
    if any(isinstance(link, CredentialSpentError) for link in cause_chain(exc)):
        return LoopErrorDecision(LoopErrorReason.API_ERROR, f"API error: {text}")
    if matches_rate_limit_text(str(exc), patterns) and not _is_provider_failure(exc):
        return LoopErrorDecision(
            LoopErrorReason.ERROR,
            "Rate-limit-shaped error with no typed provider exception behind it, so the trial is "
            f"counted rather than excluded: {text}",
        )
    if _is_provider_failure(exc):
        return LoopErrorDecision(LoopErrorReason.API_ERROR, f"API error: {text}")
    return LoopErrorDecision(LoopErrorReason.ERROR, f"Error: {text}")

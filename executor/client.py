"""``Client``: a loaded plan, its policies, and one provider call per ``generate``.

The client only wires the parts together: the request builder shapes the call (the gateway,
when configured, reroutes it), the retry controller repeats transient failures, key rotation
moves past spent keys, and the response parser interprets the answer. A plan whose route speaks
``openai-chat`` with ``transport: direct`` is sent by :mod:`capplan.executor.direct`; every other
one through litellm, which is imported on the first real send, never at import time (it takes
seconds to import).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import logging
import os
import threading
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capplan.executor import mock_provider
from capplan.executor.attempts import AttemptLog
from capplan.executor.binding import FailureRule
from capplan.executor.cost import checked_cost
from capplan.executor.errors import AllApiKeysExhausted, GatewayRejectedError, MissingCredentialError
from capplan.executor.responses_response import UnknownOutputItemError
from capplan.executor.gateway.config import EnvSource, GatewayConfig, GatewayConfigError, resolve_gateway_config
from capplan.executor.gateway.route import RouteDecision, direct_fallback_warning
from capplan.executor.gateway.transport import GatewayTransport, decide_route
from capplan.executor.keys import KeyChain, is_per_key_limit, load_keys
from capplan.executor.litellm_copy import litellm_own_copy
from capplan.executor.loop_errors import LoopErrorDecision, classify_loop_error
from capplan.executor.messages import ChatRequest
from capplan.executor.plan_cache import per_plan
from capplan.executor.plan import Plan
from capplan.executor.policy_set import PolicySet
from capplan.executor.probe import RateLimitProbeConfig
from capplan.executor.probe_stats import ProbeStats
from capplan.executor.rate_limit import compile_patterns
from capplan.executor.provider_keys import litellm_key_variables, litellm_model
from capplan.core.redaction import Redactor, redact_url, register_secrets, url_credentials
from capplan.executor.wire_dialect import is_responses
from capplan.executor.request_builder import BuiltRequest, RequestBuilder, UnderTest
from capplan.executor.response_parser import ResponseParser
from capplan.executor.result import Attempt, GenerationResult
from capplan.executor.run_extra import require_litellm
from capplan.executor.send_observer import Send, current_observer, new_request_id
from capplan.executor.retrying import RetryContext, controlled, default_retrying, probe_retrying
from capplan.executor.timeout_retry import DEFAULT_TIMEOUT_RETRIES, call_with_timeout_retry
from capplan.executor.transport import missing_key_message

if TYPE_CHECKING:
    from capplan.executor.direct.sender import DirectCompletion

Completion = Callable[..., Any]

_log = logging.getLogger(__name__)


class Client:
    """Builds, sends and parses requests for one plan; one instance serves concurrent callers."""

    def __init__(
        self,
        plan: Plan,
        *,
        completion: Completion | None = None,
        sleep: Callable[[float], None] = time.sleep,
        env: Mapping[str, str] | None = None,
        api_base: str | None = None,
        rate_limit_probe: RateLimitProbeConfig | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        timeout_retries: int = DEFAULT_TIMEOUT_RETRIES,
        gateway: GatewayConfig | None = None,
    ) -> None:
        """``completion`` replaces ``litellm.completion`` (benchmarks, tests); ``env`` replaces
        ``os.environ`` (and the ``.env`` file) for credentials, endpoint overrides and the
        ``LLM_PROXY_*`` variables; ``api_base`` overrides the binding's endpoint.

        ``rate_limit_probe`` is the run config's block: an enabled one selects the probe retry
        controller, anything else the default. ``gateway`` passes an already resolved gateway
        configuration instead of reading the variables. A malformed gateway configuration raises
        :class:`GatewayConfigError` here, before any request exists.
        """
        self.plan = plan
        self.policies = per_plan(plan, "policies", PolicySet.from_plan)
        self.builder = RequestBuilder(plan, self.policies)
        self.parser = ResponseParser(plan, self.policies)
        self.mock = mock_provider.is_mock(plan.model.provider)
        self._completion = completion
        self._sleep = sleep
        self._clock = clock
        self._wall_clock = wall_clock
        self._env = env
        self._api_base = api_base
        self._timeout_retries = timeout_retries
        self._rate_limit_patterns = compile_patterns(plan.binding.binding.rate_limit_patterns)
        self._probe = rate_limit_probe if rate_limit_probe is not None and rate_limit_probe.enabled else None
        source = EnvSource(env)
        config = gateway if gateway is not None else resolve_gateway_config(source)
        if config is not None and api_base is not None:
            shown = redact_url(api_base)  # a URL's userinfo is a credential, even in a refusal
            raise GatewayConfigError(
                f"--api-base {shown} and LLM_PROXY_BASE_URL ({config.base_url}) both say where calls go; "
                f"unset LLM_PROXY_BASE_URL to send to {shown}, or drop --api-base to use the gateway"
            )
        self.gateway: GatewayTransport | None = None
        if config is not None:
            self.gateway = GatewayTransport(
                plan, config, decide_route(plan, config), provider_prefs=self.builder.transport.provider_prefs
            )
        credentials = os.environ if env is None else env
        keys, key_source = load_keys(plan.binding.binding, credentials)
        # a pinned gateway key takes precedence over any provider key, so rotating would resend
        # byte-identical requests and then report a chain that was never in play
        self._gateway_key_pinned = bool(self.gateway and self.gateway.decision.via_gateway and config and config.api_key)
        self.keys = KeyChain(keys, key_source) if keys and not self._gateway_key_pinned else None
        self._credentials = credentials
        # an OpenAI-compatible route the plan sends directly: capplan's HTTP client replaces litellm.completion
        self.direct: DirectCompletion | None = None
        if not self.mock and completion is None and plan.wire is not None and plan.wire.transport == "direct":
            from capplan.executor.direct.sender import DirectCompletion

            self.direct = DirectCompletion(plan, credentials)
        # a Responses route sent by litellm goes through litellm.responses, not litellm.completion
        self._responses_via_litellm = (not self.mock and plan.wire is not None and is_responses(plan.wire.protocol)
                                       and plan.wire.transport == "litellm")
        secrets = _credentials_in_play(plan, credentials, config, keys, api_base)
        self.redactor = Redactor(secrets)
        register_secrets(secrets)
        # litellm's own key variable (bindings without api_key_env) is learnt on the first send
        self._asked_litellm: set[str] = set()
        # a direct fallback past a configured gateway is said once per client, on its first send
        self._fallback_warned = False
        self._fallback_lock = threading.Lock()

    @classmethod
    def from_plan_file(cls, path: str | Path, **kwargs: Any) -> Client:
        """Load and verify a plan file, then build a client for it."""
        return cls(Plan.load(path), **kwargs)

    @property
    def environment(self) -> Mapping[str, str]:
        """The variables this client reads keys and endpoint overrides from (``env``, else ``os.environ``)."""
        return self._credentials

    @property
    def route(self) -> RouteDecision | None:
        """The gateway route decision for this plan; None when no gateway is configured."""
        return self.gateway.decision if self.gateway is not None else None

    def classify_loop_error(self, exc: BaseException) -> LoopErrorDecision:
        """How a trial-loop turn that raised ``exc`` ends, judged with this plan's rate-limit patterns.

        The seam a trial loop takes as ``classify_error=client.classify_loop_error``; see
        :mod:`capplan.executor.loop_errors` for the contract.
        """
        return classify_loop_error(exc, self._rate_limit_patterns, self.failure_rules)

    @property
    def failure_rules(self) -> tuple[FailureRule, ...]:
        """The failure rules this plan's calls are classified with: the binding's, then the gateway's when calls go through it."""
        rules = self.plan.binding.binding.failure_rules
        if self.gateway is not None and self.gateway.decision.via_gateway:
            return (*rules, *self.gateway.config.failure_rules)
        return rules

    def build(self, request: ChatRequest | Mapping[str, Any], *, under_test: UnderTest | None = None) -> BuiltRequest:
        """The request as litellm will receive it, plus what parsing the response needs.

        ``under_test``: a capability probe's parameter, sent whatever the plan's rules say (see
        :class:`~capplan.executor.request_builder.UnderTest`).

        The kwargs dict is this build's own, but its values are shared with the builder's caches
        and with other builds: the tool and message dicts, and the nested values of the other
        keys (``thinking``, ``extra_body``, ``extra_headers``, ...). Read them, copy before editing.
        """
        if request.__class__ is not ChatRequest:
            request = _as_request(request)
        built = self.builder.build(request, env=self._env, api_base=self._api_base, under_test=under_test)
        if self.gateway is not None and not self.mock:
            # the top-level kwargs dict is this build's own (the transport step makes it)
            self.gateway.apply(built.kwargs)
        return built

    def build_request(self, request: ChatRequest | Mapping[str, Any]) -> dict[str, Any]:
        """The exact kwargs for ``litellm.completion``, credentials included."""
        return self.build(request).kwargs

    def preview(self, request: ChatRequest | Mapping[str, Any]) -> dict[str, Any]:
        """The kwargs with credentials redacted, safe to print."""
        return self.redacted(self.build_request(request))

    def redacted(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """A copy of built kwargs safe to print: credentials and every configured secret replaced."""
        return self.redactor.kwargs(kwargs)

    def generate(
        self,
        request: ChatRequest | Mapping[str, Any],
        *,
        role: str = "agent",
        probe_stats: ProbeStats | None = None,
    ) -> GenerationResult:
        """Send one request (retrying transient failures) and parse the response.

        ``role`` and ``probe_stats`` attribute probe telemetry; a client whose run did not arm
        probe mode never records into ``probe_stats``.
        """
        try:
            return self._generate(request, role, probe_stats)
        except BaseException as exc:
            self.redactor.scrub_exception(exc)
            raise

    def send_once(self, built: BuiltRequest) -> Any:
        """Send ``built`` once and return the transport's raw answer; never retried.

        What ``capplan probe`` asks a route with: the same completion, key and gateway as
        :meth:`generate`, but no retry controller, no timeout retry and no key rotation, because
        a probe records the route's first answer (a refusal sent again is still a refusal, and a
        429 or 5xx is recorded as not measured, not waited out). Errors are scrubbed of every
        configured secret, as :meth:`generate`'s are.
        """
        try:
            self.require_credentials()
            if self.mock:
                raise ValueError(f"plan {self.plan.model.key} is the offline mock: it has no route to send to")
            completion = self._completion or self.direct or (
                _litellm_responses() if self._responses_via_litellm else _litellm_completion())
            self._learn_litellm_keys(built.kwargs)
            kwargs = self._own_kwargs(completion, built.kwargs)
            if self.keys is not None:
                kwargs = {**kwargs, "api_key": self.keys.current()[1]}
            return completion(**kwargs)
        except BaseException as exc:
            self.redactor.scrub_exception(exc)
            raise

    @property
    def calls_through_litellm(self) -> bool:
        """Whether this client's calls go out through litellm (not the mock, not a caller's own completion)."""
        return not self.mock and self._completion is None and self.direct is None

    def require_credentials(self) -> None:
        """Raise :class:`MissingCredentialError` (naming the variable) when a call would go out without a key.

        A call through litellm when it is not installed raises :class:`RunExtraMissing` (install
        ``capplan[run]``). A mock plan needs none; a pinned gateway key stands in for the
        provider's; rotation keys stand in for the binding's single key.
        """
        if self.calls_through_litellm:
            require_litellm()  # a real call goes through litellm: the run extra, refused before anything is sent
        variable = self.plan.binding.binding.api_key_env
        if self.mock or self._gateway_key_pinned or self.keys is not None:
            return
        wire = self.plan.wire
        if not variable and self.direct is not None and wire is not None and wire.key_envs:
            # the direct transport reads the route's own key variable, as litellm would: unset, nothing is sent
            if not any(self._credentials.get(name, "").strip() for name in wire.key_envs):
                provider = self.plan.binding.key or self.plan.model.provider
                raise MissingCredentialError(missing_key_message(wire.key_envs[0], provider, self.plan.model.key))
            return
        if not variable:
            return
        if not self._credentials.get(variable, "").strip():
            provider = self.plan.binding.key or self.plan.model.provider
            raise MissingCredentialError(missing_key_message(variable, provider, self.plan.model.key))

    def _generate(self, request: ChatRequest | Mapping[str, Any], role: str, probe_stats: ProbeStats | None) -> GenerationResult:
        self.require_credentials()
        built = self.build(request)
        if self.mock:
            # the mock's one attempt is announced like a real send: a trial's journal and budget see it the same way
            request_id = new_request_id()
            observer = current_observer()
            if observer is not None:
                observer(Send(request_id, 1, built.kwargs, self.plan))
            started = time.monotonic()
            response = mock_provider.complete(built.kwargs)
            latency = time.monotonic() - started
            result = self.parser.parse(response, built, latency_s=latency, synthetic=True)
            return dataclasses.replace(result, attempts=(Attempt(status="ok", wait_s=0.0, latency_s=latency,
                                                                 request_id=request_id),))
        completion = self._completion or self.direct or (
            _litellm_responses() if self._responses_via_litellm else _litellm_completion())
        self._learn_litellm_keys(built.kwargs)
        self._warn_direct_fallback()
        # every attempt (outer retries, timeout retries, key rotation) goes through the log's
        # call and every backoff through its sleep, so the record holds each one and its wait
        log = AttemptLog(self._clock, self._sleep, self._rate_limit_patterns, self.plan, self.failure_rules)
        context = RetryContext(
            patterns=self._rate_limit_patterns, sleep=log.sleep, clock=self._clock, wall_clock=self._wall_clock,
            probe_stats=probe_stats, role=role, model=self.plan.model.model_id, redact=self.redactor.text,
            rules=self.failure_rules, retry_after_max_s=self.plan.binding.binding.retry_after_max_s,
        )
        # the probe's controller starts its budget's clock when made; the default one is made only if an attempt fails
        controller = (probe_retrying(self._probe, context) if self._probe
                      else functools.partial(default_retrying, log.sleep, context))
        kwargs = self._own_kwargs(completion, built.kwargs)
        key_index: int | None = None
        try:
            response, key_index = controlled(controller, lambda: self._call_rotating(completion, kwargs, log))
            result = self.parser.parse(response, built, latency_s=log.latency_s)
        except Exception as exc:
            log.attach(exc)
            if isinstance(exc, UnknownOutputItemError):
                self._account_unread(exc)
            raise
        route = self.route
        result = dataclasses.replace(
            result,
            gateway_route=route.route if route is not None else None,
            gateway_route_kind=route.kind if route is not None else None,
            key_index=key_index,
            attempts=tuple(log.attempts),
            wait_s=log.wait_s,
        )
        if self._probe is not None and probe_stats is not None:
            probe_stats.record_success(
                role=role, model=self.plan.model.model_id, duration_s=log.last_latency_s,
                # throughput telemetry, not a bill: a counter the provider reported out of bounds adds none
                prompt_tokens=result.usage.prompt_tokens or 0, completion_tokens=result.usage.completion_tokens or 0,
                ts=self._wall_clock(),
            )
        return result

    def _own_kwargs(self, completion: Callable[..., Any], kwargs: dict[str, Any]) -> dict[str, Any]:
        """The kwargs ``completion`` is handed: the built ones, or a copy nothing it does can reach them through.

        The built kwargs share cached tool and message dicts with later builds. The direct transport
        only reads them (its body is a new dict; rewritten messages are new dicts); litellm gets a copy
        of what it writes into (:mod:`capplan.executor.litellm_copy`); a caller's own completion,
        whose writes nobody audited, a deep copy of everything.
        """
        if completion is self.direct:
            return kwargs
        if self._completion is None:
            wire = self.plan.wire
            return litellm_own_copy(kwargs, wire.protocol if wire is not None else None)
        return copy.deepcopy(kwargs)

    def _account_unread(self, exc: UnknownOutputItemError) -> None:
        """What an answer refused for an item capplan cannot read used and cost, on the error: the
        provider answered (and billed) it, so the call's record carries its figures, not unknown."""
        shaped = {"usage": exc.chat_usage()}
        usage, _ = self.parser.usage_extractor.extract_checked(shaped)
        exc.usage = usage
        exc.cost_usd, exc.cost_source, _ = checked_cost(shaped, usage, self.plan.pricing)

    def _warn_direct_fallback(self) -> None:
        """Warn, once per client, that a configured gateway is bypassed for this plan's calls.

        The call still goes out (the route says the gateway does not serve the model), and each
        record carries ``gateway_route_kind: direct``; the warning is what a deployment that
        forbids direct provider access sees before anything is spent.
        """
        if self._fallback_warned or self.gateway is None:
            return
        message = direct_fallback_warning(self.gateway.decision, self.plan.model.key, self.gateway.config.base_url)
        with self._fallback_lock:
            if self._fallback_warned:
                return
            self._fallback_warned = True
        if message is not None:
            _log.warning("%s", message)

    def _learn_litellm_keys(self, kwargs: Mapping[str, Any]) -> None:
        """Add the values of the variables litellm itself reads for this call's provider to the redactor.

        Only when litellm is loaded (it makes the call, or wraps it as on a Ray worker): a
        completion function that is not litellm reads no variable of litellm's, and importing
        litellm only to ask would cost seconds.
        """
        if self.plan.binding.binding.api_key_env or self.direct is not None or "litellm" not in sys.modules:
            return
        model = litellm_model(str(kwargs.get("model", "")), kwargs.get("custom_llm_provider"))
        if model in self._asked_litellm:
            return
        names = litellm_key_variables(model)
        # litellm reads the process environment, whatever mapping this client was given
        values = [source.get(name, "") for name in names for source in (os.environ, self._credentials)]
        self._asked_litellm.add(model)
        if any(values):
            self.redactor = self.redactor.extend(values)
            register_secrets(values)

    def _call_rotating(self, completion: Completion, kwargs: dict[str, Any], log: AttemptLog) -> tuple[Any, int | None]:
        """One outer attempt: the call (with its timeout retry), moving along the key chain on a per-key limit."""
        while True:
            index: int | None = None
            sent = kwargs
            if self.keys is not None:
                index, key = self.keys.current()
                sent = {**kwargs, "api_key": key}
            try:
                response = call_with_timeout_retry(
                    functools.partial(log.call, completion, sent, index), retries=self._timeout_retries,
                    sleep=log.sleep, timeout_s=sent.get("timeout"),
                )
                return response, index
            except Exception as exc:
                if not is_per_key_limit(exc):
                    raise
                if self._gateway_key_pinned and self.gateway is not None:
                    raise GatewayRejectedError(
                        f"the LLM gateway at {self.gateway.config.base_url} rejected the request as over quota or "
                        f"unauthorised; provider key rotation does not apply to a pinned LLM_PROXY_API_KEY: check "
                        f"the gateway credential and its budget"
                    ) from exc
                if self.keys is None or index is None:
                    raise
                if not self.keys.advance(index):
                    raise AllApiKeysExhausted(
                        f"all {len(self.keys)} key(s) from {self.keys.source} are over their per-key limit"
                    ) from exc


def _credentials_in_play(
    plan: Plan, credentials: Mapping[str, str], config: GatewayConfig | None, keys: tuple[str, ...],
    api_base: str | None,
) -> list[str]:
    """Every credential value this client may send: what its redactor must know before anything is printed.

    The binding's key variable, its rotation keys, the gateway key and every gateway header value
    (a literal ``X-Team-Token`` is as secret as a ``${secret:}`` one), and the userinfo of every
    URL a call may go to (``--api-base``, the binding's base variable, its endpoint).
    """
    binding = plan.binding.binding
    values = list(keys)
    if binding.api_key_env:
        values.append(credentials.get(binding.api_key_env, ""))
    if plan.wire is not None and plan.wire.transport == "direct":
        # the direct transport reads these itself where the binding names no key variable (as litellm would)
        values += [credentials.get(name, "") for name in plan.wire.key_envs]
        for name in plan.wire.base_url_envs:
            values += url_credentials(credentials.get(name) or None)
    if config is not None:
        values += [config.api_key or "", *config.headers.values()]
    bases = [api_base, binding.endpoint, credentials.get(binding.api_base_env, "") if binding.api_base_env else None]
    for base in bases:
        values += url_credentials(base)
    return [v for v in values if v]


def _as_request(request: ChatRequest | Mapping[str, Any]) -> ChatRequest:
    if isinstance(request, ChatRequest):
        return request
    return ChatRequest.model_validate(request)


def _refuse_redirects(litellm: Any) -> None:
    """Give the OpenAI-SDK routes an HTTP client that never follows a redirect.

    The SDK's own client follows redirects, and httpx drops only ``Authorization`` when the
    origin changes: the gateway's ``LLM_PROXY_HEADERS`` values (``${secret:}`` ones included)
    and ``api-key``-style headers would reach whatever host a 3xx names. Every route whose
    endpoint a file or the environment can choose (OpenAI, OpenRouter, xAI, Azure's OpenAI
    surface, custom ``endpoint:`` bindings, gateways) speaks through the SDK, so a redirect
    there is answered as the error it is. A client the caller installed is left alone.
    """
    if litellm.client_session is None:
        from openai import DefaultHttpxClient

        litellm.client_session = DefaultHttpxClient(follow_redirects=False)


def default_completion(plan: Plan, env: Mapping[str, str] | None = None) -> Completion:
    """What sends ``plan``'s calls when no caller supplies a completion: the direct transport or litellm.

    For wrappers that need the per-attempt callable itself (a run's rate limiter on a Ray worker).
    """
    if plan.wire is not None and plan.wire.transport == "direct" and not mock_provider.is_mock(plan.model.provider):
        from capplan.executor.direct.sender import DirectCompletion

        return DirectCompletion(plan, os.environ if env is None else env)
    if plan.wire is not None and is_responses(plan.wire.protocol) and not mock_provider.is_mock(plan.model.provider):
        return _litellm_responses()
    return _litellm_completion()


def _litellm_completion() -> Completion:
    # Without this litellm first tries to download its model cost map on import.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    # a failed call is reported once, by capplan; litellm's own "Give Feedback / Get Help" and
    # "Provider List" banners on stdout would only bury that line
    litellm.suppress_debug_info = True
    _refuse_redirects(litellm)

    def completion(**kwargs: Any) -> Any:
        # the executor's controllers are the only retries: litellm's own would multiply them unseen
        return litellm.completion(**kwargs, num_retries=0)

    return completion


def _litellm_responses() -> Completion:
    """``litellm.responses`` as a completion: Responses kwargs in, the chat-shaped answer out.

    The kwargs are already the Responses request (:mod:`capplan.executor.responses_request`);
    the answer, dumped to JSON, is read by the same mapping as the direct transport's.
    """
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    from capplan.executor.responses_response import chat_shape

    litellm.suppress_debug_info = True
    _refuse_redirects(litellm)

    def completion(**kwargs: Any) -> Any:
        # the executor's controllers are the only retries (the built kwargs already say max_retries: 0)
        response = litellm.responses(**kwargs)
        data = response.model_dump(mode="json") if hasattr(response, "model_dump") else response
        hidden = getattr(response, "_hidden_params", None) or {}
        headers = hidden.get("additional_headers") if isinstance(hidden, dict) else None
        provider = str(kwargs.get("custom_llm_provider") or str(kwargs.get("model", "")).split("/", 1)[0])
        return chat_shape(data, headers if isinstance(headers, dict) else {}, 200, response, provider)

    return completion

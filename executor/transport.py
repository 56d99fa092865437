"""Transport kwargs from the plan's provider binding: where a call goes, as whom, under what name.

This is the only module that knows transport facts (endpoints, credential env vars, litellm
routing hints, OpenRouter's headers and provider preferences, the per-attempt timeout). Everything comes from plan data; the one
provider name tested here is OpenRouter's, because its headers and pin are OpenRouter features,
not binding fields. Credentials are read from the environment at call time and never stored.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from capplan.core import redaction
from capplan.executor.errors import MissingCredentialError, PlanInconsistencyError
from capplan.executor.openrouter_base import openrouter_base_url
from capplan.executor.plan import OpenRouterRouting, Plan, SlugRewrite

log = logging.getLogger(__name__)

#: The header tolokaforge sends to opt out of data collection; OpenRouter documents the
#: ``provider.data_collection`` body field for the same choice, so both are sent.
DATA_COLLECTION_OPT_OUT_HEADER = "X-Data-Collection-Opt-Out"


def openrouter_headers(routing: OpenRouterRouting) -> dict[str, str]:
    """Attribution headers (without them litellm sends its own name) and the opt-out header."""
    headers = {"HTTP-Referer": routing.referer, "X-Title": routing.title}
    if routing.data_collection == "deny":
        headers[DATA_COLLECTION_OPT_OUT_HEADER] = "true"
    return headers


#: Kept importable here; the one implementation is :mod:`capplan.core.redaction`'s.
REDACTED = redaction.REDACTED
redact = redaction.redact_kwargs


def rewrite_slug(model: str, rewrite: SlugRewrite | None) -> str:
    """Strip the binding's prefix, then ensure its other prefix (nova/x -> openai/x)."""
    if rewrite is None:
        return model
    if rewrite.strip_prefix and model.startswith(rewrite.strip_prefix):
        model = model[len(rewrite.strip_prefix) :]
    if rewrite.ensure_prefix and not model.startswith(rewrite.ensure_prefix):
        model = rewrite.ensure_prefix + model
    return model


def custom_llm_provider(plan: Plan) -> str | None:
    """The binding's routing hint; a compound provider (``openrouter/google``) falls back to its first segment."""
    hint = plan.binding.binding.custom_llm_provider
    if hint is not None:
        return hint
    if "/" in plan.model.provider:
        return plan.model.provider.split("/")[0].lower()
    return None


def is_openrouter_route(plan: Plan) -> bool:
    """Whether litellm will speak OpenRouter's dialect for this plan."""
    provider = custom_llm_provider(plan)
    if provider is not None:
        return provider == "openrouter"
    return plan.model.wire_model.startswith("openrouter/")


class Transport:
    """Applies one plan's binding to each call's kwargs."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        binding = plan.binding.binding
        model = rewrite_slug(plan.model.model_id, binding.slug_rewrite)
        if model != plan.model.wire_model:
            raise PlanInconsistencyError(
                f"plan {plan.model.key!r}: wire_model {plan.model.wire_model!r} is not the binding's rewrite of "
                f"model_id {plan.model.model_id!r} ({model!r}); recompile it with `capplan compile`"
            )
        self.model = model
        self.custom_llm_provider = custom_llm_provider(plan)
        self.openrouter = is_openrouter_route(plan)
        routing = plan.openrouter
        self.headers: dict[str, str] = {}
        self.provider_prefs: dict[str, Any] | None = None
        if routing is not None:
            prefs: dict[str, Any] = {}
            if routing.provider_order:
                prefs = {"order": list(routing.provider_order), "allow_fallbacks": routing.allow_fallbacks}
            if routing.data_collection == "deny":
                # OpenRouter's documented opt-out: only upstreams that neither store nor train on prompts
                prefs["data_collection"] = "deny"
            if self.openrouter:
                self.headers = openrouter_headers(routing)
                self.provider_prefs = prefs or None
            elif prefs:
                # provider preferences are an OpenRouter body field; another upstream rejects or ignores them
                log.warning(
                    "plan %s: provider preferences %s not sent: route %s is not OpenRouter", plan.model.key, prefs,
                    self.model,
                )
        self.timeout = plan.loop.api_call_timeout_s
        # binding facts read on every call, taken out of the plan model once
        self._base_env, self._endpoint = binding.api_base_env, binding.endpoint
        self._key_env, self._pin = binding.api_key_env, binding.kwargs_pin_transport

    def apply(
        self,
        kwargs: dict[str, Any],
        *,
        env: Mapping[str, str] | None = None,
        api_base: str | None = None,
    ) -> dict[str, Any]:
        """Return ``kwargs`` plus the transport keys; ``api_base`` (e.g. ``--api-base``) beats the binding's."""
        out = self.route(kwargs)
        self.credentials(out, env=env, api_base=api_base)
        self.extras(out)
        return out

    def route(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """A copy of ``kwargs`` with where the call goes: model, retries, timeout, routing hint.

        The first of :meth:`apply`'s three steps; none of them reads anything but plan data
        except :meth:`credentials`, so a request builder may resolve the other two once.
        """
        out = dict(kwargs)
        out["model"] = self.model
        # the executor's retry controller is the only one: the provider SDK's own silent
        # retries would multiply its attempts and sleep where no test or log can see them
        out["max_retries"] = 0
        # one attempt's bound; the same kwargs go out on every attempt, so every attempt has it
        out["timeout"] = self.timeout
        if self.custom_llm_provider is not None:
            out["custom_llm_provider"] = self.custom_llm_provider
        return out

    def credentials(
        self,
        out: dict[str, Any],
        env: Mapping[str, str] | None = None,
        api_base: str | None = None,
    ) -> None:
        """Set the endpoint and the key in ``out``, read from ``env`` (default ``os.environ``) now."""
        if env is None:
            env = os.environ
        base = api_base
        if not base:
            # The deployment's variable wins over the bundled endpoint. The base is pinned into
            # the call rather than published into os.environ, so nothing process-global changes.
            base_env = self._base_env
            base = env.get(base_env) if base_env else None
            if not base and self.custom_llm_provider == "openrouter":
                base = openrouter_base_url(env)  # OPENROUTER_BASE_URL or OPENROUTER_API_BASE, reconciled
            base = base or self._endpoint
        if base:
            out["api_base"] = base
        key_env = self._key_env
        if self._pin:
            out["api_key"] = self._pinned_key(env)
        elif key_env:
            # the binding's variable is the credential on every route, not whichever variable
            # litellm would guess from the model prefix; a missing one is refused before sending
            key = env.get(key_env, "").strip()
            if key:
                out["api_key"] = key

    def extras(self, out: dict[str, Any]) -> None:
        """Add OpenRouter's headers and provider pin and the allowed-params list to ``out``
        (fresh nested dicts; those already in ``out`` are merged, never edited)."""
        if self.headers:
            out["extra_headers"] = {**self.headers, **out.get("extra_headers", {})}
        if self.provider_prefs is not None:
            out["extra_body"] = {**out.get("extra_body", {}), "provider": dict(self.provider_prefs)}
        if self.plan.allowed_openai_params:
            out["allowed_openai_params"] = list(self.plan.allowed_openai_params)

    def _pinned_key(self, env: Mapping[str, str]) -> str:
        binding = self.plan.binding.binding
        provider = self.plan.binding.key or self.plan.model.provider
        if not binding.api_key_env:
            raise PlanInconsistencyError(
                f"plan {self.plan.model.key!r}: binding {provider!r} pins transport but names no api_key_env"
            )
        key = env.get(binding.api_key_env, "").strip()
        if not key:
            raise MissingCredentialError(missing_key_message(binding.api_key_env, provider, self.plan.model.key))
        return key


def missing_key_message(variable: str, provider: str, model_key: str) -> str:
    """The one wording of an unset key variable, for previews, sends and trial runs alike."""
    return (
        f"{variable} is not set (or empty); the {provider} binding of model {model_key!r} reads its API key "
        f"from it: export {variable}=<key>, or route through a gateway with LLM_PROXY_BASE_URL and LLM_PROXY_API_KEY"
    )

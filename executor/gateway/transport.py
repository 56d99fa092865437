"""Apply one plan's gateway route to each call's kwargs.

Decided once per client (route, pin rule, allow-list); per request only a dict merge and a
UUID4, so the gateway adds next to nothing to building a request.

On a resolved route (``exact`` / ``wildcard``) the model becomes the route name in the OpenAI
dialect (``custom_llm_provider="openai"``): the OpenRouter dialect would add its
``usage: {include: true}`` body field, which every non-OpenRouter upstream rejects. On the
``untranslated`` path only ``api_base``, ``api_key`` and the headers change: the model string goes
to litellm exactly as it would without a gateway, so litellm's own prefix strip decides the wire
name — which is what the spec's manual route pin relies on (``provider: openai`` with
``name: openrouter/anthropic/claude-opus-4.7`` puts ``openrouter/anthropic/claude-opus-4.7`` on the
wire, the gateway's route name, when the catalog cannot be read). The OpenRouter
upstream pin (``extra_body.provider``) rides exactly when the wire name's first segment is the
model's own provider namespace; otherwise it is dropped, with one warning per client.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from capplan.core.ids import uuid4_text
from capplan.executor.gateway.catalog import fetch_gateway_catalog
from capplan.executor.gateway.config import PROVIDERS, GatewayConfig, GatewayConfigError
from capplan.executor.gateway.route import RouteDecision, resolve_route
from capplan.executor.plan import Plan

log = logging.getLogger(__name__)

CatalogFetch = Callable[[GatewayConfig], "frozenset[str] | None"]


def provider_namespace(plan: Plan) -> str:
    """The model's provider namespace: the first '/' segment of its provider, lower-cased."""
    return plan.model.provider.split("/", 1)[0].lower()


def decide_route(plan: Plan, config: GatewayConfig, fetch: CatalogFetch = fetch_gateway_catalog) -> RouteDecision:
    """The route this plan's calls take under ``config`` (reads the catalog only when routable)."""
    namespace = provider_namespace(plan)
    provider = plan.model.provider.lower()
    named = config.providers is not None and (provider in config.providers or namespace in config.providers)
    if plan.binding.binding.unroutable:
        if named:
            raise GatewayConfigError(
                f"{PROVIDERS} names {namespace!r}, whose binding is unroutable: it can never go through a gateway "
                f"(mock never reaches a wire; nova needs a model-name rewrite a gateway does not perform); "
                f"remove it from {PROVIDERS}"
            )
        return RouteDecision("direct", None, f"provider {namespace!r} is unroutable (providers.yaml): direct to the provider")
    allowed = config.routed_providers
    if provider not in allowed and namespace not in allowed:
        # the default list is the code's own and shown; LLM_PROXY_PROVIDERS is not echoed back
        source = PROVIDERS if config.providers is not None else f"the default allow-list ({', '.join(sorted(allowed))})"
        return RouteDecision("direct", None, f"provider {namespace!r} is not in {source}: direct to the provider")
    return resolve_route(
        plan.model.model_id,
        fetch(config),
        preferred=config.preferred_routes,
        trust_namespace_wildcards=config.trust_namespace_wildcards,
    )


def dialect_model(route: str) -> str:
    """The model string that makes litellm's OpenAI dialect put ``route`` on the wire.

    That dialect strips one leading ``openai/``, so a route that itself starts with it is
    prefixed once more.
    """
    return f"openai/{route}" if route.startswith("openai/") else route


class GatewayTransport:
    """A client's gateway decision, applied to each call's kwargs."""

    def __init__(
        self, plan: Plan, config: GatewayConfig, decision: RouteDecision, provider_prefs: dict[str, Any] | None = None
    ) -> None:
        """``provider_prefs`` is the ``extra_body.provider`` the binding's transport sends, if any."""
        self.config = config
        self.decision = decision
        self.resolved = decision.kind in ("exact", "wildcard")
        wire = decision.route if self.resolved and decision.route else plan.model.model_id
        self.keep_pin = wire.split("/", 1)[0].lower() == provider_namespace(plan)
        self._model = dialect_model(decision.route) if self.resolved and decision.route else None
        self._merged: tuple[dict[str, Any] | None, dict[str, str]] | None = None
        self._gateway_names = {name.lower() for name in config.headers}
        if config.request_id_header:
            self._gateway_names.add(config.request_id_header.lower())
        if decision.via_gateway and not self.keep_pin and provider_prefs:
            log.warning(
                "plan %s: OpenRouter provider preferences %s dropped: gateway route %r leaves the %r namespace",
                plan.model.key, provider_prefs, wire, provider_namespace(plan),
            )

    def apply(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Reroute ``kwargs`` (already carrying the binding's transport) through the gateway.

        Edits the top-level dict it is given and returns it; nested dicts (headers, body
        extras) are replaced, never edited, because they may be shared with other builds.
        """
        if not self.decision.via_gateway:
            return kwargs
        config = self.config
        kwargs["api_base"] = config.base_url
        if config.api_key:
            kwargs["api_key"] = config.api_key
        if self._model is not None:
            kwargs["model"] = self._model
            kwargs["custom_llm_provider"] = "openai"
        engine = kwargs.get("extra_headers")
        merged = self._merged
        if merged is None or engine != merged[0]:
            # the operator's headers win over engine defaults, compared as HTTP does: case-insensitively;
            # a client's engine headers rarely change, so the merge is kept for the next request
            names = self._gateway_names
            combined = {k: v for k, v in (engine or {}).items() if k.lower() not in names}
            combined.update(config.headers)
            merged = self._merged = (dict(engine) if engine else None, combined)
        headers = dict(merged[1])
        if config.request_id_header:
            headers[config.request_id_header] = uuid4_text()
        kwargs["extra_headers"] = headers
        if not self.keep_pin:
            extra = kwargs.get("extra_body")
            if extra and "provider" in extra:
                body = {k: v for k, v in extra.items() if k != "provider"}
                if body:
                    kwargs["extra_body"] = body
                else:
                    del kwargs["extra_body"]
        return kwargs

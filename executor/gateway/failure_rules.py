"""What a LiteLLM proxy (the gateway) answers when a call's setup is wrong, as failure rules with evidence.

The gateway configuration carries these (:attr:`GatewayConfig.failure_rules`); a call that went
through the gateway is classified with them beside its binding's own rules. The texts are the
proxy's, read from litellm's source: a model name the proxy does not serve, a model with no
deployment, and a provider's refused key that the proxy relays under a 500.
"""

from __future__ import annotations

from capplan.executor.binding import FailureRule

_SOURCE = "litellm 1.110.2 (the LiteLLM proxy)"

LITELLM_PROXY_RULES: tuple[FailureRule, ...] = (
    FailureRule.model_validate({
        "status": 400, "contains": "Invalid model name passed in", "class": "configuration",
        "problem": "the gateway serves no model of this name",
        "evidence": f"{_SOURCE} proxy/route_llm_request.py ProxyModelNotFoundError: '{{route}}: Invalid model name "
                    "passed in model={model_name}. Call `/v1/models` to view available models for your key.' "
                    "(read 2026-12-04)"}),
    FailureRule.model_validate({
        "status": 400, "contains": "There are no healthy deployments for this model", "class": "configuration",
        "problem": "the gateway has no deployment of this model",
        "evidence": f"{_SOURCE} router_rust/core.py unknown_model -> BadRequestError 'You passed in model=…. "
                    "There are no healthy deployments for this model' (types/router.py "
                    "RouterErrors.no_healthy_deployments) (read 2026-12-04)"}),
    FailureRule.model_validate({
        "status": 500, "contains": "litellm.AuthenticationError", "class": "configuration",
        "problem": "the provider behind the gateway refused its credentials (relayed as HTTP 500)",
        "evidence": f"{_SOURCE} exceptions.py AuthenticationError: message 'litellm.AuthenticationError: …', "
                    "which the proxy relays in its error body (read 2026-12-04)"}),
)

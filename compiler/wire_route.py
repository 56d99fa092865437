"""The plan's ``wire`` record: which wire a model's route speaks, and who sends its requests.

The route's litellm provider (the binding's routing hint, else the model's first segment) decides
the protocol (:mod:`capplan.executor.wire_dialect`). An ``openai-chat`` route goes through the
direct transport unless the run config's model block says ``transport: litellm``; a native route
always goes through litellm, and asking for ``transport: direct`` on one is an error here, before
any request exists.
"""

from __future__ import annotations

from typing import Any

from capplan.core.diagnostics import Diagnostic
from capplan.core.yaml_source import SourceFile
from capplan.executor.plan import ModelIdentity, ProviderBinding, WireRoute
from capplan.executor.wire_dialect import (
    CHAT_PATH,
    OPENAI_CHAT_PROVIDERS,
    RESPONSES_ACCEPT,
    RESPONSES_PATH,
    RESPONSES_PROTOCOLS,
    litellm_provider,
    model_dialect,
    protocol_of,
    wire_model_name,
)


#: the encrypted reasoning a Responses request asks for, when the model has it
ENCRYPTED_INCLUDE = "reasoning.encrypted_content"


def wire_route(identity: ModelIdentity, binding: ProviderBinding, transport: str | None,
               src: SourceFile, key: str, responses: Any = None) -> tuple[WireRoute, list[Diagnostic]]:
    """The route record for one model, and the diagnostic of a transport its route cannot take.

    ``responses`` is the merged preset's ``responses_api`` block: where it lists the route's
    provider, the route speaks that provider's Responses protocol instead of chat completions.
    """
    hint = binding.custom_llm_provider
    if hint is None and "/" in identity.provider:
        hint = identity.provider.split("/")[0].lower()  # a compound provider (openrouter/google), as the executor reads it
    provider = litellm_provider(hint, identity.wire_model)
    protocol = protocol_of(provider)
    diags: list[Diagnostic] = []
    if protocol == "litellm":
        if transport == "direct":
            diags.append(src.diag(
                ("models", key, "transport"), "transport-unavailable",
                f"transport: direct needs an OpenAI-compatible chat route; provider {provider or identity.provider!r} "
                "speaks its own protocol, which only litellm sends",
                "remove `transport:` (or set `transport: litellm`)"))
        return WireRoute(protocol="litellm", transport="litellm", provider=provider), diags
    facts = OPENAI_CHAT_PROVIDERS[provider]
    if responses is not None and provider in responses.routes and provider in RESPONSES_PROTOCOLS:
        # stateless: nothing is kept on the provider, so the encrypted reasoning travels with the
        # conversation (asked for only where the model has it)
        body: dict[str, Any] = {"store": False}
        if responses.encrypted_reasoning:
            body["include"] = [ENCRYPTED_INCLUDE]
        if responses.reasoning_summary is not None:
            # merged with each request's effort into `reasoning` (capplan.executor.responses_request)
            body["reasoning"] = {"summary": responses.reasoning_summary}
        return WireRoute(
            protocol=RESPONSES_PROTOCOLS[provider],
            transport="litellm" if transport == "litellm" else "direct",
            provider=provider,
            base_url=facts.base_url,
            base_url_envs=facts.base_url_envs,
            key_envs=facts.key_envs,
            path=RESPONSES_PATH,
            # litellm sends every Responses call through its own httpx sender, whatever the provider
            headers={"Accept": RESPONSES_ACCEPT},
            body=body,
            evidence=" ".join(responses.evidence.split()),
        ), diags
    dialect = model_dialect(provider, wire_model_name(provider, identity.wire_model))
    return WireRoute(
        protocol="openai-chat",
        transport="litellm" if transport == "litellm" else "direct",
        provider=provider,
        base_url=facts.base_url,
        base_url_envs=facts.base_url_envs,
        key_envs=facts.key_envs,
        path=CHAT_PATH,
        headers={"Accept": facts.accept},
        body=facts.body,
        renames=dialect.renames,
        system_role=dialect.system_role,
    ), diags

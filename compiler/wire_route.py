"""The plan's ``wire`` record: which wire a model's route speaks, and who sends its requests.

The route's litellm provider (the binding's routing hint, else the model's first segment) decides
the protocol (:mod:`capplan.executor.wire_dialect`). An ``openai-chat`` route goes through the
direct transport unless the run config's model block says ``transport: litellm``; a native route
always goes through litellm, and asking for ``transport: direct`` on one is an error here, before
any request exists.
"""

from __future__ import annotations

from capplan.core.diagnostics import Diagnostic
from capplan.core.yaml_source import SourceFile
from capplan.executor.plan import ModelIdentity, ProviderBinding, WireRoute
from capplan.executor.wire_dialect import (
    CHAT_PATH,
    OPENAI_CHAT_PROVIDERS,
    litellm_provider,
    model_dialect,
    protocol_of,
    wire_model_name,
)


def wire_route(identity: ModelIdentity, binding: ProviderBinding, transport: str | None,
               src: SourceFile, key: str) -> tuple[WireRoute, list[Diagnostic]]:
    """The route record for one model, and the diagnostic of a transport its route cannot take."""
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

"""Which wire a route speaks, and the request facts litellm 1.110.2 would otherwise work out per call.

A route whose litellm provider is an OpenAI-compatible chat endpoint (``openai`` with its custom
``endpoint:`` bindings and gateways, ``openrouter``, ``xai``, ``azure_ai``) speaks ``openai-chat``:
one ``POST {base}/chat/completions`` with a JSON body. Every other provider (Anthropic, Gemini,
Bedrock, ...) speaks its own protocol and goes through ``litellm``.

For an ``openai-chat`` route this module holds what litellm's provider configuration adds to or
changes in the request we build: the default endpoint and the variables it reads one from, the
key variable, the ``Accept`` header its sender uses, body fields it always adds (OpenRouter's
``usage: {include: true}``), and the OpenAI reasoning models' renames (``max_tokens`` sent as
``max_completion_tokens``; a system message sent as a user message where litellm's model map says
the model takes none). The compiler records these in the plan; the direct transport applies
them; ``tests/executor/test_direct_wire_identity.py`` proves the result equals litellm's request.
Pure data and string rules: no import of litellm, httpx or anything that sends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

WireProtocol = Literal["openai-chat", "openai-responses", "xai-responses", "litellm"]
TransportName = Literal["direct", "litellm"]

#: The chat endpoint below the base URL on every openai-chat route.
CHAT_PATH = "/chat/completions"

#: The Responses endpoint below the base URL (OpenAI's and xAI's ``POST /v1/responses``).
RESPONSES_PATH = "/responses"
#: The ``Accept`` header of litellm's Responses sender (its own httpx client, on every provider).
RESPONSES_ACCEPT = "*/*"

#: litellm provider -> the Responses protocol its endpoint speaks; the providers whose Responses
#: API a plan may be sent on (OpenAI's, and xAI's, which follows OpenAI's item shapes).
RESPONSES_PROTOCOLS: dict[str, WireProtocol] = {"openai": "openai-responses", "xai": "xai-responses"}


def is_responses(protocol: str) -> bool:
    """Whether ``protocol`` is one of the Responses wires (input items, not chat messages)."""
    return protocol in ("openai-responses", "xai-responses")


@dataclass(frozen=True)
class RouteFacts:
    """What litellm's configuration for one OpenAI-compatible provider puts on the wire."""

    #: litellm's default base URL; None: the provider has none and one must be configured
    base_url: str | None
    #: variables litellm reads a base URL from, in its order, when the call names none
    base_url_envs: tuple[str, ...]
    #: the variable litellm reads the key from when the call carries none
    key_envs: tuple[str, ...]
    #: the ``Accept`` header of litellm's sender for this provider (the openai SDK's, or its own httpx one)
    accept: str
    #: body fields litellm always adds
    body: dict[str, Any] = field(default_factory=dict)


#: litellm provider -> its facts; the providers whose requests go out as plain OpenAI chat.
OPENAI_CHAT_PROVIDERS: dict[str, RouteFacts] = {
    "openai": RouteFacts("https://api.openai.com/v1", ("OPENAI_BASE_URL", "OPENAI_API_BASE"), ("OPENAI_API_KEY",),
                         "application/json"),
    "openrouter": RouteFacts("https://openrouter.ai/api/v1", ("OPENROUTER_API_BASE",), ("OPENROUTER_API_KEY",), "*/*",
                             {"usage": {"include": True}}),
    "xai": RouteFacts("https://api.x.ai/v1", ("XAI_API_BASE",), ("XAI_API_KEY",), "*/*"),
    "azure_ai": RouteFacts(None, ("AZURE_AI_API_BASE",), ("AZURE_AI_API_KEY",), "*/*"),
}

#: Hosts where litellm's azure_ai route sends the key as ``api-key`` instead of a bearer token.
AZURE_API_KEY_HEADER_HOSTS = (".services.ai.azure.com", ".openai.azure.com")

#: OpenAI o-series models litellm 1.110.2's model map marks as taking no system message; their
#: system message is sent with role ``user`` (``OpenAIOSeriesConfig._transform_messages``).
_NO_SYSTEM_MESSAGE = frozenset({
    "o3", "o3-2025-04-16", "o3-deep-research", "o3-deep-research-2025-06-26", "o3-mini", "o3-mini-2025-01-31",
    "o3-pro", "o3-pro-2025-06-10", "o4-mini", "o4-mini-2025-04-16", "o4-mini-deep-research",
    "o4-mini-deep-research-2025-06-26",
})


@dataclass(frozen=True)
class ModelDialect:
    """Per-model changes litellm makes to an OpenAI request."""

    renames: dict[str, str] = field(default_factory=dict)
    system_role: Literal["system", "user"] = "system"


def is_openai_reasoning_model(name: str) -> bool:
    """An o-series (``o1``, ``o3-mini``, ...) or GPT-5 family name, as litellm 1.110.2 tells them apart."""
    bare = name.rsplit("/", 1)[-1]
    o_series = len(bare) > 1 and bare[0] == "o" and bare[1].isdigit()
    return o_series or bare.startswith("gpt-5")


def model_dialect(provider: str, wire_name: str) -> ModelDialect:
    """What litellm changes in a request to ``wire_name`` on ``provider`` (the model as it goes in the body)."""
    if provider != "openai" or not is_openai_reasoning_model(wire_name):
        return ModelDialect()
    bare = wire_name.rsplit("/", 1)[-1]
    return ModelDialect(renames={"max_tokens": "max_completion_tokens"},
                        system_role="user" if bare in _NO_SYSTEM_MESSAGE else "system")


def litellm_provider(custom_llm_provider: str | None, model: str) -> str:
    """The provider litellm resolves a call to: the routing hint, else the model's first segment."""
    if custom_llm_provider:
        return custom_llm_provider
    return model.split("/", 1)[0].lower() if "/" in model else ""


def wire_model_name(provider: str, model: str) -> str:
    """The model as litellm writes it into the body: one leading ``<provider>/`` stripped."""
    prefix = f"{provider}/"
    return model[len(prefix):] if provider and model.startswith(prefix) else model


def protocol_of(provider: str) -> WireProtocol:
    """``openai-chat`` for the OpenAI-compatible providers, ``litellm`` for every native protocol."""
    return "openai-chat" if provider in OPENAI_CHAT_PROVIDERS else "litellm"

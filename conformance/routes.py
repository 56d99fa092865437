"""What a plan is held to: the wire protocol, the route serving it, and the model as that route is sent it.

Conformance rules are scoped by (protocol, route, model glob), and the model a glob is matched
against is the one the provider reads on the wire, not capplan's catalogue key: OpenRouter's body
names ``anthropic/claude-opus-4.7`` (litellm and the direct transport drop one ``openrouter/``),
Anthropic's and Gemini's native routes name the bare model. Everything here is read from the
compiled plan (``wire``, ``binding.key``, ``model``), never worked out again from presets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import get_args

from capplan.conformance.corpus import PROTOCOLS, Route
from capplan.executor.mock_provider import is_mock
from capplan.executor.plan import Plan
from capplan.executor.wire_dialect import is_responses, wire_model_name

#: every route a rule may be scoped to
ROUTES: tuple[str, ...] = get_args(Route)

#: litellm's native providers that speak a protocol an emulator may speak, and the route they are
NATIVE: dict[str, tuple[str, str]] = {
    "anthropic": ("anthropic-messages", "anthropic"),
    "gemini": ("gemini-generate-content", "gemini"),
    # litellm's own providers for these vendors post OpenAI chat completions to the vendor's API
    "deepseek": ("openai-chat", "deepseek"),
    "moonshot": ("openai-chat", "moonshot"),
}

#: why every cell of a mock plan is not applicable
MOCK_REASON = "the offline mock enforces no provider's rules"


@dataclass(frozen=True)
class Target:
    """Where a plan's requests go, as the corpus scopes rules: protocol, route, model as sent."""

    protocol: str
    route: str
    model: str
    #: the transport that sends them (``direct`` or ``litellm``), for the report
    transport: str

    @property
    def speaks_known_protocol(self) -> bool:
        """Whether the protocol is one the corpus has rules for (an emulator may speak it)."""
        return self.protocol in PROTOCOLS


@dataclass(frozen=True)
class Unheld:
    """A plan no provider rule applies to, and why (the offline mock)."""

    reason: str


def target_of(plan: Plan) -> Target | Unheld:
    """The (protocol, route, model) ``plan``'s requests are held to, or why none is.

    A plan on a native litellm provider capplan has no emulator protocol for (Bedrock, Vertex,
    Cohere's own API, ...) gets the protocol ``litellm:<provider>``: the runner reports it as a
    located error ("no emulator speaks ..."), never as a silent pass.
    """
    if is_mock(plan.model.provider):
        return Unheld(MOCK_REASON)
    wire = plan.wire
    wire_model = plan.model.wire_model
    if wire is None or wire.protocol == "litellm":
        provider = wire.provider if wire is not None else wire_model.split("/", 1)[0]
        protocol, route = NATIVE.get(provider, (f"litellm:{provider}", provider))
        return Target(protocol, route, wire_model_name(provider, wire_model), "litellm")
    # an OpenAI-compatible chat route: who serves it is the binding (nova, a custom endpoint), else
    # the model's provider (openrouter, xai, azure_ai, ...), else the wire's litellm provider
    route = next((name for name in (plan.binding.key, plan.model.provider, wire.provider)
                  if name is not None and name in ROUTES), wire.provider)
    # xAI's Responses API follows OpenAI's: both are held to the openai-responses rules, each rule
    # scoped to its own route (openai or xai)
    protocol = "openai-responses" if is_responses(wire.protocol) else str(wire.protocol)
    return Target(protocol, route, wire_model_name(wire.provider, wire_model), wire.transport)

"""The spec's manual route pin through a gateway whose catalog cannot be read, through real litellm.

The gateway is a loopback OpenAI-compatible server that records each request and has no
``GET /models`` (so the catalog is unreadable and the route ``untranslated``).
"""

from __future__ import annotations

from capplan.executor.client import Client
from tests.executor.plans import make_plan
from tests.fake_provider import FakeProvider, agent

USER = {"messages": [{"role": "user", "content": "hi"}]}


def test_provider_openai_puts_the_gateways_route_name_on_the_wire() -> None:
    plan = make_plan("openai", "openrouter/anthropic/claude-opus-4.7")
    with FakeProvider(agent) as gateway:
        env = {"LLM_PROXY_BASE_URL": gateway.base, "LLM_PROXY_API_KEY": "sk-gateway-pin-test"}
        result = Client(plan, env=env).generate(USER)
        [body] = gateway.bodies()
    assert result.gateway_route_kind == "untranslated"
    assert body["model"] == "openrouter/anthropic/claude-opus-4.7"  # the recipe's wire name, nothing added


def test_a_plain_openai_model_is_sent_as_without_a_gateway() -> None:
    plan = make_plan("openai", "gpt-4o")
    with FakeProvider(agent) as gateway:
        env = {"LLM_PROXY_BASE_URL": gateway.base, "LLM_PROXY_API_KEY": "sk-gateway-pin-test"}
        Client(plan, env=env).generate(USER)
        [body] = gateway.bodies()
    assert body["model"] == "gpt-4o"

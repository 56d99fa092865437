"""A real gateway, when this environment holds its integration-test credential (see live_settings)."""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from capplan.executor.client import Client
from capplan.executor.gateway.catalog import clear_catalog_cache
from tests.executor.plans import make_plan
from tests.gateway.live_settings import LiveMisconfigured, LiveSettings, live_settings


def test_gating_is_asymmetric() -> None:
    assert live_settings({}) is None
    assert live_settings({"LLM_PROXY_INT_TEST_MODEL": "m"}) is None
    with pytest.raises(LiveMisconfigured, match="LLM_PROXY_INT_TEST_MODEL is not"):
        live_settings({"LLM_PROXY_INT_TEST_API_KEY": "k", "LLM_PROXY_BASE_URL": "http://gw"})
    with pytest.raises(LiveMisconfigured, match="neither LLM_PROXY_INT_TEST_BASE_URL nor LLM_PROXY_BASE_URL"):
        live_settings({"LLM_PROXY_INT_TEST_API_KEY": "k", "LLM_PROXY_INT_TEST_MODEL": "m"})
    with pytest.raises(LiveMisconfigured, match="LLM_PROXY_INT_TEST_PINNED_PROVIDER is not set"):
        live_settings({"LLM_PROXY_INT_TEST_API_KEY": "k", "LLM_PROXY_INT_TEST_MODEL": "m",
                       "LLM_PROXY_BASE_URL": "http://gw", "LLM_PROXY_INT_TEST_PINNED_MODEL": "a/b"})
    on = live_settings({"LLM_PROXY_INT_TEST_API_KEY": "k", "LLM_PROXY_INT_TEST_MODEL": "m",
                        "LLM_PROXY_INT_TEST_BASE_URL": "http://gw", "LLM_PROXY_BASE_URL": "http://prod"})
    assert on == LiveSettings("k", "m", "http://gw")


@pytest.fixture(scope="module")
def live() -> Iterator[LiveSettings]:
    try:
        settings = live_settings(os.environ)
    except LiveMisconfigured as exc:
        pytest.fail(str(exc), pytrace=False)
    if settings is None:
        pytest.skip("LLM_PROXY_INT_TEST_API_KEY is not set")
    clear_catalog_cache()
    yield settings
    clear_catalog_cache()


def live_env(live: LiveSettings) -> dict[str, str]:
    # the test key replaces LLM_PROXY_API_KEY, so CI spend stays on its own budget
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLM_PROXY_") or k == "LLM_PROXY_HEADERS"}
    return {**env, "LLM_PROXY_BASE_URL": live.base_url, "LLM_PROXY_API_KEY": live.api_key}


def live_client(live: LiveSettings, provider: str, name: str, **plan: Any) -> Client:
    return Client(make_plan(provider, name, **plan), env=live_env(live))


def test_transport_applied_and_billed_to_the_test_key(live: LiveSettings) -> None:
    client = live_client(live, live.provider, live.model)
    kwargs = client.build_request({"messages": [{"role": "user", "content": "hi"}]})
    assert kwargs["api_base"] == live.base_url.rstrip("/")
    assert kwargs["api_key"] == live.api_key
    assert client.route is not None and client.route.via_gateway, client.route


def test_small_completion(live: LiveSettings) -> None:
    result = live_client(live, live.provider, live.model).generate(
        {"messages": [{"role": "user", "content": "Reply with the word ok."}], "max_tokens": 256})
    assert result.text.strip()
    assert result.gateway_route_kind in ("exact", "wildcard", "untranslated")


def test_tool_call(live: LiveSettings) -> None:
    tool = {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
    result = live_client(live, live.provider, live.model).generate({
        "messages": [{"role": "user", "content": "What is the weather in Paris? Use the tool."}],
        "tools": [tool], "tool_choice": "required", "max_tokens": 256})
    assert result.tool_calls and result.tool_calls[0].name == "get_weather"


def test_pinned_upstream_is_the_one_that_served(live: LiveSettings) -> None:
    if live.pinned_model is None:
        pytest.skip("LLM_PROXY_INT_TEST_PINNED_MODEL is not set (optional)")
    client = live_client(live, "openrouter", live.pinned_model,
                         openrouter={"provider_order": [live.pinned_provider], "allow_fallbacks": False})
    result = client.generate({"messages": [{"role": "user", "content": "Reply with the word ok."}], "max_tokens": 256})
    assert result.openrouter_generation_id, "the gateway did not pass OpenRouter's generation id through"
    request = urllib.request.Request(
        f"https://openrouter.ai/api/v1/generation?id={result.openrouter_generation_id}",
        headers={"Authorization": f"Bearer {os.environ['OPENROUTER_API_KEY']}"})
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - fixed https URL
        served_by = json.load(response)["data"]["provider_name"]
    assert served_by == live.pinned_provider

"""Session fixtures for the gateway lane: fake upstreams, a real LiteLLM proxy in front of them,
and a recording tap in front of the proxy."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from capplan.executor.gateway.catalog import clear_catalog_cache
from tests.fake_provider import FakeProvider
from tests.gateway.tap import Tap
from tests.gateway.litellm_proxy import SESSION_LANE, LiteLLMProxy

MASTER_KEY = "sk-gateway-master-canary-5d1e"


@dataclass
class Gateway:
    """The running lane: ``front.base`` is what clients use as LLM_PROXY_BASE_URL."""

    proxy: LiteLLMProxy
    front: Tap
    a: FakeProvider
    b: FakeProvider
    direct: FakeProvider


def _deployment(route: str, upstream: FakeProvider, upstream_model: str) -> dict[str, object]:
    return {"model_name": route, "litellm_params": {
        "model": f"openai/{upstream_model}", "api_base": upstream.base, "api_key": "upstream-key"}}


def proxy_config(a: FakeProvider, b: FakeProvider) -> dict[str, object]:
    """The gateway's catalog: exact names, a namespace wildcard, one model under two names, an alias."""
    return {
        "model_list": [
            _deployment("openrouter/anthropic/claude-gw", a, "claude-gw-upstream"),  # exact, full engine string
            _deployment("azure_ai/cohere-gw", a, "cohere-gw-upstream"),  # exact, bare name
            _deployment("openai/gpt-gw", a, "gpt-gw-upstream"),  # exact, starts with the dialect's own prefix
            _deployment("openrouter/google/gem-gw", a, "gem-via-openrouter"),  # one model ...
            _deployment("google/gem-gw", b, "gem-via-google"),  # ... served under two names, two upstreams
            _deployment("team-default", a, "alias-upstream"),  # an alias: invisible to the resolver
            {"model_name": "moonshot/*", "litellm_params": {  # a namespace wildcard
                "model": "openai/*", "api_base": a.base, "api_key": "upstream-key"}},
        ],
        "general_settings": {"master_key": MASTER_KEY},
        "litellm_settings": {"num_retries": 0, "request_timeout": 30},
    }


def session_gateway(config: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Gateway:
    """The session's one gateway lane: started on first use, stopped when the session ends.

    It lives in the session's stash, not only in the ``gateway`` fixture, so that a test folder
    outside this one (``tests/probes``) shares this proxy instead of starting a second (10–30 s).
    """
    found: Gateway | None = config.stash.get(SESSION_LANE, None)
    if found is not None:
        return found
    folder = tmp_path_factory.mktemp("litellm_proxy")
    a, b, direct = FakeProvider(name="A").start(), FakeProvider(name="B").start(), FakeProvider(name="direct").start()
    config_file = folder / "proxy.yaml"
    # JSON is YAML: the proxy reads it with its YAML loader
    config_file.write_text(json.dumps(proxy_config(a, b), indent=2))
    proxy = LiteLLMProxy(config_file, MASTER_KEY, folder / "proxy.log")
    front: Tap | None = None

    def stop() -> None:
        proxy.stop()
        if front is not None:
            front.close()
        for upstream in (a, b, direct):
            upstream.close()

    try:
        proxy.start()
        front = Tap(proxy.base)
    except BaseException:
        stop()
        raise
    config.add_cleanup(stop)
    lane = config.stash[SESSION_LANE] = Gateway(proxy, front, a, b, direct)
    return lane


@pytest.fixture(scope="session")
def gateway(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Gateway:
    return session_gateway(pytestconfig, tmp_path_factory)


@pytest.fixture
def lane(gateway: Gateway) -> Iterator[Gateway]:
    """The session's gateway with recordings, scripts and the catalog cache reset."""
    gateway.front.reset()
    for fake in (gateway.a, gateway.b, gateway.direct):
        fake.reset(scripts=True)
    clear_catalog_cache()
    yield gateway
    clear_catalog_cache()


def proxy_log(gateway: Gateway) -> Path:
    """Where the proxy's output went (attached to failures by hand when debugging)."""
    return gateway.proxy.log_path

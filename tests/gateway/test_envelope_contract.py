"""DEFAULT_ROUTED_PROVIDERS is a claim about the installed litellm: only these providers' transports
send an OpenAI-envelope ``POST {base}/chat/completions`` with bearer auth. A litellm upgrade that
changes a transport fails here instead of posting to a route a gateway does not serve."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from capplan.executor.client import Client
from capplan.executor.gateway.config import DEFAULT_ROUTED_PROVIDERS
from tests.executor.plans import make_plan
from tests.fake_provider import FakeProvider

USER = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 16}


@pytest.fixture(scope="module")
def base() -> Iterator[FakeProvider]:
    server = FakeProvider(name="envelope").start()
    try:
        yield server
    finally:
        server.close()


KEY_VARIABLES = ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY")


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch, base: FakeProvider) -> None:
    for name in KEY_VARIABLES:
        monkeypatch.setenv(name, "sk-envelope")
    base.reset(scripts=True)


def _sent(base: FakeProvider, provider: str, name: str) -> tuple[str, dict[str, str]]:
    # the client's env holds the keys too: a binding's api_key_env is read from it, not guessed by litellm
    env = {name: "sk-envelope" for name in KEY_VARIABLES}
    client = Client(make_plan(provider, name), env=env, api_base=base.root, sleep=lambda s: None)
    try:
        client.generate(USER)
    except Exception:  # noqa: BLE001 - a non-OpenAI transport cannot parse the fake's answer; the request is what counts
        pass
    first = base.requests[0]
    return first.path.split("?")[0], first.headers


def test_default_routed_providers_are_exactly_the_openai_envelope_ones() -> None:
    assert DEFAULT_ROUTED_PROVIDERS == {"openrouter", "openai"}


@pytest.mark.parametrize(("provider", "name"), [("openai", "gpt-envelope"), ("openrouter", "vendor/envelope")])
def test_routed_providers_post_chat_completions_with_bearer_auth(base: FakeProvider, provider: str, name: str) -> None:
    path, headers = _sent(base, provider, name)
    assert path == "/chat/completions"
    assert headers["authorization"] == "Bearer sk-envelope"


@pytest.mark.parametrize(("provider", "name", "path"), [
    ("anthropic", "claude-envelope", "/v1/messages"),
    ("gemini", "gemini-envelope", "/models/gemini-envelope:generateContent"),
])
def test_native_providers_stay_off_the_openai_route(base: FakeProvider, provider: str, name: str, path: str) -> None:
    sent, _ = _sent(base, provider, name)
    assert sent != "/chat/completions"
    assert sent.endswith(path)

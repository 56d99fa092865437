"""OPENROUTER_BASE_URL / OPENROUTER_API_BASE reconciled into the call's base URL, through real litellm."""

from __future__ import annotations

import pytest

from capplan.executor.client import Client
from capplan.executor.openrouter_base import OpenRouterBaseConflict, openrouter_base_url
from tests.executor.plans import make_plan
from tests.fake_provider import FakeProvider, agent

USER = {"messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize("name", ["OPENROUTER_BASE_URL", "OPENROUTER_API_BASE"])
def test_either_variable_sends_openrouter_calls_there(name: str) -> None:
    plan = make_plan("openrouter", "vendor/model-x")
    with FakeProvider(agent) as server:
        Client(plan, env={"OPENROUTER_API_KEY": "sk-or-base-test", name: server.base}).generate(USER)
        [body] = server.bodies()
    assert body["model"] == "vendor/model-x" and body["usage"] == {"include": True}  # litellm's OpenRouter dialect


def test_two_different_urls_are_refused_before_anything_is_sent() -> None:
    plan = make_plan("openrouter", "vendor/model-x")
    with FakeProvider(agent) as server:
        env = {"OPENROUTER_API_KEY": "sk-or-base-test", "OPENROUTER_BASE_URL": server.base,
               "OPENROUTER_API_BASE": "http://127.0.0.1:9/v1"}
        with pytest.raises(OpenRouterBaseConflict, match="OPENROUTER_BASE_URL and OPENROUTER_API_BASE"):
            Client(plan, env=env).generate(USER)
        assert server.bodies() == []


def test_the_same_url_twice_is_one_setting() -> None:
    assert openrouter_base_url({"OPENROUTER_BASE_URL": "http://h/v1/", "OPENROUTER_API_BASE": "http://h/v1"}) == \
        "http://h/v1/"
    assert openrouter_base_url({}) is None

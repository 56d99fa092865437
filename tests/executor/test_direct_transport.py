"""The direct transport keeps the executor's behaviours: key rotation, per-attempt timeout, redaction, pooling.

Each behaviour is exercised against a loopback server on both transports where litellm's path
has it too, and the recorded requests are compared.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from capplan.executor import golden_wire
from capplan.executor.attempts import attempts_of
from capplan.executor.client import Client, _litellm_completion, default_completion
from capplan.executor.direct import pool
from capplan.executor.direct.sender import DirectCompletion
from capplan.executor.errors import ApiTimeoutError, MissingCredentialError, PlanInconsistencyError
from capplan.executor.plan import LoopKnobs, Plan
from tests.executor.plans import make_plan
from tests.executor.log_level import capplan_logs_at
from tests.fake_provider import FakeProvider, Reply, json_reply, unscripted

ROOT = Path(__file__).resolve().parents[2]
PLANS = {path.stem: Plan.load(path) for path in golden_wire.plan_files(ROOT)}
CONVERSATION = golden_wire.conversations(ROOT)["dict_map_tools"]
OK = json_reply({"id": "c", "object": "chat.completion", "created": 1, "model": "m",
                  "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
                  "usage": {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10}})


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProvider]:
    with FakeProvider(unscripted) as srv:
        yield srv


@pytest.fixture(scope="module")
def litellm_completion() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    return _litellm_completion()


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    with capplan_logs_at(logging.CRITICAL):
        yield


def _both(plan: Plan, env: dict[str, str], base: str, completion: Any) -> dict[str, Client]:
    return {"direct": Client(plan, env=env, api_base=base, sleep=lambda s: None),
            "litellm": Client(plan, env=env, api_base=base, completion=completion, sleep=lambda s: None)}


def test_a_spent_key_moves_to_the_next_on_both_transports(server: FakeProvider, litellm_completion: Any) -> None:
    env = {"OPENROUTER_API_KEYS": "sk-or-first,sk-or-second"}
    spent = json_reply({"error": {"message": "Key limit exceeded (daily limit)", "code": 429}}, 429)
    seen: dict[str, list[str]] = {}
    for name, client in _both(PLANS["kimi-k3"], env, server.base, litellm_completion).items():
        server.script(spent, OK)
        result = client.generate(CONVERSATION)
        assert result.text == "ok" and result.key_index == 1
        seen[name] = [r.headers["authorization"] for r in server.requests]
    assert seen["direct"] == seen["litellm"] == ["Bearer sk-or-first", "Bearer sk-or-second"]


def test_a_slow_attempt_times_out_and_is_retried_as_on_litellm(server: FakeProvider, litellm_completion: Any,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # the plan's per-attempt timeout, cut to 0.2 s: three attempts (two timeout retries), then ApiTimeoutError
    monkeypatch.setenv("OPENAI_API_KEY", "sk-oa-slow")  # the openai SDK under litellm reads the process environment
    plan = PLANS["gpt-4o"].model_copy(update={"loop": LoopKnobs(api_call_timeout_s=0.2)})
    outcomes: dict[str, tuple[int, list[str | None]]] = {}
    for name, client in _both(plan, {"OPENAI_API_KEY": "sk-oa-slow"}, server.base, litellm_completion).items():
        released = threading.Event()  # each answer comes only once the client has timed out on all three
        server.script(*[Reply(raw=OK.raw, held_until=released)] * 3)
        try:
            with pytest.raises(ApiTimeoutError) as raised:
                client.generate(CONVERSATION)
        finally:
            released.set()
        outcomes[name] = (len(server.requests), [a.error_class for a in attempts_of(raised.value)])
    assert outcomes["direct"] == outcomes["litellm"] == (3, ["timeout"] * 3)


def test_an_error_body_that_echoes_the_key_is_redacted(server: FakeProvider) -> None:
    key = "sk-or-echoed-secret-1234567890"
    client = Client(PLANS["kimi-k3"], env={"OPENROUTER_API_KEY": key}, api_base=server.base, sleep=lambda s: None)
    server.script(json_reply({"error": {"message": f"invalid key {key}", "code": 401}}, 401))
    with pytest.raises(Exception) as raised:
        client.generate(CONVERSATION)
    assert key not in str(raised.value) and "invalid key" in str(raised.value)
    assert server.requests[0].headers["authorization"] == f"Bearer {key}"  # sent, never shown


@pytest.mark.fast_side
def test_calls_share_one_kept_alive_connection() -> None:
    # a server of its own: the module's server's origin may have its sender made by a test in the reference mode
    with FakeProvider(unscripted) as server:
        client = Client(PLANS["gpt-4o"], env={"OPENAI_API_KEY": "sk-oa-pool"}, api_base=server.base,
                        sleep=lambda s: None)
        server.script(OK, OK, OK)
        for _ in range(3):
            client.generate(CONVERSATION)
        assert pool.sender_for(server.base) is pool.sender_for(server.base + "/other/path")  # one pool per origin
        assert len({r.client_port for r in server.requests}) == 1  # the three calls shared one connection
        assert pool.idle_connections(server.base) == 1


def test_a_route_without_default_endpoint_names_the_variable_to_set(server: FakeProvider) -> None:
    client = Client(PLANS["cohere-command-a-plus"], env={"AZURE_AI_API_KEY": "sk-az"}, sleep=lambda s: None)
    with pytest.raises(MissingCredentialError, match="AZURE_AI_API_BASE"):
        client.generate(CONVERSATION)


def test_a_plan_without_a_wire_record_goes_through_litellm() -> None:
    plan = make_plan("openai", "gpt-old")
    assert plan.wire is None
    assert Client(plan, env={"OPENAI_API_KEY": "k"}).direct is None
    assert not isinstance(default_completion(plan), DirectCompletion)


def test_the_direct_sender_refuses_a_native_route() -> None:
    with pytest.raises(PlanInconsistencyError, match="transport: litellm"):
        DirectCompletion(PLANS["claude-opus-4.7"], {})


def test_an_unset_route_key_is_refused_before_anything_is_sent(server: FakeProvider,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    client = Client(PLANS["gpt-4o"], env={}, api_base=server.base, sleep=lambda s: None)
    server.script(OK)
    with pytest.raises(MissingCredentialError, match="OPENAI_API_KEY is not set"):
        client.generate(CONVERSATION)
    assert server.requests == []


def test_a_refused_call_names_the_route_key_variable_without_asking_litellm() -> None:
    from capplan.executor.preflight import configuration_advice

    client = Client(PLANS["gpt-4o"], env={"OPENAI_API_KEY": "sk-oa"})
    assert "check OPENAI_API_KEY, the endpoint and the model name" in configuration_advice(client)

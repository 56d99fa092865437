"""The direct transport sends what litellm sends: every golden conversation × every openai-chat plan × each call variant.

Both transports send the same built request for the same plan to one loopback server, which
records method, path, headers and body. Compared: method, path, the body as parsed JSON, and
every header except those that describe the sender rather than the request (``user-agent``,
the openai SDK's ``x-stainless-*`` telemetry, ``accept-encoding``, which depends on the
compression packages installed) and the connection's own (``host``, ``content-length``,
``connection``). Every other difference fails, except the rows of ``docs/deviations.md`` this
module names (:data:`LITELLM_REFUSES`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from capplan.core.errors import UserError
from capplan.executor import golden_wire
from capplan.executor.client import Client, _litellm_completion
from capplan.executor.messages import ChatRequest
from capplan.executor.plan import Plan
from tests.chat_route import chat_route_plans
from tests.executor.log_level import capplan_logs_at
from tests.fake_provider import FakeProvider, Request, json_reply, serving_with_keys

ROOT = Path(__file__).resolve().parents[2]

KEYS = {
    "OPENROUTER_API_KEY": "sk-or-wire", "OPENAI_API_KEY": "sk-oa-wire", "XAI_API_KEY": "sk-x-wire",
    "AZURE_AI_API_KEY": "sk-az-wire", "NOVA_API_KEY": "sk-nova-wire",
}

#: headers that say who sent the request, not what it asks
SENDER_HEADERS = frozenset({"user-agent", "accept-encoding", "host", "content-length", "connection"})

#: (plan, conversation, variant) litellm refuses before sending, from its own model map, while the
#: direct transport sends the request as built (docs/deviations.md, "litellm's per-call parameter check")
LITELLM_REFUSES = {
    # reasoning_effort on a model litellm's map says has no reasoning
    *{("gpt-4o", "summary_replay", variant) for variant in ("as_built", "parallel_off", "max_tokens")},
    # parallel_tool_calls on an o-series model
    ("o3", "dict_map_tools", "parallel_off"),
}

ANSWER = {
    "id": "chatcmpl-w", "object": "chat.completion", "created": 1767225600, "model": "m",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
    "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
}


def _openai_chat_plans() -> list[Plan]:
    # the catalogue on chat completions: gpt-5, o3 and Grok 4.6 keep their chat dialect (the renames,
    # o3's system message) for deployments that stay there; their Responses route is proven in
    # tests/executor/test_direct_responses_wire_identity.py
    return [p for p in chat_route_plans().values() if p.wire is not None and p.wire.protocol == "openai-chat"]


PLANS = _openai_chat_plans()
CONVERSATIONS = golden_wire.conversations(ROOT)


#: the conversations the call variants are sent for (every conversation is sent as built): one with
#: tools and one with reasoning; the variants change settings, which no other conversation reaches differently
VARIANT_CONVERSATIONS = ("dict_map_tools", "summary_replay")


def _variants(request: ChatRequest, name: str) -> dict[str, ChatRequest]:
    """The call variants: the conversation as built, and with the settings a run or a task changes."""
    if name not in VARIANT_CONVERSATIONS:
        return {"as_built": request}
    out = {"as_built": request, "max_tokens": request.model_copy(update={"max_tokens": 333})}
    if request.tools:
        out["tool_choice_required"] = request.model_copy(update={"tool_choice": "required"})
        out["parallel_off"] = request.model_copy(update={"parallel_tool_calls": False})
    else:
        out["parallel_off"] = request
    return out


CASES = [
    pytest.param(plan, name, variant, id=f"{plan.model.key}-{name}-{variant}")
    for plan in PLANS for name, conversation in CONVERSATIONS.items() for variant in _variants(conversation, name)
]


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProvider]:
    with serving_with_keys(KEYS) as srv:  # litellm's own routes read os.environ
        yield srv


@pytest.fixture(scope="module")
def litellm_completion() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    return _litellm_completion()


@pytest.fixture
def _quiet() -> Iterator[None]:
    # a seed or temperature a plan does not send is logged once per plan; it is not this test's subject
    with capplan_logs_at(logging.ERROR):
        yield


def _sent(server: FakeProvider, client: Client, request: ChatRequest) -> Request | BaseException:
    server.script(json_reply(ANSWER))
    try:
        client.generate(request)
    except Exception as exc:  # noqa: BLE001 - a refusal is compared, not raised
        return exc
    assert len(server.requests) == 1, "one attempt, one request"
    return server.requests[0]


_CLIENTS: dict[tuple[str, str], tuple[Client, Client]] = {}


def _clients(plan: Plan, server: FakeProvider, completion: Any) -> tuple[Client, Client]:
    """(direct, via litellm) for ``plan``, made once per plan: a client serves any number of calls."""
    key = (plan.model.key, server.base)
    if key not in _CLIENTS:
        _CLIENTS[key] = (Client(plan, env=dict(KEYS), api_base=server.base, sleep=lambda s: None),
                         Client(plan, env=dict(KEYS), api_base=server.base, completion=completion, sleep=lambda s: None))
    return _CLIENTS[key]


def _comparable(seen: Request) -> dict[str, Any]:
    headers = {k: v for k, v in seen.headers.items() if k not in SENDER_HEADERS and not k.startswith("x-stainless-")}
    return {"method": seen.method, "path": seen.path, "headers": headers, "body": seen.body}


def test_every_openai_chat_route_of_the_catalogue_is_compared() -> None:
    # OpenRouter, OpenAI (and nova's OpenAI-dialect endpoint), xAI and Azure AI speak openai-chat; the
    # native Anthropic and Gemini routes and the offline mock do not, and are not compared here
    every = list(chat_route_plans().values())
    assert {p.model.key for p in every} == {Plan.load(path).model.key for path in golden_wire.plan_files(ROOT)}
    native = {p.model.key for p in every if p.model.provider.split("/")[0] in ("anthropic", "gemini", "mock")}
    assert {p.model.key for p in PLANS} == {p.model.key for p in every} - native
    assert {p.wire.provider for p in PLANS if p.wire is not None} == {"openai", "openrouter", "xai", "azure_ai"}
    assert all(p.wire is not None and p.wire.transport == "direct" for p in PLANS)
    assert all(p.wire is not None and p.wire.protocol == "litellm" for p in every if p.model.key in native)


@pytest.mark.usefixtures("_quiet")
@pytest.mark.parametrize(("plan", "conversation", "variant"), CASES)
def test_direct_request_equals_litellms(server: FakeProvider, litellm_completion: Any, plan: Plan,
                                        conversation: str, variant: str) -> None:
    request = _variants(CONVERSATIONS[conversation], conversation)[variant]
    direct, via_litellm = _clients(plan, server, litellm_completion)
    assert direct.direct is not None and via_litellm.direct is None
    try:
        direct.build(request)
    except UserError:
        return  # the plan refuses the conversation while building: nothing goes out on either transport
    theirs = _sent(server, via_litellm, request)
    ours = _sent(server, direct, request)
    assert isinstance(ours, Request), f"direct transport failed: {ours!r}"
    if (plan.model.key, conversation, variant) in LITELLM_REFUSES:
        assert type(theirs).__name__ == "UnsupportedParamsError", theirs
        return
    assert isinstance(theirs, Request), f"litellm failed where no deviation is documented: {theirs!r}"
    assert _comparable(ours) == _comparable(theirs)


def test_the_documented_refusals_still_happen() -> None:
    # an entry that no longer occurs must leave LITELLM_REFUSES and docs/deviations.md
    keys = {p.model.key for p in PLANS}
    for key, conversation, variant in LITELLM_REFUSES:
        assert key in keys and conversation in CONVERSATIONS
        assert variant in _variants(CONVERSATIONS[conversation], conversation)


GATEWAY_PLANS = ["kimi-k3", "claude-opus-4.7-openrouter", "gpt-5", "o3", "gpt-4o"]


@pytest.mark.usefixtures("_quiet")
@pytest.mark.parametrize("catalog", ["exact", "untranslated"])
@pytest.mark.parametrize("key", GATEWAY_PLANS)
def test_through_a_gateway_direct_sends_what_litellm_sends(server: FakeProvider, litellm_completion: Any,
                                                           key: str, catalog: str) -> None:
    from capplan.executor.gateway.catalog import clear_catalog_cache
    from capplan.executor.gateway.config import GatewayConfig

    plan = next(p for p in PLANS if p.model.key == key)
    clear_catalog_cache()
    server.catalog = [plan.model.model_id] if catalog == "exact" else []
    config = GatewayConfig(base_url=server.base, api_key="sk-gateway-wire", headers={"X-Team-Token": "team-7"},
                           request_id_header="X-Request-Id")
    try:
        direct = Client(plan, env=dict(KEYS), gateway=config, sleep=lambda s: None)
        via_litellm = Client(plan, env=dict(KEYS), gateway=config, completion=litellm_completion, sleep=lambda s: None)
    finally:
        server.catalog = []
    assert direct.route is not None and direct.route.kind == catalog
    request = CONVERSATIONS["dict_map_tools"]
    theirs, ours = _sent(server, via_litellm, request), _sent(server, direct, request)
    assert isinstance(theirs, Request) and isinstance(ours, Request), (theirs, ours)
    # the request id is a fresh UUID4 per request on either transport
    assert ours.headers.pop("x-request-id") != theirs.headers.pop("x-request-id")
    assert ours.headers["authorization"] == "Bearer sk-gateway-wire"
    assert _comparable(ours) == _comparable(theirs)

"""The Responses route through a real LiteLLM proxy; key rotation and the proxy's refusals on a Responses plan.

The lane: capplan (direct transport or ``transport: litellm``) → a recording tap → a real LiteLLM
proxy (``litellm --config``) → a recording tap → the strict loopback Responses emulator. Capplan
is pointed at the proxy the way users do it (``LLM_PROXY_BASE_URL`` and ``LLM_PROXY_API_KEY``);
the proxy's deployments point at the emulator with their own upstream key. The front tap shows
what the gateway received, the upstream tap what it forwarded (and with which key), and the
emulator holds every request to the corpus's Responses rules, so a replayed reasoning item the
proxy reordered, dropped or edited is answered with the provider's error.

What the proxy (litellm 1.110.2) does to a Responses call, as the tests below pin it:

- the request body reaches the upstream with every field capplan sent unchanged (``store``,
  ``include``, ``reasoning``, ``instructions``, function tools with ``strict``, and the input items
  with their ``id``, ``call_id`` and ``encrypted_content``); only ``model`` becomes the
  deployment's upstream name;
- the answer's output items come back with their ids and encrypted payloads unchanged (the proxy
  adds ``null`` fields of its own schema to them), and the answer's ``id`` is replaced by the
  proxy's own routing id. With ``store: false`` no request names a previous response, so the
  rewritten id breaks nothing a replay needs.

The proxy takes 20–40 s to start: one proxy serves the whole module.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from capplan.conformance.corpus import load_corpus
from capplan.conformance.emulator import Reply
from capplan.conformance.emulators.openai_responses import ResponsesEmulator
from capplan.executor.client import Client
from capplan.executor.errors import GatewayRejectedError
from capplan.executor.gateway.catalog import clear_catalog_cache
from capplan.executor.loop_errors import LoopErrorReason
from capplan.executor.messages import ReasoningIn
from capplan.executor.plan import Plan
from capplan.executor.result import GenerationResult
from tests.gateway.litellm_proxy import LiteLLMProxy
from tests.gateway.tap import Tap
from tests.cli_runner import invoke

ROOT = Path(__file__).resolve().parents[2]
MASTER_KEY = "sk-responses-gateway-master-7c2a"
UPSTREAM_KEY = "sk-responses-upstream-41d0"
FIRST_KEY = "sk-rotation-first-0001"
SECOND_KEY = "sk-rotation-second-0002"
ENCRYPTED = "reasoning.encrypted_content"

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
REQUEST: dict[str, Any] = {
    "system": "You are terse.", "messages": [{"role": "user", "content": "Weather in Paris?"}], "tools": TOOLS,
    "reasoning": {"mode": "adaptive", "effort_hint": "low"},
}
#: the corpus rules a replayed reasoning item is held to on OpenAI's route
REPLAY_RULES = {"responses.reasoning_without_following_item", "responses.function_call_without_reasoning",
                "responses.encrypted_content_unverified", "responses.reasoning_item_not_persisted"}
SCRIPT = (Reply(tool_calls=(("get_weather", {"city": "Paris"}),)), Reply(text="It is 15C in Paris."))

#: plan key -> (the name the proxy serves it under, the deployment's upstream model, emulator route)
DEPLOYMENTS = {
    "gpt-5": ("openai/gpt-5", "openai/gpt-5", "openai"),  # the full model string: an exact hit
    "o3": ("o3", "openai/o3", "openai"),  # the bare name: the resolver's second candidate
    "grok-4.6": ("xai/grok-4.6", "xai/grok-4.6", "xai"),  # xAI's Responses route, routed when named
}
#: what each plan's request names as its model on the way into the gateway, and on the way out
GATEWAY_MODEL = {"gpt-5": "openai/gpt-5", "o3": "o3", "grok-4.6": "xai/grok-4.6"}
UPSTREAM_MODEL = {"gpt-5": "gpt-5", "o3": "o3", "grok-4.6": "grok-4.6"}


@dataclass
class ResponsesLane:
    """The running lane; ``front.base`` is what clients use as LLM_PROXY_BASE_URL."""

    proxy: LiteLLMProxy
    front: Tap
    upstreams: dict[str, Tap]  # emulator route -> the tap in front of that route's emulator
    emulators: dict[str, ResponsesEmulator]


def proxy_config(upstreams: Mapping[str, Tap]) -> dict[str, Any]:
    return {
        "model_list": [
            {"model_name": served, "litellm_params": {
                "model": upstream_model, "api_base": upstreams[route].base + "/v1", "api_key": UPSTREAM_KEY}}
            for served, upstream_model, route in DEPLOYMENTS.values()
        ],
        "general_settings": {"master_key": MASTER_KEY},
        # no retries, and no cooldown after a scripted 429: each test's outcome is its own
        "litellm_settings": {"num_retries": 0, "request_timeout": 30},
        "router_settings": {"disable_cooldowns": True},
    }


@pytest.fixture(scope="module")
def responses_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ResponsesLane]:
    folder = tmp_path_factory.mktemp("responses_proxy")
    rules = load_corpus().rules
    emulators: dict[str, ResponsesEmulator] = {}
    upstreams: dict[str, Tap] = {}
    proxy: LiteLLMProxy | None = None
    front: Tap | None = None
    try:
        for route in ("openai", "xai"):
            emulator = ResponsesEmulator(rules, route=route)
            emulator.start()
            emulators[route] = emulator
            upstreams[route] = Tap(emulator.base_url)
        config = folder / "proxy.yaml"
        config.write_text(json.dumps(proxy_config(upstreams), indent=2))  # JSON is YAML to the proxy
        proxy = LiteLLMProxy(config, MASTER_KEY, folder / "proxy.log")
        proxy.start()
        front = Tap(proxy.base)
        yield ResponsesLane(proxy, front, upstreams, emulators)
    finally:
        if proxy is not None:
            proxy.stop()
        if front is not None:
            front.close()
        for tap in upstreams.values():
            tap.close()
        for emulator in emulators.values():
            emulator.stop()


@pytest.fixture
def lane(responses_gateway: ResponsesLane) -> Iterator[ResponsesLane]:
    """The module's lane with every recording, script and refusal reset, and the catalog cache cleared."""
    taps = [responses_gateway.front, *responses_gateway.upstreams.values()]
    for tap in taps:
        tap.reset()
    for emulator in responses_gateway.emulators.values():
        emulator.exchanges.clear()
        emulator.script(SCRIPT)
    clear_catalog_cache()
    yield responses_gateway
    clear_catalog_cache()


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    # rotation and fallback warnings are asserted through the wire, not the log
    logger = logging.getLogger("capplan")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    yield
    logger.setLevel(level)


def bundled_plan(key: str, transport: str, **binding: Any) -> Plan:
    """The bundled plan as compiled (``golden/plans``), sent by ``transport``, with binding fields changed."""
    plan = Plan.load(ROOT / "golden" / "plans" / f"{key}.json")
    body = plan.body()
    assert body["wire"]["protocol"] in ("openai-responses", "xai-responses")
    body["wire"] = {**body["wire"], "transport": transport}
    if binding:
        body["binding"]["binding"] = {**body["binding"]["binding"], **binding}
    return Plan.seal(body)


def gateway_env(lane: ResponsesLane, **extra: str) -> dict[str, str]:
    return {"LLM_PROXY_BASE_URL": lane.front.base, "LLM_PROXY_API_KEY": MASTER_KEY,
            "LLM_PROXY_PROVIDERS": "openai,xai", "LLM_PROXY_HEADERS": json.dumps({"X-Team-Id": "research"}),
            "LLM_PROXY_REQUEST_ID_HEADER": "X-Request-Id", **extra}


def tool_loop(client: Client, *, follow_up: bool = False) -> tuple[GenerationResult, GenerationResult]:
    """Two steps: the model calls the tool; its result goes back with the step's reasoning replayed.

    With ``follow_up`` a third request follows the final answer (its reasoning replayed before the
    assistant message it preceded, and a new user turn).
    """
    first = client.generate(REQUEST)
    assert len(first.tool_calls) == 1 and first.reasoning is not None, first
    call = first.tool_calls[0]
    history = [
        *REQUEST["messages"],
        {"role": "assistant", "content": first.text,
         "tool_calls": [{"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.raw_arguments}}],
         "reasoning": ReasoningIn.from_structured(first.reasoning).model_dump(mode="json")},
        {"role": "tool", "tool_call_id": call.id, "content": "15C"},
    ]
    second = client.generate({**REQUEST, "messages": history})
    if follow_up:
        assert second.reasoning is not None
        history += [
            {"role": "assistant", "content": second.text,
             "reasoning": ReasoningIn.from_structured(second.reasoning).model_dump(mode="json")},
            {"role": "user", "content": "And tomorrow?"},
        ]
        client.generate({**REQUEST, "messages": history})
    return first, second


def items(body: Any) -> list[dict[str, Any]]:
    return [item for item in body["input"] if isinstance(item, dict)]


def assert_replayed_before_its_call(first_answer: Mapping[str, Any], second_request: Mapping[str, Any]) -> None:
    """The second request carries step 1's reasoning item, payload intact, right before its function_call."""
    [reasoning] = [o for o in first_answer["output"] if o["type"] == "reasoning"]
    [call] = [o for o in first_answer["output"] if o["type"] == "function_call"]
    assert reasoning["encrypted_content"]  # the answer carried a payload: include reached the provider
    sent = items(second_request)
    at = next(i for i, item in enumerate(sent) if item.get("type") == "reasoning")
    assert sent[at]["id"] == reasoning["id"]
    assert sent[at]["encrypted_content"] == reasoning["encrypted_content"]
    follower = sent[at + 1]
    assert (follower["type"], follower["id"], follower["call_id"]) == ("function_call", call["id"], call["call_id"])
    assert sent[at + 2] == {"type": "function_call_output", "call_id": call["call_id"], "output": "15C"}


def without_model(body: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k != "model"}


# --- the tool loop through the proxy ---------------------------------------------------------------

@pytest.mark.parametrize("transport", ["direct", "litellm"])
@pytest.mark.parametrize("key", list(DEPLOYMENTS))
def test_tool_loop_replays_encrypted_reasoning_through_the_proxy(lane: ResponsesLane, key: str, transport: str) -> None:
    route = DEPLOYMENTS[key][2]
    client = Client(bundled_plan(key, transport), env=gateway_env(lane))
    decision = client.route
    assert decision is not None and (decision.kind, decision.route) == ("exact", DEPLOYMENTS[key][0])

    first, second = tool_loop(client, follow_up=True)

    for result in (first, second):
        assert (result.gateway_route_kind, result.gateway_route) == (decision.kind, decision.route)
    assert second.text == "It is 15C in Paris." and second.reasoning_left_out == ()

    # capplan → gateway: two Responses requests with the gateway's key, never a provider key
    sent = lane.front.posts()
    assert [p.path for p in sent] == ["/responses"] * 3
    assert {p.bearer for p in sent} == {MASTER_KEY}
    assert {p.headers["x-team-id"] for p in sent} == {"research"}
    assert len({p.headers["x-request-id"] for p in sent}) == 3  # a fresh id per request
    assert {p.body["model"] for p in sent} == {GATEWAY_MODEL[key]}
    assert all(p.status == 200 for p in sent)

    # gateway → provider: the same requests, with the deployment's own key
    forwarded = lane.upstreams[route].posts()
    assert [p.path for p in forwarded] == ["/v1/responses"] * 3
    assert {p.bearer for p in forwarded} == {UPSTREAM_KEY}

    # the emulator accepted both, held to the replay rules (the corpus scopes them to OpenAI's
    # route; on xAI's the replay is checked by its shape below)
    exchanges = lane.emulators[route].exchanges
    assert [(x.path, x.status, x.violations) for x in exchanges] == [("/v1/responses", 200, ())] * 3
    if route == "openai":
        assert REPLAY_RULES <= set(exchanges[1].rules)
    for exchange in exchanges:
        assert exchange.body["store"] is False and exchange.body["include"] == [ENCRYPTED]
        assert exchange.model == UPSTREAM_MODEL[key]
    assert_replayed_before_its_call(exchanges[0].answer, exchanges[1].body)
    # the final answer's reasoning goes back right before the assistant message it preceded
    [reasoning, message] = exchanges[1].answer["output"]
    third = items(exchanges[2].body)
    at = next(i for i, item in enumerate(third) if item.get("id") == reasoning["id"])
    assert third[at]["encrypted_content"] == reasoning["encrypted_content"]
    assert (third[at + 1]["role"], third[at + 1]["id"]) == ("assistant", message["id"])
    assert third[-1]["role"] == "user"

    # what the proxy does to the body: nothing but the model name
    for into, out in zip(sent, (x.body for x in exchanges), strict=True):
        assert without_model(into.body) == without_model(out)
    # ... and to the answer: the output items keep their ids and payloads; the response id is the proxy's
    for into, exchange in zip(sent, exchanges, strict=True):
        provider_items = exchange.answer["output"]
        client_items = into.answer["output"]
        assert [(i["type"], i["id"]) for i in client_items] == [(i["type"], i["id"]) for i in provider_items]
        assert [i.get("encrypted_content") for i in client_items] == [i.get("encrypted_content") for i in provider_items]
        for theirs, ours in zip(provider_items, client_items, strict=True):
            assert all(ours.get(k) == v for k, v in theirs.items() if v is not None)  # nothing set is changed
            assert all(v is None for k, v in ours.items() if k not in theirs)  # what it adds is null
        assert into.answer["id"] != exchange.answer["id"] and into.answer["id"].startswith("resp_")


@pytest.mark.parametrize("transport", ["direct", "litellm"])
def test_unreadable_catalog_keeps_the_gateway_for_a_responses_plan(lane: ResponsesLane, transport: str) -> None:
    # o3 is served under its bare name, which is what an untranslated openai/o3 becomes on the wire
    lane.front.refuse_catalog = True
    client = Client(bundled_plan("o3", transport), env=gateway_env(lane))
    assert client.route is not None and client.route.kind == "untranslated"
    first, second = tool_loop(client)
    assert (second.gateway_route_kind, second.gateway_route) == ("untranslated", "openai/o3")
    assert [(p.path, p.body["model"], p.bearer) for p in lane.front.posts()] == [("/responses", "o3", MASTER_KEY)] * 2
    exchanges = lane.emulators["openai"].exchanges
    assert [(x.status, x.violations) for x in exchanges] == [(200, ())] * 2
    assert_replayed_before_its_call(exchanges[0].answer, exchanges[1].body)


@pytest.mark.parametrize("transport", ["direct", "litellm"])
def test_a_provider_off_the_allow_list_goes_direct_without_the_gateway_key(lane: ResponsesLane, transport: str) -> None:
    # the gateway is configured but routes only xAI: gpt-5 goes to its provider (here the binding's
    # endpoint, the emulator) with the provider's key; the gateway's key and headers stay home
    provider = lane.upstreams["openai"]
    plan = bundled_plan("gpt-5", transport, endpoint=provider.base + "/v1", api_key_env="OPENAI_API_KEY")
    client = Client(plan, env=gateway_env(lane, LLM_PROXY_PROVIDERS="xai", OPENAI_API_KEY=FIRST_KEY))
    assert client.route is not None and client.route.kind == "direct"
    first, second = tool_loop(client)
    assert (second.gateway_route_kind, second.gateway_route) == ("direct", None)
    assert not lane.front.passages  # not even a catalog read
    calls = provider.posts()
    assert [(p.path, p.bearer) for p in calls] == [("/v1/responses", FIRST_KEY)] * 2
    assert not any("x-team-id" in p.headers or "x-request-id" in p.headers for p in calls)
    exchanges = lane.emulators["openai"].exchanges
    assert [(x.status, x.violations) for x in exchanges] == [(200, ())] * 2
    assert_replayed_before_its_call(exchanges[0].answer, exchanges[1].body)


# --- key rotation on a Responses plan --------------------------------------------------------------

def spent(status: int) -> tuple[int, dict[str, Any]]:
    """A provider's answer to a key that hit its own limit (the texts capplan's rotation reads)."""
    message = "Key limit exceeded (daily limit)" if status == 429 else "This request requires more credits"
    return status, {"error": {"message": message, "type": "insufficient_quota", "code": status}}


@pytest.mark.parametrize("status", [429, 402])
@pytest.mark.parametrize("transport", ["direct", "litellm"])
def test_a_spent_key_rotates_to_the_next_with_the_same_body(responses_emulator: tuple[ResponsesEmulator, Tap],
                                                            transport: str, status: int) -> None:
    emulator, provider = responses_emulator
    provider.refuse[FIRST_KEY] = spent(status)
    plan = bundled_plan("gpt-5", transport, api_keys_env="OPENAI_API_KEYS")
    client = Client(plan, env={"OPENAI_API_KEYS": f"{FIRST_KEY},{SECOND_KEY}"}, api_base=provider.base + "/v1",
                    sleep=lambda s: None)

    first, second = tool_loop(client)

    assert first.key_index == 1 and second.key_index == 1
    calls = provider.posts()
    assert [(p.path, p.bearer, p.refused) for p in calls] == [
        ("/v1/responses", FIRST_KEY, True), ("/v1/responses", SECOND_KEY, False), ("/v1/responses", SECOND_KEY, False)]
    assert calls[1].body == calls[0].body  # the rotated attempt resends the request unchanged
    assert [a.status for a in first.attempts][-1] == "ok" and len(first.attempts) == 2
    exchanges = emulator.exchanges
    assert [(x.status, x.violations) for x in exchanges] == [(200, ())] * 2
    assert_replayed_before_its_call(exchanges[0].answer, exchanges[1].body)


@pytest.mark.parametrize("transport", ["direct", "litellm"])
def test_a_refused_key_is_not_rotated_past(responses_emulator: tuple[ResponsesEmulator, Tap], transport: str) -> None:
    # rotation is for a key that hit its own limit; a key the provider does not accept is a
    # configuration error to report, not a reason to spend the next key
    emulator, provider = responses_emulator
    provider.refuse[FIRST_KEY] = (401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                                                  "code": "invalid_api_key"}})
    plan = bundled_plan("gpt-5", transport, api_keys_env="OPENAI_API_KEYS")
    client = Client(plan, env={"OPENAI_API_KEYS": f"{FIRST_KEY},{SECOND_KEY}"}, api_base=provider.base + "/v1",
                    sleep=lambda s: None)
    with pytest.raises(Exception, match="Incorrect API key") as raised:
        client.generate(REQUEST)
    assert FIRST_KEY not in str(raised.value)
    assert [p.bearer for p in provider.posts()] == [FIRST_KEY]
    assert not emulator.exchanges


@pytest.mark.parametrize("transport", ["direct", "litellm"])
def test_a_pinned_gateway_key_is_not_rotated_on_a_responses_plan(lane: ResponsesLane, transport: str) -> None:
    # the provider turns the gateway's upstream key away as spent; capplan's rotation keys are not in play
    lane.upstreams["openai"].refuse[UPSTREAM_KEY] = spent(429)
    plan = bundled_plan("gpt-5", transport, api_keys_env="OPENAI_API_KEYS")
    client = Client(plan, env=gateway_env(lane, OPENAI_API_KEYS=f"{FIRST_KEY},{SECOND_KEY}"), sleep=lambda s: None)
    assert client.keys is None
    with pytest.raises(GatewayRejectedError, match="pinned LLM_PROXY_API_KEY") as raised:
        client.generate(REQUEST)
    assert "Key limit exceeded" in str(raised.value.__cause__)  # the provider's reason survives the proxy
    sent = lane.front.posts()
    assert [(p.path, p.bearer, p.status) for p in sent] == [("/responses", MASTER_KEY, 429)]
    assert [p.bearer for p in lane.upstreams["openai"].posts()] == [UPSTREAM_KEY]
    assert not lane.emulators["openai"].exchanges


@pytest.fixture
def responses_emulator() -> Iterator[tuple[ResponsesEmulator, Tap]]:
    """A provider without a gateway: the strict emulator behind a tap that can turn keys away."""
    emulator = ResponsesEmulator(load_corpus().rules, route="openai", script=SCRIPT)
    emulator.start()
    provider: Tap | None = None
    try:
        provider = Tap(emulator.base_url)
        yield emulator, provider
    finally:
        if provider is not None:
            provider.close()
        emulator.stop()


# --- the proxy's refusals on the Responses endpoint ---------------------------------------------------

@pytest.mark.parametrize("transport", ["direct", "litellm"])
@pytest.mark.parametrize(("case", "problem"), [
    ("unserved", "the gateway serves no model of this name"),
    ("upstream_key", "credentials refused (HTTP 401)"),
    ("gateway_key", "gateway key refused"),
])
def test_a_proxy_refusal_on_the_responses_endpoint_is_a_configuration_error(
        lane: ResponsesLane, transport: str, case: str, problem: str) -> None:
    # the proxy answers /responses with the words capplan's failure rules read on chat: the trial is
    # excluded as misconfigured after one attempt, never retried as if the provider were busy
    env = gateway_env(lane)
    if case == "unserved":  # untranslated, gpt-5 goes out as "gpt-5", which the proxy does not serve
        lane.front.refuse_catalog = True
    elif case == "upstream_key":
        lane.upstreams["openai"].refuse[UPSTREAM_KEY] = (401, {"error": {
            "message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}})
    else:
        env["LLM_PROXY_API_KEY"] = "sk-not-the-master-key-0000"
    client = Client(bundled_plan("gpt-5", transport), env=env, sleep=lambda s: None)
    with pytest.raises(Exception) as raised:
        client.generate(REQUEST)
    decision = client.classify_loop_error(raised.value)
    assert decision.reason is LoopErrorReason.CONFIGURATION_ERROR and decision.excluded
    assert decision.problem is not None and problem in decision.problem
    [sent] = lane.front.posts()
    assert sent.path == "/responses" and sent.status in (400, 401)
    assert len(lane.upstreams["openai"].posts()) == (1 if case == "upstream_key" else 0)
    assert not lane.emulators["openai"].exchanges


def test_preview_shows_the_routed_responses_request(lane: ResponsesLane, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in gateway_env(lane).items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    plan_file = tmp_path / "gpt-5.json"
    plan_file.write_bytes(bundled_plan("gpt-5", "direct").to_bytes())
    request = tmp_path / "r.json"
    request.write_text(json.dumps(REQUEST))
    out = invoke("preview", "--plan", str(plan_file), str(request), "--format", "json")
    assert out.exit_code == 0, out.output
    kwargs = json.loads(out.output)
    # the Responses request, addressed to the gateway's route in the OpenAI dialect
    assert kwargs["api_base"] == lane.front.base and kwargs["custom_llm_provider"] == "openai"
    assert kwargs["model"] == "openai/openai/gpt-5"  # litellm's one "openai/" strip puts the route on the wire
    assert kwargs["store"] is False and kwargs["include"] == [ENCRYPTED]
    assert kwargs["input"] == [{"type": "message", "role": "user", "content": "Weather in Paris?"}]
    assert "messages" not in kwargs
    assert MASTER_KEY not in out.output
    assert not lane.front.posts()  # a preview sends nothing


def test_gateway_check_routes_the_responses_plans(lane: ResponsesLane, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in gateway_env(lane).items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    for key in DEPLOYMENTS:
        (tmp_path / f"{key}.json").write_bytes(bundled_plan(key, "direct").to_bytes())
    out = invoke("gateway", "check", "--plan", str(tmp_path), "--format", "json")
    assert out.exit_code == 0, out.output
    rows = {r["model"]: r for r in json.loads(out.output)["plans"]}
    assert {key: (r["ok"], r["kind"]) for key, r in rows.items()} == {key: (True, "exact") for key in DEPLOYMENTS}
    assert MASTER_KEY not in out.output

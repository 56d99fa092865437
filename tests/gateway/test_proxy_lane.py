"""Real litellm → a real LiteLLM proxy → loopback upstreams: what arrives for each routing outcome.

The front records what the gateway received; the upstreams record what the gateway forwarded.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from capplan.executor.client import Client
from capplan.executor.gateway.route import GatewayRouteAmbiguous
from capplan.executor.plan import Plan
from tests.executor.plans import make_plan
from tests.gateway.conftest import MASTER_KEY, Gateway
from tests.cli_runner import invoke

ORDER_ID = "order-canary-9000123"
USER = {"messages": [{"role": "user", "content": "hi"}]}
UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def gateway_env(lane: Gateway, **extra: str) -> dict[str, str]:
    return {
        "LLM_PROXY_BASE_URL": lane.front.base,
        "LLM_PROXY_API_KEY": MASTER_KEY,
        "LLM_PROXY_HEADERS": json.dumps({"X-Team-Id": "research", "X-Order-Id": "${secret:ORDER_ID}", "X-Title": "team-run"}),
        "LLM_PROXY_REQUEST_ID_HEADER": "X-Request-Id",
        "ORDER_ID": ORDER_ID,
        **extra,
    }


def direct_plan(lane: Gateway, provider: str, name: str, **kwargs: Any) -> Plan:
    """A plan whose provider endpoint is the loopback 'direct' upstream."""
    plan = make_plan(provider, name, **kwargs)
    body = plan.body()
    body["binding"]["binding"] = {**body["binding"]["binding"], "endpoint": lane.direct.base}
    return Plan.seal(body)


def send(lane: Gateway, plan: Plan, env: dict[str, str]) -> Any:
    return Client(plan, env=env).generate(USER)


def test_exact_full_name_routes_in_the_openai_dialect(lane: Gateway) -> None:
    plan = direct_plan(lane, "openrouter", "anthropic/claude-gw", openrouter={"provider_order": ["anthropic"]})
    result = send(lane, plan, gateway_env(lane))
    assert (result.gateway_route_kind, result.gateway_route) == ("exact", "openrouter/anthropic/claude-gw")
    assert lane.a.models() == ["claude-gw-upstream"] and not lane.b.requests and not lane.direct.requests
    [call] = lane.front.posts()
    assert call.path == "/chat/completions"
    assert call.body["model"] == "openrouter/anthropic/claude-gw"
    assert "usage" not in call.body  # the OpenRouter dialect's usage.include would be rejected upstream
    assert call.body["provider"]["order"] == ["anthropic"]  # own namespace: the pin rides
    assert call.headers["authorization"] == f"Bearer {MASTER_KEY}"
    assert call.headers["x-team-id"] == "research" and call.headers["x-order-id"] == ORDER_ID
    assert call.headers["x-title"] == "team-run"  # the operator's header beats the engine's
    assert call.headers["http-referer"]  # engine headers still ride when they do not collide
    assert UUID4.match(call.headers["x-request-id"])


def test_bare_name_route_drops_the_pin_of_another_namespace(lane: Gateway) -> None:
    plan = direct_plan(lane, "openrouter", "azure_ai/cohere-gw", openrouter={"provider_order": ["cohere"]})
    result = send(lane, plan, gateway_env(lane))
    assert (result.gateway_route_kind, result.gateway_route) == ("exact", "azure_ai/cohere-gw")
    assert lane.a.models() == ["cohere-gw-upstream"]
    [call] = lane.front.posts()
    assert call.body["model"] == "azure_ai/cohere-gw"
    assert "provider" not in call.body


def test_openai_prefixed_route_reaches_the_gateway_intact(lane: Gateway) -> None:
    result = send(lane, direct_plan(lane, "openai", "gpt-gw"), gateway_env(lane))
    assert (result.gateway_route_kind, result.gateway_route) == ("exact", "openai/gpt-gw")
    assert [c.body["model"] for c in lane.front.posts()] == ["openai/gpt-gw"]
    assert lane.a.models() == ["gpt-gw-upstream"]


def test_two_names_need_a_preferred_route(lane: Gateway) -> None:
    plan = direct_plan(lane, "openrouter", "google/gem-gw")
    with pytest.raises(GatewayRouteAmbiguous, match="under 2 names"):
        Client(plan, env=gateway_env(lane))
    google = send(lane, plan, gateway_env(lane, LLM_PROXY_PREFERRED_ROUTE="nebius/,google/"))
    assert google.gateway_route == "google/gem-gw" and lane.b.models() == ["gem-via-google"]
    openrouter = send(lane, plan, gateway_env(lane, LLM_PROXY_PREFERRED_ROUTE="openrouter/"))
    assert openrouter.gateway_route == "openrouter/google/gem-gw" and lane.a.models() == ["gem-via-openrouter"]


def test_alias_is_invisible_and_the_call_goes_direct(lane: Gateway, caplog: pytest.LogCaptureFixture) -> None:
    plan = direct_plan(lane, "openrouter", "anthropic/claude-alias")
    result = send(lane, plan, gateway_env(lane, OPENROUTER_API_KEYS="sk-or-direct-key"))
    assert (result.gateway_route_kind, result.gateway_route) == ("direct", None)
    assert not lane.front.posts() and not lane.a.requests
    [call] = lane.direct.requests
    assert call.body["model"] == "anthropic/claude-alias"
    assert call.headers["authorization"] == "Bearer sk-or-direct-key"
    assert "x-team-id" not in call.headers and "x-request-id" not in call.headers


def test_namespace_wildcard_routes_only_under_the_opt_in(lane: Gateway) -> None:
    plan = direct_plan(lane, "moonshot", "kimi-gw-unlisted")
    env = gateway_env(lane, LLM_PROXY_PROVIDERS="openrouter,openai,moonshot", OPENAI_API_KEY="unused")
    assert Client(plan, env=env).route.kind == "direct"  # type: ignore[union-attr]
    result = send(lane, plan, {**env, "LLM_PROXY_TRUST_NAMESPACE_WILDCARDS": "true"})
    assert (result.gateway_route_kind, result.gateway_route) == ("wildcard", "moonshot/kimi-gw-unlisted")
    assert [c.body["model"] for c in lane.front.posts()] == ["moonshot/kimi-gw-unlisted"]
    assert lane.a.models() == ["kimi-gw-unlisted"]


def test_foreign_wildcard_never_routes(lane: Gateway) -> None:
    plan = direct_plan(lane, "openrouter", "moonshot/kimi-gw-unlisted")
    env = gateway_env(lane, LLM_PROXY_TRUST_NAMESPACE_WILDCARDS="true", OPENROUTER_API_KEYS="sk-or-direct-key")
    assert send(lane, plan, env).gateway_route_kind == "direct"
    assert len(lane.direct.requests) == 1 and not lane.front.posts()


def test_unreadable_catalog_keeps_the_gateway_untranslated(lane: Gateway) -> None:
    lane.front.refuse_catalog = True
    # the spec's manual route pin: provider openai, named the way the gateway names the route
    plan = direct_plan(lane, "openai", "openrouter/anthropic/claude-gw")
    result = send(lane, plan, gateway_env(lane))
    assert (result.gateway_route_kind, result.gateway_route) == ("untranslated", "openai/openrouter/anthropic/claude-gw")
    [call] = lane.front.posts()
    assert call.body["model"] == "openrouter/anthropic/claude-gw"  # litellm's one "openai/" strip, nothing added
    assert call.headers["authorization"] == f"Bearer {MASTER_KEY}" and call.headers["x-order-id"] == ORDER_ID
    assert lane.a.models() == ["claude-gw-upstream"] and not lane.direct.requests


def test_unreadable_catalog_keeps_the_provider_dialect(lane: Gateway) -> None:
    lane.front.refuse_catalog = True
    plan = direct_plan(lane, "openrouter", "google/gem-gw", openrouter={"provider_order": ["google-vertex"]})
    result = send(lane, plan, gateway_env(lane))
    assert (result.gateway_route_kind, result.gateway_route) == ("untranslated", "openrouter/google/gem-gw")
    [call] = lane.front.posts()
    # litellm's OpenRouter dialect: one "openrouter/" stripped, usage.include added, the pin kept
    assert call.body["model"] == "google/gem-gw"
    assert call.body["usage"] == {"include": True}
    assert call.body["provider"]["order"] == ["google-vertex"]
    assert lane.b.models() == ["gem-via-google"]


def test_catalog_is_read_once_per_base_url(lane: Gateway) -> None:
    for name in ("gpt-gw", "gpt-gw", "other"):
        Client(direct_plan(lane, "openai", name), env=gateway_env(lane))
    assert [s.path for s in lane.front.passages if s.method == "GET"] == ["/models?return_wildcard_routes=true"]


def test_gateway_check_command(lane: Gateway, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in gateway_env(lane).items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "exact.json").write_bytes(direct_plan(lane, "openrouter", "azure_ai/cohere-gw", key="exact").to_bytes())
    ok = invoke("gateway", "check", "--plan", str(tmp_path / "exact.json"))
    assert ok.exit_code == 0, ok.output
    assert "ok   exact: exact -> azure_ai/cohere-gw: catalog serves 'azure_ai/cohere-gw'" in ok.output
    (tmp_path / "alias.json").write_bytes(direct_plan(lane, "openrouter", "anthropic/claude-alias", key="alias").to_bytes())
    (tmp_path / "twice.json").write_bytes(direct_plan(lane, "openrouter", "google/gem-gw", key="twice").to_bytes())
    (tmp_path / "offline.json").write_bytes(make_plan("mock", "echo", key="offline").to_bytes())
    (tmp_path / "manifest.json").write_text("{}")  # compile's run manifest sits beside plans; not a plan
    found = invoke("gateway", "check", "--plan", str(tmp_path), "--format", "json")
    assert found.exit_code == 1, found.output
    rows = {r["model"]: r for r in json.loads(found.output)["plans"]}
    assert rows["alias"]["kind"] == "direct" and "does not serve" in rows["alias"]["reason"]
    assert rows["twice"]["kind"] == "ambiguous" and "LLM_PROXY_PREFERRED_ROUTE" in rows["twice"]["reason"]
    assert rows["exact"]["ok"]
    assert rows["offline"]["ok"] and "never reaches a wire" in rows["offline"]["reason"]
    assert len(rows) == 4
    assert MASTER_KEY not in found.output and ORDER_ID not in found.output


def test_preview_shows_the_routed_request(lane: Gateway, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in gateway_env(lane).items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    plan_file = tmp_path / "p.json"
    plan_file.write_bytes(direct_plan(lane, "openrouter", "azure_ai/cohere-gw").to_bytes())
    request = tmp_path / "r.json"
    request.write_text(json.dumps(USER))
    out = invoke("preview", "--plan", str(plan_file), str(request), "--format", "text")
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[0] == "gateway: exact -> azure_ai/cohere-gw (catalog serves 'azure_ai/cohere-gw')"
    assert "model: azure_ai/cohere-gw" in lines
    assert f'api_base: "{lane.front.base}"' in lines and 'custom_llm_provider: "openai"' in lines
    assert MASTER_KEY not in out.output and ORDER_ID not in out.output

"""Route resolution: two candidates, three outcomes, ranking, wildcards, allow-list, pin rule."""

from __future__ import annotations

import logging

import pytest

from capplan.executor.gateway.config import GatewayConfig, GatewayConfigError
from capplan.executor.gateway.route import GatewayRouteAmbiguous, candidates, resolve_route
from capplan.executor.gateway.transport import GatewayTransport, decide_route, dialect_model
from tests.executor.plans import make_plan

CATALOG = frozenset({
    "openrouter/anthropic/claude-a",  # served under the full name
    "azure_ai/cohere-b",  # served under the bare name
    "openrouter/google/gem-c", "google/gem-c",  # one model, two names
    "moonshot/*",  # a namespace wildcard
    "openrouter/moonshot/kimi-exact",
})


def test_two_candidates() -> None:
    assert candidates("openrouter/azure_ai/cohere-b") == ("openrouter/azure_ai/cohere-b", "azure_ai/cohere-b")
    assert candidates("bare") == ("bare",)


def test_exact_full_and_bare() -> None:
    assert resolve_route("openrouter/anthropic/claude-a", CATALOG).route == "openrouter/anthropic/claude-a"
    decision = resolve_route("openrouter/azure_ai/cohere-b", CATALOG)
    assert (decision.kind, decision.route) == ("exact", "azure_ai/cohere-b")


def test_omitted_goes_direct_and_unreadable_keeps_gateway() -> None:
    assert resolve_route("openrouter/x/alias-only", CATALOG).kind == "direct"
    for unreadable in (None, frozenset()):
        decision = resolve_route("openrouter/x/y", unreadable)
        assert (decision.kind, decision.route) == ("untranslated", "openrouter/x/y")


def test_ambiguity_raises_unless_ranked() -> None:
    with pytest.raises(GatewayRouteAmbiguous, match="under 2 names .*LLM_PROXY_PREFERRED_ROUTE is not set"):
        resolve_route("openrouter/google/gem-c", CATALOG)
    with pytest.raises(GatewayRouteAmbiguous, match="matches none"):
        resolve_route("openrouter/google/gem-c", CATALOG, preferred=("nebius/",))
    assert resolve_route("openrouter/google/gem-c", CATALOG, preferred=("nebius/", "google/")).route == "google/gem-c"
    assert resolve_route("openrouter/google/gem-c", CATALOG, preferred=("openrouter/", "google/")).route == "openrouter/google/gem-c"


def test_wildcard_only_under_opt_in_and_own_namespace() -> None:
    assert resolve_route("moonshot/kimi-new", CATALOG).kind == "direct"
    decision = resolve_route("moonshot/kimi-new", CATALOG, trust_namespace_wildcards=True)
    assert (decision.kind, decision.route) == ("wildcard", "moonshot/kimi-new")
    # openrouter/moonshot/...: its namespace is openrouter, so moonshot/* is a foreign wildcard
    assert resolve_route("openrouter/moonshot/kimi-new", CATALOG, trust_namespace_wildcards=True).kind == "direct"
    # exact wins over a wildcard
    exact = resolve_route("openrouter/moonshot/kimi-exact", CATALOG | {"openrouter/*"}, trust_namespace_wildcards=True)
    assert (exact.kind, exact.route) == ("exact", "openrouter/moonshot/kimi-exact")


def _config(**kw: object) -> GatewayConfig:
    return GatewayConfig(base_url="http://gw:1", **kw)  # type: ignore[arg-type]


def test_allow_list_default_and_explicit() -> None:
    fetch = lambda config: CATALOG  # noqa: E731
    assert decide_route(make_plan("anthropic", "claude-a"), _config(), fetch).kind == "direct"
    assert "not in the default allow-list" in decide_route(make_plan("anthropic", "claude-a"), _config(), fetch).reason
    plan = make_plan("moonshot", "kimi-new")
    assert decide_route(plan, _config(providers=frozenset({"moonshot"}), trust_namespace_wildcards=True), fetch).kind == "wildcard"


def test_unroutable_refused_even_when_named() -> None:
    fetch = lambda config: CATALOG  # noqa: E731
    assert decide_route(make_plan("nova", "busan-v1"), _config(), fetch).kind == "direct"
    with pytest.raises(GatewayConfigError, match="LLM_PROXY_PROVIDERS names 'nova', whose binding is unroutable"):
        decide_route(make_plan("nova", "busan-v1"), _config(providers=frozenset({"nova", "openai"})), fetch)
    with pytest.raises(GatewayConfigError, match="'mock'"):
        decide_route(make_plan("mock", "echo"), _config(providers=frozenset({"mock"})), fetch)


def test_openai_prefixed_route_survives_the_dialect_strip() -> None:
    assert dialect_model("openai/gpt-q") == "openai/openai/gpt-q"
    assert dialect_model("azure_ai/cohere-b") == "azure_ai/cohere-b"


PIN = {"provider_order": ["moonshotai"], "allow_fallbacks": False}


def _apply(plan_args: tuple[str, str], route_catalog: frozenset[str] | None, **config: object) -> dict[str, object]:
    plan = make_plan(*plan_args, openrouter=PIN)
    cfg = _config(**config)
    prefs = {"order": ["moonshotai"], "allow_fallbacks": False}
    transport = GatewayTransport(plan, cfg, decide_route(plan, cfg, lambda c: route_catalog), provider_prefs=prefs)
    kwargs = {"model": plan.model.wire_model, "extra_headers": {"X-Title": "capplan", "HTTP-Referer": "r"},
              "extra_body": {"provider": {"order": ["moonshotai"]}, "other": 1}, "custom_llm_provider": "openrouter"}
    return transport.apply(kwargs)


def test_pin_rides_within_own_namespace_and_drops_elsewhere(caplog: pytest.LogCaptureFixture) -> None:
    kept = _apply(("openrouter", "anthropic/claude-a"), CATALOG)
    assert kept["extra_body"] == {"provider": {"order": ["moonshotai"]}, "other": 1}
    assert (kept["model"], kept["custom_llm_provider"]) == ("openrouter/anthropic/claude-a", "openai")
    untranslated = _apply(("openrouter", "x/y"), None)
    assert "provider" in untranslated["extra_body"]  # type: ignore[operator]
    assert (untranslated["model"], untranslated["custom_llm_provider"]) == ("openrouter/x/y", "openrouter")
    with caplog.at_level(logging.WARNING, logger="capplan.executor.gateway.transport"):
        dropped = _apply(("openrouter", "azure_ai/cohere-b"), CATALOG)
    assert dropped["extra_body"] == {"other": 1}
    assert dropped["model"] == "azure_ai/cohere-b"
    dropped_lines = [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()]
    assert len(dropped_lines) == 1 and dropped_lines[0].startswith("plan azure_ai")
    assert dropped_lines[0].endswith(
        ": OpenRouter provider preferences {'order': ['moonshotai'], 'allow_fallbacks': False} "
        "dropped: gateway route 'azure_ai/cohere-b' leaves the 'openrouter' namespace"
    )


def test_gateway_headers_win_case_insensitively_and_request_id_is_fresh() -> None:
    out = _apply(("openrouter", "anthropic/claude-a"), CATALOG, headers={"x-title": "team-run"}, request_id_header="X-Req",
                 api_key="sk-gw")
    headers = out["extra_headers"]
    assert isinstance(headers, dict)
    assert headers["x-title"] == "team-run" and "X-Title" not in headers
    assert headers["HTTP-Referer"] == "r"
    assert len(headers["X-Req"]) == 36
    assert (out["api_base"], out["api_key"]) == ("http://gw:1", "sk-gw")


def test_direct_leaves_kwargs_alone() -> None:
    out = _apply(("openrouter", "not/served"), CATALOG)
    assert "api_base" not in out and out["model"] == "openrouter/not/served"

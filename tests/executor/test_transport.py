"""Transport kwargs from the provider binding: endpoint, credentials, slug, OpenRouter headers and pin."""

from __future__ import annotations

import pytest

from capplan.executor.errors import MissingCredentialError, PlanInconsistencyError
from capplan.executor.plan import Plan, SlugRewrite
from capplan.executor.plan import DEFAULT_OPENROUTER_REFERER, DEFAULT_OPENROUTER_TITLE
from capplan.executor.transport import REDACTED, Transport, custom_llm_provider, redact, rewrite_slug
from tests.executor.plans import make_plan

BODY = {"messages": [{"role": "user", "content": "hi"}]}


def test_slug_rewrite_strips_then_ensures() -> None:
    rule = SlugRewrite(strip_prefix="nova/", ensure_prefix="openai/")
    assert rewrite_slug("nova/busan-v1", rule) == "openai/busan-v1"
    assert rewrite_slug("busan-v1", rule) == "openai/busan-v1"
    assert rewrite_slug("openai/busan-v1", rule) == "openai/busan-v1"
    assert rewrite_slug("x/y", None) == "x/y"


def test_nova_pins_endpoint_key_and_provider() -> None:
    plan = make_plan("nova", "busan-v1")
    out = Transport(plan).apply(BODY, env={"NOVA_API_KEY": "sk-nova"})
    assert out["model"] == "openai/busan-v1"
    assert out["api_base"] == "https://api.nova.amazon.com/v1"
    assert out["api_key"] == "sk-nova"
    assert out["custom_llm_provider"] == "openai"
    assert out["max_retries"] == 0  # our retry controller is the only one
    assert "extra_headers" not in out


def test_nova_api_base_env_overrides_endpoint() -> None:
    out = Transport(make_plan("nova", "busan-v1")).apply(
        BODY, env={"NOVA_API_KEY": "k", "NOVA_API_BASE": "http://127.0.0.1:9/v1"}
    )
    assert out["api_base"] == "http://127.0.0.1:9/v1"


def test_pinned_key_missing_fails_loud_naming_the_env_var() -> None:
    with pytest.raises(MissingCredentialError, match="NOVA_API_KEY is not set"):
        Transport(make_plan("nova", "busan-v1")).apply(BODY, env={"NOVA_API_KEY": "  "})


def test_the_binding_key_variable_is_the_call_key_on_every_route() -> None:
    transport = Transport(make_plan("openrouter", "anthropic/claude-x"))
    assert transport.apply(BODY, env={"OPENROUTER_API_KEY": " sk-or "})["api_key"] == "sk-or"
    # unset: no key in the kwargs; the client refuses to send (require_credentials), not the transport
    assert "api_key" not in transport.apply(BODY, env={})
    assert "api_key" not in Transport(make_plan("openai", "gpt-x")).apply(BODY, env={"OPENROUTER_API_KEY": "sk-or"})


def test_openrouter_headers_and_provider_pin() -> None:
    plan = make_plan(
        "openrouter", "moonshotai/kimi-k3", openrouter={"provider_order": ["moonshotai"], "allow_fallbacks": False}
    )
    out = Transport(plan).apply({**BODY, "extra_body": {"reasoning": {"effort": "high"}}}, env={})
    assert out["model"] == "openrouter/moonshotai/kimi-k3"
    assert out["custom_llm_provider"] == "openrouter"
    assert out["extra_headers"] == {
        "HTTP-Referer": DEFAULT_OPENROUTER_REFERER,
        "X-Title": DEFAULT_OPENROUTER_TITLE,
        "X-Data-Collection-Opt-Out": "true",
    }
    assert out["extra_body"] == {
        "reasoning": {"effort": "high"},
        "provider": {"order": ["moonshotai"], "allow_fallbacks": False, "data_collection": "deny"},
    }


def test_no_pin_without_provider_order_but_the_opt_out_stays() -> None:
    plan = make_plan("openrouter", "x/y", openrouter={"provider_order": [], "allow_fallbacks": False})
    assert Transport(plan).apply(BODY, env={})["extra_body"] == {"provider": {"data_collection": "deny"}}


def test_attribution_and_data_collection_come_from_the_plan() -> None:
    plan = make_plan("openrouter", "x/y", openrouter={"referer": "https://example.org/app", "title": "App",
                                                      "data_collection": "allow"})
    out = Transport(plan).apply(BODY, env={})
    assert out["extra_headers"] == {"HTTP-Referer": "https://example.org/app", "X-Title": "App"}
    assert "extra_body" not in out  # allow is OpenRouter's default: nothing to say


def test_timeout_is_on_every_call() -> None:
    assert Transport(make_plan("openai", "m")).apply(BODY, env={})["timeout"] == 120.0


def test_pin_on_a_non_openrouter_route_is_not_sent_and_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    plan = make_plan("anthropic", "claude-x", openrouter={"provider_order": ["anthropic"], "allow_fallbacks": True})
    out = Transport(plan).apply(BODY, env={})
    assert "extra_body" not in out and "extra_headers" not in out
    assert "not OpenRouter" in caplog.text


def test_compound_provider_falls_back_to_first_segment() -> None:
    plan = make_plan("vertex_ai/google", "gemini-x")
    assert custom_llm_provider(plan) == "vertex_ai"
    assert custom_llm_provider(make_plan("openai", "gpt-x")) is None


def test_allowed_openai_params_per_call() -> None:
    plan = make_plan("openai", "m", allowed_openai_params=("tools", "tool_choice"))
    assert Transport(plan).apply(BODY, env={})["allowed_openai_params"] == ["tools", "tool_choice"]
    assert "allowed_openai_params" not in Transport(make_plan("openai", "m")).apply(BODY, env={})


def test_api_base_override_wins() -> None:
    out = Transport(make_plan("nova", "b")).apply(BODY, env={"NOVA_API_KEY": "k"}, api_base="http://127.0.0.1:1")
    assert out["api_base"] == "http://127.0.0.1:1"


def test_inconsistent_wire_model_is_refused() -> None:
    plan = make_plan("nova", "busan-v1")
    body = plan.body()
    body["model"]["wire_model"] = "nova/busan-v1"
    with pytest.raises(PlanInconsistencyError, match="recompile"):
        Transport(Plan.seal(body))


def test_redact_hides_keys_and_secret_headers_only() -> None:
    kwargs = {
        "api_key": "sk-secret",
        "extra_headers": {"Authorization": "Bearer x", "X-Api-Key": "y", "X-Title": "capplan"},
        "model": "m",
    }
    out = redact(kwargs)
    assert out["api_key"] == REDACTED
    assert out["extra_headers"] == {"Authorization": REDACTED, "X-Api-Key": REDACTED, "X-Title": "capplan"}
    assert kwargs["api_key"] == "sk-secret"

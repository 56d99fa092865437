"""LLM_PROXY_* configuration: every malformed value fails at resolve time naming its variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from executor.gateway.config import EnvSource, GatewayConfigError, resolve_gateway_config
from executor.gateway.secret_refs import SecretReferenceError, expand_secret_refs

BASE = {"LLM_PROXY_BASE_URL": "http://127.0.0.1:4000/"}


def _resolve(env: dict[str, str]) -> object:
    return resolve_gateway_config(EnvSource(env))


def test_unset_base_means_no_gateway() -> None:
    assert _resolve({}) is None


def test_full_configuration() -> None:
    config = resolve_gateway_config(EnvSource({
        **BASE,
        "LLM_PROXY_API_KEY": " sk-gw ",
        "LLM_PROXY_HEADERS": '{"X-Team-Id": "research", "X-Cost": 42, "X-Flag": true, "X-Order": "${secret:ORDER_ID}"}',
        "LLM_PROXY_REQUEST_ID_HEADER": "X-Request-Id",
        "LLM_PROXY_PROVIDERS": "OpenRouter, openai ,nebius",
        "LLM_PROXY_PREFERRED_ROUTE": "openrouter/, nebius/",
        "LLM_PROXY_TRUST_NAMESPACE_WILDCARDS": "true",
        "ORDER_ID": "9000123",
    }))
    assert config is not None
    assert config.base_url == "http://127.0.0.1:4000"
    assert config.api_key == "sk-gw"
    assert dict(config.headers) == {"X-Team-Id": "research", "X-Cost": "42", "X-Flag": "true", "X-Order": "9000123"}
    assert config.secret_headers == {"X-Order"}
    assert config.providers == {"openrouter", "openai", "nebius"}
    assert config.preferred_routes == ("openrouter/", "nebius/")
    assert config.trust_namespace_wildcards
    first, second = config.request_headers()["X-Request-Id"], config.request_headers()["X-Request-Id"]
    assert first != second and len(first) == 36
    assert "sk-gw" not in repr(config) and "9000123" not in repr(config)


@pytest.mark.parametrize("name", [
    "LLM_PROXY_API_KEY", "LLM_PROXY_HEADERS", "LLM_PROXY_REQUEST_ID_HEADER", "LLM_PROXY_PROVIDERS",
    "LLM_PROXY_PREFERRED_ROUTE", "LLM_PROXY_TRUST_NAMESPACE_WILDCARDS",
])
def test_companion_without_base_url_is_refused(name: str) -> None:
    with pytest.raises(GatewayConfigError, match=f"{name} is set but LLM_PROXY_BASE_URL is empty"):
        _resolve({name: "x", "LLM_PROXY_BASE_URL": "  "})


@pytest.mark.parametrize(("name", "value", "message"), [
    ("LLM_PROXY_BASE_URL", "gateway.example.com", "LLM_PROXY_BASE_URL must be an http"),
    ("LLM_PROXY_BASE_URL", "https://u:p@gw.example.com", "LLM_PROXY_BASE_URL must not carry"),
    ("LLM_PROXY_HEADERS", "{not json", "LLM_PROXY_HEADERS must be a JSON object .* not valid JSON"),
    ("LLM_PROXY_HEADERS", '["X-A"]', "LLM_PROXY_HEADERS must be a JSON object .* got a JSON list"),
    ("LLM_PROXY_HEADERS", '{"X-A": {"b": 1}}', "LLM_PROXY_HEADERS value for 'X-A' must be a string"),
    ("LLM_PROXY_HEADERS", '{"bad header": "v"}', "LLM_PROXY_HEADERS has 'bad header'"),
    ("LLM_PROXY_HEADERS", '{"X-A": "a\\r\\nX-B: b"}', "line break"),
    ("LLM_PROXY_REQUEST_ID_HEADER", "X Request", "LLM_PROXY_REQUEST_ID_HEADER must be an HTTP header name"),
    ("LLM_PROXY_PROVIDERS", "openai,,openrouter", "LLM_PROXY_PROVIDERS has an empty entry"),
    ("LLM_PROXY_PREFERRED_ROUTE", "openrouter/,", "LLM_PROXY_PREFERRED_ROUTE has an empty entry"),
    ("LLM_PROXY_TRUST_NAMESPACE_WILDCARDS", "ture", "LLM_PROXY_TRUST_NAMESPACE_WILDCARDS must be true or false"),
])
def test_malformed_values_name_the_variable(name: str, value: str, message: str) -> None:
    with pytest.raises(GatewayConfigError, match=message):
        _resolve({**BASE, name: value})


def test_dotenv_file_is_read_and_environment_wins(tmp_path: Path) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text('LLM_PROXY_BASE_URL=http://from-dotenv:1\nLLM_PROXY_API_KEY=Pa$$w0rd$argon2id$v=19\nORDER=7\n'
                      'LLM_PROXY_HEADERS={"X-O":"${secret:ORDER}"}\n')
    config = resolve_gateway_config(EnvSource({}, dotenv=dotenv))
    assert config is not None and config.base_url == "http://from-dotenv:1"
    assert config.api_key == "Pa$$w0rd$argon2id$v=19"  # no interpolation of "$"
    assert dict(config.headers) == {"X-O": "7"}
    override = resolve_gateway_config(EnvSource({"LLM_PROXY_BASE_URL": "http://from-env:2"}, dotenv=dotenv))
    assert override is not None and override.base_url == "http://from-env:2"


def _lookup(table: dict[str, str]) -> object:
    return table.get


def test_secret_refs_expand_typed_form_only() -> None:
    table = {"ORDER_ID": "9000123", "NESTED": "${secret:ORDER_ID}"}
    assert expand_secret_refs("a-${secret:ORDER_ID}-b", table.get, where="v") == "a-9000123-b"
    assert expand_secret_refs("Pa$$w0rd $NAME ${NAME} $", table.get, where="v") == "Pa$$w0rd $NAME ${NAME} $"
    assert expand_secret_refs("${secret:ORDER_ID}${secret:ORDER_ID}", table.get, where="v") == "90001239000123"


@pytest.mark.parametrize(("value", "message"), [
    ("${secret:MISSING}", r"X: \$\{secret:MISSING\} does not resolve: MISSING is not set"),
    ("${secret:ORDER_ID", "X: malformed secret reference"),
    ("${secret:}", "X: malformed secret reference"),
    ("${secret:bad-name}", "X: malformed secret reference"),
    ("${secret:NESTED}", "single-level"),
])
def test_secret_ref_errors(value: str, message: str) -> None:
    with pytest.raises(SecretReferenceError, match=message):
        expand_secret_refs(value, {"ORDER_ID": "1", "NESTED": "${secret:ORDER_ID}"}.get, where="X")


def test_unresolved_reference_in_headers_is_a_config_error() -> None:
    with pytest.raises(GatewayConfigError, match="LLM_PROXY_HEADERS value for 'X-Order-Id': .*ORDER_ID is not set"):
        _resolve({**BASE, "LLM_PROXY_HEADERS": '{"X-Order-Id": "${secret:ORDER_ID}"}'})


def test_secret_error_never_quotes_a_resolved_value() -> None:
    with pytest.raises(SecretReferenceError) as caught:
        expand_secret_refs("${secret:A}", {"A": "topsecret-${secret:B}"}.get, where="X")
    assert "topsecret" not in str(caught.value)


def test_values_reads_what_get_reads_with_and_without_a_dotenv(tmp_path: Path) -> None:
    from executor.gateway.config import VARIABLES

    dotenv = tmp_path / ".env"
    dotenv.write_text("LLM_PROXY_API_KEY=from-file\n")
    env = {"LLM_PROXY_BASE_URL": "http://from-env:2", "LLM_PROXY_HEADERS": ""}
    for source in (EnvSource(env), EnvSource(env, dotenv=dotenv), EnvSource({}, dotenv=dotenv)):
        assert source.values(VARIABLES) == {name: source.get(name) for name in VARIABLES}
    # a set companion without a base URL is still refused; empty and blank values are unset
    with pytest.raises(GatewayConfigError, match="is set but LLM_PROXY_BASE_URL is empty"):
        resolve_gateway_config(EnvSource({"LLM_PROXY_API_KEY": " sk "}))
    assert resolve_gateway_config(EnvSource({"LLM_PROXY_API_KEY": "", "LLM_PROXY_BASE_URL": ""})) is None
    assert resolve_gateway_config(EnvSource({"LLM_PROXY_API_KEY": "   ", "LLM_PROXY_BASE_URL": " "})) is None

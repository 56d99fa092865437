"""LLM_PROXY_* configuration: every malformed value fails at resolve time naming its variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from capplan.executor.gateway.config import EnvSource, GatewayConfigError, resolve_gateway_config
from capplan.executor.gateway.secret_refs import SecretReferenceError, expand_secret_refs

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
    ("LLM_PROXY_BASE_URL", "gateway.example.com", "LLM_PROXY_BASE_URL has no scheme"),
    ("LLM_PROXY_BASE_URL", "ftp://gw.example.com", "LLM_PROXY_BASE_URL uses a scheme other than http or https"),
    ("LLM_PROXY_BASE_URL", "https://u:p@gw.example.com", "LLM_PROXY_BASE_URL must not carry credentials"),
    ("LLM_PROXY_BASE_URL", "http://[::1/v1", "LLM_PROXY_BASE_URL is not a well-formed URL"),
    ("LLM_PROXY_BASE_URL", "http://[zz]/v1", "LLM_PROXY_BASE_URL is not a well-formed URL"),
    ("LLM_PROXY_BASE_URL", "http://gw:99999/v1", "LLM_PROXY_BASE_URL is not a well-formed URL .*1-65535"),
    ("LLM_PROXY_BASE_URL", "http://gw:0/v1", "LLM_PROXY_BASE_URL has an empty or zero port"),
    ("LLM_PROXY_BASE_URL", "http://gw:/v1", "LLM_PROXY_BASE_URL has an empty or zero port"),
    ("LLM_PROXY_BASE_URL", "http://gw/v1?x=1", "LLM_PROXY_BASE_URL must not carry a query"),
    ("LLM_PROXY_BASE_URL", "http://gw\0/v1", "LLM_PROXY_BASE_URL contains a line break, NUL"),
    ("LLM_PROXY_BASE_URL", "http://gw/v1\nX: y", "LLM_PROXY_BASE_URL contains a line break"),
    ("LLM_PROXY_BASE_URL", "http://g w/v1", "LLM_PROXY_BASE_URL contains a space"),
    ("LLM_PROXY_BASE_URL", "http://gätewäy/v1", "LLM_PROXY_BASE_URL contains a non-ASCII character"),
    ("LLM_PROXY_BASE_URL", "http://gw!x/v1", "LLM_PROXY_BASE_URL has a host that is not a host name"),
    ("LLM_PROXY_BASE_URL", "http:///v1", "LLM_PROXY_BASE_URL has no host"),
    ("LLM_PROXY_API_KEY", "sk-a\nb", "LLM_PROXY_API_KEY contains a line break"),
    ("LLM_PROXY_API_KEY", "sk-a b", "LLM_PROXY_API_KEY contains a space"),
    ("LLM_PROXY_HEADERS", "{not json", "LLM_PROXY_HEADERS must be a JSON object .* not valid JSON"),
    ("LLM_PROXY_HEADERS", '["X-A"]', "LLM_PROXY_HEADERS must be a JSON object .* got a JSON array"),
    ("LLM_PROXY_HEADERS", "5", "LLM_PROXY_HEADERS must be a JSON object .* got a JSON number"),
    ("LLM_PROXY_HEADERS", '{"X-A": {"b": 1}}', "LLM_PROXY_HEADERS entry 1 value must be a string, .* got a JSON object"),
    ("LLM_PROXY_HEADERS", '{"X-A": null}', "LLM_PROXY_HEADERS entry 1 value must be a string, .* got a JSON null"),
    ("LLM_PROXY_HEADERS", '{"X-A": NaN}', "LLM_PROXY_HEADERS has NaN, which is not a JSON number"),
    ("LLM_PROXY_HEADERS", '{"X-A": 1, "bad header": "v"}', "LLM_PROXY_HEADERS entry 2 has a name that is not an HTTP header"),
    ("LLM_PROXY_HEADERS", '{"X-A": "a\\r\\nX-B: b"}', "entry 1 value contains a line break"),
    ("LLM_PROXY_HEADERS", '{"X-A": "a\\u0000b"}', "entry 1 value contains a NUL or other control character"),
    ("LLM_PROXY_HEADERS", '{"X-A": "caf\u00e9"}', "entry 1 value contains a non-ASCII character"),
    ("LLM_PROXY_HEADERS", '{"X-A": "1", "x-a": "2"}', "entry 2 names the same header as entry 1 .*case-insensitively"),
    ("LLM_PROXY_HEADERS", '{"X-A": "1", "X-A": "2"}', "entry 2 names the same header as entry 1"),
    ("LLM_PROXY_HEADERS", '{"X-A": ' + "9" * 5001 + "}", "entry 1 value is a JSON number of 5001 characters"),
    ("LLM_PROXY_HEADERS", "[" * 5000 + "]" * 5000, "LLM_PROXY_HEADERS is nested more than 64 levels deep"),
    ("LLM_PROXY_HEADERS", '{"X-A": ' + "[" * 5000 + "]" * 5000 + "}", "LLM_PROXY_HEADERS is nested more than 64"),
    ("LLM_PROXY_HEADERS", '{"X-A": "' + "v" * 8193 + '"}', "entry 1 value is 8193 characters long; the limit is 8192"),
    ("LLM_PROXY_REQUEST_ID_HEADER", "X Request", "LLM_PROXY_REQUEST_ID_HEADER must be an HTTP header name"),
    ("LLM_PROXY_PROVIDERS", "openai,,openrouter", "LLM_PROXY_PROVIDERS has an empty entry"),
    ("LLM_PROXY_PROVIDERS", "openai,sk live", "LLM_PROXY_PROVIDERS entry 2 is not a provider name"),
    ("LLM_PROXY_PREFERRED_ROUTE", "openrouter/,", "LLM_PROXY_PREFERRED_ROUTE has an empty entry"),
    ("LLM_PROXY_PREFERRED_ROUTE", "a\tb", "LLM_PROXY_PREFERRED_ROUTE entry 1 is not a route namespace"),
    ("LLM_PROXY_TRUST_NAMESPACE_WILDCARDS", "ture", "LLM_PROXY_TRUST_NAMESPACE_WILDCARDS must be true or false"),
])
def test_malformed_values_name_the_variable(name: str, value: str, message: str) -> None:
    with pytest.raises(GatewayConfigError, match=message):
        _resolve({**BASE, name: value})


CANARY = "sk-canary-pasted-7c41e9"


@pytest.mark.parametrize(("name", "value"), [
    ("LLM_PROXY_BASE_URL", CANARY),
    ("LLM_PROXY_BASE_URL", f"ftp://u:{CANARY}@h"),
    ("LLM_PROXY_BASE_URL", f"http://u:{CANARY}@h/v1"),
    ("LLM_PROXY_BASE_URL", f"http://[{CANARY}/v1"),
    ("LLM_PROXY_BASE_URL", f"http://h:{CANARY}/v1"),
    ("LLM_PROXY_BASE_URL", f"http://h/v1?key={CANARY}"),
    ("LLM_PROXY_API_KEY", f"{CANARY}\nX-Other: 1"),
    ("LLM_PROXY_API_KEY", f"{CANARY} {CANARY}"),
    ("LLM_PROXY_PROVIDERS", f"openai,{CANARY}!"),
    ("LLM_PROXY_PROVIDERS", f"{CANARY},,"),
    ("LLM_PROXY_PREFERRED_ROUTE", f"Bearer {CANARY}"),
    ("LLM_PROXY_PREFERRED_ROUTE", f"{CANARY},"),
    ("LLM_PROXY_REQUEST_ID_HEADER", f"Bearer {CANARY}"),
    ("LLM_PROXY_TRUST_NAMESPACE_WILDCARDS", CANARY),
    ("LLM_PROXY_HEADERS", CANARY),
    ("LLM_PROXY_HEADERS", f'{{"Authorization: Bearer {CANARY}": "x"}}'),
    ("LLM_PROXY_HEADERS", f'{{"X-A": "${{secret:{CANARY}}}"}}'),
    ("LLM_PROXY_HEADERS", '{"X-A": "${secret:sk_canary_pasted_7c41e9}"}'),
    ("LLM_PROXY_HEADERS", f'{{"X-A": "{CANARY}\\n"}}'),
    ("LLM_PROXY_HEADERS", f'{{"X-A": "{CANARY}", "x-a": "{CANARY}"}}'),
    ("LLM_PROXY_HEADERS", f'{{"X-A": ["{CANARY}"]}}'),
])
def test_errors_never_quote_the_value(name: str, value: str) -> None:
    with pytest.raises(GatewayConfigError) as caught:
        _resolve({**BASE, name: value})
    message = str(caught.value)
    assert name in message
    assert CANARY not in message and "sk_canary" not in message and "7c41e9" not in message


def test_request_id_header_must_not_be_a_fixed_header() -> None:
    with pytest.raises(GatewayConfigError, match="LLM_PROXY_REQUEST_ID_HEADER names a header that LLM_PROXY_HEADERS"):
        _resolve({**BASE, "LLM_PROXY_HEADERS": '{"X-Request-Id": "fixed"}', "LLM_PROXY_REQUEST_ID_HEADER": "x-request-id"})


def test_every_header_value_is_a_credential_value() -> None:
    config = resolve_gateway_config(EnvSource({
        **BASE, "LLM_PROXY_API_KEY": "sk-gw-key", "ORDER": "order-secret",
        "LLM_PROXY_HEADERS": '{"X-Team-Token": "team-literal", "X-Order": "${secret:ORDER}", "X-N": 12345678}',
    }))
    assert config is not None
    assert set(config.credential_values()) == {"sk-gw-key", "team-literal", "order-secret", "12345678"}
    assert dict(config.headers)["X-N"] == "12345678"  # a number is sent as its JSON text


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
    with pytest.raises(GatewayConfigError, match="LLM_PROXY_HEADERS entry 1 value: .*ORDER_ID is not set"):
        _resolve({**BASE, "LLM_PROXY_HEADERS": '{"X-Order-Id": "${secret:ORDER_ID}"}'})


def test_secret_error_never_quotes_a_resolved_value() -> None:
    with pytest.raises(SecretReferenceError) as caught:
        expand_secret_refs("${secret:A}", {"A": "topsecret-${secret:B}"}.get, where="X")
    assert "topsecret" not in str(caught.value)


def test_values_reads_what_get_reads_with_and_without_a_dotenv(tmp_path: Path) -> None:
    from capplan.executor.gateway.config import VARIABLES

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


@pytest.mark.parametrize(("name", "value"), [
    ("LLM_PROXY_BASE_URL", "http://127.0.0.1:4000/v1\r\n"),
    ("LLM_PROXY_BASE_URL", "http://127.0.0.1:4000/v1\r"),
    ("LLM_PROXY_BASE_URL", "\nhttp://127.0.0.1:4000/v1"),
    ("LLM_PROXY_API_KEY", "sk-gw\r"),
    ("LLM_PROXY_PROVIDERS", "openai\t"),
])
def test_a_line_break_or_control_character_around_a_value_is_refused_not_stripped(name: str, value: str) -> None:
    with pytest.raises(GatewayConfigError) as caught:
        _resolve({**BASE, name: value})
    side = "starts" if value[0] in "\r\n\t" else "ends"
    assert caught.value.message.startswith(f"{name} {side} with a line break (CR or LF), tab or other control character")
    assert "(set in the environment)" in caught.value.message and caught.value.location is None
    assert caught.value.hint is not None and "Windows line endings" in caught.value.hint
    assert "sk-gw" not in str(caught.value)


def test_a_dotenv_value_ending_in_a_line_break_is_located_at_its_line(tmp_path: Path) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text('# the team gateway\nLLM_PROXY_API_KEY=sk-gw\n  LLM_PROXY_BASE_URL="http://127.0.0.1:4000/v1\r\n"\n')
    with pytest.raises(GatewayConfigError) as caught:
        resolve_gateway_config(EnvSource({}, dotenv=dotenv))
    assert caught.value.location == f"{dotenv}:3:3"
    assert caught.value.render().startswith(f"{dotenv}:3:3: error[GATEWAY]: LLM_PROXY_BASE_URL ends with a line break")
    # a file saved with Windows line endings is read as lines: its values carry no CR
    dotenv.write_bytes(b"LLM_PROXY_BASE_URL=http://127.0.0.1:4000/v1\r\nLLM_PROXY_API_KEY=sk-gw\r\n")
    config = resolve_gateway_config(EnvSource({}, dotenv=dotenv))
    assert config is not None and config.base_url == "http://127.0.0.1:4000/v1" and config.api_key == "sk-gw"

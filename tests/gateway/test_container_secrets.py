"""The gateway's variables also come from the container secrets payload (TOLOKAFORGE_SECRETS_JSON)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from capplan.executor.gateway.config import CONTAINER_SECRETS, EnvSource, GatewayConfigError, resolve_gateway_config

PAYLOAD = {"LLM_PROXY_BASE_URL": "http://127.0.0.1:9/v1", "LLM_PROXY_API_KEY": "sk-from-the-container",
           "LLM_PROXY_HEADERS": json.dumps({"X-Order-Id": "${secret:ORDER_ID}"}), "ORDER_ID": "order-77"}


def test_the_payload_configures_the_gateway_and_its_secret_references() -> None:
    config = resolve_gateway_config(EnvSource({CONTAINER_SECRETS: json.dumps(PAYLOAD)}))
    assert config is not None
    assert (config.base_url, config.api_key) == ("http://127.0.0.1:9/v1", "sk-from-the-container")
    assert config.headers == {"X-Order-Id": "order-77"}


def test_the_process_environment_wins_over_the_payload_which_wins_over_dotenv(tmp_path: Path) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text("LLM_PROXY_API_KEY=sk-from-dotenv\nLLM_PROXY_REQUEST_ID_HEADER=X-Req\n")
    env = {CONTAINER_SECRETS: json.dumps(PAYLOAD), "LLM_PROXY_BASE_URL": "http://127.0.0.1:8/v1"}
    config = resolve_gateway_config(EnvSource(env, dotenv))
    assert config is not None
    assert config.base_url == "http://127.0.0.1:8/v1"  # the environment
    assert config.api_key == "sk-from-the-container"  # the payload, over .env
    assert config.request_id_header == "X-Req"  # only .env sets it


@pytest.mark.parametrize("raw", ["[1, 2]", "{not json", '{"LLM_PROXY_BASE_URL": 5}', '{"A": NaN}'])
def test_a_malformed_payload_is_refused_naming_the_variable_never_a_value(raw: str) -> None:
    with pytest.raises(GatewayConfigError, match=CONTAINER_SECRETS) as caught:
        resolve_gateway_config(EnvSource({CONTAINER_SECRETS: raw}))
    assert "NaN" not in str(caught.value) and "5" not in str(caught.value).replace(CONTAINER_SECRETS, "")

"""lint warns `key-to-foreign-endpoint` when a binding sends a variable that is not its provider's key elsewhere."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import Result

from capplan.compiler.credential_checks import own_key_variable
from tests.cli_runner import invoke, invoke_checked


def lint(*args: str) -> Result:
    return invoke_checked("lint", *args)


@pytest.mark.parametrize("binding, variable, endpoint", [
    ("acme", "GITHUB_TOKEN", "https://llm.acme.example/v1"),
    ("acme", "AWS_SECRET_ACCESS_KEY", "https://llm.acme.example/v1"),
    ("acme", "OPENAI_API_KEY", "https://llm.acme.example/v1"),  # another provider's key
    ("openai", "GITHUB_TOKEN", "http://proxy.example.net/v1"),  # a shipped binding moved elsewhere
    ("aws", "AWS_SECRET_ACCESS_KEY", "https://llm.acme.example/v1"),  # own prefix, but a cloud secret's words
    ("github", "GITHUB_TOKEN", "https://llm.acme.example/v1"),
])
def test_a_foreign_variable_sent_to_a_non_default_endpoint_warns(tmp_path: Path, binding: str, variable: str,
                                                                 endpoint: str) -> None:
    path = tmp_path / "overlay.yaml"
    path.write_text(f"bindings:\n  {binding}:\n    endpoint: {endpoint}\n    api_key_env: {variable}\n")
    result = lint(str(path))
    assert result.exit_code == 1, result.output  # a warning: the diff and the reviewer decide
    assert f"{path}:4:5: warning[key-to-foreign-endpoint]: bindings.{binding}.api_key_env:" in result.output
    assert variable in result.output and "hint:" in result.output


@pytest.mark.parametrize("text", [
    "bindings:\n  acme:\n    endpoint: https://llm.acme.example/v1\n    api_key_env: ACME_API_KEY\n",
    "bindings:\n  acme:\n    endpoint: https://llm.acme.example/v1\n    api_key_env: ACME_GATEWAY_KEY\n"
    "    api_keys_env: ACME_API_KEYS\n    key_file_env: ACME_KEY_FILE\n",
    "bindings:\n  openai:\n    api_key_env: GITHUB_TOKEN\n",  # the shipped endpoint: the key goes where it always went
    "bindings:\n  nova:\n    endpoint: https://api.nova.amazon.com/v1\n",  # nova's own endpoint and key
])
def test_a_binding_with_its_own_key_or_the_shipped_endpoint_is_quiet(tmp_path: Path, text: str) -> None:
    path = tmp_path / "overlay.yaml"
    path.write_text(text)
    result = lint(str(path))
    assert "key-to-foreign-endpoint" not in result.output


def test_the_warning_also_comes_from_compile_and_a_providers_file(tmp_path: Path) -> None:
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("bindings:\n  openai:\n    endpoint: http://proxy.example.net/v1\n    api_key_env: GH_TOKEN\n")
    result = invoke("compile", "--presets-file", str(overlay), "--out", str(tmp_path / "plans"))
    assert result.exit_code == 0 and "warning[key-to-foreign-endpoint]" in result.output
    providers = tmp_path / "providers.yaml"
    providers.write_text("acme:\n  endpoint: https://llm.acme.example/v1\n  api_key_env: GITHUB_TOKEN\n")
    result = lint(str(providers))
    assert result.exit_code == 1 and f"{providers}:3:3: warning[key-to-foreign-endpoint]" in result.output


def test_the_rule() -> None:
    assert own_key_variable("acme", "ACME_API_KEY") and own_key_variable("acme", "ACME_KEY")
    assert own_key_variable("my-gw", "MY_GW_API_KEYS") and own_key_variable("openrouter", "OPENROUTER_KEY_FILE")
    assert not own_key_variable("acme", "ACMEKEY") and not own_key_variable("acme", "ACME_TOKEN")
    assert not own_key_variable("acme", "ACME_SECRET_KEY") and not own_key_variable("acme", "OPENAI_API_KEY")

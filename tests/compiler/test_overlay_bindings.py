"""Overlays declare provider bindings: new providers, and field-level changes to shipped ones."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from capplan.compiler.compile import compile_paths
from capplan.core.diagnostics import InputError
from capplan.presets import data_dir
from tests.compiler.test_cli import invoke

RUN = """models:
  local: {provider: llamacpp, name: qwen3-8b}
  gpt: {provider: openai, name: gpt-4o}
"""


def test_a_new_provider_from_an_overlay(write: Callable[[str, str], Path]) -> None:
    run = write("run.yaml", RUN)
    ov = write("ov.yaml", """bindings:
  llamacpp:
    endpoint: http://127.0.0.1:8080/v1
    api_key_env: LLAMACPP_KEY
    custom_llm_provider: openai
    kwargs_pin_transport: true
""")
    plan = compile_paths(run_config=run, overlays=[ov]).plans["local"]
    assert plan.binding.key == "llamacpp"
    assert plan.binding.binding.endpoint == "http://127.0.0.1:8080/v1"
    assert plan.binding.binding.custom_llm_provider == "openai"
    assert plan.provenance["binding"].layer == "overlay:external:ov.yaml"
    assert plan.provenance["binding.binding.endpoint"].key == "bindings.llamacpp.endpoint"


def test_a_field_level_change_to_a_shipped_binding_keeps_the_other_fields(write: Callable[[str, str], Path]) -> None:
    run = write("run.yaml", RUN)
    first = write("a.yaml", "bindings:\n  openai:\n    endpoint: https://gateway.internal/openai/v1\n")
    second = write("b.yaml", "bindings:\n  openai:\n    api_base_env: OPENAI_GATEWAY_BASE\n")
    shipped = compile_paths(run_config=run).plans["gpt"].binding.binding
    plan = compile_paths(run_config=run, overlays=[first, second]).plans["gpt"]
    binding = plan.binding.binding
    assert binding.endpoint == "https://gateway.internal/openai/v1" and binding.api_base_env == "OPENAI_GATEWAY_BASE"
    assert binding.rate_limit_patterns == shipped.rate_limit_patterns and shipped.rate_limit_patterns
    assert plan.provenance["binding"].file == "bundled:providers.yaml"
    assert plan.provenance["binding.binding.endpoint"].layer == "overlay:external:a.yaml"
    assert plan.provenance["binding.binding.api_base_env"].layer == "overlay:external:b.yaml"
    code, out = invoke("explain", "gpt", "binding", "--config", str(run), "--presets-file", str(first),
                       "--presets-file", str(second))
    assert code == 0
    assert 'binding.binding.endpoint = "https://gateway.internal/openai/v1"\n    set by overlay:external:a.yaml' in out
    assert "binding.binding.rate_limit_patterns = [" in out
    assert out.count("set by binding  bundled:providers.yaml:36") >= 2  # the fields the overlay left alone


@pytest.mark.parametrize("value", ["sk-proj-abcdefghijklmnop1234567890", "AIzaSyD3xample0000000000000000000",
                                   "my key"])
def test_a_credential_field_takes_a_variable_name_never_a_value(write: Callable[[str, str], Path], value: str) -> None:
    ov = write("ov.yaml", f"bindings:\n  openai:\n    api_key_env: \"{value}\"\n")
    code, out = invoke("lint", str(ov))
    assert code == 2 and "bindings.openai.api_key_env" in out
    assert value not in out  # a pasted key is never echoed
    with pytest.raises(InputError) as caught:
        compile_paths(overlays=[ov])
    assert value not in str(caught.value)


def test_an_overlay_binding_s_rate_limit_patterns_must_compile(write: Callable[[str, str], Path]) -> None:
    ov = write("ov.yaml", "bindings:\n  openai:\n    rate_limit_patterns: ['(unclosed']\n")
    code, out = invoke("lint", str(ov))
    assert code == 2 and f"{ov}:3:27: error[bad-regex]: bindings.openai.rate_limit_patterns[0]" in out


def test_shipped_bindings_pass_the_credential_rule() -> None:
    text = (data_dir() / "providers.yaml").read_text(encoding="utf-8")
    assert "api_key_env" in text
    assert compile_paths().plans  # every shipped binding validates

"""The layer merge: order, per-key merges, replacement by name, and provenance."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from capplan.compiler.compile import compile_paths
from capplan.core.diagnostics import InputError

RUN = """
models:
  m:
    provider: {provider}
    name: {name}
{extra}
"""


def run_config(write: Callable[[str, str], Path], provider: str, name: str, extra: str = "") -> Path:
    return write("run.yaml", RUN.format(provider=provider, name=name, extra=extra))


def test_first_match_wins_and_provider_overlay_applies(write: Callable[[str, str], Path]) -> None:
    plan = compile_paths(run_config=run_config(write, "openrouter", "anthropic/claude-opus-4.7")).plans["m"]
    assert plan.effective_preset == "anthropic_claude_4_7"
    flags = plan.policies["params_policy"].params
    # the preset's thinking routing survives the providers: overlay, which adds extra_body routing
    assert flags["reasoning_via_thinking_kwarg"] is True
    assert flags["reasoning_via_extra_body"] is True
    assert plan.provenance["policies.params_policy.params.reasoning_via_extra_body"].layer == "providers:openrouter"
    assert plan.provenance["policies.params_policy.params.supports_seed"].layer == "preset:anthropic_claude_4_7"
    assert plan.provenance["policies.cache_policy"].file == "bundled:model_presets.yaml"


def test_unmatched_model_gets_the_default_layer_only(write: Callable[[str, str], Path]) -> None:
    plan = compile_paths(run_config=run_config(write, "someone", "unknown-model")).plans["m"]
    assert plan.effective_preset == "default"
    assert plan.binding.key is None and plan.binding.binding.custom_llm_provider is None
    assert plan.model.model_id == "someone/unknown-model"
    assert plan.pricing is None


def test_overlay_preset_shadows_bundled_and_warns_on_name_replacement(write: Callable[[str, str], Path]) -> None:
    overlay = write("ops.yaml", """
presets:
  qwen:
    match: ["qwen/*"]
    reasoning_codec: none
  vendor_x:
    match: ["anthropic/claude-opus-4.7"]
    reasoning_codec: openai
""")
    result = compile_paths(run_config=write("run.yaml", """
models:
  q: {provider: openrouter, name: qwen/qwen3-32b}
  c: {provider: openrouter, name: anthropic/claude-opus-4.7}
"""), overlays=[overlay])
    q, c = result.plans["q"], result.plans["c"]
    assert q.effective_preset == "qwen" and q.policies["reasoning_codec"].name == "none"
    # replaced wholesale: the bundled qwen preset's prompt policy is gone
    assert q.policies["prompt_policy"].name == "none"
    assert c.effective_preset == "vendor_x"
    codes = [w.code for w in result.warnings]
    assert codes.count("preset-replaced") == 1


def test_value_rules_merge_per_parameter_and_per_value(write: Callable[[str, str], Path]) -> None:
    overlay = write("ops.yaml", """
providers:
  gemini:
    params:
      param_value_rules:
        reasoning_effort:
          low: {action: override, with: high, evidence: "2026-09-01, low never thinks on this route"}
        tool_choice:
          required: {action: drop, evidence: "2026-09-01, refused on this route"}
""")
    plan = compile_paths(run_config=run_config(write, "gemini", "gemini-2.5-pro"), overlays=[overlay]).plans["m"]
    rules = plan.param_value_rules
    assert rules["reasoning_effort"]["medium"].action == "reject"  # bundled, untouched by the overlay
    assert rules["reasoning_effort"]["low"].action == "override" and rules["reasoning_effort"]["low"].with_ == "high"
    assert rules["tool_choice"]["required"].action == "drop"
    assert plan.provenance["param_value_rules.reasoning_effort.medium"].layer == "providers:gemini"
    assert plan.provenance["param_value_rules.reasoning_effort.low"].layer == f"overlay:external:{overlay.name}"


def test_operator_overlays_apply_in_order(write: Callable[[str, str], Path]) -> None:
    first = write("a.yaml", "providers:\n  openai:\n    empty_retry_count: 1\n    tool_output_max_chars: 100\n")
    second = write("b.yaml", "providers:\n  openai:\n    empty_retry_count: 3\n")
    plan = compile_paths(run_config=run_config(write, "openai", "gpt-4o"), overlays=[first, second]).plans["m"]
    assert plan.loop.empty_retry_count == 3 and plan.loop.tool_output_max_chars == 100
    assert plan.provenance["loop.empty_retry_count"].file == "external:b.yaml"  # outside the project root


def test_openrouter_defaults_merge_field_by_field(write: Callable[[str, str], Path]) -> None:
    def routing(extra: str) -> tuple[tuple[str, ...], bool]:
        plan = compile_paths(run_config=run_config(write, "openrouter", "moonshotai/kimi-k3", extra)).plans["m"]
        assert plan.openrouter is not None
        return plan.openrouter.provider_order, plan.openrouter.allow_fallbacks

    assert routing("") == (("moonshotai",), False)
    # a block with only allow_fallbacks keeps the preset's pin
    assert routing("    openrouter: {allow_fallbacks: true}") == (("moonshotai",), True)
    assert routing("    openrouter: {provider_order: [together]}") == (("together",), True)


def test_litellm_models_entry_becomes_allowed_params(write: Callable[[str, str], Path]) -> None:
    overlay = write("ops.yaml", """
litellm_models:
  meta/muse-spark-1.2:
    supports_function_calling: true
    supports_reasoning: true
    evidence: "2026-08-10, litellm 1.96.0: no entry; the openai transport returned a tool call"
""")
    plan = compile_paths(run_config=run_config(write, "meta", "muse-spark-1.2",
                                               "    reasoning: {mode: adaptive, effort_hint: low}"),
                         overlays=[overlay]).plans["m"]
    assert plan.allowed_openai_params == ("reasoning_effort", "tool_choice", "tools")
    assert plan.litellm_model is not None and plan.litellm_model.key == "meta/muse-spark-1.2"
    assert plan.provenance["allowed_openai_params"].layer == "litellm_models"


def test_legacy_dict_map_hints_switch_is_the_last_layer(write: Callable[[str, str], Path]) -> None:
    plan = compile_paths(run_config=run_config(write, "openai", "gpt-5",
                                               "    capabilities: {dict_map_prompt_hints: true}")).plans["m"]
    assert plan.policies["prompt_policy"].name == "dict_map_hints"
    assert plan.provenance["policies.prompt_policy"].layer == "model:m"


def test_nova_binding_bare_name_and_slug_rewrite(write: Callable[[str, str], Path]) -> None:
    plan = compile_paths(run_config=run_config(write, "nova", "busan-v1")).plans["m"]
    assert plan.effective_preset == "aws_nova"  # matched by provider
    assert plan.model.model_id == "busan-v1" and plan.model.wire_model == "openai/busan-v1"
    assert plan.policies["message_assembly_policy"].name == "nova"


def test_configured_rejected_value_is_a_compile_error(write: Callable[[str, str], Path]) -> None:
    with pytest.raises(InputError) as info:
        compile_paths(run_config=run_config(write, "gemini", "gemini-2.5-pro",
                                            "    reasoning: {mode: adaptive, effort_hint: medium}"))
    (diag,) = info.value.diagnostics
    assert diag.code == "rejected-value" and "BerriAI/litellm#19403" in diag.message
    assert diag.line == 6


def test_compilation_is_byte_identical_for_identical_inputs(write: Callable[[str, str], Path]) -> None:
    cfg = run_config(write, "openrouter", "qwen/qwen3-32b")
    a = compile_paths(run_config=cfg).plans["m"].to_bytes()
    b = compile_paths(run_config=cfg).plans["m"].to_bytes()
    assert a == b and a.endswith(b"\n")


def test_data_that_needs_another_capplan_is_refused(bundled_copy: Path) -> None:
    presets = bundled_copy / "model_presets.yaml"
    presets.write_text(presets.read_text().replace('requires_capplan: ">=0.1,<1"', 'requires_capplan: ">=99"'))
    with pytest.raises(InputError) as info:
        compile_paths(data_dir=bundled_copy)
    (diag,) = info.value.diagnostics
    assert diag.code == "engine-version" and "needs capplan >=99" in diag.message
    assert diag.file == str(presets) and diag.line > 1


def test_openrouter_defaults_merge_field_by_field_across_layers(write: Callable[[str, str], Path]) -> None:
    overlay = write("ops.yaml", "providers:\n  openrouter:\n    openrouter_defaults: {allow_fallbacks: true}\n")
    plan = compile_paths(run_config=run_config(write, "openrouter", "moonshotai/kimi-k3"), overlays=[overlay]).plans["m"]
    assert plan.openrouter is not None
    assert plan.openrouter.provider_order == ("moonshotai",) and plan.openrouter.allow_fallbacks is True
    assert plan.provenance["openrouter.provider_order"].layer == "preset:moonshot_kimi_k3"
    assert plan.provenance["openrouter.allow_fallbacks"].layer == f"overlay:external:{overlay.name}"

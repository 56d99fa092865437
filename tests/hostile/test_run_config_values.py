"""Values a run config may not hold: each a located error through lint and compile, exit 2, nothing written.

Durations that never end (`per_call_budget_s: .inf`), intervals that crash at run time
(`retry_interval_s: .inf`), strings coerced into booleans and numbers, model keys that would leave
the plan folder, header values with line breaks, and `rate_limits:` that lint used to skip,
including a key pasted where its variable's name belongs (never repeated in the output).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import Result

from tests.cli_runner import invoke_checked

CANARY_KEY = "sk-proj-CANARY0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d"
RANDOM_KEY = "Xq7ZpL9mW2vR8kT4nY6bH3jF5dS1aG0cCANARY"

MODEL = "models:\n  gpt:\n    provider: openai\n    name: gpt-4o\n"


def run(*args: str) -> Result:
    return invoke_checked(*args)


def probe(field: str) -> str:
    return MODEL + f"rate_limit_probe:\n  enabled: true\n  {field}\n"  # the field is on line 7


def model_field(field: str) -> str:
    return MODEL + f"    {field}\n"  # line 5


def limits(block: str) -> str:
    return MODEL + f"rate_limits:\n  {block}\n"  # line 6


#: (run config text, line of the problem, error code)
BAD_RUN_CONFIGS: dict[str, tuple[str, int, str]] = {
    "budget-inf": (probe("per_call_budget_s: .inf"), 7, "wrong-type"),
    "budget-a-year": (probe("per_call_budget_s: 31536000"), 7, "wrong-type"),
    "budget-zero": (probe("per_call_budget_s: 0"), 7, "wrong-type"),
    "interval-inf": (probe("retry_interval_s: .inf"), 7, "wrong-type"),
    "interval-nan": (probe("retry_interval_s: .nan"), 7, "wrong-type"),
    "interval-zero": (probe("retry_interval_s: 0"), 7, "wrong-type"),
    "interval-a-day": (probe("retry_interval_s: 86400"), 7, "wrong-type"),
    "jitter-one": (probe("jitter_fraction: 1"), 7, "wrong-type"),
    "bucket-width-huge": (probe("bucket_width_s: 1000000000"), 7, "wrong-type"),
    "max-buckets-huge": (probe("max_buckets: 1000000000"), 7, "wrong-type"),
    "enabled-yes": (MODEL + "rate_limit_probe:\n  enabled: 'yes'\n", 6, "wrong-type"),
    "enabled-1": (MODEL + "rate_limit_probe:\n  enabled: 1\n", 6, "wrong-type"),
    "budget-string": (probe("per_call_budget_s: '60'"), 7, "wrong-type"),
    "seed-string": (model_field("seed: '1'"), 5, "wrong-type"),
    "seed-huge": (model_field("seed: 1" + "0" * 30), 5, "wrong-type"),
    "max-tokens-string": (model_field("max_tokens: '8000'"), 5, "wrong-type"),
    "max-tokens-huge": (model_field("max_tokens: 1" + "0" * 60), 5, "wrong-type"),
    "parallel-yes": (model_field("parallel_tool_calls: 'yes'"), 5, "wrong-type"),
    "parallel-1": (model_field("parallel_tool_calls: 1"), 5, "wrong-type"),
    "temperature-50": (model_field("temperature: 50"), 5, "wrong-type"),
    "temperature-string": (model_field("temperature: '0.5'"), 5, "wrong-type"),
    "top-p-2": (model_field("top_p: 2"), 5, "wrong-type"),
    "timeout-inf": (model_field("api_call_timeout_s: .inf"), 5, "wrong-type"),
    "timeout-a-year": (model_field("api_call_timeout_s: 31536000"), 5, "wrong-type"),
    "thinking-budget-huge": (model_field("reasoning: {mode: budget, budget_tokens: 1000000000000}"), 5, "wrong-type"),
    "referer-crlf": (model_field("openrouter: {referer: \"https://a.example\\r\\nX-Leak: CANARY\"}"), 5, "wrong-type"),
    "title-control": (model_field("openrouter: {title: \"a\\u0007CANARY\"}"), 5, "wrong-type"),
    "upstreams-tagged-str": (model_field("openrouter: {provider_order: !!str \"anthropic\"}"), 5, "wrong-type"),
    "fallbacks-yes": (model_field("openrouter: {allow_fallbacks: 'yes'}"), 5, "wrong-type"),
    "key-dotdot": ("models:\n  ../../escaped:\n    provider: openai\n    name: gpt-4o\n", 2, "bad-model-key"),
    "key-slash": ("models:\n  a/b:\n    provider: openai\n    name: gpt-4o\n", 2, "bad-model-key"),
    "key-absolute": ("models:\n  /tmp/x:\n    provider: openai\n    name: gpt-4o\n", 2, "bad-model-key"),
    "key-empty": ("models:\n  '':\n    provider: openai\n    name: gpt-4o\n", 2, "bad-model-key"),
    "key-nul": ("models:\n  \"a\\0b\":\n    provider: openai\n    name: gpt-4o\n", 2, "bad-model-key"),
    "key-newline": ("models:\n  \"a\\nb\":\n    provider: openai\n    name: gpt-4o\n", 2, "bad-model-key"),
    "key-ansi": ("models:\n  \"\\e[31mred\":\n    provider: openai\n    name: gpt-4o\n", 2, "bad-model-key"),
    "key-pipe": ("models:\n  a|b:\n    provider: openai\n    name: gpt-4o\n", 2, "bad-model-key"),
    "key-long": ("models:\n  " + "k" * 200 + ":\n    provider: openai\n    name: gpt-4o\n", 2, "bad-model-key"),
    "limit-rpm-inf": (limits("providers: {openai: {requests_per_minute: .inf}}"), 6, "wrong-type"),
    "limit-rpm-zero": (limits("providers: {openai: {requests_per_minute: 0}}"), 6, "wrong-type"),
    "limit-concurrent-string": (limits("providers: {openai: {max_concurrent: '8'}}"), 6, "wrong-type"),
    "limit-concurrent-huge": (limits("providers: {openai: {max_concurrent: 1000000000}}"), 6, "wrong-type"),
    "limit-pause-inf": (limits("rate_limited_pause_s: .inf"), 6, "wrong-type"),
    "limit-unknown-field": (limits("providers: {openai: {rpm: 60}}"), 6, "unknown-key"),
    "limit-pasted-key": (limits(f"keys: {{{CANARY_KEY}: {{max_concurrent: 2}}}}"), 6, "credential-value"),
    "limit-pasted-random-key": (limits(f"keys: {{{RANDOM_KEY}: {{max_concurrent: 2}}}}"), 6, "credential-value"),
    "limit-pasted-key-bad-value": (limits(f"keys: {{{CANARY_KEY}: {{max_concurrent: '2'}}}}"), 6, "wrong-type"),
    "limit-not-a-variable": (limits("keys: {'not a variable': {max_concurrent: 2}}"), 6, "not-a-variable-name"),
    "limit-provider-pasted-key": (limits(f"providers: {{{CANARY_KEY}: {{max_concurrent: 2}}}}"), 6,
                                  "credential-value"),
}


def assert_no_canary(text: str) -> None:
    assert CANARY_KEY not in text and RANDOM_KEY not in text and "CANARY" not in text, text


@pytest.mark.parametrize("name", sorted(BAD_RUN_CONFIGS))
def test_a_bad_run_config_value_is_a_located_error_and_nothing_is_written(tmp_path: Path, name: str) -> None:
    text, line, code = BAD_RUN_CONFIGS[name]
    path = tmp_path / "run.yaml"
    path.write_text(text, encoding="utf-8")
    result = run("lint", str(path))
    assert result.exit_code == 2, result.output
    assert f"{path}:{line}:" in result.output and f"error[{code}]" in result.output, result.output
    assert_no_canary(result.output)
    out = tmp_path / "plans"
    result = run("compile", "--config", str(path), "--out", str(out))
    assert result.exit_code == 2, result.output
    assert f"{path}:{line}:" in result.output and f"error[{code}]" in result.output, result.output
    assert_no_canary(result.output)
    assert not out.exists(), "nothing may be written when an input is refused"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.yaml"]


@pytest.mark.parametrize("block, code", [
    ("providers: {opnai: {requests_per_minute: 60}}", "unknown-provider"),
    ("keys: {OPENRUTER_API_KEY: {max_concurrent: 2}}", "unknown-key-variable"),
])
def test_lint_checks_rate_limit_names_against_the_bindings(tmp_path: Path, block: str, code: str) -> None:
    """What `trial run --config` refuses, lint reports first (compile does not use rate_limits)."""
    path = tmp_path / "run.yaml"
    path.write_text(limits(block), encoding="utf-8")
    result = run("lint", str(path))
    assert result.exit_code == 2 and f"{path}:6:" in result.output and f"error[{code}]" in result.output
    assert "did you mean" in result.output


def test_a_sane_run_config_still_lints_clean(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    path.write_text(MODEL + "    seed: 7\n    max_tokens: 8000\n    parallel_tool_calls: true\n"
                    "    openrouter: {title: 'Acme Evals', referer: 'https://acme.example'}\n"
                    "rate_limit_probe: {enabled: true, retry_interval_s: 15, per_call_budget_s: 3600}\n"
                    "rate_limits:\n  providers: {openrouter: {requests_per_minute: 60, max_concurrent: 8}}\n"
                    "  keys: {OPENROUTER_API_KEY: {max_concurrent: 4}}\n", encoding="utf-8")
    result = run("lint", str(path))
    assert result.exit_code == 0, result.output

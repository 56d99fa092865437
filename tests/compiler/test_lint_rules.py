"""Lint catches what compile would, and what the matching rule makes unreachable."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from capplan.compiler.compile import compile_paths
from tests.compiler.test_cli import invoke

RUN = """models:
  acme-support: {provider: acme, name: support-ft-3}
  claude: {provider: anthropic, name: claude-opus-4.7}
"""


def test_a_clean_run_prints_a_one_line_summary(write: Callable[[str, str], Path]) -> None:
    ok = write("ok.yaml", "providers:\n  anthropic:\n    empty_retry_count: 1\n")
    assert invoke("lint", str(ok), str(ok)) == (0, "capplan lint: 2 file(s) checked: no problems\n")


def test_a_preset_that_hides_every_bundled_preset_is_reported_where_it_can_be_fixed(
        write: Callable[[str, str], Path]) -> None:
    ov = write("ov.yaml", "presets:\n  mine:\n    match: ['*']\n    empty_retry_count: 2\n")
    code, out = invoke("lint", str(ov))
    assert code == 1
    (line,) = [x for x in out.splitlines() if "warning[" in x]
    assert line.startswith(f"{ov}:3:13: warning[hides-bundled-presets]: presets.mine.match[0]: glob '*' of preset "
                           "'mine' matches every model name that")
    assert "narrow '*' to the names this preset is for" in out
    assert "bundled:model_presets.yaml" not in out  # nothing is reported where it cannot be acted on
    compiled = compile_paths(overlays=[ov])
    assert [w.code for w in compiled.warnings] == ["hides-bundled-presets"]  # compile says the same


def test_a_mistyped_provider_key_gets_did_you_mean(write: Callable[[str, str], Path]) -> None:
    ov = write("ov.yaml", "providers:\n  anthropics:\n    empty_retry_count: 1\n")
    code, out = invoke("lint", str(ov))
    assert code == 1 and f"{ov}:2:3: warning[unknown-provider]: providers.anthropics:" in out
    assert "did you mean 'anthropic'?" in out


def test_a_glob_written_as_a_model_id_is_reported_with_the_fix(write: Callable[[str, str], Path]) -> None:
    ov = write("ov.yaml", """presets:
  ft:
    match: ["acme/support-ft-*"]
    empty_retry_count: 1
litellm_models:
  acme/support-ft-3: {supports_function_calling: true, evidence: "2026-09-12, probe"}
""")
    code, out = invoke("lint", str(ov))
    assert code == 1 and "warning[glob-is-model-id]: presets.ft.match[0]" in out
    assert "hint: write the glob over the name: 'support-ft-*'" in out


def test_with_a_run_config_unused_globs_keys_and_bindings_are_reported(write: Callable[[str, str], Path]) -> None:
    run = write("run.yaml", RUN)
    ov = write("ov.yaml", """bindings:
  acmee: {endpoint: "http://127.0.0.1:9/v1"}
presets:
  ft:
    match: ["acme/support-ft-*"]
    empty_retry_count: 1
litellm_models:
  support-ft-3: {supports_function_calling: true, evidence: "2026-09-12, probe"}
""")
    code, out = invoke("lint", "--config", str(run), str(ov))
    assert code == 1
    assert ("warning[glob-matches-no-model]: presets.ft.match[0]: glob 'acme/support-ft-*' matches no model name in "
            f"{run}") in out
    assert "globs match the model name, not provider/name: for 'acme-support' that is 'support-ft-3'" in out
    assert "warning[unused-litellm-model]: litellm_models.support-ft-3" in out
    assert "keys are model ids '<provider>/<name>': for 'acme-support' that is 'acme/support-ft-3'" in out
    assert "warning[unused-binding]: bindings.acmee: no model in" in out and "did you mean 'acme'?" in out
    # without --config nothing is known about which models exist: those checks stay silent
    assert "unused" not in invoke("lint", str(ov))[1]


def test_lint_with_a_config_reports_compile_errors_of_the_overlay(write: Callable[[str, str], Path]) -> None:
    run = write("run.yaml", "models:\n  m: {provider: openai, name: gpt-4o, reasoning: {mode: adaptive, effort_hint: medium}}\n")
    ov = write("ov.yaml", """providers:
  openai:
    params:
      param_value_rules:
        reasoning_effort:
          medium: {action: reject, evidence: "2026-09-01, 400 on medium"}
""")
    assert invoke("lint", str(ov))[0] == 0  # nothing wrong with the overlay alone
    code, out = invoke("lint", "--config", str(run), str(ov))
    assert code == 2 and "error[rejected-value]" in out


def test_requires_capplan_is_checked_by_lint(tmp_path: Path) -> None:
    presets = tmp_path / "model_presets.yaml"
    presets.write_text('requires_capplan: ">=99"\npresets: {}\n', encoding="utf-8")
    code, out = invoke("lint", str(presets))
    assert code == 2
    assert f"{presets}:1:1: error[engine-version]: requires_capplan: this data needs capplan >=99" in out

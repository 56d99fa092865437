"""`capplan explain`: a mistyped model key or field gets a did-you-mean, located where the keys are."""

from __future__ import annotations

from tests.cli_runner import invoke


def test_an_unknown_model_key_names_the_catalogue_and_the_closest_key() -> None:
    result = invoke("explain", "kimi-k4")
    assert result.exit_code == 2
    assert "--model:" not in result.output
    assert "bundled:catalogue.yaml:" in result.output
    assert "error[bad-model]: models: no model key 'kimi-k4'" in result.output
    assert "did you mean 'kimi-k3'?" in result.output
    assert "Traceback" not in result.output


def test_an_unknown_field_suggests_the_closest_field_path() -> None:
    result = invoke("explain", "kimi-k3", "policies.params_polcy")
    assert result.exit_code == 2
    assert "the plan has no field 'policies.params_polcy'; did you mean 'policies.params_policy'?" in result.output


def test_a_field_like_nothing_lists_the_top_level_fields() -> None:
    result = invoke("explain", "kimi-k3", "zzz")
    assert result.exit_code == 2
    assert "fields: " in result.output and "policies" in result.output

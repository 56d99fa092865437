"""rate_limit_probe is a run policy: accepted in a run config, validated there, never in a plan."""

from __future__ import annotations

from pathlib import Path

from tests.cli_runner import invoke

MODELS = "models:\n  gpt:\n    provider: openai\n    name: gpt-4o\n"


def _compile(tmp_path: Path, name: str, extra: str) -> tuple[int, str, Path]:
    (tmp_path / name).mkdir()
    config = tmp_path / name / "run.yaml"  # one name: provenance records it
    config.write_text(MODELS + extra)
    out = tmp_path / name / "plans"
    result = invoke("compile", "--config", str(config), "--out", str(out))
    return result.exit_code, result.output, out


def test_probe_block_never_changes_a_plan(tmp_path: Path) -> None:
    code, output, plain = _compile(tmp_path, "plain", "")
    assert code == 0, output
    code, output, armed = _compile(tmp_path, "armed", "rate_limit_probe:\n  enabled: true\n  retry_interval_s: 10\n")
    assert code == 0, output
    assert (armed / "gpt.json").read_bytes() == (plain / "gpt.json").read_bytes()


def test_probe_block_is_validated_with_location(tmp_path: Path) -> None:
    code, output, _ = _compile(tmp_path, "bad", "rate_limit_probe:\n  enabled: true\n  jitter_fraction: 1.5\n  retry_intervall_s: 3\n")
    assert code == 2
    lines = output.splitlines()
    assert any(line.endswith("run.yaml:7:3: error[wrong-type]: rate_limit_probe.jitter_fraction: "
                             "Input should be less than 1 (got 1.5)") for line in lines), output
    assert any(line.endswith("run.yaml:8:3: error[unknown-key]: rate_limit_probe.retry_intervall_s: "
                             "unknown key 'retry_intervall_s'") for line in lines), output
    assert "hint: did you mean 'retry_interval_s'?" in output

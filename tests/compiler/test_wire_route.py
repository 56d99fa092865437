"""The plan's wire record: which wire a route speaks and who sends it, chosen per model in the run config."""

from __future__ import annotations

from pathlib import Path

from capplan.executor.plan import Plan
from tests.cli_runner import invoke


def _compile(tmp_path: Path, models: str) -> tuple[int, str, Path]:
    config = tmp_path / "run.yaml"
    config.write_text("models:\n" + models)
    out = tmp_path / "plans"
    result = invoke("compile", "--config", str(config), "--out", str(out))
    return result.exit_code, result.output, out


def test_openai_compatible_routes_default_to_direct_and_litellm_can_be_chosen(tmp_path: Path) -> None:
    code, output, out = _compile(tmp_path, (
        "  a:\n    provider: openai\n    name: gpt-4o\n"
        "  b:\n    provider: openai\n    name: gpt-4o\n    transport: litellm\n"
        "  c:\n    provider: anthropic\n    name: claude-opus-4.7\n"
        "  d:\n    provider: openrouter\n    name: moonshotai/kimi-k3\n"))
    assert code == 0, output
    wires = {key: Plan.load(out / f"{key}.json").wire for key in "abcd"}
    assert {k: (w.protocol, w.transport) for k, w in wires.items() if w is not None} == {
        "a": ("openai-chat", "direct"), "b": ("openai-chat", "litellm"), "c": ("litellm", "litellm"),
        "d": ("openai-chat", "direct")}
    assert wires["d"] is not None and wires["d"].body == {"usage": {"include": True}}
    explained = invoke("explain", "--config", str(tmp_path / "run.yaml"), "b", "wire.transport")
    assert "model:b" in explained.output and "run.yaml" in explained.output, explained.output  # the block that chose it


def test_direct_on_a_native_route_is_refused_at_its_line(tmp_path: Path) -> None:
    code, output, out = _compile(tmp_path, "  c:\n    provider: anthropic\n    name: claude-opus-4.7\n    transport: direct\n")
    assert code == 2, output
    assert "run.yaml:5:5:" in output and "error[transport-unavailable]" in output
    assert "set `transport: litellm`" in output
    assert not (out / "c.json").exists()

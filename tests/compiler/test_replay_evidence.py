"""Measured replay verdicts in an overlay become the plan's replay scope; lint judges their age.

The overlay entries are what ``capplan replay report --overlay --overlay-route llamacpp`` writes
(tests/replay pins that side); here they are compiled, explained, diffed and linted.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import pytest

from capplan.compiler.compile import compile_paths
from capplan.compiler.lint import lint_file
from capplan.compiler.loading import Loaded
from capplan.compiler.replay_evidence import evidence_warnings
from capplan.core.diagnostics import InputError
from tests.compiler.test_cli import invoke

RUN = "models:\n  local: {provider: llamacpp, name: qwen3-8b}\n"

BASE = """bindings:
  llamacpp:
    endpoint: http://127.0.0.1:8080/v1
    custom_llm_provider: openai
presets:
  local_qwen:
    match: ["qwen3-8b"]
    reasoning_codec:
      name: reasoning_content
      params: {replay: all_turns%(required)s}
"""

CARRIERS = {
    "consumes-all-turns": '{in_loop: "consumed +412", cross_turn: "consumed +412"}',
    "in-loop-only": '{in_loop: "consumed +412", cross_turn: "ignored +0"}',
    "accepted-ignored": '{in_loop: "ignored +0", cross_turn: "ignored +0"}',
    "rejected": '{in_loop: "rejected 400", cross_turn: "rejected 400"}',
}


def evidence(verdict: str, *, carriers: str | None = None, measured: str = "2026-12-01",
             fingerprint: str | None = "b7000-qwen3", extra: str = "") -> str:
    lines = ["reasoning_replay:", '  "llamacpp":', '    "qwen3-8b":', '      "direct":',
             f'        verdict: "{verdict}"', f'        measured: "{measured}"', "        complete: true"]
    if fingerprint:
        lines.append(f'        fingerprint: "{fingerprint}"')
    lines.append("        carriers:")
    lines.append(f'          "reasoning_content": {carriers or CARRIERS[verdict]}')
    lines.append(f'        evidence: "{measured}, custom route, direct lane, qwen3-8b: {verdict}; '
                 f'reasoning_content deltas vs T=412"')
    return "\n".join(lines) + "\n" + extra


@pytest.fixture
def compiled(write: Callable[[str, str], Path]) -> Callable[..., tuple[Path, Path, Path]]:
    def build(verdict: str, *, required: bool = False, **kw: str | None) -> tuple[Path, Path, Path]:
        run = write("run.yaml", RUN)
        base = write("base.yaml", BASE % {"required": ", required: true" if required else ""})
        measured = write("measured.yaml", evidence(verdict, **kw))  # type: ignore[arg-type]
        return run, base, measured
    return build


@pytest.mark.parametrize(("verdict", "scope"), [
    ("consumes-all-turns", "all_turns"), ("in-loop-only", "in_loop"),
    ("accepted-ignored", "never"), ("rejected", "never"),
])
def test_each_verdict_becomes_the_replay_scope_with_its_evidence(compiled, verdict: str, scope: str) -> None:
    run, base, measured = compiled(verdict)
    plan = compile_paths(run_config=run, overlays=[base, measured]).plans["local"]
    params = plan.policies["reasoning_codec"].params
    assert params["replay"] == scope
    assert params["evidence"].startswith(
        f"{verdict} (external:measured.yaml reasoning_replay.llamacpp.qwen3-8b.direct): 2026-12-01, custom route")
    prov = plan.provenance["policies.reasoning_codec"]
    assert prov.layer == "replay-evidence:2026-12-01" and prov.key == "reasoning_replay.llamacpp.qwen3-8b.direct"


def test_without_evidence_the_preset_scope_stands(write: Callable[[str, str], Path]) -> None:
    run, base = write("run.yaml", RUN), write("base.yaml", BASE % {"required": ""})
    plan = compile_paths(run_config=run, overlays=[base]).plans["local"]
    assert plan.policies["reasoning_codec"].params == {"replay": "all_turns"}


def test_the_verdict_is_the_codec_carriers_not_the_rows(compiled) -> None:
    # the row consumes on every turn through `reasoning`, but reasoning_content is ignored
    run, base, measured = compiled("consumes-all-turns", carriers='{in_loop: "ignored +0", cross_turn: "ignored +0"}')
    plan = compile_paths(run_config=run, overlays=[base, measured]).plans["local"]
    assert plan.policies["reasoning_codec"].params["replay"] == "never"


def test_explain_cites_the_measurement(compiled) -> None:
    run, base, measured = compiled("accepted-ignored")
    code, out = invoke("explain", "local", "policies.reasoning_codec", "--config", str(run),
                       "--presets-file", str(base), "--presets-file", str(measured))
    assert code == 0, out
    assert '"replay": "never"' in out and "accepted-ignored (" in out
    assert "set by replay-evidence:2026-12-01" in out and "measured.yaml:" in out


def test_a_rejected_carrier_the_codec_requires_is_a_compile_error_naming_the_evidence(compiled) -> None:
    run, base, measured = compiled("rejected", required=True)
    with pytest.raises(InputError) as info:
        compile_paths(run_config=run, overlays=[base, measured])
    (diag,) = [d for d in info.value.diagnostics if d.code == "replay-carrier-rejected"]
    assert diag.file.endswith("measured.yaml") and diag.line == 4
    assert "needs reasoning_content replayed" in diag.message and "custom route, direct lane" in diag.message


def test_lanes_that_disagree_are_an_error(write: Callable[[str, str], Path]) -> None:
    run, base = write("run.yaml", RUN), write("base.yaml", BASE % {"required": ""})
    text = evidence("in-loop-only") + evidence("accepted-ignored").split('    "qwen3-8b":\n', 1)[1].replace(
        '"direct"', '"openrouter"')
    measured = write("measured.yaml", text)
    with pytest.raises(InputError) as info:
        compile_paths(run_config=run, overlays=[base, measured])
    assert any(d.code == "replay-evidence-conflict" for d in info.value.diagnostics)


def test_evidence_a_codec_cannot_act_on_is_a_warning_not_silence(write: Callable[[str, str], Path]) -> None:
    run = write("run.yaml", RUN)
    # OpenAI's codec reads reasoning but replays none: there is no scope for evidence to set
    base = write("base.yaml", BASE.split("    reasoning_codec:")[0] + "    reasoning_codec: openai\n")
    measured = write("measured.yaml", evidence("in-loop-only"))
    compiled = compile_paths(run_config=run, overlays=[base, measured])
    (warning,) = [d for d in compiled.warnings if d.code == "replay-evidence-unused"]
    assert warning.severity == "warning" and "reasoning codec 'openai' replays no reasoning" in warning.message
    assert compiled.plans["local"].policies["reasoning_codec"].name == "openai"


def test_diff_reports_a_verdict_change_as_a_replay_change(compiled, tmp_path: Path) -> None:
    run, base, measured = compiled("in-loop-only")
    code, _ = invoke("compile", "--config", str(run), "--presets-file", str(base), "--presets-file", str(measured),
                     "--out", str(tmp_path / "old"))
    assert code == 0
    measured.write_text(evidence("accepted-ignored"), encoding="utf-8")
    code, _ = invoke("compile", "--config", str(run), "--presets-file", str(base), "--presets-file", str(measured),
                     "--out", str(tmp_path / "new"))
    assert code == 0
    code, out = invoke("diff", str(tmp_path / "old"), str(tmp_path / "new"))
    assert code == 1  # a behaviour change, under the replay checker, naming the measurement
    assert ('  replay  policies.reasoning_codec.params.replay: "in_loop" → "never"  '
            '[replay-evidence:2026-12-01 (external:measured.yaml (reasoning_replay.llamacpp.qwen3-8b.direct))]') in out


def _overlay(path: Path) -> Loaded:  # type: ignore[type-arg]
    from capplan.compiler.inputs.overlay_file import OverlayFile
    from capplan.compiler.loading import load_file

    loaded, diags = load_file(path, OverlayFile, str(path))
    assert loaded is not None and not diags
    return Loaded(loaded.model, loaded.source)


def test_old_evidence_is_a_lint_warning_with_a_configurable_age(write: Callable[[str, str], Path]) -> None:
    path = write("measured.yaml", evidence("in-loop-only", measured="2026-01-10"))
    (stale,) = evidence_warnings(_overlay(path), today=dt.date(2026, 12, 1))
    assert stale.code == "replay-evidence-stale" and stale.severity == "warning" and "325 days ago" in stale.message
    relaxed = write("relaxed.yaml", evidence("in-loop-only", measured="2026-01-10",
                                             extra="reasoning_replay_checks: {max_age_days: 400}\n"))
    assert evidence_warnings(_overlay(relaxed), today=dt.date(2026, 12, 1)) == []


def test_evidence_from_another_fingerprint_is_a_lint_warning(write: Callable[[str, str], Path]) -> None:
    checks = 'reasoning_replay_checks:\n  fingerprints: {llamacpp: {"qwen3-8b": "b7100-qwen3"}}\n'
    path = write("measured.yaml", evidence("in-loop-only", extra=checks))
    (foreign,) = evidence_warnings(_overlay(path), today=dt.date(2026, 12, 1))
    assert foreign.code == "replay-evidence-fingerprint" and "another fingerprint" in foreign.message
    same = write("same.yaml", evidence("in-loop-only", fingerprint="b7100-qwen3", extra=checks))
    assert evidence_warnings(_overlay(same), today=dt.date(2026, 12, 1)) == []
    # `capplan lint` on the overlay runs the same check (today's date: a 2026-01-10 entry is old)
    old = write("old.yaml", evidence("in-loop-only", measured="2020-01-10"))
    assert any(d.code == "replay-evidence-stale" for d in lint_file(old, "overlay"))


def test_on_openrouter_the_codec_replays_through_the_envelope_or_not_at_all(write: Callable[[str, str], Path]) -> None:
    # the bundled qwen3 preset sends nothing through OpenRouter, so evidence about it changes nothing
    run = write("run.yaml", "models:\n  q: {provider: openrouter, name: qwen/qwen3-8b}\n")
    text = evidence("in-loop-only").replace('"llamacpp"', '"openrouter"').replace('"qwen3-8b":', '"qwen/qwen3-8b":')
    measured = write("measured.yaml", text)
    compiled = compile_paths(run_config=run, overlays=[measured])
    (warning,) = [d for d in compiled.warnings if d.code == "replay-evidence-unused"]
    assert "replays no reasoning" in warning.message
    # the preset's own llamacpp measurement holds on llamacpp only: this plan keeps none of it
    params = compiled.plans["q"].policies["reasoning_codec"].params
    assert "replay" not in params and "evidence" not in params and "evidence_route" not in params

"""Replay evidence holds on the route it was measured (or ruled) on, never by a glob on another.

A preset writes its codec's scope per route (``by_route``); a plan keeps its own route's entry
as ``replay``/``evidence``/``evidence_route``, and a plan on a route the preset has no entry for
keeps none of it, with a warning naming the measured route. The bundled OpenRouter plans for Kimi
K2 Thinking and DeepSeek V4 replay on every turn through OpenRouter's envelope, on a provider rule.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from capplan.compiler.compile import compile_paths
from capplan.compiler.lint import lint_file
from capplan.executor.client import Client
from capplan.executor.plan import Plan
from tests.compiler.test_cli import invoke

BINDINGS = """bindings:
  llamacpp:
    endpoint: http://127.0.0.1:8080/v1
    custom_llm_provider: openai
  vllm:
    endpoint: http://127.0.0.1:8000/v1
    custom_llm_provider: openai
"""

SCOPED = BINDINGS + """presets:
  local_thinker:
    match: ["*thinker-7b*"]
    reasoning_codec:
      name: reasoning_content
      params:
        openrouter_envelope: true
        by_route:
          llamacpp: {replay: in_loop, evidence: "2026-12-01, llama-server rendering Thinker.jinja: in-loop-only"}
"""

RUN = """models:
  local: {provider: llamacpp, name: thinker-7b}
  routed: {provider: openrouter, name: acme/thinker-7b}
  served: {provider: vllm, name: thinker-7b}
"""


def codec_params(plan: Plan) -> dict[str, Any]:
    return dict(plan.policies["reasoning_codec"].params)


def test_a_plan_on_the_measured_route_keeps_the_scope_its_evidence_and_the_route(
        write: Callable[[str, str], Path]) -> None:
    compiled = compile_paths(run_config=write("run.yaml", RUN), overlays=[write("scoped.yaml", SCOPED)])
    local = codec_params(compiled.plans["local"])
    assert local == {"openrouter_envelope": True, "replay": "in_loop", "evidence_route": "llamacpp",
                     "evidence": "2026-12-01, llama-server rendering Thinker.jinja: in-loop-only"}
    # the provenance points at the route's own entry, so explain shows where that evidence is written
    prov = compiled.plans["local"].provenance["policies.reasoning_codec"]
    assert prov.key == "presets.local_thinker.reasoning_codec.params.by_route.llamacpp"


def test_a_glob_does_not_carry_the_evidence_to_another_route_and_compile_says_so(
        write: Callable[[str, str], Path]) -> None:
    compiled = compile_paths(run_config=write("run.yaml", RUN), overlays=[write("scoped.yaml", SCOPED)])
    for key in ("routed", "served"):
        params = codec_params(compiled.plans[key])
        assert params == {"openrouter_envelope": True}, key  # the codec's default scope, no evidence
        assert "by_route" not in params
    warnings = sorted((d for d in compiled.warnings if d.code == "replay-evidence-route"), key=lambda d: d.message)
    assert len(warnings) == 2
    routed, served = warnings
    assert routed.message.startswith("model 'routed': the reasoning codec's replay evidence (preset:local_thinker)")
    assert "measured on route llamacpp, not on this plan's route openrouter" in routed.message
    assert "replays all_turns with no evidence" in routed.message
    assert "route vllm" in served.message and "by_route.vllm" in (served.hint or "")
    assert routed.file.endswith("scoped.yaml") and routed.line == 11  # the preset's reasoning_codec


def test_lint_of_the_run_config_warns_naming_the_measured_route(write: Callable[[str, str], Path]) -> None:
    run = write("run.yaml", "engine:\n  presets_file: scoped.yaml\n" + RUN)
    write("scoped.yaml", SCOPED)
    found = [d for d in lint_file(run) if d.code == "replay-evidence-route"]
    assert {d.severity for d in found} == {"warning"} and len(found) == 2
    assert all("measured on route llamacpp" in d.message for d in found)


def test_no_warning_where_the_codec_replays_nothing_on_that_route(write: Callable[[str, str], Path]) -> None:
    # OpenRouter without the envelope replays nothing, so a scope measured elsewhere is moot there
    plain = SCOPED.replace("        openrouter_envelope: true\n", "")
    compiled = compile_paths(run_config=write("run.yaml", RUN), overlays=[write("scoped.yaml", plain)])
    assert [d.message.split(":")[0] for d in compiled.warnings if d.code == "replay-evidence-route"] == [
        "model 'served'"]


def test_an_overlay_measurement_records_the_route_it_was_measured_on(write: Callable[[str, str], Path]) -> None:
    measured = write("measured.yaml", """reasoning_replay:
  "vllm":
    "thinker-7b":
      "direct":
        verdict: "consumes-all-turns"
        measured: "2026-12-01"
        complete: true
        carriers:
          "reasoning_content": {in_loop: "consumed +412", cross_turn: "consumed +412"}
        evidence: "2026-12-01, vllm, thinker-7b: consumes-all-turns"
""")
    compiled = compile_paths(run_config=write("run.yaml", RUN),
                             overlays=[write("scoped.yaml", SCOPED), measured])
    params = codec_params(compiled.plans["served"])
    assert params["replay"] == "all_turns" and params["evidence_route"] == "vllm"
    assert params["evidence"].startswith("consumes-all-turns (external:measured.yaml reasoning_replay.vllm")


def test_bundled_openrouter_plans_replay_every_turn_on_the_provider_rule() -> None:
    plans = compile_paths().plans
    for key, rule in (("kimi-k2-thinking", "openrouter.kimi_reasoning_missing"),
                      ("deepseek-v4-flash", "openrouter.deepseek_v4_reasoning_missing")):
        params = codec_params(plans[key])
        assert params["replay"] == "all_turns" and params["openrouter_envelope"] is True, key
        assert params["evidence_route"] == "openrouter"
        assert params["evidence"].startswith(f"conformance rule {rule}: ") and "https://github.com/" in params["evidence"]
    # the llama-server measurements stay on llamacpp: the OpenRouter plans of the other families keep none
    for key in ("glm-4.6", "qwen3-32b", "glm-4.7", "seed-oss-36b", "deepseek-r1", "kimi-k2"):
        assert "evidence" not in codec_params(plans[key]), key


def test_explain_shows_the_rule_a_plan_replays_on() -> None:
    code, out = invoke("explain", "kimi-k2-thinking", "policies.reasoning_codec")
    assert code == 0, out
    assert "conformance rule openrouter.kimi_reasoning_missing" in out and '"evidence_route": "openrouter"' in out
    assert "thinking is enabled but reasoning_content is missing in assistant tool call message at index N" in out
    assert "by_route.openrouter" in out or "model_presets.yaml:" in out


def test_kimi_k2_thinking_on_openrouter_sends_every_tool_call_turn_its_reasoning_in_the_envelope() -> None:
    plan = compile_paths().plans["kimi-k2-thinking"]  # what golden/plans/kimi-k2-thinking.json holds
    client = Client(plan, env={"OPENROUTER_API_KEY": "test-key"}, api_base="http://127.0.0.1:9/api/v1")
    tool = {"type": "function", "function": {"name": "step", "parameters": {"type": "object", "properties": {}}}}
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for i in (1, 2, 3):
        messages += [{"role": "assistant", "content": "", "reasoning": {"blocks": [{"type": "reasoning_text",
                                                                                      "text": f"r{i}"}]},
                      "tool_calls": [{"id": f"c{i}", "function": {"name": "step", "arguments": "{}"}}]},
                     {"role": "tool", "tool_call_id": f"c{i}", "content": "ok"}]
        if i == 2:  # a new user turn between steps: Moonshot still wants the earlier turns' reasoning
            messages += [{"role": "assistant", "content": "half done"}, {"role": "user", "content": "go on"}]
    wire = client.build({"messages": messages, "tools": [tool]}).kwargs["messages"]
    sent = [m.get("reasoning_details") for m in wire if m["role"] == "assistant" and m.get("tool_calls")]
    assert sent == [[{"type": "reasoning.text", "text": f"r{i}"}] for i in (1, 2, 3)]
    assert all("reasoning_content" not in m for m in wire)


def test_lint_warns_about_preset_evidence_written_without_its_route(write: Callable[[str, str], Path]) -> None:
    flat = write("flat.yaml", """presets:
  thinker:
    match: ["*thinker*"]
    reasoning_codec:
      name: reasoning_content
      params: {replay: in_loop, evidence: "2026-12-01, llama-server: in-loop-only"}
  scoped:
    match: ["*scoped*"]
    reasoning_codec:
      name: reasoning_content
      params:
        by_route:
          llamacpp: {replay: in_loop, evidence: "2026-12-01, llama-server: in-loop-only"}
""")
    (warning,) = [d for d in lint_file(flat, "overlay") if d.code == "replay-evidence-route"]
    assert warning.severity == "warning" and warning.line == 6
    assert "*thinker* would carry it to every route" in warning.message and "by_route" in (warning.hint or "")


def test_the_bundled_presets_write_every_replay_evidence_with_its_route() -> None:
    from capplan.compiler.loading import bundled_dir

    assert [d for d in lint_file(bundled_dir() / "model_presets.yaml") if d.code == "replay-evidence-route"] == []


def test_a_flat_evidence_route_holds_on_that_route_only(write: Callable[[str, str], Path]) -> None:
    flat = BINDINGS + """presets:
  local_thinker:
    match: ["*thinker-7b*"]
    reasoning_codec:
      name: reasoning_content
      params: {replay: in_loop, evidence_route: llamacpp, evidence: "2026-12-01, llama-server: in-loop-only"}
"""
    compiled = compile_paths(run_config=write("run.yaml", RUN), overlays=[write("flat.yaml", flat)])
    assert codec_params(compiled.plans["local"]) == {
        "replay": "in_loop", "evidence_route": "llamacpp", "evidence": "2026-12-01, llama-server: in-loop-only"}
    assert codec_params(compiled.plans["served"]) == {}  # scope, evidence and route all stay on llamacpp
    (warning,) = [d for d in compiled.warnings if d.code == "replay-evidence-route"]  # OpenRouter: no envelope
    assert warning.message.startswith("model 'served'") and "measured on route llamacpp" in warning.message
    # written with its route, so lint has nothing to say about it
    assert all(d.code != "replay-evidence-route" for d in lint_file(write("lint.yaml", flat), "overlay"))


def test_a_malformed_by_route_is_a_located_error_not_a_traceback(write: Callable[[str, str], Path]) -> None:
    bad = SCOPED.replace('llamacpp: {replay: in_loop, evidence: "2026-12-01, llama-server rendering Thinker.jinja: '
                         'in-loop-only"}', "llamacpp: {replay: sometimes}")
    code, out = invoke("compile", "--config", str(write("run.yaml", RUN)), "--presets-file", str(write("bad.yaml", bad)),
                       "--out", str(write("x", "").parent / "plans"))
    assert code == 2, out
    assert "by_route" in out and "Traceback" not in out

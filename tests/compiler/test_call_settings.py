"""Call settings as plan data: per-attempt timeout, OpenRouter attribution and data collection,
parallel_tool_calls; each with the layer that set it, as `capplan explain` shows it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from capplan.compiler.compile import Compiled, compile_paths
from capplan.compiler.provenance_lines import LineIndex
from capplan.core.diagnostics import InputError
from capplan.compiler.explain import explain
from capplan.executor.client import Client
from capplan.executor.plan import DEFAULT_OPENROUTER_REFERER, DEFAULT_OPENROUTER_TITLE
from capplan.executor.value_rules import RejectedValueError
from tests.cli_runner import invoke

TOOL = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}
CALL = {"messages": [{"role": "user", "content": "hi"}], "tools": [TOOL]}


def _explained(plan: object, path: str, compiled: Compiled | None = None) -> str:
    lines = LineIndex(compiled.sources) if compiled else None
    rows = [e.render() for e in explain(plan, path, lines)]  # type: ignore[arg-type]
    assert rows, path
    return "\n".join(rows)


def test_defaults_are_upstream_values_and_say_so(write: Callable[[str, str], Path]) -> None:
    plan = compile_paths(run_config=write("run.yaml", "models:\n  m: {provider: openrouter, name: x/y}\n")).plans["m"]
    assert plan.loop.api_call_timeout_s == 120.0
    assert plan.openrouter is not None
    assert (plan.openrouter.referer, plan.openrouter.title) == (DEFAULT_OPENROUTER_REFERER, DEFAULT_OPENROUTER_TITLE)
    assert plan.openrouter.data_collection == "deny"
    assert plan.request_defaults.parallel_tool_calls is None
    assert "set by capplan default" in _explained(plan, "openrouter.data_collection")
    assert "set by capplan default" in _explained(plan, "loop.api_call_timeout_s")


def test_non_openrouter_models_carry_no_openrouter_block(write: Callable[[str, str], Path]) -> None:
    plan = compile_paths(run_config=write("run.yaml", "models:\n  m: {provider: openai, name: gpt-x}\n")).plans["m"]
    assert plan.openrouter is None
    assert "extra_headers" not in Client(plan, env={}).build_request({"messages": [{"role": "user", "content": "x"}]})


def test_each_layer_can_set_them_and_provenance_names_it(write: Callable[[str, str], Path]) -> None:
    overlay = write("ops.yaml", """
providers:
  openrouter:
    api_call_timeout_s: 300
    openrouter_defaults:
      title: Ops Evals
      data_collection: allow
""")
    run = write("run.yaml", """
models:
  m:
    provider: openrouter
    name: x/y
    parallel_tool_calls: false
    openrouter:
      referer: https://example.org/evals
""")
    compiled = compile_paths(run_config=run, overlays=[overlay])
    plan = compiled.plans["m"]
    assert plan.loop.api_call_timeout_s == 300.0
    assert plan.openrouter is not None
    assert (plan.openrouter.referer, plan.openrouter.title) == ("https://example.org/evals", "Ops Evals")
    assert plan.openrouter.data_collection == "allow"
    assert "overlay:" in _explained(plan, "loop.api_call_timeout_s") and "ops.yaml:4" in _explained(
        plan, "loop.api_call_timeout_s", compiled)
    assert "overlay:" in _explained(plan, "openrouter.title")
    assert "model:m" in _explained(plan, "openrouter.referer") and "run.yaml:8" in _explained(plan, "openrouter.referer", compiled)
    assert "model:m" in _explained(plan, "request_defaults.parallel_tool_calls")

    kwargs = Client(plan, env={}).build_request(CALL)
    assert kwargs["timeout"] == 300.0
    assert kwargs["parallel_tool_calls"] is False
    assert kwargs["extra_headers"] == {"HTTP-Referer": "https://example.org/evals", "X-Title": "Ops Evals"}
    assert "extra_body" not in kwargs  # allow is OpenRouter's own default


def test_model_block_timeout_beats_the_preset(write: Callable[[str, str], Path]) -> None:
    overlay = write("ops.yaml", "providers:\n  openai:\n    api_call_timeout_s: 30\n")
    run = write("run.yaml", "models:\n  m: {provider: openai, name: gpt-x, api_call_timeout_s: 45.5}\n")
    compiled = compile_paths(run_config=run, overlays=[overlay])
    plan = compiled.plans["m"]
    assert plan.loop.api_call_timeout_s == 45.5
    assert plan.provenance["loop.api_call_timeout_s"].layer == "model:m"


def test_parallel_tool_calls_only_travels_beside_tools_and_the_call_wins(write: Callable[[str, str], Path]) -> None:
    run = write("run.yaml", "models:\n  m: {provider: openai, name: gpt-x, parallel_tool_calls: true}\n")
    client = Client(compile_paths(run_config=run).plans["m"], env={})
    assert client.build_request(CALL)["parallel_tool_calls"] is True
    assert client.build_request({**CALL, "parallel_tool_calls": False})["parallel_tool_calls"] is False
    assert "parallel_tool_calls" not in client.build_request({"messages": CALL["messages"]})


def test_parallel_tool_calls_is_ruled_by_param_value_rules(write: Callable[[str, str], Path]) -> None:
    overlay = write("ops.yaml", """
providers:
  openai:
    params:
      param_value_rules:
        parallel_tool_calls:
          true: {action: override, with: false, evidence: "2026-11-30 probe: 400 on parallel calls"}
""")
    run = write("run.yaml", "models:\n  m: {provider: openai, name: gpt-x}\n")
    compiled = compile_paths(run_config=run, overlays=[overlay])
    plan = compiled.plans["m"]
    assert set(plan.param_value_rules["parallel_tool_calls"]) == {"true"}
    built = Client(plan, env={}).build({**CALL, "parallel_tool_calls": True})
    assert built.kwargs["parallel_tool_calls"] is False
    assert [(s.param, s.requested, s.sent) for s in built.value_substitutions] == [("parallel_tool_calls", True, False)]


#: an overlay refusing parallel_tool_calls=true on openai (test_streamed_compile uses it too)
REJECTS_PARALLEL_CALLS = """
providers:
  openai:
    params:
      param_value_rules:
        parallel_tool_calls:
          true: {action: reject, evidence: "2026-11-30 probe"}
"""


def test_a_rejected_parallel_tool_calls_default_fails_at_compile_time(write: Callable[[str, str], Path]) -> None:
    overlay = write("ops.yaml", REJECTS_PARALLEL_CALLS)
    run = write("run.yaml", "models:\n  m: {provider: openai, name: gpt-x, parallel_tool_calls: true}\n")
    with pytest.raises(InputError, match="rejected-value"):
        compile_paths(run_config=run, overlays=[overlay])
    plan = compile_paths(run_config=write("ok.yaml", "models:\n  m: {provider: openai, name: gpt-x}\n"),
                         overlays=[overlay]).plans["m"]
    with pytest.raises(RejectedValueError, match="parallel_tool_calls=True"):
        Client(plan, env={}).build({**CALL, "parallel_tool_calls": True})


def test_a_request_file_may_not_set_parallel_tool_calls_without_tools() -> None:
    from capplan.executor.errors import RequestFileError
    from capplan.executor.messages import parse_request

    with pytest.raises(RequestFileError, match="parallel_tool_calls is set but the request has no tools"):
        parse_request('{"messages": [{"role": "user", "content": "x"}], "parallel_tool_calls": true}')


def test_diff_shows_the_new_fields_with_the_layer_behind_them(tmp_path: Path,
                                                             write: Callable[[str, str], Path]) -> None:
    run = write("run.yaml", "models:\n  m: {provider: openrouter, name: x/y}\n")
    overlay = write("ops.yaml", """
providers:
  openrouter:
    api_call_timeout_s: 90
    openrouter_defaults: {data_collection: allow, title: Ops}
""")
    old, new = tmp_path / "old", tmp_path / "new"
    assert invoke("compile", "--config", str(run), "--out", str(old)).exit_code == 0
    assert invoke("compile", "--config", str(run), "--presets-file", str(overlay),
                  "--out", str(new)).exit_code == 0
    result = invoke("diff", str(old / "m.json"), str(new / "m.json"))
    assert result.exit_code == 1, result.output
    for line in ("loop.api_call_timeout_s", "120.0", "90.0", "openrouter.data_collection", '"deny"', '"allow"',
                 "openrouter.title", "ops.yaml"):
        assert line in result.output, (line, result.output)

"""The question set read from a plan: every value its rules name, stable ids, one setting per question."""

from __future__ import annotations

from pathlib import Path

from capplan.executor.plan import Plan
from capplan.probes.questions import PROBE_MAX_TOKENS, question_set

GPT4O = Path(__file__).resolve().parents[2] / "golden" / "plans" / "gpt-4o.json"


def test_every_value_a_rule_names_is_asked_under_a_stable_id() -> None:
    body = Plan.load(GPT4O).body()
    drop = {"action": "drop", "with": None, "evidence": "2026-01-01 a test's claim"}
    body["param_value_rules"] = {"temperature": {"0.7": drop}, "top_p": {"0.5": drop}}
    questions = question_set(Plan.seal(body))
    ids = [q.id for q in questions]
    assert ids[0] == f"max_tokens={PROBE_MAX_TOKENS}"
    assert ids[1:4] == ["temperature=0", "temperature=0.7", "top_p=0.5"]
    assert {"tool_choice=none", "tool_choice=auto", "tool_choice=required", "tool_choice=named",
            "parallel_tool_calls=true", "parallel_tool_calls=false", "seed=1", "stop=END",
            "reasoning_effort=minimal", "reasoning_effort=xhigh", "response_format=json_schema_strict"} <= set(ids)
    assert len(ids) == len(set(ids))
    by_id = {q.id: q for q in questions}
    # the value rule under test is the one bypassed; the rule keys are the compiler's canonical ones
    assert (by_id["temperature=0.7"].rule_key, by_id["temperature=0.7"].under_test.bypass) == ("0.7", {"temperature"})
    assert by_id["top_p=0.5"].request.top_p == 0.5
    assert by_id["tool_choice=named"].rule_key is None  # a named choice is no value a rule can key
    assert by_id["parallel_tool_calls=false"].rule_key == "false"
    # the same plan gives the same questions (ids are how two probes are compared)
    assert [q.id for q in question_set(Plan.seal(body))] == ids

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


def test_the_output_cap_is_asked_under_the_name_the_plan_does_not_send_and_every_feature_has_its_tool() -> None:
    from capplan.probes.schema_features import FEATURES, NO_STRICT_FORM, feature_ids, parameters

    questions = question_set(Plan.load(GPT4O))
    by_id = {q.id: q for q in questions}
    cap = by_id["output_cap_name=max_completion_tokens"]  # gpt-4o sends max_tokens
    assert cap.skip is None and cap.claim is not None and cap.claim.kind == "none"
    assert cap.rewrite is not None
    moved = cap.rewrite({"model": "gpt-4o", "max_tokens": 16, "extra_body": {"keep": 1}})
    assert moved == {"model": "gpt-4o", "extra_body": {"keep": 1, "max_completion_tokens": 16}}
    # the Responses API has one name only: the question is there, skipped with the reason
    gpt5 = {q.id: q for q in question_set(Plan.load(GPT4O.parent / "gpt-5.json"))}
    assert "only max_output_tokens" in (gpt5["output_cap_name=max_tokens"].skip or "")
    # one question per feature, plain and strict (where strict mode has a form of it), plus strict alone
    ids = [q.id for q in questions if q.param == "tool_schema"]
    assert ids == feature_ids()
    assert len(ids) == 2 * len(FEATURES) - len(NO_STRICT_FORM) + 1
    for qid in ids:
        tools = by_id[qid].request.tools
        assert len(tools) == 1 and tools[0].function.name == "echo"
    # a strict form is strict at every object level, as strict validators demand
    nested = parameters("array_of_objects", strict=True)
    assert nested["additionalProperties"] is False
    assert nested["properties"]["value"]["items"]["additionalProperties"] is False

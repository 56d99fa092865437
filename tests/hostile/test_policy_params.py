"""Policy parameters are validated against each policy's declared Params, at lint and at compile."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import Result

from capplan.executor.policies.message_assembly_policy import FillEmptyAssistantAssembly
from capplan.executor.policies.params_policy import GenerationParams
from capplan.executor.policy_params import NoParams, PolicyParams, check_params, construct, declaration_problem
from capplan.executor.registry import SLOTS, policy_class, policy_targets
from tests.cli_runner import invoke_checked


def run(*args: str) -> Result:
    return invoke_checked(*args)


def lint(tmp_path: Path, text: str) -> Result:
    path = tmp_path / "overlay.yaml"
    path.write_text(text)
    return run("lint", "--kind", "overlay", str(path))


@pytest.mark.parametrize("slot,name", [(s, n) for s in SLOTS for n in sorted(policy_targets()[s])])
def test_every_registered_policy_declares_its_constructor(slot: str, name: str) -> None:
    assert declaration_problem(policy_class(slot, name)) is None


def test_a_constructor_without_a_params_model_is_refused() -> None:
    class Undeclared:
        def __init__(self, knob: int = 0) -> None:
            self.knob = knob

    class Drifted:
        class Params(PolicyParams):
            other: int = 0

        def __init__(self, knob: int = 0) -> None:
            self.knob = knob

    assert "declares no Params model" in str(declaration_problem(Undeclared))
    assert "declares ['other'], but its constructor takes ['knob']" in str(declaration_problem(Drifted))


def test_params_are_strict_finite_and_bounded() -> None:
    problems = check_params(GenerationParams, {"supports_seed": 1, "fixed_temperature": float("nan"),
                                               "reasoning_budget_default": 0, "typo": True})
    by_key = {p.loc[0]: p for p in problems}
    assert set(by_key) == {"supports_seed", "fixed_temperature", "reasoning_budget_default", "typo"}
    assert "finite" in by_key["fixed_temperature"].message and by_key["typo"].unknown
    assert check_params(GenerationParams, {"fixed_temperature": 2.5})[0].message.endswith("less than or equal to 2")
    assert check_params(FillEmptyAssistantAssembly, {"empty_assistant_filler": " "}) == []
    with pytest.raises(ValueError, match="empty_assistant_filler"):
        construct(FillEmptyAssistantAssembly, {"empty_assistant_filler": 3})


def test_lint_reports_every_policy_param_problem_located(tmp_path: Path) -> None:
    result = lint(tmp_path, """\
presets:
  mine:
    match: ["acme-*"]
    params:
      reasoning_budget_defualt: 5
      param_value_rules:
        tool_choice:
          auto: {action: override, with: sometimes, evidence: "2026-01-01: seen"}
        reasoning_effort:
          ultra: {action: reject, evidence: "2026-01-01: seen"}
        temperature:
          9: {action: drop, evidence: "2026-01-01: seen"}
    message_assembly_policy: {name: nova, params: {empty_assistant_filer: "x"}}
    max_context_tokens: 1000
    context_watermark: 5000
  two:
    match: ["b*"]
    params_policy: {name: generation_params, params: {fixed_temperature: .inf, reasoning_budget_default: 0}}
    message_assembly_policy: {name: nova, params: {empty_assistant_filler: ""}}
    schema_sanitizer: {name: strict, params: {x: 1}}
""")
    assert result.exit_code == 2
    out = result.output
    expected = [
        ":5:7: error[unknown-param]", "did you mean 'reasoning_budget_default'?",
        ":8:36: error[bad-rule-value]: presets.mine.params.param_value_rules.tool_choice.auto.with: 'sometimes'",
        ":10:11: error[bad-rule-value]", "'ultra' is not a reasoning_effort value",
        ":12:11: error[bad-rule-value]", "temperature 9.0 is outside [0, 2]",
        ":13:52: error[unknown-param]", "did you mean 'empty_assistant_filler'?",
        ":15:5: error[watermark-above-window]",
        ":18:55: error[bad-param]: presets.two.params_policy.params.fixed_temperature: must be a finite number",
        ":18:80: error[bad-param]", ":19:52: error[bad-param]",
        ":20:47: error[unknown-param]: presets.two.schema_sanitizer.params.x", "this policy takes no parameters",
    ]
    for fragment in expected:
        assert fragment in out, fragment


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("presets:\n  m:\n    match: ['a*']\n    match_provider: ['']\n", "empty-glob"),
        ("presets:\n  m:\n    match: ['  ']\n", "empty-glob"),
        ("presets:\n  m:\n    match: ['a*']\n    params: {fixed_temperature: .nan}\n", "wrong-type"),
        ("presets:\n  m:\n    match: ['a*']\n    params: {supports_seed: 'yes'}\n", "wrong-type"),
        ("providers:\n  x:\n    params:\n      param_value_rules:\n        top_p:\n"
         "          0.5: {action: reject, evidence: '   '}\n", "missing-evidence"),
        ('litellm_models:\n  a/b: {supports_reasoning: true, evidence: "\\t"}\n', "missing-evidence"),
    ],
)
def test_blank_globs_evidence_and_non_finite_values_are_refused(tmp_path: Path, text: str, code: str) -> None:
    result = lint(tmp_path, text)
    assert result.exit_code == 2 and f"error[{code}]" in result.output, result.output


def test_compile_checks_the_merged_params_and_writes_nothing(tmp_path: Path) -> None:
    overlay = tmp_path / "cross.yaml"
    # each block alone is fine; merged onto an openai model the budget default has no thinking kwarg to serve
    overlay.write_text("providers:\n  openai:\n    params: {reasoning_budget_default: 100}\n")
    out = tmp_path / "plans"
    result = run("compile", "--presets-file", str(overlay), "--out", str(out))
    assert result.exit_code == 2
    assert f"{overlay}:3:1: error[bad-param]: policies.params_policy.params.reasoning_budget_default: model 'gpt-5'" \
        in result.output
    assert not out.exists()


def test_compile_checks_the_merged_loop_knobs(tmp_path: Path) -> None:
    overlay = tmp_path / "o.yaml"
    overlay.write_text("providers:\n  openrouter:\n    context_watermark: 90000000\n")
    result = run("compile", "--presets-file", str(overlay), "--model", "kimi-k3", "--out", str(tmp_path / "p"))
    assert result.exit_code == 2 and f"{overlay}:3:" in result.output and "error[watermark-above-window]" in result.output


def test_the_executor_refuses_params_a_hand_edited_plan_carries(tmp_path: Path) -> None:
    from capplan.executor.errors import PolicyConstructionError
    from capplan.executor.policy_set import PolicySet
    from tests.executor.plans import make_plan

    plan = make_plan(params={"supports_seed": "yes"})
    with pytest.raises(PolicyConstructionError, match="supports_seed: Input should be a valid boolean"):
        PolicySet.from_plan(plan)


def test_policies_command_lists_every_policy_with_params() -> None:
    result = run("policies", "--format", "json")
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert list(data["slots"]) == list(SLOTS)
    for slot in SLOTS:
        assert sorted(r["name"] for r in data["slots"][slot]) == sorted(policy_targets()[slot])
    gen = next(r for r in data["slots"]["params_policy"] if r["name"] == "generation_params")
    fixed = next(p for p in gen["params"] if p["name"] == "fixed_temperature")
    assert fixed == {"name": "fixed_temperature", "type": "float | None", "default": None, "required": False,
                     "constraints": [">= 0", "<= 2.0"], "description": fixed["description"]} and fixed["description"]
    text = run("policies").output
    assert "generation_params (default)" in text and "empty_assistant_filler: str (min length 1)" in text


def test_schemas_enumerate_policy_names_and_params() -> None:
    from capplan.compiler.schemas import generate
    import jsonschema

    schema = generate("overlay")
    names = schema["$defs"]["Slot.schema_sanitizer"]["anyOf"][0]["enum"]
    assert names == sorted(policy_targets()["schema_sanitizer"])
    validator = jsonschema.Draft202012Validator(schema)
    ok: dict[str, Any] = {"presets": {"m": {"match": ["a*"], "message_assembly_policy": {
        "name": "nova", "params": {"empty_assistant_filler": " "}}}}}
    assert list(validator.iter_errors(ok)) == []
    for bad in ({"name": "nvoa"}, {"name": "nova", "params": {"filler": "x"}}):
        doc = {"presets": {"m": {"match": ["a*"], "message_assembly_policy": bad}}}
        assert list(validator.iter_errors(doc)), bad
    assert list(validator.iter_errors({"presets": {"m": {"match": ["a*"], "schema_sanitizer": "strcit"}}}))


def test_no_params_is_the_default_declaration() -> None:
    class Plain:
        name: ClassVar[str] = "plain"

    assert declaration_problem(Plain) is None
    assert check_params(Plain, {}) == [] and check_params(Plain, {"a": 1})[0].unknown
    assert NoParams.model_fields == {}

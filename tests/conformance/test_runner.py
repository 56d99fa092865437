"""The runner against a small emulator of the tests' own: cells, scopes, scenarios, and a plan no emulator speaks.

Real plans (the golden ones), capplan's real client and direct transport, the real trial loop,
a loopback emulator; no stub anywhere on the path.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from capplan.conformance.routes import MOCK_REASON, Target, Unheld, target_of
from capplan.conformance.runner import Cell, Matrix, PlanInput, run_conformance
from capplan.conformance.scenarios import BY_ID, SCENARIOS
from capplan.core.diagnostics import InputError
from capplan.executor.plan import Plan
from tests.chat_route import chat_route_plan
from tests.conformance.toy_emulator import CORPUS, EMULATORS

PLANS = Path(__file__).resolve().parents[2] / "golden" / "plans"


def plan_input(key: str) -> PlanInput:
    """The catalogue plan on chat completions, the toy emulator's protocol (gpt-5 included, compiled
    with examples/overlays/chat-completions.yaml); its file where the golden plan is the same plan."""
    path = PLANS / f"{key}.json"
    plan = chat_route_plan(key)
    shown = str(path) if plan == Plan.load(path) else f"{path} (on chat completions)"
    return PlanInput(key, plan, shown)


def cell(matrix: Matrix, plan: str, rule: str) -> Cell:
    (found,) = [c for c in matrix.cells if c.plan == plan and c.rule_id == rule]
    return found


@pytest.fixture(scope="module")
def matrix() -> Matrix:
    plans = [plan_input(key) for key in ("gpt-5", "kimi-k2-thinking", "gpt-4o", "mock-echo", "glm-4.6")]
    return run_conformance(plans, CORPUS, emulators=EMULATORS, workers=2)


def test_targets_are_the_model_as_the_route_is_sent_it() -> None:
    assert target_of(Plan.load(PLANS / "kimi-k2-thinking.json")) == Target(
        "openai-chat", "openrouter", "moonshotai/kimi-k2-thinking", "direct")
    assert target_of(Plan.load(PLANS / "nova-pro.json")) == Target("openai-chat", "nova", "nova-pro-v1", "direct")
    assert target_of(Plan.load(PLANS / "claude-opus-4.7.json")) == Target(
        "anthropic-messages", "anthropic", "claude-opus-4.7", "litellm")
    assert target_of(Plan.load(PLANS / "mock-echo.json")) == Unheld(MOCK_REASON)


def test_a_broken_rule_is_rejected_with_the_providers_text_scenario_and_request(matrix: Matrix) -> None:
    rejected = cell(matrix, "kimi-k2-thinking", "toy.reasoning_replay")
    assert rejected.status == "rejected"
    # the first tool step's request carries no history; the second replays the first step
    assert (rejected.scenario, rejected.request, rejected.http_status) == ("tool_loop", 1, 400)
    assert rejected.detail.startswith("thinking is enabled but reasoning_content is missing in assistant tool call message at index ")
    assert matrix.exit_code == 1


def test_a_rule_held_and_never_broken_is_accepted(matrix: Matrix) -> None:
    # gpt-5's plan never sends temperature (the route refuses sampling), so temperature 0 is never seen
    accepted = cell(matrix, "gpt-5", "toy.temperature_zero")
    assert accepted.status == "accepted" and "temperature_zero" in accepted.detail


def test_not_applicable_cells_say_why(matrix: Matrix) -> None:
    assert cell(matrix, "gpt-4o", "toy.temperature_zero").detail == "the rule holds for models gpt-5*; the plan sends gpt-4o"
    assert cell(matrix, "gpt-5", "toy.other_route").detail == "the rule holds on vllm; the plan is sent to openai"
    assert cell(matrix, "mock-echo", "toy.reasoning_replay").detail == MOCK_REASON
    assert {c.status for c in matrix.cells if c.plan == "mock-echo"} == {"not_applicable"}
    assert cell(matrix, "gpt-4o", "toy.never_sent").status == "accepted"


def test_a_plan_no_rule_holds_for_runs_nothing(matrix: Matrix) -> None:
    (glm,) = [p for p in matrix.plans if p.key == "glm-4.6"]
    assert {(s.status, s.detail, s.requests) for s in glm.scenarios} == {
        ("not_applicable", "no rule of the corpus holds for openai-chat on openrouter for z-ai/glm-4.6", 0)}
    assert {c.status for c in matrix.cells if c.plan == "glm-4.6"} == {"not_applicable"}


def test_every_applicable_scenario_ran_through_the_loop_or_turn_by_turn(matrix: Matrix) -> None:
    (gpt5,) = [p for p in matrix.plans if p.key == "gpt-5"]
    statuses = {s.scenario: s.status for s in gpt5.scenarios}
    assert set(statuses) == {s.id for s in SCENARIOS}
    assert statuses["cache_markers"] == "not_applicable"  # gpt-5's plan places no markers
    ran = {k for k, v in statuses.items() if v == "ran"}
    assert ran >= {"tool_loop", "parallel_calls", "two_user_turns", "model_switch", "route_switch", "context_handoff",
                   "tool_schemas", "temperature_zero", "effort_minimal", "effort_xhigh", "tool_choice_named"}
    requests = {s.scenario: s.requests for s in gpt5.scenarios}
    # three tool steps and the answer; the switches send one request to each side
    assert requests["tool_loop"] == 4 and requests["route_switch"] == 2 and requests["tool_choice_none"] == 1
    # the handoff's summary request rides between the step and the answer
    assert requests["context_handoff"] == 3
    (gpt4o,) = [p for p in matrix.plans if p.key == "gpt-4o"]
    assert {s.scenario: s.detail for s in gpt4o.scenarios}["effort_low"] == "the plan's model does not reason (reasoning codec none)"


def test_a_plan_whose_protocol_no_emulator_speaks_is_a_located_error() -> None:
    with pytest.raises(InputError) as caught:
        run_conformance([plan_input("claude-opus-4.7"), plan_input("gpt-5")], CORPUS, emulators=EMULATORS)
    (problem,) = caught.value.diagnostics
    assert problem.file.endswith("claude-opus-4.7.json")
    assert problem.message.startswith("no emulator speaks anthropic-messages")


def test_the_catalogue_has_every_scenario_the_issue_names() -> None:
    assert {"tool_loop", "parallel_calls", "two_user_turns", "thinking_on", "thinking_off", "model_switch", "route_switch",
            "context_handoff", "cache_markers", "tool_schemas", "temperature_zero", "effort_minimal", "effort_low",
            "effort_medium", "effort_high", "effort_xhigh", "tool_choice_auto", "tool_choice_required",
            "tool_choice_none", "tool_choice_named"} == set(BY_ID)

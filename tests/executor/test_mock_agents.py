"""The mock's scripted behaviours: data that holds together, and a comparison on the example tasks
that shows a real difference (the careful agent passes all ten, the sloppy one four, exact McNemar
p < 0.05), with costs from the example plans' fake prices."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

import capplan.trials
from capplan.executor import mock_agents, mock_provider
from capplan.trials.report.compare import compare
from tests.cli_runner import invoke_checked

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
SLOPPY_PASSES = {"inv-02-invoice-acme", "inv-05-out-of-stock", "trv-01-search", "trv-03-full-flight"}


def example_tools() -> dict[str, dict[str, Any]]:
    """Every tool the example tasks offer, by name, with its parameter schema."""
    tools: dict[str, dict[str, Any]] = {}
    for path in sorted((EXAMPLES / "trials").glob("*/*.yaml")):
        for tool in yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader).get("tools", []):
            tools[tool["name"]] = tool.get("parameters") or {"type": "object"}
    return tools


def test_every_scripted_call_is_a_valid_call_of_an_example_tool() -> None:
    tools = example_tools()
    behaviours = mock_agents.scripts().behaviours
    assert {"careful-1", "sloppy-1", "user-1"} <= set(behaviours)
    for name, behaviour in behaviours.items():
        for scene in behaviour.scenes:
            for step in scene.steps:
                if step.call is not None:
                    assert step.call in tools, f"{name}: {step.call} is no example task's tool"
                    jsonschema.validate(step.arguments, tools[step.call])


def test_a_scripted_model_plays_its_scene_step_by_step_and_others_still_echo() -> None:
    tools = [{"type": "function", "function": {"name": "lookup_item", "parameters": {"type": "object"}}}]
    asked = [{"role": "system", "content": "desk"}, {"role": "user", "content": "How many laptop stands (SKU-200) left?"}]
    first = mock_provider.complete({"model": "mock/careful-1", "messages": asked, "tools": tools})
    call = first.choices[0].message.tool_calls[0].function
    assert (call.name, json.loads(call.arguments)) == ("lookup_item", {"sku": "SKU-200"})
    answered = [*asked, {"role": "assistant", "content": "", "tool_calls": []}, {"role": "tool", "content": "{}"}]
    second = mock_provider.complete({"model": "mock/careful-1", "messages": answered, "tools": tools})
    assert second.choices[0].message.content.startswith("We have 3 laptop stands")
    sloppy = mock_provider.complete({"model": "mock/sloppy-1", "messages": asked, "tools": tools})
    assert sloppy.choices[0].message.tool_calls is None  # it skips the look-up
    # a scene's call of a tool this request does not offer is answered in text, not sent
    bare = mock_provider.complete({"model": "mock/careful-1", "messages": asked, "tools": []})
    assert bare.choices[0].message.content == mock_agents.scripts().behaviours["careful-1"].otherwise
    echo = mock_provider.complete({"model": "mock/echo-1", "messages": asked, "tools": tools})
    assert echo.choices[0].message.tool_calls[0].function.name == "lookup_item"  # the first tool, as before


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("mock-agents")
    invoke_checked("compile", "--config", EXAMPLES / "mock-agents.yaml", "--out", root / "plans", expect=0)
    plans = [root / "plans" / "mock-careful.json", root / "plans" / "mock-sloppy.json"]
    result = capplan.trials.run([EXAMPLES / "trials"], plans, out=root / "run",
                                user_plan=root / "plans" / "mock-user.json", trials=1)
    assert result.complete
    return result.folder


def test_the_careful_agent_passes_every_example_task_and_the_sloppy_one_misses_steps(compared: Any) -> None:
    passed = {(t.plan_key, t.task_id): t.passed for t in compared.trials}
    tasks = {task for _, task in passed}
    assert len(tasks) == len(list((EXAMPLES / "trials").glob("*/*.yaml"))) == 10
    assert all(passed[("mock-careful", task)] for task in tasks)
    assert {task for task in tasks if passed[("mock-sloppy", task)]} == SLOPPY_PASSES
    # every trial ended as the task accepts it: the scripted user stops, no turn limit is hit
    assert {t.termination_reason for t in compared.trials} == {"user_stop"}


def test_the_fake_prices_give_every_trial_a_cost_and_the_difference_is_significant(compared: Any) -> None:
    assert all(t.cost_usd is not None and t.cost_usd > 0 for t in compared.trials)
    llm_user = [t for t in compared.trials if t.task_id in {"inv-04-void", "trv-03-full-flight"}]
    assert all(t.user_cost_usd is not None and t.user_cost_usd > 0 for t in llm_user)
    [pair] = compare([compared]).pairs
    assert (pair.a, pair.b, pair.only_a, pair.only_b) == ("mock-careful", "mock-sloppy", 6, 0)
    assert pair.p_value < 0.05  # exact McNemar: 2 * 0.5**6

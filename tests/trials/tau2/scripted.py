"""A scripted τ² agent and user on one loopback server, and τ²'s own pipeline run against them.

The server is the test's :class:`~tests.fake_provider.FakeProvider`; :class:`Scripted` is its
responder. A request that offers tools is the agent's, one that offers none the user
simulator's (no mock or airline user has tools). Both tell the task apart the way a model
would, by what they read:

- the user finds its task's scenario in its system prompt (capplan's simulator and τ²'s both
  carry ``str(task.user_scenario)`` there), opens with a line naming the case, and once the
  agent has answered in text, stops (``###STOP###``);
- the agent finds the case named in the conversation's first user message, then makes the
  task's gold actions one tool call per completion, in order, and answers with a text that
  carries every ``communicate_info`` of the task.

A deviation (``drop``) leaves out the task's last write action. The same responder serves a
``capplan trial run`` and τ²'s own ``Orchestrator`` (its ``LLMAgent`` and ``UserSimulator``
calling the server through litellm), so the two pipelines play the same conversation.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from typing import Any

from tests.fake_provider import agent_completion, tool_call

STOP = "###STOP###"
#: a tool whose name starts so only reads (τ²'s airline and mock toolkits name their tools so)
READS = ("get_", "search_", "list_", "calculate")


def case(task: Any) -> str:
    """A short name of the task's scenario, which the scripted user says and the agent reads."""
    return hashlib.sha256(str(task.user_scenario).encode("utf-8")).hexdigest()[:10]


@dataclass(frozen=True)
class Script:
    scenario: str
    actions: list[tuple[str, dict[str, Any]]]
    answer: str
    #: the user's last message (its stop signal)
    ending: str = f"Thank you. {STOP}"


def script(task: Any, *, drop: bool = False, ending: str = f"Thank you. {STOP}") -> Script:
    """The gold actions of ``task`` (the last write left out when ``drop``) and an answer that communicates."""
    criteria = task.evaluation_criteria
    actions = [(a.name, dict(a.arguments)) for a in (criteria.actions or []) if a.requestor == "assistant"]
    if drop:
        writes = [i for i, (name, _) in enumerate(actions) if not name.startswith(READS)]
        assert writes, f"task {task.id} has no write action to leave out"
        del actions[writes[-1]]
    info = criteria.communicate_info or []
    answer = "All done." + "".join(f" Note: {item}." for item in info)
    return Script(str(task.user_scenario), actions, answer, ending)


class Scripted:
    """The responder: ``FakeProvider(on_body(Scripted(tasks)))``; ``unmatched`` lists requests it could not place."""

    def __init__(self, scripts: dict[str, Script]) -> None:
        self.scripts = scripts  # case -> script
        self.lock = threading.Lock()
        self.unmatched: list[str] = []

    def __call__(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        messages = body.get("messages") or []
        if body.get("tools"):
            return 200, self._agent(messages)
        return 200, self._user(messages)

    def _miss(self, what: str) -> dict[str, Any]:
        with self.lock:
            self.unmatched.append(what[:200])
        return agent_completion("I cannot place this conversation.")

    def _user(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        system = " ".join(str(m.get("content")) for m in messages if m.get("role") == "system")
        found = [name for name, s in self.scripts.items() if s.scenario in system]
        if len(found) != 1:
            return self._miss(f"user: {len(found)} scenarios match")
        # the simulator's own earlier turns are role=assistant in its (role-flipped) request
        if not any(m.get("role") == "assistant" for m in messages):
            return agent_completion(f"Hello, I need help with case {found[0]}.")
        return agent_completion(self.scripts[found[0]].ending)

    def _agent(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        users = [str(m.get("content")) for m in messages if m.get("role") == "user"]
        found = [name for name in self.scripts if users and f"case {name}" in users[0]]
        if len(found) != 1:
            return self._miss(f"agent: first user message {users[:1]!r}")
        steps = self.scripts[found[0]]
        made = sum(1 for m in messages if m.get("role") == "assistant" and m.get("tool_calls"))
        if made < len(steps.actions):
            name, arguments = steps.actions[made]
            return agent_completion(None, [tool_call(f"call_{made}", name, json.dumps(arguments))])
        return agent_completion(steps.answer)


def tau2_pipeline(domain: str, task: Any, base: str) -> Any:
    """τ²'s own run of ``task``: its orchestrator, LLM agent and user simulator against ``base``, then its evaluator.

    What ``tau2.run.run_task`` does for an ``llm_agent`` and ``user_simulator``, without that
    module's reporting imports. Returns τ²'s ``SimulationRun`` with its ``reward_info``.
    """
    from capplan.trials.importers.tau2.source import import_module

    registry = import_module("tau2.registry").registry
    orchestrator_module = import_module("tau2.orchestrator.orchestrator")
    evaluator = import_module("tau2.evaluator.evaluator")
    environment = registry.get_env_constructor(domain)()
    args = {"api_base": base, "api_key": "sk-tau2-scripted"}
    agent = registry.get_agent_constructor("llm_agent")(
        tools=environment.get_tools(), domain_policy=environment.get_policy(), llm="openai/agent-model",
        llm_args=dict(args))
    user = registry.get_user_constructor("user_simulator")(
        tools=None, instructions=str(task.user_scenario), llm="openai/agent-model", llm_args=dict(args))
    orchestrator = orchestrator_module.Orchestrator(domain=domain, agent=agent, user=user, environment=environment,
                                                    task=task, max_steps=100, max_errors=10)
    simulation = orchestrator.run()
    simulation.reward_info = evaluator.evaluate_simulation(
        domain=domain, task=task, simulation=simulation, evaluation_type=evaluator.EvaluationType.ALL,
        solo_mode=False)
    return simulation


def tau2_reward(domain: str, task: Any, base: str) -> tuple[float | str, str]:
    """τ²'s reward and termination reason for ``task``, or ``raised: ...`` where τ²'s evaluator raised.

    τ²'s evaluator raises where an environment assertion names what the agent never made (mock's
    ``assert_task_status`` of a task that was not created); ``tau2 run`` then stops, or with
    ``--skip-failed-samples`` records the sample as skipped with reward 0.
    """
    try:
        simulation = tau2_pipeline(domain, task, base)
    except Exception as exc:  # τ²'s own failure, compared with capplan's grader error
        return f"raised: {type(exc).__name__}: {exc}", ""
    return float(simulation.reward_info.reward), str(simulation.termination_reason.value)

"""A scripted τ² agent and user on one loopback server, their deliberate deviations, and τ²'s own pipeline.

The server is the test's :class:`~tests.fake_provider.FakeProvider`; :class:`Scripted` is its
responder. A request that offers tools is the agent's, one that offers none the user
simulator's (no airline, retail or mock user has tools). Both read only what a model would
read, so the same responder serves a ``capplan trial run`` and τ²'s own ``Orchestrator`` (its
``LLMAgent`` and ``UserSimulator`` calling the server through litellm), and the two pipelines
play the same conversation:

- the user finds its task's scenario in its system prompt (capplan's simulator and τ²'s both
  carry ``str(task.user_scenario)`` there) and answers the agent's last text: it opens naming
  the case; answers the agent's request for confirmation (:data:`CONFIRM`) with a yes, or
  ends early; and once the agent has answered (:data:`ANSWER`), stops (``###STOP###``);
- the agent finds the case in the conversation's latest user message that names one (a τ²
  task may open on an earlier conversation), makes the task's reads one tool call per
  completion, asks for confirmation before the first write (τ²'s policies ask for one), makes
  the writes, and answers with a text that carries every ``communicate_info`` of the task.

:data:`DEVIATIONS` are the ways a script departs from the gold one: a gold write left out, a
wrong argument, an extra write, the information not communicated, the user ending early.
Each applies to a task only where it can change what τ²'s evaluator sees (a task with no write
cannot lose one).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from tests.fake_provider import agent_completion, tool_call

STOP = "###STOP###"
#: what the agent says before its first write, and what the user recognises as that question
CONFIRM = "Shall I go ahead with these changes? Please confirm (yes/no)."
#: how the agent's final answer begins, and what the user recognises as the end of its errand
ANSWER = "All done."
YES = "Yes, please go ahead."
GOLD = "gold"
DEVIATIONS = ("drop", "wrong_arg", "extra_write", "silent", "user_early")
#: every script kind, the gold one first
KINDS = (GOLD, *DEVIATIONS)
#: what each kind does, for the agreement table
KIND_TEXT = {GOLD: "gold actions, then the answer", "drop": "a gold write left out",
             "wrong_arg": "a wrong argument in a gold write", "extra_write": "an extra write",
             "silent": "information not communicated", "user_early": "the user ends before the writes"}


def case(task: Any) -> str:
    """A short name of the task's scenario, which the scripted user says and the agent reads."""
    return hashlib.sha256(str(task.user_scenario).encode("utf-8")).hexdigest()[:10]


@dataclass(frozen=True)
class Script:
    scenario: str
    actions: tuple[tuple[str, dict[str, Any]], ...]
    #: the index of the first write in ``actions`` (the agent asks for confirmation before it), or None
    confirm_at: int | None
    answer: str
    #: the user's reply to the agent's request for confirmation
    consent: str = YES
    #: the user's last message (its stop signal)
    ending: str = f"Thank you. {STOP}"


#: the domains' writes a script adds for ``extra_write``, given a user id of the domain: each succeeds and changes the DB
EXTRA_WRITES: dict[str, Callable[[str], tuple[str, dict[str, Any]]]] = {
    "airline": lambda user: ("send_certificate", {"user_id": user, "amount": 150}),
    "retail": lambda user: ("modify_user_address", {"user_id": user, "address1": "1 Extra Street", "address2": "",
                                                    "city": "Springfield", "state": "IL", "country": "USA",
                                                    "zip": "62701"}),
    "mock": lambda user: ("create_task", {"user_id": user, "title": "An extra task"}),
}
#: the user an extra write names where the task's gold actions name none
DEFAULT_USERS = {"airline": "mia_li_3668", "retail": "yusuf_rossi_9620", "mock": "user_1"}


class Writes:
    """Which of a domain's agent tools write (τ²'s own tool types)."""

    def __init__(self, domain: str) -> None:
        from capplan.trials.importers.tau2.source import import_module

        module = import_module(f"tau2.domains.{domain}.environment")
        toolkit_class = type(module.get_environment().tools)
        tool_type = import_module("tau2.environment.toolkit").ToolType
        self.names = frozenset(name for name, tool in toolkit_class(None).tools.items()
                               if getattr(tool, "__tool_type__", None) == tool_type.WRITE)


def script(task: Any, kind: str = GOLD, *, domain: str = "mock", writes: frozenset[str] = frozenset(),
           ending: str = f"Thank you. {STOP}") -> Script | None:
    """The script of ``kind`` for ``task``; None where the deviation cannot apply to the task."""
    criteria = task.evaluation_criteria
    actions = [(a.name, dict(a.arguments)) for a in (criteria.actions or []) if a.requestor == "assistant"]
    written = [i for i, (name, _) in enumerate(actions) if name in writes]
    info = list(criteria.communicate_info or [])
    if kind == "drop":
        if not written:
            return None
        del actions[written[-1]]
    elif kind == "wrong_arg":
        if not written or not (wronged := _wrong(actions[written[-1]][1])):
            return None
        actions[written[-1]] = (actions[written[-1]][0], wronged)
    elif kind == "extra_write":
        users = [str(args["user_id"]) for _, args in actions if isinstance(args.get("user_id"), str)]
        actions.append(EXTRA_WRITES[domain](users[0] if users else DEFAULT_USERS[domain]))
    elif kind == "silent":
        if not info:
            return None
        info = []
    elif kind == "user_early":
        if not written:
            return None
    elif kind != GOLD:
        raise ValueError(f"unknown script kind {kind!r}")
    first_write = next((i for i, (name, _) in enumerate(actions) if name in writes), None)
    answer = ANSWER + "".join(f" Note: {item}." for item in info)
    return Script(str(task.user_scenario), tuple(actions), first_write, answer,
                  consent=f"No, let us stop here. {STOP}" if kind == "user_early" else YES, ending=ending)


def _wrong(arguments: dict[str, Any]) -> dict[str, Any] | None:
    """``arguments`` with one value changed: the first text or number, in key order."""
    for key in sorted(arguments):
        value = arguments[key]
        if isinstance(value, str):
            return {**arguments, key: value + "_WRONG"}
        if isinstance(value, int) and not isinstance(value, bool):
            return {**arguments, key: value + 7}
    return None


class Scripted:
    """The responder: ``FakeProvider(on_body(Scripted(scripts)))``; ``unmatched`` lists requests it could not place."""

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
        steps = self.scripts[found[0]]
        # the agent's turns are role=user in the simulator's (role-flipped) request; it answers the last one
        heard = [str(m.get("content") or "") for m in messages if m.get("role") == "user"]
        last = heard[-1] if heard else ""
        if last.startswith(ANSWER):
            return agent_completion(steps.ending)
        if last == CONFIRM:
            return agent_completion(steps.consent)
        return agent_completion(f"Hello, I need help with case {found[0]}.")

    def _agent(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        named = [(i, name) for i, m in enumerate(messages) if m.get("role") == "user"
                 for name in self.scripts if f"case {name}" in str(m.get("content"))]
        if not named:
            return self._miss(f"agent: no case named in {[m.get('content') for m in messages][-3:]!r}")
        start, name = named[-1]
        steps = self.scripts[name]
        since = messages[start + 1:]
        made = sum(len(m.get("tool_calls") or []) for m in since if m.get("role") == "assistant")
        asked = any(m.get("role") == "assistant" and m.get("content") == CONFIRM for m in since)
        if made == steps.confirm_at and not asked:
            return agent_completion(CONFIRM)
        if made < len(steps.actions):
            tool, arguments = steps.actions[made]
            return agent_completion(None, [tool_call(f"call_{made}", tool, json.dumps(arguments))])
        return agent_completion(steps.answer)


def with_ending(steps: Script, ending: str) -> Script:
    """``steps`` with the user's last message replaced."""
    return replace(steps, ending=ending)


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


def serve(domain: str, latency_s: float = 0.0) -> None:
    """Serve the gold scripts of every task of ``domain`` until killed, printing the base URL (the benchmark's agent and user)."""
    import threading as _threading

    from capplan.trials.importers.tau2 import source
    from tests.fake_provider import FakeProvider, on_body

    writes = Writes(domain).names
    scripts = {}
    for task in source.load(domain).tasks:
        steps = script(task, domain=domain, writes=writes)
        assert steps is not None
        scripts.setdefault(case(task), steps)  # tasks that share a scenario share its first task's script
    with FakeProvider(on_body(Scripted(scripts)), delay_s=latency_s) as fake:
        print(fake.base, flush=True)
        _threading.Event().wait()


if __name__ == "__main__":
    import sys

    serve(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 0.0)

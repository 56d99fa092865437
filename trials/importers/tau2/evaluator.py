"""A τ² task's grader: the trial's trajectory in τ²'s own types, judged by τ²'s own evaluator.

The recorded conversation becomes τ²'s messages -- τ²'s opening agent greeting first, as its
orchestrator starts every conversation, then each user turn, each assistant message (text, or
tool calls with the arguments exactly as the model sent them) and each tool result with the
text the agent read -- inside a ``SimulationRun`` whose termination reason is the trial's, in
τ²'s terms: a user stop, transfer or out-of-scope signal is τ²'s ``user_stop`` (its user
simulator ends a conversation on any of the three), the turn or step limit is ``max_steps``,
any other end ``agent_error`` (τ² rewards those 0). Harness-authored messages (parser-error
feedback, markers) are not the conversation and are left out.

τ²'s ``evaluate_simulation`` then grades it on the task's ``reward_basis`` (``ALL``: the DB
check, by replaying the trajectory and the gold actions on fresh environments and comparing
hashes; ENV_ASSERTION; ACTION; COMMUNICATE). A trial passes when the reward is 1, as τ² counts
a success; the reward is the grade's score and the breakdown its detail.

A task rewarded on NL_ASSERTION is graded with τ²'s ``ALL_WITH_NL_ASSERTIONS``: τ²'s own
``NLAssertionsEvaluator`` builds the judge's prompt from the trajectory and reads its answer, and
only its one model call is made elsewhere: through the run's ``--judge-plan`` (the ``judge``
keyword capplan passes a grader, a capplan client recorded like any other provider call, with
tokens and cost). τ²'s ``generate`` in that module is replaced, once per process, by a dispatcher
that sends through the judge of the trial grading in this thread; a caller with no judge (τ²'s own
pipeline in the same process) gets τ²'s ``generate`` as before. τ² asks its judge for
``temperature`` 0, and so does the request; the judge plan's value rules decide what is sent.

The replay raises when a tool result in the trajectory differs from what τ²'s environment
answers to the same call (a tool output cut by a cap, say): the trajectory is then not one τ²
could have produced, and the grader error makes the trial a harness error, never the agent's.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from capplan.trials.importers.tau2.source import import_module
from capplan.trials.run_folder.recording import ORIGIN

#: capplan termination reason -> τ²'s (anything else is τ²'s agent_error)
TERMINATIONS = {"user_stop": "user_stop", "user_transfer": "user_stop", "user_out_of_scope": "user_stop",
                "max_turns": "max_steps", "max_steps_per_turn": "max_steps"}
#: τ²'s success test: a reward of 1 (within its tolerance)
SUCCESS_TOLERANCE = 1e-6
#: the reward basis that needs a judge model
NL_ASSERTION = "NL_ASSERTION"
#: the module whose ``generate`` makes τ²'s judge call
NL_MODULE = "tau2.evaluator.evaluator_nl_assertions"

#: ``judge(request) -> text``: one model call through the judge plan (``{system, messages, temperature}``)
Judge = Callable[[dict[str, Any]], str]

_JUDGES = threading.local()
_INSTALL_LOCK = threading.Lock()


class JudgeAnswerError(ValueError):
    """The judge's answer is not the JSON τ²'s NL-assertion evaluator reads."""


def needs_judge(metadata: dict[str, Any]) -> str | None:
    """Why a task with this metadata needs ``--judge-plan`` (its reward basis has NL_ASSERTION); None when not.

    The driver asks every task's grader this before anything is sent.
    """
    info = metadata.get("tau2") if isinstance(metadata, dict) else None
    bases = info.get("reward_basis") if isinstance(info, dict) else None
    if isinstance(bases, list) and NL_ASSERTION in bases:
        return "its τ² reward basis has NL_ASSERTION, judged by a model"
    return None


def _install_dispatcher() -> None:
    """Put the dispatcher in place of τ²'s ``generate`` in its NL-assertion module (once per process)."""
    module = import_module(NL_MODULE)
    with _INSTALL_LOCK:
        if getattr(module.generate, "_capplan_dispatcher", False):
            return
        original = module.generate
        llm_utils = import_module("tau2.utils.llm_utils")
        message_types = import_module("tau2.data_model.message")

        def generate(model: str, messages: list[Any], **kwargs: Any) -> Any:
            judge: Judge | None = getattr(_JUDGES, "current", None)
            if judge is None:
                return original(model, messages, **kwargs)  # τ²'s own pipeline, not a capplan trial
            system = "\n\n".join(str(m.content) for m in messages if getattr(m, "role", None) == "system")
            rest = [m for m in messages if getattr(m, "role", None) != "system"]
            request: dict[str, Any] = {"system": system or None, "messages": llm_utils.to_litellm_messages(rest)}
            if isinstance(kwargs.get("temperature"), (int, float)):
                request["temperature"] = float(kwargs["temperature"])
            text = judge(request)
            _check_answer(text)
            return message_types.AssistantMessage(role="assistant", content=text)

        generate._capplan_dispatcher = True  # type: ignore[attr-defined]
        module.generate = generate


#: what τ²'s evaluator reads of each result in the judge's answer
_RESULT_KEYS = ("expectedOutcome", "reasoning", "metExpectation")


def _check_answer(text: str) -> None:
    """Raise :class:`JudgeAnswerError` unless ``text`` is the JSON τ²'s evaluator reads (it would raise a bare
    ``KeyError`` or ``JSONDecodeError`` on anything else)."""
    try:
        data = json.loads(text)
    except ValueError:
        raise JudgeAnswerError("the judge's answer is not JSON; τ²'s NL-assertion evaluator reads "
                               '{"results": [{"expectedOutcome", "reasoning", "metExpectation"}, ...]}') from None
    results = data.get("results", []) if isinstance(data, dict) else None
    if not isinstance(results, list) or not all(isinstance(r, dict) and all(k in r for k in _RESULT_KEYS)
                                                for r in results):
        raise JudgeAnswerError("the judge's answer is JSON but not τ²'s shape: each of its \"results\" needs "
                               "expectedOutcome, reasoning and metExpectation")


@contextmanager
def judging(judge: Judge | None) -> Iterator[None]:
    """τ²'s judge calls made in this thread inside the block go to ``judge``."""
    if judge is not None:
        _install_dispatcher()
    before = getattr(_JUDGES, "current", None)
    _JUDGES.current = judge
    try:
        yield
    finally:
        _JUDGES.current = before


def tau2_messages(trajectory: dict[str, Any]) -> list[Any]:
    """The trial's conversation as τ²'s messages (its opening greeting first)."""
    message_types = import_module("tau2.data_model.message")
    orchestrator = import_module("tau2.orchestrator.orchestrator")
    converted: list[Any] = [orchestrator.DEFAULT_FIRST_AGENT_MESSAGE.model_copy(deep=True)]
    user_calls: dict[int, list[dict[str, Any]]] = {}
    for record in trajectory.get("user_tool_calls") or []:  # dual control: the user's own calls, by the turn they preceded
        user_calls.setdefault(int(record.get("before_message") or 0), []).append(record)
    messages = trajectory.get("messages") or []
    for index, message in enumerate(messages):
        for record in user_calls.pop(index, []):
            converted.extend(_user_call(message_types, record))
        role = message.get("role")
        if ORIGIN in message or role == "system":
            continue
        content = message.get("content")
        text = content if isinstance(content, str) else None
        if role == "user":
            converted.append(message_types.UserMessage(role="user", content=text))
        elif role == "assistant":
            calls = [message_types.ToolCall(id=str(call.get("id", "")), name=str(call["function"]["name"]),
                                            arguments=_arguments(call["function"].get("arguments")),
                                            requestor="assistant")
                     for call in message.get("tool_calls") or []]
            converted.append(message_types.AssistantMessage(role="assistant", content=text or None,
                                                            tool_calls=calls or None))
        elif role == "tool":
            converted.append(message_types.ToolMessage(id=str(message.get("tool_call_id", "")), role="tool",
                                                       content=text, requestor="assistant",
                                                       error=(text or "").startswith("Error: ")))
    for records in user_calls.values():  # calls made before a turn that was never recorded (the trial ended)
        for record in records:
            converted.extend(_user_call(message_types, record))
    return converted


def _user_call(message_types: Any, record: dict[str, Any]) -> list[Any]:
    """One of the user's own tool calls as τ²'s orchestrator records it: the user's call, then its result."""
    call_id, output = str(record.get("id", "")), str(record.get("output", ""))
    call = message_types.ToolCall(id=call_id, name=str(record.get("name", "")),
                                  arguments=dict(record.get("arguments") or {}), requestor="user")
    return [message_types.UserMessage(role="user", content=None, tool_calls=[call]),
            message_types.ToolMessage(id=call_id, role="tool", content=output, requestor="user",
                                      error=output.startswith("Error: "))]


def _arguments(raw: Any) -> dict[str, Any]:
    """A call's arguments as the model sent them; text that is no JSON object is no arguments (τ²'s parse)."""
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw or "{}")
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def tau2_evaluator(trajectory: dict[str, Any], final_state: dict[str, Any] | None, task: dict[str, Any],
                   *, metadata: dict[str, Any], judge: Judge | None = None) -> dict[str, Any]:
    """τ²'s reward for the trial: ``{passed, score: reward, detail: τ²'s RewardInfo}``.

    ``judge`` (the run's ``--judge-plan``) makes τ²'s NL-assertion judge call; a task rewarded on
    NL_ASSERTION without one raises (the driver refuses such a run before it starts).
    """
    info = metadata.get("tau2") or {}
    nl = needs_judge(metadata) is not None
    if nl and judge is None:
        raise ValueError("the task's reward basis has NL_ASSERTION and the run has no judge: pass --judge-plan")
    tasks = import_module("tau2.data_model.tasks")
    simulation = import_module("tau2.data_model.simulation")
    evaluator = import_module("tau2.evaluator.evaluator")
    tau2_task = tasks.Task.model_validate(info.get("task") or {})
    reason = str((trajectory.get("termination") or {}).get("reason", ""))
    run = simulation.SimulationRun(
        id=str((trajectory.get("trial") or {}).get("key", "capplan")), task_id=str(tau2_task.id),
        start_time="", end_time="", duration=0.0,
        termination_reason=simulation.TerminationReason(TERMINATIONS.get(reason, "agent_error")),
        messages=tau2_messages(trajectory))
    kind = evaluator.EvaluationType.ALL_WITH_NL_ASSERTIONS if nl else evaluator.EvaluationType.ALL
    with judging(judge if nl else None):
        reward = evaluator.evaluate_simulation(simulation=run, task=tau2_task, evaluation_type=kind,
                                               solo_mode=False, domain=str(info.get("domain")))
    detail = reward.model_dump(mode="json", exclude_none=True)
    return {"passed": abs(reward.reward - 1.0) <= SUCCESS_TOLERANCE, "score": float(reward.reward), "detail": detail}


# the driver asks a grader function whether a task needs --judge-plan (capplan.trials.driver._refuse_unjudged)
tau2_evaluator.needs_judge = needs_judge  # type: ignore[attr-defined]

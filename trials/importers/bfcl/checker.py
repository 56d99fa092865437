"""``--grader bfcl``: a trial judged by BFCL's own ``multi_turn_checker``.

The trial's tool calls are grouped as the benchmark's inference loop groups a model's output
(per user turn, per step, each call decoded to ``name(arg=repr(value),...)`` as its
function-calling handlers decode an OpenAI tool call) and handed to the installed checker with
the entry's ground truth from the task's metadata and the initial configuration the trial's own
components were set up with. The checker replays both on fresh instances of the benchmark's
classes, as it does for any model; its verdict and error type are the grade.

The checker caches the instances it builds in its module's globals under a name made of the
model name and entry id: every call here passes a model name of its own and removes those
instances afterwards, so concurrent and repeated trials never see each other's state.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from typing import Any

from capplan.trials.importers.bfcl.ground_truth import model_call_text
from capplan.trials.importers.bfcl.source import INSTALL_COMMAND
from capplan.trials.grading.sent_calls import sent_calls, undecodable

SCENARIO_FLAG = "long_context"


def turn_steps(trajectory: dict[str, Any]) -> list[list[list[str]]]:
    """The agent's tool calls per user turn, per step (one step per assistant message with calls).

    Each call is decoded from the argument text exactly as the model sent it (the message's
    ``sent_arguments`` where the call ran with repaired arguments; a tool may also keep and later
    change an argument object it was passed, so what the call record holds after the trial can
    differ), as BFCL's function-calling handlers decode an OpenAI tool call: ``json.loads`` of
    each call's arguments, the step at once. A step with a call that decoder refuses (not JSON,
    or not an object) ends the user turn there, as BFCL's inference loop ends it ("Failed to
    decode the model response. Proceed to next turn."): that step and the turn's later steps are
    left out.
    """
    turns: list[list[list[str]]] = []
    for completions in sent_calls(trajectory):
        steps: list[list[str]] = []
        for completion in completions:
            if undecodable(completion) is not None:
                break
            steps.append([model_call_text(call.name, call.arguments() or {}) for call in completion])
        turns.append(steps)
    return turns


def _initial_config(task: dict[str, Any], involved: Iterable[str]) -> dict[str, Any]:
    """Each class's scenario, as the trial's components were set up with it."""
    config: dict[str, Any] = {}
    components = task.get("environment")
    for component in components if isinstance(components, list) else []:
        name = component.get("name")
        setup = component.get("setup") or {}
        if name in involved and setup.get("args"):
            scenario = [v for k, v in setup["args"].items() if k != SCENARIO_FLAG]
            if scenario:
                config[name] = scenario[0]
    return config


def bfcl_multi_turn_checker(trajectory: dict[str, Any], final_state: dict[str, Any] | None, task: dict[str, Any],
                            *, metadata: dict[str, Any]) -> dict[str, Any]:
    """BFCL's verdict on the trial: ``{passed, detail: {error_type, error_message}}``."""
    try:
        from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_checker as checker_module
        from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
    except ModuleNotFoundError as exc:
        return {"passed": False, "detail": {"error_type": "capplan:bfcl_not_installed",
                                            "error_message": f"module {exc.name!r} is missing: {INSTALL_COMMAND}"}}
    bfcl = metadata.get("bfcl") or {}
    ground_truth: list[list[str]] = bfcl.get("ground_truth") or []
    involved: list[str] = bfcl.get("involved_classes") or []
    entry_id = str(bfcl.get("id"))
    decoded = turn_steps(trajectory)
    if len(decoded) != len(ground_truth):
        # the benchmark's own runner refuses a result whose turn count differs before its checker runs
        return {"passed": False, "detail": {
            "error_type": "multi_turn:force_terminated",
            "error_message": f"the trial has {len(decoded)} user turns, the ground truth {len(ground_truth)}"}}
    model_name = f"capplan_{uuid.uuid4().hex}"
    entry = {"id": entry_id, "initial_config": _initial_config(task, involved), "involved_classes": involved}
    try:
        verdict = checker_module.multi_turn_checker(decoded, ground_truth, entry, entry_id.rsplit("_", 1)[0],
                                                    model_name)
    finally:
        prefix = re.sub(r"[-./:]", "_", model_name)
        for key in [k for k in list(vars(multi_turn_utils)) if k.startswith(prefix)]:
            vars(multi_turn_utils).pop(key, None)
    detail = None if verdict.get("valid") else {
        "error_type": str(verdict.get("error_type", "")), "error_message": str(verdict.get("error_message", ""))}
    return {"passed": bool(verdict.get("valid")), "detail": detail}

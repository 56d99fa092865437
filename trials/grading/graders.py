"""Graders: the built-in checks and custom functions.

Built-in checks, each failing with one reason per failed check:

- ``expected_actions``: these tool calls appear in order among the calls that ran;
- ``expected_state``: the listed keys of the final state hold these values (for a component
  list, keys two levels deep: ``{component: {attribute: value}}``);
- ``expected_outputs``: these tool outputs (as text) are an unordered sub-multiset of every
  output of the agent's tool calls;
- ``per_turn``: entry i is checked on the checkpoint at the end of user turn i: the state on its
  listed keys, and the outputs cumulatively (a sub-multiset of the outputs of turns 0..i); with
  ``requires_calls``, that turn made tool calls, every completion's argument texts JSON objects as
  the model sent them (:mod:`capplan.trials.grading.sent_calls`).

A custom grader (``function: pkg.mod:fn`` or ``{ref, args, when}``) is called as::

    fn(trajectory, final_state, task, **args)

plus, as keywords, whichever of ``metadata`` (the task's metadata), ``checkpoints`` (the
:class:`~capplan.trials.run_folder.records.TurnCheckpoint` list as dicts, up to the state graded),
``turn`` (the user turn graded, None for the end) and ``judge`` (the run's ``--judge-plan`` as a
callable, ``judge({system, messages, temperature?}) -> text``, recorded as a ``judge`` call; None
without one) it declares or that ``**kwargs`` takes, so a
grader written for ``(trajectory, final_state, task)`` keeps working. ``when: each_turn`` calls
it once per checkpoint, with that checkpoint's state as ``final_state``; ``end`` once with the
final state. It returns ``bool`` or ``{passed: bool, score?: number, detail?: JSON}``.

A grader that raises (``SystemExit`` and ``KeyboardInterrupt`` included), cannot be imported, or
returns anything else raises :class:`GraderError` with the reason; the runner records that as
the trial's error (a harness failure, not the model's), never as an exception escaping the run.

A trial passes when every grader its task names passes and its conversation reached an end the
task accepts (:func:`capplan.trials.outcome.unaccepted_end`, applied by the runner after the
graders, whose verdicts are kept either way). Only a trial that reached a terminal
the model is answerable for (``completed`` or ``failed``) is graded, and only when the agent
produced at least one completion: a trial whose agent never answered is never ``passed``
(graders would otherwise judge the environment's untouched initial state). A harness error
(``error``) is not graded but stays in the denominator as not passed, as the spec counts it;
aborted and interrupted trials are neither graded nor counted.
"""

from __future__ import annotations

import inspect
import json
import math
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from capplan.trials.outcome import TrialStatus
from capplan.trials.grading.sent_calls import SentCall, TurnCompletions, sent_calls, undecodable
from capplan.trials.run_folder.records import CallRecord, Grade, GraderResult, ToolCallRecord, TurnCheckpoint
from capplan.trials.tasks.state_encoding import encode_state_value
from capplan.trials.tasks.taskfile import GRADER_KEYWORDS, ExpectedAction, GraderFunction, TaskFile
from capplan.trials.tasks.loading import resolve_function

#: how much of a value a reason quotes
_SHOWN_CHARS = 200


class GraderError(Exception):
    """A grader failed to give a verdict (raised, missing, or returned something that is not one)."""


def verdict_for(task: TaskFile | None, status: TrialStatus, calls: Sequence[CallRecord],
                run_graders: Callable[[TaskFile], Grade]) -> Grade:
    """The trial's grade under the rules above; ``run_graders`` runs the task's graders."""
    if task is None or task.grader is None:
        return Grade(passed=None, note=None if task is not None else "the task did not load")
    if status is TrialStatus.ERROR:
        return Grade(passed=False, note="harness error: not graded; counted in the denominator as not passed")
    if status not in (TrialStatus.COMPLETED, TrialStatus.FAILED):
        return Grade(passed=None, note=f"not graded: the trial ended {status.value}")
    if not any(c.role == "agent" and c.outcome != "failed" for c in calls):
        if status is TrialStatus.COMPLETED:
            # the user stopped before the agent spoke: nothing the model did to judge
            return Grade(passed=None, note="not graded: the agent never spoke")
        return Grade(passed=False, note="not passed: the agent produced no completion")
    return run_graders(task)


#: ``judge(request) -> text``: one model call through the run's judge plan
Judge = Callable[[dict[str, Any]], str]


def grade(task: TaskFile, tool_calls: list[ToolCallRecord], final_state: dict[str, Any] | None,
          trajectory: dict[str, Any], *, checkpoints: Sequence[TurnCheckpoint] | None = None,
          judge: Judge | None = None) -> Grade:
    """Every grader's verdict; ``passed`` None when the task has no grader.

    ``checkpoints`` default to the trajectory's own; ``trajectory["final_state_error"]`` says why
    ``final_state`` is None. Raises :class:`GraderError` for a grader that gives no verdict.
    """
    grader = task.grader
    if grader is None:
        return Grade(passed=None)
    if checkpoints is None:
        checkpoints = [TurnCheckpoint.model_validate(c) for c in trajectory.get("checkpoints") or []]
    state_error = trajectory.get("final_state_error")
    results = []
    if grader.expected_actions is not None:
        results.append(expected_actions(grader.expected_actions, tool_calls))
    if grader.expected_state is not None:
        results.append(expected_state(grader.expected_state, final_state, nested=not task.flat_state,
                                      state_error=state_error))
    if grader.expected_outputs is not None:
        results.append(expected_outputs(grader.expected_outputs, [c.output for c in tool_calls]))
    if grader.per_turn is not None:
        results.append(per_turn(task, checkpoints, sent_calls(trajectory)))
    function = grader.function_ref
    if function is not None:
        results.append(custom(function, trajectory, final_state, task, checkpoints, judge))
    return Grade(passed=all(r.passed for r in results), graders=results)


# --- built-in checks -------------------------------------------------------------------------------


def expected_actions(expected: list[ExpectedAction], calls: list[ToolCallRecord]) -> GraderResult:
    """The expected calls appear in order among the calls that ran (other calls may interleave)."""
    ran = [c for c in calls if c.error is None]
    position = 0
    missing = []
    reasons = []
    for i, action in enumerate(expected):
        found = next((j for j in range(position, len(ran)) if _matches(action, ran[j])), None)
        if found is None:
            missing.append({"name": action.name, "arguments": action.arguments})
            reasons.append(f"expected action {i} ({action.name} with {_shown(action.arguments)}) was not called "
                           "after the previous expected action")
        else:
            position = found + 1
    return GraderResult(name="expected_actions", passed=not missing, detail={"missing": missing} if missing else None,
                        reasons=reasons)


def _matches(action: ExpectedAction, call: ToolCallRecord) -> bool:
    return call.name == action.name and all(call.arguments.get(k) == v for k, v in action.arguments.items())


def state_differences(expected: dict[str, Any], state: dict[str, Any], *, nested: bool) -> dict[str, Any]:
    """``{key path: {expected, actual}}`` for each listed key whose value differs (two levels when ``nested``).

    The expected values go through the state's own encoder first, so what YAML reads as an int key or a
    date compares with the state's encoding of the same (``{1: a}`` as ``{"1": a}``, a date as ISO text).
    """
    diffs: dict[str, Any] = {}
    expected = encode_state_value(expected, None)
    for key, want in expected.items():
        have = state.get(key)
        if nested and isinstance(want, dict) and isinstance(have, dict):
            for attr, value in want.items():
                if have.get(attr, _MISSING) != value:
                    diffs[f"{key}.{attr}"] = {"expected": value, "actual": have.get(attr)}
        elif key not in state or have != want:
            diffs[key] = {"expected": want, "actual": have}
    return diffs


_MISSING = object()


def expected_state(expected: dict[str, Any], final: dict[str, Any] | None, *, nested: bool = False,
                   state_error: str | None = None) -> GraderResult:
    """Each listed key of the final state holds exactly the expected value."""
    if final is None:
        reason = f"the final state could not be read: {state_error}" if state_error else "the final state is unknown"
        return GraderResult(name="expected_state", passed=False, reasons=[reason])
    diffs = state_differences(expected, final, nested=nested)
    reasons = [f"final state: {key}: expected {_shown(d['expected'])}, actual {_shown(d['actual'])}"
               for key, d in diffs.items()]
    return GraderResult(name="expected_state", passed=not diffs, detail=diffs or None, reasons=reasons)


def missing_outputs(expected: Sequence[str], actual: Sequence[str]) -> list[str]:
    """What of ``expected`` is not in ``actual`` as an unordered sub-multiset (each actual output used once)."""
    left = Counter(actual)
    missing = []
    for output in expected:
        if left[output] > 0:
            left[output] -= 1
        else:
            missing.append(output)
    return missing


def expected_outputs(expected: list[str], actual: list[str]) -> GraderResult:
    """The expected outputs are all among the agent's tool outputs (unordered, each output counted once)."""
    missing = missing_outputs(expected, actual)
    reasons = [f"tool output {_shown(m)} is missing from the agent's {len(actual)} tool output(s)" for m in missing]
    return GraderResult(name="expected_outputs", passed=not missing,
                        detail={"missing": missing} if missing else None, reasons=reasons)


def per_turn(task: TaskFile, checkpoints: Sequence[TurnCheckpoint], sent: TurnCompletions | None = None) -> GraderResult:
    """Entry i on the checkpoint of user turn i: state on the listed keys, outputs of turns 0..i cumulatively,
    and (``requires_calls``) calls made in turn i, as sent (``sent``: the trajectory's, by user turn)."""
    assert task.grader is not None and task.grader.per_turn is not None
    by_turn = {c.user_turn: c for c in checkpoints}
    reasons: list[str] = []
    detail: dict[str, Any] = {}
    outputs: list[str] = []
    for i, expectation in enumerate(task.grader.per_turn):
        checkpoint = by_turn.get(i)
        if checkpoint is None:
            reasons.append(f"user turn {i}: no checkpoint (the trial ended before user turn {i} did)")
            detail[str(i)] = {"checkpoint": None}
            continue
        outputs += checkpoint.tool_outputs
        found: dict[str, Any] = {}
        if expectation.requires_calls:
            problem = _calls_problem(sent[i] if sent is not None and i < len(sent) else [])
            if problem is not None:
                reasons.append(f"user turn {i}: {problem}")
                found["calls"] = problem
        if expectation.expected_state is not None:
            if checkpoint.state is None:
                reasons.append(f"user turn {i}: the state could not be read: {checkpoint.state_error}")
                found["state_error"] = checkpoint.state_error
            else:
                diffs = state_differences(expectation.expected_state, checkpoint.state, nested=not task.flat_state)
                reasons += [f"user turn {i}: state {key}: expected {_shown(d['expected'])}, actual {_shown(d['actual'])}"
                            for key, d in diffs.items()]
                if diffs:
                    found["state"] = diffs
        if expectation.expected_outputs is not None:
            missing = missing_outputs(expectation.expected_outputs, outputs)
            reasons += [f"user turn {i}: tool output {_shown(m)} is missing from the agent's {len(outputs)} tool "
                        f"output(s) so far" for m in missing]
            if missing:
                found["missing_outputs"] = missing
        if found:
            detail[str(i)] = found
    return GraderResult(name="per_turn", passed=not reasons, detail=detail or None, reasons=reasons)


def _calls_problem(completions: list[list[SentCall]]) -> str | None:
    """Why a turn that must make calls did not, as sent; None when it did."""
    if not completions:
        return "the agent made no tool call (this turn's calls are required)"
    for completion in completions:
        bad = undecodable(completion)
        if bad is not None:
            return (f"the agent's call to {bad.name or '(no name)'} sent arguments that are not a JSON object "
                    f"({_shown(bad.text)}): the call ran with what capplan's parser made of it, but a completion is "
                    "judged as sent, and a decoder that reads what was sent refuses it (this turn's calls are "
                    "required)")
    return None


# --- custom graders --------------------------------------------------------------------------------


def custom(function: GraderFunction, trajectory: dict[str, Any], final_state: dict[str, Any] | None,
           task: TaskFile, checkpoints: Sequence[TurnCheckpoint], judge: Judge | None = None) -> GraderResult:
    """Run a custom grader (once at the end, or on each checkpoint) and validate what it returns."""
    name = function.ref
    try:
        fn = resolve_function(name, task.folder, task.requires)
    except LookupError as exc:
        raise GraderError(f"grader {name} cannot be loaded: {exc}") from None
    accepts = _accepted_keywords(fn)
    task_data = task.model_dump(mode="json")
    dumped = [c.model_dump(mode="json") for c in checkpoints]
    if function.when == "end" or not checkpoints:
        return _validated(name, _call(fn, name, accepts, function, trajectory, final_state, task_data,
                                      task.metadata, dumped, None, judge))
    reasons: list[str] = []
    per_checkpoint: list[dict[str, Any]] = []
    scores: list[float] = []
    for index, checkpoint in enumerate(checkpoints):
        result = _validated(name, _call(fn, name, accepts, function, trajectory, checkpoint.state, task_data,
                                        task.metadata, dumped[: index + 1], checkpoint.user_turn, judge))
        per_checkpoint.append({"turn": checkpoint.user_turn, "passed": result.passed, "score": result.score,
                               "detail": result.detail})
        if result.score is not None:
            scores.append(result.score)
        if not result.passed:
            reasons.append(f"user turn {checkpoint.user_turn}: {name} did not pass"
                           + (f" ({_shown(result.detail)})" if result.detail is not None else ""))
    return GraderResult(name=name, passed=not reasons, score=min(scores) if scores else None,
                        detail={"turns": per_checkpoint}, reasons=reasons)


def _accepted_keywords(fn: Callable[..., Any]) -> frozenset[str]:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return frozenset()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return frozenset(GRADER_KEYWORDS)
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return frozenset(p.name for p in params if p.kind in kinds and p.name in GRADER_KEYWORDS)


def _call(fn: Callable[..., Any], name: str, accepts: frozenset[str], function: GraderFunction,
          trajectory: dict[str, Any], state: dict[str, Any] | None, task_data: dict[str, Any],
          metadata: dict[str, Any], checkpoints: list[dict[str, Any]], turn: int | None,
          judge: Judge | None = None) -> Any:
    offered = {"metadata": metadata, "checkpoints": checkpoints, "turn": turn, "judge": judge}
    keywords = {k: v for k, v in offered.items() if k in accepts}
    try:
        return fn(trajectory, state, task_data, **keywords, **function.args)
    except BaseException as exc:  # the task author's code: SystemExit and KeyboardInterrupt included
        raise GraderError(f"grader {name} raised {type(exc).__name__}: {_text(exc)}") from None


def _validated(name: str, verdict: Any) -> GraderResult:
    """A grader's return value as a result; :class:`GraderError` saying what is wrong with anything else."""
    if isinstance(verdict, bool):
        return GraderResult(name=name, passed=verdict)
    expected = "expected a bool or {passed: bool, score?: number, detail?: JSON}"
    if not isinstance(verdict, dict):
        raise GraderError(f"grader {name} returned a {type(verdict).__name__}; {expected}")
    unknown = sorted(str(k) for k in verdict if k not in ("passed", "score", "detail"))
    if unknown:
        raise GraderError(f"grader {name} returned unknown key(s) {', '.join(map(repr, unknown))}; {expected}")
    passed = verdict.get("passed")
    if not isinstance(passed, bool):
        raise GraderError(f"grader {name} returned passed={_shown(passed)} (a {type(passed).__name__}); {expected}")
    score = verdict.get("score")
    if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score)):
        raise GraderError(f"grader {name} returned score={_shown(score)}; a score is a finite number")
    detail = verdict.get("detail")
    try:
        detail = json.loads(json.dumps(detail, allow_nan=False))
    except (TypeError, ValueError, RecursionError) as exc:
        raise GraderError(f"grader {name} returned a detail that is not JSON data ({_text(exc)})") from None
    return GraderResult(name=name, passed=passed, score=float(score) if score is not None else None, detail=detail,
                        reasons=[] if passed else [f"{name} did not pass"])


def _text(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # a broken __str__ on the grader's own exception
        return f"<{type(exc).__name__}>"


def _shown(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr)
    except (TypeError, ValueError, RecursionError):
        text = f"<{type(value).__name__}>"
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."

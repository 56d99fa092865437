"""Graders: the built-in ``expected_actions`` and ``expected_state``, and ``module:function``.

A trial passes when every grader its task names passes. Only a trial that reached a terminal
the model is answerable for (``completed`` or ``failed``) is graded, and only when the agent
produced at least one completion: a trial whose agent never answered is never ``passed``
(graders would otherwise judge the environment's untouched initial state). A harness error
(``error``) is not graded but stays in the denominator as not passed, as the spec counts it;
aborted and interrupted trials are neither graded nor counted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from capplan.trials.outcome import TrialStatus
from capplan.trials.records import CallRecord, Grade, GraderResult, ToolCallRecord
from capplan.trials.taskfile import ExpectedAction, Grader, TaskFile
from capplan.trials.tasks import resolve_function


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


def grade(task: TaskFile, tool_calls: list[ToolCallRecord], final_state: dict[str, Any] | None,
          trajectory: dict[str, Any]) -> Grade:
    """Every grader's verdict; ``passed`` None when the task has no grader."""
    grader = task.grader
    if grader is None:
        return Grade(passed=None)
    results = []
    if grader.expected_actions is not None:
        results.append(expected_actions(grader.expected_actions, tool_calls))
    if grader.expected_state is not None:
        results.append(expected_state(grader.expected_state, final_state or {}))
    if grader.function is not None:
        results.append(custom(grader, trajectory, final_state, task))
    return Grade(passed=all(r.passed for r in results), graders=results)


def expected_actions(expected: list[ExpectedAction], calls: list[ToolCallRecord]) -> GraderResult:
    """The expected calls appear in order among the calls that ran (other calls may interleave)."""
    ran = [c for c in calls if c.error is None]
    position = 0
    missing = []
    for action in expected:
        found = next((i for i in range(position, len(ran)) if _matches(action, ran[i])), None)
        if found is None:
            missing.append({"name": action.name, "arguments": action.arguments})
        else:
            position = found + 1
    return GraderResult(name="expected_actions", passed=not missing, detail={"missing": missing} if missing else None)


def _matches(action: ExpectedAction, call: ToolCallRecord) -> bool:
    return call.name == action.name and all(call.arguments.get(k) == v for k, v in action.arguments.items())


def expected_state(expected: dict[str, Any], final: dict[str, Any]) -> GraderResult:
    """Each listed key of the final state holds exactly the expected value."""
    diffs = {k: {"expected": v, "actual": final.get(k)} for k, v in expected.items() if final.get(k) != v}
    return GraderResult(name="expected_state", passed=not diffs, detail=diffs or None)


def custom(grader: Grader, trajectory: dict[str, Any], final_state: dict[str, Any] | None,
           task: TaskFile) -> GraderResult:
    """``module:function(trajectory, final_state, task) -> bool | {passed, detail}``."""
    assert grader.function is not None
    name = grader.function_ref.ref  # type: ignore[union-attr]
    try:
        verdict = resolve_function(name, task.folder)(trajectory, final_state, task.model_dump(mode="json"))
    except Exception as exc:  # a grader bug fails its verdict loudly rather than passing silently
        return GraderResult(name=name, passed=False, detail=f"grader raised {type(exc).__name__}: {exc}")
    if isinstance(verdict, bool):
        return GraderResult(name=name, passed=verdict)
    if isinstance(verdict, dict) and isinstance(verdict.get("passed"), bool):
        return GraderResult(name=name, passed=verdict["passed"], detail=verdict.get("detail"))
    return GraderResult(name=name, passed=False,
                        detail=f"grader returned {type(verdict).__name__}, expected bool or {{passed: bool, detail: ...}}")

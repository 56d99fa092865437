"""The per-turn expectations of a BFCL task: its ground truth replayed on a fresh environment.

The environment is built from the task file itself, by the code a trial uses
(:class:`~capplan.trials.tasks.environment.TrialEnvironment`), each call runs the method a trial would
dispatch it to, each result becomes text by :func:`~capplan.trials.loop.tools.result_text` and the
state at the end of each user turn is read by the trial's own state encoder. So the expected
state and outputs are byte for byte what a trial making the ground truth's calls records.

A user turn whose ground truth is empty (the benchmark expects the model to ask, or to notice a
missing function) gets no expectation, as the benchmark checks nothing there.
"""

from __future__ import annotations

from typing import Any

from capplan.trials.importers.bfcl.ground_truth import Call
from capplan.trials.importers.bfcl.source import BfclDataError


def replay_ground_truth(task_text: str, task_path: Any, calls: list[list[Call]]) -> list[dict[str, Any]]:
    """``grader.per_turn`` for the task in ``task_text`` (to be written at ``task_path``)."""
    from capplan.trials.tasks.environment import TrialEnvironment
    from capplan.trials.tasks.loading import load_task_text
    from capplan.trials.loop.tools import result_text

    loaded = load_task_text(task_text, str(task_path))
    environment = TrialEnvironment.create(loaded)
    per_turn: list[dict[str, Any]] = []
    for turn, turn_calls in enumerate(calls):
        outputs = []
        for call in turn_calls:
            method = environment.method(call.name)
            if method is None:
                raise BfclDataError(f"ground truth of user turn {turn} calls {call.name!r}, which no component has",
                                    location=str(task_path))
            try:
                value = method(**call.arguments)
            except Exception as exc:  # the benchmark's classes answer errors with a value; a raise is data we cannot use
                raise BfclDataError(
                    f"ground truth of user turn {turn} raised {type(exc).__name__} in {call.name}: {exc}",
                    location=str(task_path), hint="the entry's expected outputs cannot be computed; leave it out "
                    "or report it to the benchmark") from None
            outputs.append(result_text(value))
        if not turn_calls:
            per_turn.append({"expected_state": None, "expected_outputs": None})
            continue
        # BFCL fails a turn whose ground truth makes calls when the model made none (or none it can decode)
        per_turn.append({"expected_state": environment.state(), "expected_outputs": outputs, "requires_calls": True})
    return per_turn

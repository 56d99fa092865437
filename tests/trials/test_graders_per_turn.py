"""Graders that check what benchmarks check: per-turn state and outputs, expected outputs, custom graders with
parameters, metadata and checkpoints; every grader result validated, every grader failure a GraderError."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from capplan.trials.grading.graders import GraderError, grade
from capplan.trials.run_folder.records import ToolCallRecord, TurnCheckpoint
from capplan.trials.tasks.loading import load_task

ENV = '''
class Bank:
    def __init__(self):
        self.balance = 0
        self.log = []

    def deposit(self, amount: int) -> str:
        self.balance += amount
        return f"balance {self.balance}"


class Mail:
    def __init__(self, owner: str = "ann"):
        self.owner = owner
        self.sent = []

    def send(self, to: str) -> str:
        self.sent.append(to)
        return "sent"
'''

GRADERS = '''
import json

def by_metadata(trajectory, final_state, task, *, metadata, threshold=0):
    return {"passed": final_state["Bank"]["balance"] >= metadata["min"] + threshold, "score": 0.5,
            "detail": {"balance": final_state["Bank"]["balance"]}}

def old_style(trajectory, final_state, task):
    return final_state["Bank"]["balance"] > 0

def every_turn(trajectory, final_state, task, *, turn, checkpoints):
    return {"passed": final_state["Bank"]["balance"] > 0, "detail": {"turn": turn, "seen": len(checkpoints)}}

def exits(trajectory, final_state, task):
    raise SystemExit(3)

def interrupts(trajectory, final_state, task):
    raise KeyboardInterrupt

def not_json(trajectory, final_state, task):
    return {"passed": True, "detail": object()}

def not_bool(trajectory, final_state, task):
    return {"passed": "yes"}

def nan_score(trajectory, final_state, task):
    return {"passed": True, "score": float("nan")}

def extra_key(trajectory, final_state, task):
    return {"passed": True, "why": "x"}

def a_list(trajectory, final_state, task):
    return [True]
'''


def _task(folder: Path, grader: str) -> Any:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "envs.py").write_text(ENV)
    (folder / "graders.py").write_text(GRADERS)
    path = folder / "bank.yaml"
    path.write_text(textwrap.dedent("""\
        id: bank
        system_prompt: s
        environment:
          - {ref: envs.py:Bank}
          - {ref: envs.py:Mail, args: {owner: bob}}
        tools:
          - {name: deposit, description: d, parameters: {type: object, properties: {amount: {type: integer}}}}
          - {name: send, description: d, parameters: {type: object, properties: {to: {type: string}}}}
        user: {mode: scripted, turns: [one, two]}
        metadata: {min: 5}
        """) + textwrap.dedent(grader))
    return load_task(path).task


def _call(name: str, output: str, turn: int = 0, **arguments: Any) -> ToolCallRecord:
    return ToolCallRecord(id=f"c{turn}{name}", provider_id="p", name=name, arguments=arguments, output=output,
                          prompt_chars=len(output), truncated=False, turn=turn)


def _checkpoint(turn: int, balance: int, sent: list[str], outputs: list[str]) -> TurnCheckpoint:
    return TurnCheckpoint(user_turn=turn, state={"Bank": {"balance": balance, "log": []},
                                                 "Mail": {"owner": "bob", "sent": sent}}, tool_outputs=outputs)


PER_TURN = """\
grader:
  per_turn:
    - expected_state: {Bank: {balance: 5}}
      expected_outputs: ["balance 5"]
    - expected_state: {Bank: {balance: 5}, Mail: {sent: [carl]}}
      expected_outputs: ["sent", "balance 5"]
"""


def test_per_turn_passes_when_every_turn_matches(tmp_path: Path) -> None:
    task = _task(tmp_path, PER_TURN)
    checkpoints = [_checkpoint(0, 5, [], ["balance 5"]), _checkpoint(1, 5, ["carl"], ["sent"])]
    result = grade(task, [], checkpoints[-1].state, {}, checkpoints=checkpoints)
    assert result.passed is True and result.graders[0].reasons == []


def test_per_turn_reasons_name_the_turn_the_key_and_the_missing_output(tmp_path: Path) -> None:
    task = _task(tmp_path, PER_TURN)
    # turn 0 did the deposit twice (state 10), turn 1 sent nothing; the final state is right again
    checkpoints = [_checkpoint(0, 10, [], ["balance 5", "balance 10"]), _checkpoint(1, 5, [], [])]
    result = grade(task, [], checkpoints[-1].state, {}, checkpoints=checkpoints)
    assert result.passed is False
    assert result.graders[0].reasons == [
        "user turn 0: state Bank.balance: expected 5, actual 10",
        "user turn 1: state Mail.sent: expected [\"carl\"], actual []",
        "user turn 1: tool output \"sent\" is missing from the agent's 2 tool output(s) so far",
    ]


def test_a_turn_the_trial_never_finished_and_an_unreadable_state_fail_with_their_reason(tmp_path: Path) -> None:
    task = _task(tmp_path, PER_TURN)
    broken = TurnCheckpoint(user_turn=0, state=None, state_error="component 'Bank', attribute 'log': a lock value",
                            tool_outputs=["balance 5"])
    result = grade(task, [], None, {}, checkpoints=[broken])
    assert result.graders[0].reasons == [
        "user turn 0: the state could not be read: component 'Bank', attribute 'log': a lock value",
        "user turn 1: no checkpoint (the trial ended before user turn 1 did)",
    ]


def test_expected_outputs_is_an_unordered_sub_multiset(tmp_path: Path) -> None:
    task = _task(tmp_path, "grader:\n  expected_outputs: [sent, balance 5, sent]\n")
    calls = [_call("send", "sent"), _call("deposit", "balance 5"), _call("send", "sent", 1)]
    assert grade(task, calls, None, {}, checkpoints=[]).passed is True
    result = grade(task, calls[:2], None, {}, checkpoints=[])
    assert result.passed is False
    assert result.graders[0].reasons == ["tool output \"sent\" is missing from the agent's 2 tool output(s)"]


def test_checkpoints_default_to_the_trajectory_s_own(tmp_path: Path) -> None:
    task = _task(tmp_path, PER_TURN)
    checkpoints = [_checkpoint(0, 5, [], ["balance 5"]), _checkpoint(1, 5, ["carl"], ["sent"])]
    trajectory = {"checkpoints": [c.model_dump(mode="json") for c in checkpoints]}
    assert grade(task, [], checkpoints[-1].state, trajectory).passed is True


def test_final_expected_state_of_components_compares_listed_attributes(tmp_path: Path) -> None:
    task = _task(tmp_path, "grader:\n  expected_state: {Mail: {owner: bob}, Bank: {balance: 3}}\n")
    state = _checkpoint(0, 5, ["x"], []).state
    result = grade(task, [], state, {})
    assert result.graders[0].reasons == ["final state: Bank.balance: expected 3, actual 5"]
    unreadable = grade(task, [], None, {"final_state_error": "component 'Bank': reading the state raised OSError"})
    assert unreadable.graders[0].reasons == [
        "the final state could not be read: component 'Bank': reading the state raised OSError"]


def test_custom_grader_gets_metadata_and_its_args(tmp_path: Path) -> None:
    task = _task(tmp_path, "grader:\n  function: {ref: graders.py:by_metadata, args: {threshold: 1}}\n")
    passing = grade(task, [], _checkpoint(0, 6, [], []).state, {})
    assert passing.passed is True
    assert passing.graders[0].model_dump() == {"name": "graders.py:by_metadata", "passed": True, "score": 0.5,
                                               "detail": {"balance": 6}, "reasons": []}
    assert grade(task, [], _checkpoint(0, 5, [], []).state, {}).passed is False  # 5 < min 5 + threshold 1


def test_a_grader_written_for_three_arguments_keeps_working(tmp_path: Path) -> None:
    task = _task(tmp_path, "grader:\n  function: graders:old_style\n")
    assert grade(task, [], _checkpoint(0, 1, [], []).state, {}).passed is True


def test_each_turn_grader_runs_on_every_checkpoint(tmp_path: Path) -> None:
    task = _task(tmp_path, "grader:\n  function: {ref: graders.py:every_turn, when: each_turn}\n")
    checkpoints = [_checkpoint(0, 0, [], []), _checkpoint(1, 5, [], [])]
    result = grade(task, [], checkpoints[-1].state, {}, checkpoints=checkpoints)
    assert result.passed is False
    assert result.graders[0].reasons == ["user turn 0: graders.py:every_turn did not pass ({\"seen\": 1, \"turn\": 0})"]
    assert [t["detail"] for t in result.graders[0].detail["turns"]] == [{"turn": 0, "seen": 1}, {"turn": 1, "seen": 2}]


@pytest.mark.parametrize(("function", "message"), [
    ("exits", "grader graders.py:exits raised SystemExit: 3"),
    ("interrupts", "grader graders.py:interrupts raised KeyboardInterrupt: "),
    ("not_json", "grader graders.py:not_json returned a detail that is not JSON data (Object of type object is not "
                 "JSON serializable)"),
    ("not_bool", "grader graders.py:not_bool returned passed=\"yes\" (a str); expected a bool or {passed: bool, "
                 "score?: number, detail?: JSON}"),
    ("nan_score", "grader graders.py:nan_score returned score=NaN; a score is a finite number"),
    ("extra_key", "grader graders.py:extra_key returned unknown key(s) 'why'; expected a bool or {passed: bool, "
                  "score?: number, detail?: JSON}"),
    ("a_list", "grader graders.py:a_list returned a list; expected a bool or {passed: bool, score?: number, "
               "detail?: JSON}"),
])
def test_a_grader_that_gives_no_verdict_is_a_grader_error_never_an_escaping_exception(
        tmp_path: Path, function: str, message: str) -> None:
    task = _task(tmp_path, f"grader:\n  function: {{ref: graders.py:{function}}}\n")
    with pytest.raises(GraderError) as caught:
        grade(task, [], _checkpoint(0, 1, [], []).state, {})
    assert str(caught.value) == message


def test_lint_checks_a_custom_grader_s_args_against_its_signature(tmp_path: Path) -> None:
    from capplan.trials.tasks.loading import lint_task

    _task(tmp_path, "grader:\n  function: {ref: graders.py:by_metadata, args: {threshold: 1}}\n")
    path = tmp_path / "bank.yaml"
    path.write_text(path.read_text().replace("threshold: 1", "treshold: 1"))
    for diags in (lint_task(path), lint_task(path, import_environments=True)):
        assert [(d.code, d.path, d.message, d.hint) for d in diags] == [
            ("grader-args", "grader.function.args.treshold",
             "grader graders.py:by_metadata() has no keyword parameter 'treshold'",
             "did you mean 'threshold'? valid choices: threshold")]
    path.write_text(path.read_text().replace("graders.py:by_metadata, args: {treshold: 1}", "limits.py:needs_limit"))
    (tmp_path / "limits.py").write_text("def needs_limit(trajectory, final_state, task, /, *, limit):\n"
                                        "    return True\n")
    for diags in (lint_task(path), lint_task(path, import_environments=True)):
        assert [(d.code, d.path, d.message) for d in diags] == [
            ("grader-args", "grader.function.ref", "grader limits.py:needs_limit() requires 'limit', which its "
                                                   "args do not give")]


def test_expected_state_written_with_int_keys_compares_with_the_encoded_state(tmp_path: Path) -> None:
    task = _task(tmp_path, "grader:\n  expected_state: {Mail: {sent: [carl]}, Bank: {log: {1: one}}}\n")
    state = {"Bank": {"balance": 0, "log": {"1": "one"}}, "Mail": {"owner": "bob", "sent": ["carl"]}}
    assert grade(task, [], state, {}).passed is True

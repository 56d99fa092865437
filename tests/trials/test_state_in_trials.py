"""`capplan trial run` on environments whose state is not plain data (the issue's `Circular reference detected`
and `'<' not supported` cases): the state is recorded per turn and graded; what cannot be encoded is recorded
with the trajectory kept, never a traceback."""

from __future__ import annotations

import textwrap
from pathlib import Path

import yaml

from tests.trials.helpers import REPO
from tests.cli_runner import invoke

MOCK_PLAN = REPO / "golden" / "plans" / "mock-echo.json"

ENV = '''
import threading


class Node:
    def __init__(self, name, parent):
        self.name = name
        self.parent = parent  # a back-reference: the graph has cycles
        self.children = {}


class Tree:
    def __init__(self):
        self.root = Node("root", None)
        self.index = {1: "one", "two": 2}  # int and str keys: json.dumps(sort_keys=True) cannot order them
        self.tags = {3, "x"}  # a set of kinds that do not compare
        self.count = 0

    def grow(self) -> str:
        self.count += 1
        self.root.children[str(self.count)] = Node(str(self.count), self.root)
        return f"grown {self.count}"


class Locked:
    def __init__(self):
        self.lock = threading.Lock()

    def peek(self, what: str = "") -> str:
        return "nothing"
'''


def _run(tmp_path: Path, task: str) -> dict:
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "tree_env.py").write_text(ENV)
    (pack / "t.yaml").write_text(textwrap.dedent(task))
    out = tmp_path / "run"
    result = invoke("trial", "run", str(pack), "--plan", str(MOCK_PLAN), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    (trajectory,) = out.glob("trials/*/t/0/trajectory.yaml")
    (metrics,) = out.glob("trials/*/t/0/metrics.yaml")
    return {"trajectory": yaml.safe_load(trajectory.read_text()), "metrics": yaml.safe_load(metrics.read_text())}


def test_cyclic_mixed_key_state_is_recorded_per_turn_and_graded(tmp_path: Path) -> None:
    records = _run(tmp_path, """\
        id: t
        system_prompt: s
        environment:
          - {ref: tree_env.py:Tree}
        tools:
          - {name: grow, description: add a child}
        user: {mode: scripted, turns: [grow once, grow again]}
        metadata: {benchmark: synthetic}
        grader:
          per_turn:
            - {expected_state: {Tree: {count: 1, index: {"1": one, two: 2}}}, expected_outputs: [grown 1]}
            - {expected_state: {Tree: {count: 2, tags: [x, 3]}}, expected_outputs: [grown 2, grown 1]}
        """)
    trajectory, metrics = records["trajectory"], records["metrics"]
    assert metrics["grade"]["passed"] is True, metrics["grade"]
    assert trajectory["metadata"] == {"benchmark": "synthetic"}
    first = trajectory["checkpoints"][0]
    assert first["user_turn"] == 0 and first["state_error"] is None
    assert first["state"]["Tree"]["root"]["children"]["1"]["parent"] == {"$ref": "root"}
    assert trajectory["final_state"]["Tree"]["count"] == 2


def test_a_failed_per_turn_check_names_turn_key_and_values(tmp_path: Path) -> None:
    records = _run(tmp_path, """\
        id: t
        system_prompt: s
        environment:
          - {ref: tree_env.py:Tree}
        tools:
          - {name: grow, description: add a child}
        user: {mode: scripted, turns: [grow once, grow again]}
        grader:
          per_turn:
            - {expected_state: {Tree: {count: 1}}}
            - {expected_state: {Tree: {count: 3}}, expected_outputs: [grown 3]}
        """)
    grade = records["metrics"]["grade"]
    assert grade["passed"] is False
    assert grade["graders"][0]["reasons"] == [
        "user turn 1: state Tree.count: expected 3, actual 2",
        "user turn 1: tool output \"grown 3\" is missing from the agent's 2 tool output(s) so far",
    ]


def test_state_that_cannot_be_encoded_is_recorded_and_the_trajectory_kept(tmp_path: Path) -> None:
    records = _run(tmp_path, """\
        id: t
        system_prompt: s
        environment:
          - {ref: tree_env.py:Locked}
        tools:
          - {name: peek, description: look, parameters: {type: object, properties: {what: {type: string}}}}
        user: {mode: scripted, turns: [look]}
        """)
    trajectory, metrics = records["trajectory"], records["metrics"]
    assert metrics["status"] == "completed" and metrics["turns"] == 2
    assert len(trajectory["messages"]) >= 4  # user, tool call, tool result, answer: nothing lost
    assert trajectory["final_state"] is None
    assert trajectory["final_state_error"].startswith("component 'Locked', attribute 'lock': a lock value")
    assert trajectory["checkpoints"][0]["state_error"] == trajectory["final_state_error"]

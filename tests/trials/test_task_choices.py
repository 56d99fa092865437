"""Per-task loop choices through real litellm against a loopback server, asserted on the wire bodies it recorded.

tool_choice and parallel_tool_calls ride on the agent's requests (and a plan's param_value_rules
rule them), tools offered from a later user turn, the per-turn step limit, the three argument
validation modes, the per-turn checkpoints, and the incrementally built request.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from capplan.executor.client import Client
from capplan.executor.messages import ChatRequest
from capplan.executor.plan import Plan
from capplan.trials.outcome import TerminationReason, TrialStatus
from capplan.trials.runner import RunContext, run_trial
from capplan.trials.spec import TrialRecords
from tests.executor.plans import make_plan
from tests.fake_provider import FakeProvider, agent_completion, serve_agent, tool_call
from tests.trials.helpers import ENV_SOURCE, openai_plan, spec_for, write_task
from tests.cli_runner import invoke


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProvider]:
    yield from serve_agent("sk-test-trial-key-0123456789")


@pytest.fixture(autouse=True)
def _fresh(server: FakeProvider) -> None:
    server.reset()


def run(server: FakeProvider, task: Path, plan: Plan | None = None) -> TrialRecords:
    return run_trial(spec_for(task, plan or openai_plan(), api_base=server.base), RunContext(sleep=lambda s: None))


def counter_task(folder: Path, body: str) -> Path:
    """The Counter environment of the helpers with a task file of this body."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "counter_env.py").write_text(ENV_SOURCE)
    path = folder / "count.yaml"
    path.write_text("id: count\nsystem_prompt: You keep a counter.\nenvironment: counter_env:Counter\n" + body)
    return path


def tools_of(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools") or []]


def test_tool_choice_and_parallel_tool_calls_are_on_every_agent_request(server: FakeProvider, tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack", extra="tool_choice: required\nparallel_tool_calls: false\n")
    server.queue(agent_completion(None, [tool_call("c1", "add", {"amount": 2})]))
    server.queue(agent_completion("The counter is 2."))
    server.queue(agent_completion("You're welcome."))
    records = run(server, task)
    assert records.termination_reason is TerminationReason.USER_STOP, records.trajectory["termination"]
    assert len(server.bodies()) == 3
    for body in server.bodies():
        assert body["tool_choice"] == "required" and body["parallel_tool_calls"] is False


def test_a_named_tool_choice_is_the_function_form_on_the_wire(server: FakeProvider, tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack", turns=["hello"], extra="tool_choice: {name: note}\n")
    server.queue(agent_completion("Hi."))
    run(server, task)
    assert server.bodies()[0]["tool_choice"] == {"type": "function", "function": {"name": "note"}}


def test_a_param_value_rule_on_tool_choice_fires_for_a_task_choice(server: FakeProvider, tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack", turns=["hello"], extra="tool_choice: required\n")
    rules = {"tool_choice": {"required": {"action": "override", "with": "auto",
                                          "evidence": "2026-01 test provider refuses required"}}}
    plan = make_plan("openai", "agent-model", key="agent", rules=rules)
    server.queue(agent_completion("Hi."))
    records = run(server, task, plan)
    assert server.bodies()[0]["tool_choice"] == "auto"
    substitutions = records.trajectory["value_substitutions"]
    assert [(s["param"], s["requested"], s["sent"]) for s in substitutions] == [("tool_choice", "required", "auto")]


def test_without_the_fields_the_wire_carries_neither(server: FakeProvider, tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack", turns=["hello"])
    server.queue(agent_completion("Hi."))
    run(server, task)
    assert "tool_choice" not in server.bodies()[0] and "parallel_tool_calls" not in server.bodies()[0]


def test_a_tool_is_offered_from_its_user_turn_and_unknown_before(server: FakeProvider, tmp_path: Path) -> None:
    task = counter_task(tmp_path / "pack", """\
tools:
  - {name: add, description: Add., parameters: {type: object, properties: {amount: {type: integer}}, required: [amount]}}
  - {name: note, description: Note., parameters: {type: object, properties: {text: {type: string}}, required: [text]}, available_from_turn: 1}
  - {name: explode, description: Fails., parameters: {type: object, properties: {}}}
user: {mode: scripted, turns: [first, second]}
""")
    server.queue(agent_completion(None, [tool_call("c1", "note", {"text": "early"})]))
    server.queue(agent_completion("Noted nothing."))
    server.queue(agent_completion(None, [tool_call("c2", "note", {"text": "late"})]))
    server.queue(agent_completion("Noted."))
    records = run(server, task)
    assert records.termination_reason is TerminationReason.USER_STOP
    assert [tools_of(b) for b in server.bodies()] == [["add", "explode"], ["add", "explode"],
                                                       ["add", "note", "explode"], ["add", "note", "explode"]]
    early, late = records.trajectory["tool_calls"]
    assert early["error"] == "unknown_tool" and "available tools: add, explode" in early["output"]
    assert (late["error"], late["output"]) == (None, "noted late")
    assert records.trajectory["final_state"]["notes"] == ["late"]


@pytest.mark.parametrize(("turns", "passed"), [(["add three"], True), (["add three", "and one more"], False)])
def test_passing_max_steps_per_turn_force_quits_the_turn_and_grades_the_trial(
        server: FakeProvider, tmp_path: Path, turns: list[str], passed: bool) -> None:
    # BFCL force-quits the turn and grades the entry as it stands: in the last user turn it can pass;
    # earlier, the turns never played fail the per-turn grader
    per_turn = "".join(f"    - {{expected_state: {{value: {3 + i}}}}}\n" for i in range(len(turns)))
    task = write_task(tmp_path / "pack", turns=turns, extra=f"max_steps_per_turn: 2\ngrader:\n  per_turn:\n{per_turn}")
    for i in range(5):
        server.queue(agent_completion(None, [tool_call(f"c{i}", "add", {"amount": 1})]))
    records = run(server, task)
    assert records.termination_reason is TerminationReason.MAX_STEPS_PER_TURN
    assert records.status is TrialStatus.COMPLETED
    assert len(server.bodies()) == 3  # the third tool step ran (as BFCL runs it), then the turn was force-quit
    assert records.trajectory["final_state"]["value"] == 3
    assert "the turn was force-quit" in records.trajectory["termination"]["detail"]
    assert records.trajectory["messages"][-1]["content"].startswith("Step limit of 2")
    assert [c["user_turn"] for c in records.trajectory["checkpoints"]] == [0]
    grade = records.metrics["grade"]
    assert grade["passed"] is passed, grade
    if not passed:
        assert "user turn 1: no checkpoint" in " ".join(grade["graders"][0]["reasons"])


def test_a_one_turn_task_that_uses_every_step_and_answers_ends_with_the_users_stop(
        server: FakeProvider, tmp_path: Path) -> None:
    # as a BFCL import writes it: max_turns is one user turn's steps and its answer
    task = write_task(tmp_path / "pack", turns=["add twenty"], extra="max_steps_per_turn: 20\nmax_turns: 21\n"
                      "grader:\n  expected_state: {value: 20}\n")
    for i in range(20):
        server.queue(agent_completion(None, [tool_call(f"c{i}", "add", {"amount": 1})]))
    server.queue(agent_completion("The counter is 20."))
    records = run(server, task)
    assert (records.termination_reason, records.status) == (TerminationReason.USER_STOP, TrialStatus.COMPLETED)
    assert records.trajectory["termination"]["turns"] == 21 and records.metrics["grade"]["passed"] is True


def test_steps_count_per_user_turn(server: FakeProvider, tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack", turns=["one", "two"], extra="max_steps_per_turn: 2\n")
    for _ in range(2):
        server.queue(agent_completion(None, [tool_call("a", "add", {"amount": 1})]))
        server.queue(agent_completion(None, [tool_call("b", "add", {"amount": 1})]))
        server.queue(agent_completion("done"))
    records = run(server, task)
    assert records.termination_reason is TerminationReason.USER_STOP
    assert records.trajectory["final_state"]["value"] == 4


@pytest.mark.parametrize("mode", ["enforce", "record", "off"])
def test_argument_validation_modes(server: FakeProvider, tmp_path: Path, mode: str) -> None:
    task = write_task(tmp_path / "pack", turns=["note it"], extra=f"argument_validation: {mode}\n")
    server.queue(agent_completion(None, [tool_call("c1", "note", {"text": 5})]))
    server.queue(agent_completion(None, [tool_call("c2", "note", {"text": "plain"})]))
    server.queue(agent_completion("ok"))
    records = run(server, task)
    bad, good = records.trajectory["tool_calls"]
    assert (good["output"], good["error"], good["argument_violations"]) == ("noted plain", None, None)
    if mode == "enforce":
        assert bad["error"] == "invalid_arguments" and bad["output"].startswith("INVALID_ARGUMENTS: ")
        assert records.trajectory["final_state"]["notes"] == ["plain"]
        return
    # the method ran with what the model sent: Counter.note adds the text to a string
    assert bad["error"] == "exception" and bad["output"].startswith("Error: TypeError")
    if mode == "record":
        assert bad["argument_violations"] and "text" in " ".join(bad["argument_violations"])
    else:
        assert bad["argument_violations"] is None


def test_a_checkpoint_per_user_turn_with_that_turns_outputs(server: FakeProvider, tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack", turns=["add two", "note it", "thanks"])
    server.queue(agent_completion(None, [tool_call("c1", "add", {"amount": 2})]))
    server.queue(agent_completion("2 now"))
    server.queue(agent_completion(None, [tool_call("c2", "note", {"text": "two"}), tool_call("c3", "add", {"amount": 1})]))
    server.queue(agent_completion("noted"))
    server.queue(agent_completion("bye"))
    records = run(server, task)
    checkpoints = records.trajectory["checkpoints"]
    assert [c["user_turn"] for c in checkpoints] == [0, 1, 2]
    assert [c["state"]["value"] for c in checkpoints] == [2, 3, 3]
    assert [c["tool_outputs"] for c in checkpoints] == [['{"value": 2}'], ["noted two", '{"value": 3}'], []]
    assert checkpoints[1]["state"]["notes"] == ["two"] and checkpoints[1]["state_error"] is None


def test_a_terminal_mid_turn_takes_that_turns_checkpoint(server: FakeProvider, tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack", extra="max_steps_per_turn: 1\n")
    server.queue(agent_completion(None, [tool_call("c1", "add", {"amount": 1})]))
    server.queue(agent_completion(None, [tool_call("c2", "add", {"amount": 1})]))
    records = run(server, task)
    (checkpoint,) = records.trajectory["checkpoints"]
    assert checkpoint["user_turn"] == 0 and checkpoint["state"]["value"] == 2
    assert checkpoint["tool_outputs"] == ['{"value": 1}', '{"value": 2}']


def test_the_loop_extends_one_request_per_conversation(server: FakeProvider, tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack", turns=["add one", "and again", "thanks"])
    seen: list[ChatRequest] = []
    original = Client.generate

    def spy(self: Client, request: Any, **kwargs: Any) -> Any:
        if isinstance(request, ChatRequest):
            seen.append(request)
        return original(self, request, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Client, "generate", spy)
        records = run(server, task)
    assert records.termination_reason is TerminationReason.USER_STOP
    assert len(seen) == len(server.bodies()) >= 4
    for before, after in zip(seen, seen[1:]):
        # every earlier message is the same validated object: only the new ones were validated
        assert all(a is b for a, b in zip(before.messages, after.messages))
        assert len(after.messages) > len(before.messages)


def test_the_run_configs_trial_choices_win_over_the_tasks(server: FakeProvider, tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack", turns=["hello"], extra="tool_choice: required\nparallel_tool_calls: false\n")
    plan = tmp_path / "agent.json"
    plan.write_bytes(openai_plan().to_bytes())
    config = tmp_path / "run.yaml"
    config.write_text("models:\n  agent: {provider: openai, name: agent-model}\n"
                      "trials: {tool_choice: {name: note}, parallel_tool_calls: true}\n")
    server.queue(agent_completion("Hi."))
    args = ["trial", "run", str(task), "--plan", str(plan), "--out", str(tmp_path / "run"), "--api-base", server.base,
            "--config", str(config)]
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    assert server.bodies()[0]["tool_choice"] == {"type": "function", "function": {"name": "note"}}
    assert server.bodies()[0]["parallel_tool_calls"] is True

    config.write_text("models:\n  agent: {provider: openai, name: agent-model}\ntrials: {tool_choice: {name: nope}}\n")
    refused = invoke(*args[:6], str(tmp_path / "run2"), *args[7:])
    assert refused.exit_code == 2, refused.output
    assert "trials.tool_choice names tool 'nope'" in refused.output and "count" in refused.output
    assert not (tmp_path / "run2").exists()


def test_a_state_that_cannot_be_read_is_a_checkpoint_error_not_a_lost_trial(server: FakeProvider, tmp_path: Path) -> None:
    folder = tmp_path / "pack"
    folder.mkdir()
    (folder / "ledger_env.py").write_text('''
class Ledger:
    def __init__(self) -> None:
        self.total = 0

    def add(self, amount: int) -> dict:
        self.total += amount
        return {"total": self.total}

    def state(self) -> dict:
        if self.total > 1:
            raise RuntimeError("the ledger is sealed")
        return {"total": self.total}
''')
    task = folder / "ledger.yaml"
    task.write_text("id: ledger\nsystem_prompt: You keep a ledger.\nenvironment: ledger_env:Ledger\n"
                    "tools:\n  - {name: add, description: Add., parameters: {type: object, properties: "
                    "{amount: {type: integer}}, required: [amount]}}\n"
                    "user: {mode: scripted, turns: [one, two]}\n")
    server.queue(agent_completion(None, [tool_call("a", "add", {"amount": 1})]))
    server.queue(agent_completion("1"))
    server.queue(agent_completion(None, [tool_call("b", "add", {"amount": 1})]))
    server.queue(agent_completion("2"))
    records = run(server, task)
    assert records.termination_reason is TerminationReason.USER_STOP
    first, second = records.trajectory["checkpoints"]
    assert (first["state"], first["state_error"]) == ({"total": 1}, None)
    assert second["state"] is None and "Ledger" in second["state_error"] and "sealed" in second["state_error"]
    assert records.trajectory["final_state"] is None
    assert "sealed" in records.trajectory["final_state_error"]

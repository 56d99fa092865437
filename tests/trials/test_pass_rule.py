"""The pass rule: a trial passes only if the agent really answered and every grader passed.

Real trials through ``capplan trial run`` against the loopback agent server, on a copy of the
bundled ``inv-05-out-of-stock`` task, whose only grader (no invoice was made) passes when nothing
happens: an agent whose completions are empty, filtered or blank must still not pass it. The
graders' verdicts stay in the records beside the trial's own.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from markupsafe import escape

from capplan.trials import runner as runner_module
from capplan.trials.backends import local as local_backend
from capplan.trials.outcome import PASS_RULE, USER_ENDS, FinalAnswer, TerminationReason, unaccepted_end
from capplan.trials.runner import RunContext
from capplan.trials.usersim import STOP_SIGNAL
from tests.fake_provider import FakeProvider, agent_answer, agent_completion, on_body, tool_call
from tests.trials.helpers import EXAMPLES, openai_plan, write_task
from tests.cli_runner import invoke

Responder = Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]
INV05 = EXAMPLES / "inventory_desk" / "inv-05-out-of-stock.yaml"
ANSWER = "SKU-400 is out of stock, so nothing was invoiced."


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-pass-rule-0123456789")
    monkeypatch.delenv("LLM_PROXY_BASE_URL", raising=False)
    # the retry controller's waits are real sleeps otherwise
    monkeypatch.setattr(local_backend, "RunContext", lambda: RunContext(sleep=lambda s: None))
    monkeypatch.setattr(runner_module, "_DEFAULT", None)


def inv05(folder: Path, *, scripted: bool = False, extra: str = "") -> Path:
    """A copy of the bundled inv-05 task and its code; ``scripted`` puts a one-turn script in place of the LLM user."""
    folder.mkdir(parents=True)
    for name in ("inventory_env.py", "inventory_graders.py"):
        shutil.copy(INV05.parent / name, folder / name)
    text = INV05.read_text()
    if scripted:
        text, n = re.subn(r"user:\n(?:  .*\n)+", "user:\n  mode: scripted\n  turns: ['Hi, can you invoice ACME for "
                                                  "two of the 27 inch monitors?']\n", text)
        assert n == 1
    path = folder / INV05.name
    path.write_text(text + extra)
    return path


def trial_run(tmp_path: Path, task: Path, responder: Responder, *extra: str) -> tuple[Path, Any]:
    plan = tmp_path / "agent.json"
    plan.write_bytes(openai_plan().to_bytes())
    out = tmp_path / "run"
    with FakeProvider(on_body(responder)) as server:
        result = invoke("trial", "run", str(task), "--plan", str(plan), "--user-plan", str(plan),
                        "--out", str(out), "--api-base", server.base,
                        "--user-api-base", server.base, *extra)
    assert "Traceback" not in result.output, result.output
    return out, result


def lines(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "runs.jsonl").read_bytes().splitlines()]


def grade(out: Path, line: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((out / line["dir"] / "metrics.yaml").read_text())["grade"]
    return data


def row(out: Path) -> dict[str, Any]:
    [only] = json.loads((out / "summary.json").read_text())["rows"]
    data: dict[str, Any] = only
    return data


def always(body: dict[str, Any]) -> Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]:
    return lambda request: (200, body)


#: what the agent sends every time, the task's user, and how each trial must end
NEVER_ANSWERED = {
    "empty completions": (agent_completion(""), False, ("failed", "empty_completion"), "completions were empty"),
    "a content-filter finish and no text": (agent_completion(None, finish="content_filter"), False,
                                            ("failed", "empty_completion"), "completions were empty"),
    "a whitespace-only final answer": (agent_completion("  \n\t "), True, ("completed", "user_stop"), "final answer is blank"),
    "a final answer cut at the output limit": (agent_completion("SKU-400 is", finish="length"), True,
                                               ("completed", "user_stop"), "cut short (finish_reason length)"),
    "a final answer cut by a content filter": (agent_completion("SKU-400 is", finish="content_filter"), True,
                                               ("completed", "user_stop"), "cut short (finish_reason content_filter)"),
}


@pytest.mark.parametrize("case", list(NEVER_ANSWERED))
def test_an_agent_that_never_answered_is_not_passed_whatever_the_graders_say(env: None, tmp_path: Path,
                                                                             case: str) -> None:
    body, scripted, ended, why = NEVER_ANSWERED[case]
    task = inv05(tmp_path / "pack", scripted=scripted)
    out, result = trial_run(tmp_path, task, always(body), "--trials", "3")
    assert result.exit_code == 0, result.output
    assert len(lines(out)) == 3
    for line in lines(out):
        assert (line["status"], line["termination_reason"]) == ended
        assert line["passed"] is False and line["counts_against_model"] is True
        verdict = grade(out, line)
        # the grader passed (nothing was invoiced) and its verdict is still recorded beside the trial's
        assert [(g["name"], g["passed"]) for g in verdict["graders"]] == [("expected_state", True)]
        assert verdict["passed"] is False and why in verdict["note"] and "the graders passed" in verdict["note"]
    summary = row(out)
    assert (summary["passed"], summary["failed"], summary["graded"], summary["pass_rate"]) == (0, 3, 3, 0.0)
    assert set(summary["pass_hat_k"].values()) == {0.0}
    assert "| 0 / 3 | 3 |" in (out / "summary.md").read_text()
    assert result.output.count(f"{ended[1]}  not passed") == 3  # each trial's progress line


def test_an_answered_trial_whose_graders_pass_is_passed(env: None, tmp_path: Path) -> None:
    task = inv05(tmp_path / "pack", scripted=True)
    out, result = trial_run(tmp_path, task, always(agent_completion(ANSWER)), "--trials", "2")
    assert result.exit_code == 0, result.output
    for line in lines(out):
        assert (line["status"], line["termination_reason"], line["passed"]) == ("completed", "user_stop", True)
        assert grade(out, line)["note"] is None
    assert row(out)["pass_rate"] == 1.0


def simulator_stops_after_an_answer(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """The agent (its requests carry tools) looks the item up, then answers; the user simulator then stops."""
    if not body.get("tools"):
        return 200, agent_completion(f"Understood, thanks. {STOP_SIGNAL}")
    if body["messages"][-1]["role"] == "user":
        return 200, agent_completion(None, [tool_call("c1", "lookup_item", {"sku": "SKU-400"})])
    return 200, agent_completion(ANSWER)


def test_the_llm_user_simulator_stopping_is_an_accepted_end(env: None, tmp_path: Path) -> None:
    task = inv05(tmp_path / "pack")  # the bundled task as it is: its LLM user reads the answer and stops
    out, result = trial_run(tmp_path, task, simulator_stops_after_an_answer)
    assert result.exit_code == 0, result.output
    [line] = lines(out)
    assert (line["status"], line["termination_reason"], line["passed"]) == ("completed", "user_stop", True)


def test_the_turn_budget_running_out_is_not_passed(env: None, tmp_path: Path) -> None:
    # the agent looks things up for ever: the budget ends the trial before any answer
    task = inv05(tmp_path / "pack", scripted=True)
    lookup = agent_completion(None, [tool_call("c", "lookup_item", {"sku": "SKU-400"})])
    out, result = trial_run(tmp_path, task, always(lookup), "--max-turns", "2")
    assert result.exit_code == 0, result.output
    [line] = lines(out)
    assert (line["status"], line["termination_reason"], line["passed"]) == ("failed", "max_turns", False)
    verdict = grade(out, line)
    assert [g["passed"] for g in verdict["graders"]] == [True] and "turn budget ran out" in verdict["note"]


def test_an_answer_with_the_last_turn_of_the_budget_ends_the_script_as_a_user_stop(env: None, tmp_path: Path) -> None:
    # two agent turns allowed: a lookup, then the answer; the one-turn script has nothing more to say
    task = inv05(tmp_path / "pack", scripted=True)
    out, result = trial_run(tmp_path, task, default_lookup_then_answer, "--max-turns", "2")
    assert result.exit_code == 0, result.output
    [line] = lines(out)
    assert (line["status"], line["termination_reason"], line["passed"]) == ("completed", "user_stop", True)
    assert line["turns"] == 2


def default_lookup_then_answer(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    if body["messages"][-1]["role"] == "user":
        return 200, agent_completion(None, [tool_call("c1", "lookup_item", {"sku": "SKU-400"})])
    return 200, agent_completion(ANSWER)


def test_a_provider_error_after_some_completions_is_not_passed(env: None, tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack", turns=["please add 1"], extra="grader:\n  expected_state: {value: 1}\n")
    calls: list[int] = []

    def add_then_fail(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        calls.append(1)
        if len(calls) == 1:
            return agent_answer(body)  # the tool call: the counter is 1, as the grader wants
        return 500, {"error": {"message": "upstream exploded", "type": "server_error"}}

    out, result = trial_run(tmp_path, task, add_then_fail)
    [line] = lines(out)
    assert (line["status"], line["termination_reason"], line["passed"]) == ("failed", "api_error", False)
    verdict = grade(out, line)
    assert [g["passed"] for g in verdict["graders"]] == [True] and "provider error" in verdict["note"]


def test_the_rule_is_in_the_summary_the_report_and_the_view(env: None, tmp_path: Path) -> None:
    task = inv05(tmp_path / "pack", scripted=True)
    out, _ = trial_run(tmp_path, task, always(agent_completion("")))
    assert PASS_RULE in (out / "summary.md").read_text()
    report = invoke("trial", "report", str(out))
    assert report.exit_code == 0 and PASS_RULE in report.output
    compared = invoke("trial", "report", str(out), "--format", "md")
    assert compared.exit_code == 0 and PASS_RULE in compared.output
    page = tmp_path / "view.html"
    viewed = invoke("trial", "view", str(out), "--out", str(page))
    assert viewed.exit_code == 0, viewed.output
    html = page.read_text()
    assert f'<p class="muted" id="pass-rule">{escape(PASS_RULE)}</p>' in html
    assert "completions were empty" in html  # the trial's own note, in its detail block


#: the ends graded as they stand: the user's stops, and BFCL's force-quit of a turn at max_steps_per_turn
GRADED_ENDS = USER_ENDS | {TerminationReason.MAX_STEPS_PER_TURN}


@pytest.mark.parametrize("reason", [r for r in TerminationReason if r not in GRADED_ENDS])
def test_every_end_but_the_users_stop_and_the_force_quit_is_unaccepted(reason: TerminationReason) -> None:
    answer = FinalAnswer(ANSWER, "stop")
    assert unaccepted_end(reason, final_answer=answer, simulator_stopped=True) is not None


@pytest.mark.parametrize("reason", [TerminationReason.USER_TRANSFER, TerminationReason.USER_OUT_OF_SCOPE])
def test_a_simulated_users_own_stop_signal_is_an_accepted_end(reason: TerminationReason) -> None:
    assert unaccepted_end(reason, final_answer=None, simulator_stopped=True) is None


def test_a_force_quit_turn_is_graded_as_it_stands() -> None:
    # BFCL grades an entry whose turn it force-quit: no final answer is needed (the last word was a tool call)
    assert unaccepted_end(TerminationReason.MAX_STEPS_PER_TURN, final_answer=None, simulator_stopped=False) is None


def test_a_users_stop_is_accepted_after_a_real_answer_or_the_simulators_stop() -> None:
    stop = TerminationReason.USER_STOP
    assert unaccepted_end(stop, final_answer=FinalAnswer(ANSWER, "stop"), simulator_stopped=False) is None
    assert unaccepted_end(stop, final_answer=FinalAnswer(ANSWER, None), simulator_stopped=False) is None
    assert unaccepted_end(stop, final_answer=FinalAnswer(" ", "stop"), simulator_stopped=True) is None
    for blank in ("", " \n\t"):
        assert unaccepted_end(stop, final_answer=FinalAnswer(blank, "stop"), simulator_stopped=False)
    assert unaccepted_end(stop, final_answer=None, simulator_stopped=False)


@pytest.mark.parametrize(("turns", "ended"), [
    (["hello", f"thanks, bye {STOP_SIGNAL}"], ("completed", "user_stop", True)),  # the script's next turn is its stop
    (["hello", "and one more thing"], ("failed", "max_turns", False)),  # the user had more to say
])
def test_at_the_turn_budget_a_script_that_stops_next_ends_as_a_user_stop(env: None, tmp_path: Path, turns: list[str],
                                                                         ended: tuple[str, str, bool]) -> None:
    task = write_task(tmp_path / "pack", turns=turns, extra="grader:\n  expected_state: {value: 0}\n")
    out, result = trial_run(tmp_path, task, always(agent_completion("Hello, the counter is 0.")), "--max-turns", "1")
    assert result.exit_code == 0, result.output
    [line] = lines(out)
    assert (line["status"], line["termination_reason"], line["passed"]) == ended
    messages = yaml.safe_load((out / line["dir"] / "trajectory.yaml").read_text())["messages"]
    if ended[1] == "user_stop":  # the stop turn is recorded as what the user said
        assert messages[-1] == {"role": "user", "content": turns[1]}

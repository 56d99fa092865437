"""A trial whose user simulator broke is recorded with the verdict and kept out of the agent's pass rate.

The verdict (``capplan.trials.usersim.failures``) on plain records: a turn the reply guard refused
(its reason codes kept), the same message three times in a row, a stop before the agent answered.
The assistant-voice detector flags a user who offers the agent's help. Then a real run against one
loopback server: an LLM user that keeps talking like an assistant has every generation refused, and
that trial is recorded ``user_simulator_failure: reply_refused``, ``counts_against_model: false``;
the summary, ``trial report`` and the view's payload give the agent's pass rate over the other trial
and the user-simulator failure rate beside it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from capplan.trials.run_folder.recording import ORIGIN
from capplan.trials.usersim import DEFAULT_REPLY_DETECTORS, UserReplyGuard
from capplan.trials.usersim.detectors.assistant_voice import AssistantVoiceDetector
from capplan.trials.usersim.failures import HARNESS_ORIGIN, user_simulator_failure
from tests.cli_runner import invoke
from tests.fake_provider import FakeProvider, agent_answer, agent_completion, on_body
from tests.trials.helpers import openai_plan, write_task

STOP = "###STOP###"


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


ANSWERED = [_user("please add 1"), {"role": "assistant", "content": None, "tool_calls": [{"id": "c"}]},
            {"role": "tool", "content": "{}"}, {"role": "assistant", "content": "Done."}]


def test_a_refused_turn_is_the_simulators_failure_with_the_guards_codes() -> None:
    event = {"message_index": 3, "outcome": "refused",
             "rejections": [{"detector": "assistant_voice", "reason": "offered_help", "excerpt": "How can I help"},
                            {"detector": "fourth_wall", "reason": "named_the_exercise", "excerpt": "x"}]}
    found = user_simulator_failure(ANSWERED, [event], user_ended=False)
    assert found is not None and found.kind == "reply_refused"
    assert found.codes == ("assistant_voice:offered_help", "fourth_wall:named_the_exercise")
    assert "How can I help" not in found.detail  # the evidence is codes, never the simulator's words
    # a turn the guard regenerated and delivered is no failure: the agent saw only the clean reply
    assert user_simulator_failure(ANSWERED, [{**event, "outcome": "delivered"}], user_ended=True) is None


def test_the_same_message_three_times_in_a_row_is_a_loop_and_twice_is_not() -> None:
    twice = [_user("where is my order?"), {"role": "assistant", "content": "Which one?"},
             _user("where is my order?"), {"role": "assistant", "content": "Which one?"}]
    assert user_simulator_failure(twice, [], user_ended=True) is None
    thrice = [*twice, _user("where is my order?")]
    found = user_simulator_failure(thrice, [], user_ended=False)
    assert found is not None and found.kind == "looped"
    # harness-authored user messages (parser feedback) are not the simulator's words
    marked = [*twice, {**_user("where is my order?"), HARNESS_ORIGIN: "parser_error"}]
    assert user_simulator_failure(marked, [], user_ended=False) is None
    assert HARNESS_ORIGIN == ORIGIN


def test_a_stop_before_the_agent_answered_in_text_is_an_early_end() -> None:
    found = user_simulator_failure([_user("hi"), {"role": "assistant", "content": None, "tool_calls": [{}]},
                                    {"role": "tool", "content": "{}"}, _user(STOP)], [], user_ended=True)
    assert found is not None and found.kind == "ended_early"
    assert user_simulator_failure(ANSWERED, [], user_ended=True) is None
    # the agent's failure to answer is not the simulator's when the simulator did not end it
    assert user_simulator_failure(ANSWERED[:3], [], user_ended=False) is None


@pytest.mark.parametrize(("text", "flagged"), [
    ("How can I help you today?", True),
    ("Hello! Is there anything else I can help you with?", True),
    ("Thank you for contacting us, have a nice day.", True),
    ("Hi, I need help with my booking.", False),
    ("Can you help me change my flight?", False),
    ('The chat bot keeps saying "How can I help you?" and nothing else.', False),
    ("They said how can I help you, and then hung up.", False),
])
def test_the_assistant_voice_detector_flags_the_agents_service_phrases_in_the_users_own_voice(
        text: str, flagged: bool) -> None:
    finding = AssistantVoiceDetector().inspect(text)
    assert (finding is not None) is flagged
    if finding is not None:
        assert finding.reason == "offered_help"
    defect = UserReplyGuard().inspect(text)  # it is one of the guard's default detectors
    assert (defect is not None and defect.detector == "assistant_voice") is flagged
    assert any(isinstance(d, AssistantVoiceDetector) for d in DEFAULT_REPLY_DETECTORS)


def _respond(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """The agent (it has tools) adds one; the user (no tools) asks, then stops, or talks like an assistant."""
    if body.get("tools"):
        return agent_answer(body)
    system = " ".join(str(m.get("content")) for m in body.get("messages") or [] if m.get("role") == "system")
    if "CONFUSED" in system:
        return 200, agent_completion("How can I help you today?")
    said = any(m.get("role") == "assistant" for m in body.get("messages") or [])
    return 200, agent_completion(f"Thanks. {STOP}" if said else "Please add 1 to the counter.")


def _counter_tasks(root: Any, marks: dict[str, str]) -> Any:
    """One counter task per id, its LLM user's backstory opening with the mark the loopback user reads; the plan."""
    for task_id, mark in marks.items():
        write_task(root / "tasks", task_id=task_id, extra="grader:\n  expected_state: {value: 1}\n",
                   user=f"user:\n  mode: llm\n  backstory: {mark}You want the counter raised by one.\n")
    plan = root / "plan.json"
    plan.write_bytes(openai_plan().to_bytes())
    return plan


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_API_KEY", "sk-user-failures-test")
    root = tmp_path_factory.mktemp("user-failures")
    plan = _counter_tasks(root, {"steady": "", "confused": "CONFUSED. "})
    out = root / "run"
    with FakeProvider(on_body(_respond)) as server:
        result = invoke("trial", "run", str(root / "tasks"), "--plan", str(plan), "--user-plan", str(plan),
                        "--out", str(out), "--api-base", server.base, "--user-api-base", server.base)
    lines = {json.loads(t)["task_id"]: json.loads(t) for t in (out / "runs.jsonl").read_text().splitlines()}
    report = invoke("trial", "report", str(out))
    mp.undo()
    return {"result": result, "lines": lines, "out": out, "report": report}


def test_the_broken_simulators_trial_is_recorded_with_the_guards_verdict_and_not_counted(run: dict[str, Any]) -> None:
    assert "Traceback" not in run["result"].output
    confused, steady = run["lines"]["confused"], run["lines"]["steady"]
    assert (steady["status"], steady["passed"], steady["counts_against_model"]) == ("completed", True, True)
    assert "user_simulator_failure" not in steady  # written only when set: other trials keep their bytes
    assert (confused["status"], confused["counts_against_model"]) == ("error", False)
    failure = confused["user_simulator_failure"]
    assert failure["kind"] == "reply_refused" and set(failure["codes"]) == {"assistant_voice:offered_help"}
    metrics = yaml.safe_load((run["out"] / confused["dir"] / "metrics.yaml").read_text())
    assert metrics["user_simulator_failure"] == failure and metrics["counts_against_model"] is False


def test_the_summary_and_report_show_the_agents_pass_rate_beside_the_user_simulator_failure_rate(
        run: dict[str, Any]) -> None:
    summary = json.loads((run["out"] / "summary.json").read_text())
    [row] = summary["rows"]
    assert (row["pass_rate"], row["graded"], row["error"]) == (1.0, 1, 0)
    assert (row["user_failures"], row["user_failure_rate"]) == (1, 0.5)
    text = run["report"].output
    header = next(line for line in text.splitlines() if "pass rate" in line and "user-sim failures" in line)
    cells = [c.strip() for c in header.split("|")]
    assert cells.index("user-sim failures") == cells.index("pass rate") + 1
    assert "| 100.0% | 1 (50.0%) |" in text


def test_the_views_summary_table_gets_the_user_simulator_failure_rate(run: dict[str, Any]) -> None:
    from capplan.trials.report.run_data import load_run
    from capplan.trials.report.view.payload import _column_stats
    from capplan.trials.report.compare import columns_of

    loaded = load_run(run["out"])
    [column] = columns_of([loaded])
    stats = _column_stats(column, loaded)
    assert (stats["pass_rate"], stats["user_failures"], stats["user_failure_rate"]) == (1.0, 1, 0.5)


def test_resample_user_runs_a_broken_users_trial_again_as_a_new_attempt_that_supersedes_it(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--resample-user 2``: the user of task ``shaky`` talks like an assistant until its first attempt is in
    ``runs.jsonl`` (the folder is the test's clock, not time), so round one breaks it and round two passes it;
    ``always`` breaks every time and is run 1 + 2 times. The latest attempt is the one counted."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-user-failures-test")
    plan = _counter_tasks(tmp_path, {"shaky": "SHAKY. ", "always": "CONFUSED. "})
    out = tmp_path / "run"

    def respond(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        system = " ".join(str(m.get("content")) for m in body.get("messages") or [] if m.get("role") == "system")
        runs = out / "runs.jsonl"
        if not body.get("tools") and "SHAKY" in system and (not runs.exists() or '"shaky"' not in runs.read_text()):
            return 200, agent_completion("How can I help you today?")
        return _respond(body)

    with FakeProvider(on_body(respond)) as server:
        result = invoke("trial", "run", str(tmp_path / "tasks"), "--plan", str(plan), "--user-plan", str(plan),
                        "--out", str(out), "--api-base", server.base, "--user-api-base", server.base,
                        "--resample-user", "2")
    assert "Traceback" not in result.output
    rounds = [line for line in result.output.splitlines() if line.startswith("resampling the user simulator")]
    assert len(rounds) == 2 and "of 2 trial(s)" in rounds[0] and "of 1 trial(s)" in rounds[1]
    assert "always" in rounds[1] and "shaky" not in rounds[1]
    lines = [json.loads(t) for t in (out / "runs.jsonl").read_text().splitlines()]
    by_task: dict[str, list[dict[str, Any]]] = {}
    for line in lines:
        by_task.setdefault(line["task_id"], []).append(line)
    assert [(x["attempt"], bool(x.get("user_simulator_failure"))) for x in by_task["shaky"]] == [(1, True), (2, False)]
    assert [(x["attempt"], bool(x.get("user_simulator_failure"))) for x in by_task["always"]] == \
        [(1, True), (2, True), (3, True)]
    assert by_task["shaky"][-1]["passed"] is True
    summary = json.loads((out / "summary.json").read_text())
    [row] = summary["rows"]
    assert (row["pass_rate"], row["graded"], row["user_failures"]) == (1.0, 1, 1)
    manifest = json.loads((out / "run.json").read_text())
    assert len(manifest["invocations"]) == 3  # the first pass and two resampling rounds


def test_resample_user_refuses_a_count_out_of_range(tmp_path: Any) -> None:
    result = invoke("trial", "run", str(tmp_path / "missing.yaml"), "--plan", str(tmp_path / "p.json"),
                    "--out", str(tmp_path / "run"), "--resample-user", "11")
    assert result.exit_code == 2 and "--resample-user" in result.output and not (tmp_path / "run").exists()

"""Imported BFCL tasks run by ``capplan trial run`` against scripted agents on a loopback server.

The ground-truth agent passes every task under both graders -- the built-in per-turn checks
and BFCL's own ``multi_turn_checker`` -- and agents that deviate from the ground truth (one
call left out, one argument changed, a flight booked again and cancelled, an extra read-only
call) are judged alike by both, trial by trial. A subset keeps the suite fast; the full table
over all 200 entries of every category is ``python -m tests.trials.bfcl.agreement``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("bfcl_eval", reason="bfcl-eval is not installed: pip install --no-deps bfcl-eval==2026.3.23 "
                                        "mpmath==1.3.0 (.ci/run installs it)")

from capplan.trials.importers.bfcl.pack import import_category  # noqa: E402
from tests.trials.bfcl.agreement import GROUND_TRUTH, Verdict, plan_file, run_agent, scripted  # noqa: E402
from tests.cli_runner import invoke

#: entries per (category, agent) in the normal suite
SUBSET = {GROUND_TRUTH: 5, "omit_one_call": 4, "change_one_argument": 4, "book_then_cancel": 2,
          "extra_harmless_call": 3}


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_API_KEY", "sk-bfcl-scripted-agent-key")
    mp.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    mp.delenv("LLM_PROXY_BASE_URL", raising=False)
    yield tmp_path_factory.mktemp("bfcl")
    mp.undo()


def _run(work: Path, category: str, agent: str) -> list[Verdict]:
    tasks = scripted(category, agent, limit=SUBSET[agent])
    assert tasks, f"{agent} applies to no {category} entry"
    pack = work / "tasks" / category / agent
    import_category(category, pack, grader="both", entry_ids={t.entry_id for t in tasks})
    plan = work / "agent.json"
    if not plan.exists():
        plan_file(work)
    verdicts = run_agent(pack, tasks, work / "runs" / category / agent, plan, concurrency=4)
    assert [v.task_id for v in verdicts] == sorted(t.entry_id for t in tasks)
    return verdicts


@pytest.mark.parametrize("category", ["multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param",
                                      "multi_turn_long_context"])
def test_the_ground_truth_passes_under_both_graders(work: Path, category: str) -> None:
    verdicts = _run(work, category, GROUND_TRUTH)
    assert all(v.status == "completed" for v in verdicts), verdicts
    assert [(v.task_id, v.builtin, v.bfcl) for v in verdicts] == [(v.task_id, True, True) for v in verdicts]


@pytest.mark.parametrize("agent", ["omit_one_call", "change_one_argument", "book_then_cancel", "extra_harmless_call"])
def test_a_deviating_agent_fails_where_bfcls_checker_fails(work: Path, agent: str) -> None:
    verdicts = _run(work, "multi_turn_base", agent)
    disagreements = [v for v in verdicts if not v.agrees]
    assert not disagreements, disagreements
    assert all(v.builtin is not None and v.bfcl is not None for v in verdicts)
    if agent == "omit_one_call":
        # a ground-truth call left out: its result is missing from the turn's outputs
        assert not any(v.bfcl for v in verdicts), verdicts
    if agent == "change_one_argument":
        assert any(not v.bfcl for v in verdicts), verdicts
    if agent == "extra_harmless_call":
        # extra outputs are allowed (a sub-multiset) and a read-only call leaves the state alone
        assert all(v.bfcl for v in verdicts), verdicts


def test_a_deviation_in_another_category_is_judged_alike(work: Path) -> None:
    verdicts = _run(work, "multi_turn_miss_func", "omit_one_call")
    assert [(v.builtin, v.bfcl) for v in verdicts] == [(False, False)] * len(verdicts)


def test_the_wire_carries_bfcls_conversation_and_offers_held_out_tools_from_their_turn(work: Path) -> None:
    from capplan.trials.importers.bfcl import source
    from tests.fake_provider import FakeProvider, on_body
    from tests.trials.bfcl.scripted_agent import ScriptedAgent

    [task] = scripted("multi_turn_miss_func", GROUND_TRUTH, limit=1)
    pack = work / "wire"
    import_category("multi_turn_miss_func", pack, entry_ids={task.entry_id})
    plan = plan_file(work / "wire")
    with FakeProvider(on_body(ScriptedAgent([task]))) as server:
        result = invoke("trial", "run", str(pack), "--plan", str(plan), "--out", str(work / "wire-run"),
                        "--api-base", server.base)
        requests = list(server.bodies())
    assert result.exit_code == 0, result.output
    bench = source.load("multi_turn_miss_func")
    entry = next(e for e in bench.entries if e.id == task.entry_id)
    [(held_turn, held_names)] = entry.missed_function.items()
    # no system message: BFCL's function-calling handlers open with the user's question
    assert requests[0]["messages"] == [{"role": "user", "content": entry.question[0][0]["content"]}]
    for body in requests:
        turn = sum(1 for m in body["messages"] if m["role"] == "user") - 1
        offered = {t["function"]["name"] for t in body["tools"]}
        assert (set(held_names) <= offered) == (turn >= int(held_turn)), (turn, sorted(offered))
    assert {sum(1 for m in b["messages"] if m["role"] == "user") for b in requests} == set(range(1, len(entry.question) + 1))
    # the turn that adds the functions says what BFCL says there
    said = [m["content"] for m in requests[-1]["messages"] if m["role"] == "user"]
    assert said[int(held_turn)] == bench.added_functions_prompt
    assert said[:int(held_turn)] == [turn[0]["content"] for turn in entry.question[:int(held_turn)]]


def test_every_trial_of_a_task_starts_from_its_initial_configuration(work: Path) -> None:
    # BFCL's classes keep the lists of the scenario they are loaded with and change them: a later
    # trial of the same task in the same process must not start from what an earlier one left
    tasks = [t for t in scripted("multi_turn_base", GROUND_TRUTH) if t.entry_id in ("multi_turn_base_140",
                                                                                    "multi_turn_base_153")]
    pack = work / "tasks" / "repeat"
    import_category("multi_turn_base", pack, grader="both", entry_ids={t.entry_id for t in tasks})
    verdicts = run_agent(pack, tasks, work / "runs" / "repeat", plan_file(work / "tasks" / "repeat"), concurrency=1,
                         trials=3)
    assert len(verdicts) == 6
    assert [(v.builtin, v.bfcl) for v in verdicts] == [(True, True)] * 6, verdicts


def test_a_call_record_keeps_the_arguments_the_agent_sent(work: Path) -> None:
    # entry 90: post_tweet keeps its mentions list, and the later mention() call extends it
    import json

    import yaml

    [task] = [t for t in scripted("multi_turn_base", GROUND_TRUTH) if t.entry_id == "multi_turn_base_90"]
    pack = work / "tasks" / "records"
    import_category("multi_turn_base", pack, entry_ids={task.entry_id})
    out = work / "runs" / "records"
    [verdict] = run_agent(pack, [task], out, plan_file(pack))
    assert verdict.builtin is True
    line = json.loads((out / "runs.jsonl").read_text().splitlines()[0])
    trajectory = yaml.safe_load((out / line["dir"] / "trajectory.yaml").read_text())
    [post] = [c for c in trajectory["tool_calls"] if c["name"] == "post_tweet"]
    assert post["arguments"]["mentions"] == ["@TravelBuddy"]


#: the disagreements once seen between the per-turn graders, BFCL's checker and the trial's verdict,
#: each on an entry where it showed: (category, entry, the agent that plays it)
CASES = (
    ("multi_turn_base", "multi_turn_base_142", "skip_one_turn"),
    ("multi_turn_miss_param", "multi_turn_miss_param_137", "skip_one_turn"),
    ("multi_turn_base", "multi_turn_base_0", "trailing_comma"),
    ("multi_turn_long_context", "multi_turn_long_context_46", "past_step_limit"),
    ("multi_turn_base", "multi_turn_base_1", "all_steps_then_answer"),
)


@pytest.fixture(scope="module")
def cases(work: Path) -> dict[str, Verdict]:
    """Every case in one ``trial run`` (one pack holding the entries of three categories), by entry id."""
    pack = work / "tasks" / "cases"
    tasks = []
    for category, entry_id, agent in CASES:
        [task] = [t for t in scripted(category, agent) if t.entry_id == entry_id]
        tasks.append(task)
        import_category(category, pack, grader="both", entry_ids={entry_id}, force=True)
    verdicts = run_agent(pack, tasks, work / "runs" / "cases", plan_file(pack), concurrency=4)
    return {v.task_id: v for v in verdicts}


@pytest.mark.parametrize("entry_id", ["multi_turn_base_142", "multi_turn_miss_param_137"])
def test_a_turn_without_calls_fails_where_its_ground_truth_has_calls(cases: dict[str, Verdict], entry_id: str) -> None:
    # the skipped turn only re-reads a watchlist the turn before returned: state and outputs so far
    # match the ground truth's, and only BFCL's empty-turn rule fails it
    verdict = cases[entry_id]
    assert (verdict.builtin, verdict.bfcl, verdict.passed) == (False, False, False), verdict
    assert "empty_turn_model_response" in verdict.detail and "made no tool call" in verdict.detail, verdict


def test_arguments_that_are_not_json_are_graded_as_sent(work: Path, cases: dict[str, Verdict]) -> None:
    # a trailing comma: capplan's parser repairs it and the call runs, but BFCL's decoder (json.loads)
    # refuses the completion and ends the turn there
    import json

    import yaml

    verdict = cases["multi_turn_base_0"]
    assert (verdict.builtin, verdict.bfcl, verdict.passed) == (False, False, False), verdict
    assert "not a JSON object" in verdict.detail, verdict
    out = work / "runs" / "cases"
    [line] = [json.loads(t) for t in (out / "runs.jsonl").read_text().splitlines()
              if json.loads(t)["task_id"] == "multi_turn_base_0"]
    trajectory = yaml.safe_load((out / line["dir"] / "trajectory.yaml").read_text())
    [sent] = [m for m in trajectory["messages"] if m.get("sent_arguments")]
    [(call_id, text)] = sent["sent_arguments"].items()
    assert text.endswith(",}")  # what the model sent, beside the repaired JSON the call ran with
    [call] = [c for c in sent["tool_calls"] if c["id"] == call_id]
    assert json.loads(call["function"]["arguments"]) == json.loads(text[:-2] + "}")
    [repair] = trajectory["parser_errors"]
    assert repair["repair_rung"] == "yaml" and repair["raw_arguments"] == text  # a YAML flow mapping takes the comma
    # BFCL's decoder (convert_to_function_call in bfcl_eval.model_handler.utils: json.loads of each call's
    # argument string; that module needs tree_sitter, outside the --no-deps install) refuses what was sent
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)


def test_past_the_step_limit_in_the_last_turn_the_turn_is_force_quit_and_graded(cases: dict[str, Verdict]) -> None:
    # BFCL's checker passes multi_turn_long_context_46 played in 21 steps in its last turn
    verdict = cases["multi_turn_long_context_46"]
    assert verdict.termination == "max_steps_per_turn" and verdict.status == "completed", verdict
    assert (verdict.builtin, verdict.bfcl, verdict.passed) == (True, True, True), verdict


def test_all_steps_then_an_answer_ends_with_the_users_stop(cases: dict[str, Verdict]) -> None:
    verdict = cases["multi_turn_base_1"]
    assert verdict.termination == "user_stop" and verdict.status == "completed", verdict
    assert (verdict.builtin, verdict.bfcl, verdict.passed) == (True, True, True), verdict

"""`capplan trial run` on a Responses plan (the bundled gpt-5, `openai-responses`), through the CLI.

The agent (and the user simulator) is capplan's strict Responses emulator on loopback, route "openai":
it mints encrypted reasoning items and refuses a replay that breaks OpenAI's rules, so a trial that
passes here replayed each reasoning item as the provider requires. An answer holding an output item
capplan does not interpret comes from a small recording server instead (the emulator never sends one):
the trial ends error, never passed, with the item in its record.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from capplan.conformance.corpus import load_corpus
from capplan.conformance.emulator import Reply
from capplan.conformance.emulators.openai_responses import ResponsesEmulator
from capplan.executor.plan import Plan
from capplan.trials.usersim import STOP_SIGNAL
from tests.cli_runner import invoke
from tests.responses_plan import GPT5, plan_on
from tests.fake_provider import FakeProvider, on_body
from tests.trials.helpers import write_task

KEY = "sk-test-responses-trials-0123456789"
ENV: dict[str, str | None] = {"OPENAI_API_KEY": KEY, "LLM_PROXY_BASE_URL": None, "LLM_PROXY_API_KEY": None,
                              "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
ORIGIN = {"protocol": "openai-responses", "route": "openai", "model": "openai/gpt-5"}


@pytest.fixture
def emulators() -> Iterator[list[ResponsesEmulator]]:
    """Started emulators, each stopped at teardown; a test appends the ones it starts."""
    started: list[ResponsesEmulator] = []
    yield started
    for emu in started:
        emu.stop()


def start(started: list[ResponsesEmulator], script: list[Reply]) -> ResponsesEmulator:
    emu = ResponsesEmulator(load_corpus().rules, route="openai", script=script).start()
    started.append(emu)
    return emu



def trial(task: Path, out: Path, base: str, *extra: str, plan: Path = GPT5) -> Any:
    return invoke("trial", "run", task, "--plan", plan, "--out", out, "--trials", "1", "--concurrency", "1",
                  "--api-base", base, *extra, env=ENV)


def records(out: Path) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The run's one runs.jsonl line, and its trajectory and metrics."""
    [line] = [json.loads(text) for text in (out / "runs.jsonl").read_text().splitlines()]
    folder = out / line["dir"]
    return (line, yaml.safe_load((folder / "trajectory.yaml").read_text()),
            yaml.safe_load((folder / "metrics.yaml").read_text()))


@pytest.mark.parametrize("transport", ["direct", "litellm"])
def test_a_tool_loop_trial_passes_and_records_the_reasoning_it_replayed(tmp_path: Path, transport: str,
                                                                        emulators: list[ResponsesEmulator]) -> None:
    task = write_task(tmp_path / "pack", turns=["please add 2"], extra="grader:\n  expected_state: {value: 2}\n")
    emu = start(emulators, [Reply(tool_calls=(("add", {"amount": 2}),)), Reply(text="The counter is 2.")])
    out = tmp_path / "run"
    result = trial(task, out, emu.base_url + "/v1", plan=plan_on(transport, tmp_path))
    assert result.exit_code == 0, result.output
    line, trajectory, metrics = records(out)
    assert (line["status"], line["termination_reason"], line["passed"]) == ("completed", "user_stop", True)

    # the wire: two Responses requests, both accepted by the strict emulator
    assert [(e.path, e.status, e.violations) for e in emu.exchanges] == [("/v1/responses", 200, ())] * 2
    first, second = emu.exchanges
    assert "messages" not in first.body and first.body["store"] is False
    assert first.body["include"] == ["reasoning.encrypted_content"]
    minted, call = first.answer["output"]
    assert (minted["type"], call["type"]) == ("reasoning", "function_call")
    # turn 2 replays the reasoning item, as minted, immediately before the function_call it preceded
    items = second.body["input"]
    at = items.index(minted)
    assert items[at + 1] == {"type": "function_call", "id": call["id"], "call_id": call["call_id"], "name": "add",
                             "arguments": call["arguments"]}
    assert items[at + 2] == {"type": "function_call_output", "call_id": call["call_id"], "output": '{"value": 2}'}

    # the record: each assistant turn's encrypted reasoning with its origin, verbatim
    assistants = [m for m in trajectory["messages"] if m["role"] == "assistant"]
    answers = [e.answer["output"][0] for e in emu.exchanges]
    assert [m["reasoning"]["blocks"] for m in assistants] == [
        [{"type": "encrypted", "text": "", "encrypted_data": rs["encrypted_content"],
          "extras": {"id": rs["id"], "summary": [], "follower": follower}, "origin": ORIGIN}]
        for rs, follower in zip(answers, [{"type": "function_call", "id": call["id"], "call_id": call["call_id"]},
                                          {"type": "message", "id": second.answer["output"][1]["id"]}])]
    # usage with reasoning tokens, per call and summed, as the answers reported them
    reported = [e.answer["usage"] for e in emu.exchanges]
    calls = metrics["calls"]
    assert [c["usage"]["reasoning_tokens"] for c in calls] == [
        u["output_tokens_details"]["reasoning_tokens"] for u in reported]
    assert [c["usage"]["prompt_tokens"] for c in calls] == [u["input_tokens"] for u in reported]
    assert line["usage"]["reasoning_tokens"] == sum(u["output_tokens_details"]["reasoning_tokens"] for u in reported)
    assert line["cost_source"] == "pricing" and line["cost_usd"] > 0
    journal = [json.loads(text) for text in (out / "calls.jsonl").read_text().splitlines()]
    assert [e["call"]["usage"]["reasoning_tokens"] for e in journal if e["kind"] == "call"] == [
        u["output_tokens_details"]["reasoning_tokens"] for u in reported]
    assert KEY not in json.dumps([line, trajectory, metrics]) + (out / "calls.jsonl").read_text()


def test_the_user_simulator_runs_on_a_responses_plan(tmp_path: Path, emulators: list[ResponsesEmulator]) -> None:
    user = "user:\n  mode: llm\n  backstory: You want the counter raised by one.\n"
    task = write_task(tmp_path / "pack", user=user, extra="grader:\n  expected_state: {value: 1}\n")
    agent = start(emulators, [Reply(tool_calls=(("add", {"amount": 1}),)), Reply(text="The counter is 1.")])
    simulator = start(emulators, [Reply(text="Please raise the counter by one."), Reply(text=f"Thanks. {STOP_SIGNAL}")])
    out = tmp_path / "run"
    result = trial(task, out, agent.base_url + "/v1", "--user-plan", str(GPT5),
                   "--user-api-base", simulator.base_url + "/v1")
    assert result.exit_code == 0, result.output
    line, trajectory, _ = records(out)
    assert (line["status"], line["passed"]) == ("completed", True)
    # the simulator spoke Responses too: its words reached the agent, its usage counts on the user's side
    assert [(e.path, e.status) for e in simulator.exchanges] == [("/v1/responses", 200)] * 2
    assert all("messages" not in e.body and e.body["store"] is False for e in simulator.exchanges)
    assert agent.exchanges[0].body["input"][0] == {"type": "message", "role": "user",
                                                   "content": "Please raise the counter by one."}
    assert [(e.status, e.violations) for e in agent.exchanges] == [(200, ())] * 2
    assert line["user_usage"]["reasoning_tokens"] == sum(
        e.answer["usage"]["output_tokens_details"]["reasoning_tokens"] for e in simulator.exchanges)
    first = trajectory["messages"][0]
    assert (first["role"], first["content"]) == ("user", "Please raise the counter by one.")


def test_an_unknown_output_item_ends_the_trial_in_error_with_the_item_recorded(tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack", turns=["please add 2"], extra="grader:\n  expected_state: {value: 0}\n")
    # a hosted tool's call: capplan never offers one, so it cannot say what the model did with it
    sources = [{"type": "url", "url": f"https://example.com/counters/{n}"} for n in range(20)]
    item = {"type": "web_search_call", "id": "ws_1", "status": "completed",
            "action": {"type": "search", "query": f"counter {KEY}", "sources": sources}}
    answer = {"id": "resp_1", "object": "response", "status": "completed", "model": "gpt-5",
              "output": [item, {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                                "content": [{"type": "output_text", "text": "2", "annotations": []}]}],
              "usage": {"input_tokens": 5, "output_tokens": 3, "total_tokens": 8}}
    out = tmp_path / "run"
    with FakeProvider(on_body(lambda body: (200, answer))) as server:
        result = trial(task, out, server.base)
        sent = list(server.bodies())
    assert len(sent) == 1 and "input" in sent[0]  # a Responses request, answered once, never retried
    # the untouched state would pass the grader: the trial must still not count as a pass
    assert result.exit_code == 1, result.output
    assert "1 error trial(s) of 1" in result.output
    line, trajectory, metrics = records(out)
    assert (line["status"], line["termination_reason"], line["passed"]) == ("error", "error", False)
    assert metrics["grade"]["passed"] is False and metrics["grade"]["graders"] == []
    [call] = metrics["calls"]
    assert (call["status"], call["error_type"]) == ("error", "UnknownOutputItemError")
    # answered and billed: the call's tokens and price are what the answer reported, not unknown
    assert (call["usage"]["prompt_tokens"], call["usage"]["completion_tokens"]) == (5, 3)
    assert call["cost_source"] == "pricing" and call["cost_usd"] > 0
    detail = trajectory["termination"]["detail"]
    assert detail.startswith("UnknownOutputItemError: openai: output[0] is an item of type 'web_search_call'")
    # the item itself, redacted, is in the record: the detail quotes its beginning, unread_output keeps it whole
    redacted = {**item, "action": {**item["action"], "query": "counter <redacted>"}}
    assert len(json.dumps(redacted)) > 1000  # longer than any quote the error or the detail makes
    assert json.dumps(redacted, ensure_ascii=False)[:300] in " ".join(detail.split())
    assert trajectory["unread_output"] == [{"turn": 0, "role": "agent", "index": 0, "item": redacted}]
    summary = json.loads((out / "summary.json").read_text())["rows"][0]
    assert (summary["passed"], summary["error"]) == (0, 1)
    assert KEY not in (out / "runs.jsonl").read_text() + json.dumps([trajectory, metrics])


def test_a_context_handoff_on_a_responses_plan_sends_no_reasoning_made_before_it(
        tmp_path: Path, emulators: list[ResponsesEmulator]) -> None:
    # armed so that turn 0's prompt reaches the watermark: a summarise runs before turn 1
    body = Plan.load(GPT5).body()
    body["loop"] = {**body["loop"], "max_context_tokens": 1000, "context_watermark": 990}
    plan = tmp_path / "gpt-5-armed.json"
    plan.write_bytes(Plan.seal(body).to_bytes())
    task = write_task(tmp_path / "pack", turns=["add one please"], extra="grader:\n  expected_state: {value: 1}\n")
    emu = start(emulators, [Reply(tool_calls=(("add", {"amount": 1}),)),
                            Reply(text="RECAP: the user asked to add one; the counter is now 1."),
                            Reply(text="The counter is 1.")])
    out = tmp_path / "run"
    result = trial(task, out, emu.base_url + "/v1", plan=plan)
    assert result.exit_code == 0, result.output
    line, trajectory, metrics = records(out)
    assert (line["status"], line["passed"]) == ("completed", True)
    assert [(e.status, e.violations) for e in emu.exchanges] == [(200, ())] * 3
    turn0, summarise, turn1 = (e.body for e in emu.exchanges)
    assert "tools" not in summarise and all(i.get("type") != "reasoning" for i in summarise["input"])
    # the recap replaced the context the encrypted reasoning was made in: none of it goes back
    assert turn1["input"] == [
        {"type": "message", "role": "user", "content": "add one please"},
        {"type": "message", "role": "user",
         "content": "Summary of the conversation so far:\nRECAP: the user asked to add one; the counter is now 1."}]
    assert trajectory["summarize_events"][0]["trigger"] == "watermark"
    assert [c["role"] for c in metrics["calls"]] == ["agent", "summarize", "agent"]
    # the record keeps the reasoning of the turn before the handoff, with its origin
    [before] = [m for m in trajectory["messages"] if m["role"] == "assistant" and m.get("tool_calls")]
    assert before["reasoning"]["blocks"][0]["origin"] == ORIGIN


def test_an_unread_item_too_deep_to_walk_is_recorded_as_such_and_secrets_never_kept() -> None:
    from capplan.trials.run_folder.recording import NESTED_TOO_DEEP, Recorder

    recorder = Recorder(secrets=("sk-planted-123456",))
    deep: dict[str, object] = {"type": "web_search_call"}
    node = deep
    for _ in range(5000):  # past any recursion limit: a hostile answer, never a provider's
        child: dict[str, object] = {}
        node["next"] = child
        node = child
    shallow = {"type": "web_search_call", "query": "leak sk-planted-123456"}
    recorder.unread("agent", 2, {"output": [deep, {"type": "message", "content": []}, shallow]})
    records = [r.model_dump(mode="json") for r in recorder.unread_output]
    assert [(r["turn"], r["index"]) for r in records] == [(2, 0), (2, 2)]
    assert records[0]["item"] == {"type": "web_search_call", "unrecorded": NESTED_TOO_DEEP}
    assert "sk-planted-123456" not in str(records[1]["item"]) and records[1]["item"]["type"] == "web_search_call"

"""Every provider attempt in the record, through the real loop and real litellm against a loopback upstream.

The upstream (tests/fake_provider.py ``FakeProvider``) answers from a script: 429s and 5xx before a
200, a truncated tool-call argument string, a length cut. Each test asserts on the trial's
``metrics.yaml`` / ``trajectory.yaml`` content and on what the server received.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from capplan.executor.client import Client
from capplan.executor.gateway.config import GatewayConfig
from capplan.trials.outcome import TerminationReason
from capplan.trials.run_folder.records import Metrics, Trajectory
from capplan.trials.loop.retry_classes import OUTPUT_LENGTH_FEEDBACK
from capplan.trials.runner import RunContext, run_trial
from capplan.trials.spec import TrialRecords
from tests.executor.plans import make_plan
from tests.fake_provider import FakeProvider, Request, agent_completion, error_answer, tool_call
from tests.trials.helpers import openai_plan, spec_for, write_task

KEY = "sk-test-call-records-0123456789"
USER_TASK = "user:\n  mode: llm\n  backstory: You want the counter raised by one.\n"


class Scripted:
    """Answers queued in order (status, body), then a plain text completion; ids every 200 with a generation id."""

    def __init__(self) -> None:
        self.queue: deque[tuple[int, dict[str, Any]]] = deque()
        self.lock = threading.Lock()
        self.served = 0

    def __call__(self, seen: Request) -> tuple[int, Any]:
        with self.lock:
            return self.queue.popleft() if self.queue else (200, agent_completion("fine"))

    def push(self, *answers: tuple[int, dict[str, Any]]) -> None:
        with self.lock:
            self.queue.extend(answers)


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeProvider]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_API_KEY", KEY)
        mp.delenv("LLM_PROXY_BASE_URL", raising=False)
        # an OpenRouter-style generation id header on every answer, as OpenRouter sends it
        server = FakeProvider(name="agent", answer_headers=lambda r: {"x-generation-id": f"gen-{r.number}"}).start()
        try:
            yield server
        finally:
            server.close()


@pytest.fixture
def script(upstream: FakeProvider) -> Scripted:
    upstream.reset(scripts=True)
    scripted = Scripted()
    upstream.responder = scripted
    return scripted


def run(upstream: FakeProvider, task: Path, slept: list[float] | None = None, *, loop: dict[str, Any] | None = None,
        **kwargs: Any) -> TrialRecords:
    waits = slept if slept is not None else []
    spec = spec_for(task, openai_plan(loop=loop), api_base=upstream.root, **kwargs)
    records = run_trial(spec, RunContext(sleep=waits.append))
    # what the run folder writes: both files validate against their models
    Metrics.model_validate(records.metrics)
    Trajectory.model_validate(records.trajectory)
    return records


def bodies(upstream: FakeProvider) -> list[dict[str, Any]]:
    return [s.body for s in upstream.requests if s.method == "POST" and isinstance(s.body, dict)]


def test_every_attempt_of_a_retried_call_is_an_entry_with_its_wait(upstream: FakeProvider, script: Scripted, tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack", turns=["hi", "again"])
    script.push(error_answer(429, "Rate limit reached for requests"), error_answer(429, "Rate limit reached for requests"),
                (200, agent_completion("Hello.")), error_answer(500, "upstream exploded"), (200, agent_completion("Hello again.")))
    slept: list[float] = []
    records = run(upstream, task, slept)
    assert records.termination_reason is TerminationReason.USER_STOP
    calls = records.metrics["calls"]
    assert len(bodies(upstream)) == 5 == len(calls) == records.metrics["n_calls"]
    assert [(c["status"], c["attempt"], c["turn"]) for c in calls] == [
        ("error", 1, 0), ("error", 2, 0), ("ok", 3, 0), ("error", 1, 1), ("ok", 2, 1)]
    assert [c["error_class"] for c in calls] == ["rate_limit", "rate_limit", None, "server_error", None]
    assert calls[0]["error_type"] == "RateLimitError" and calls[3]["error_type"] == "InternalServerError"
    # the wait before an attempt is the controller's backoff; the first attempt of a call waits for nothing
    assert calls[0]["wait_s"] == 0 and calls[3]["wait_s"] == 0
    assert all(calls[i]["wait_s"] > 0 for i in (1, 2, 4))
    assert sum(c["wait_s"] for c in calls) == pytest.approx(sum(slept)) == pytest.approx(records.metrics["wait_s"])
    # a turn's latency includes its backoff
    assert records.metrics["latency_s"] >= sum(slept) > 0
    assert records.metrics["latency_s"] == pytest.approx(sum(c["latency_s"] + c["wait_s"] for c in calls))
    for call in calls:
        assert set(call) >= {"role", "turn", "status", "error_class", "wait_s", "latency_s", "usage", "cost_usd",
                             "cost_source", "openrouter_generation_id", "gateway_route", "gateway_route_kind",
                             "key_index"}
        assert call["role"] == "agent" and call["gateway_route"] is None and call["key_index"] is None
    failed, answered = calls[0], calls[2]
    assert failed["usage"] is None and failed["cost_usd"] is None and failed["cost_source"] == "unknown"
    assert answered["usage"]["prompt_tokens"] == 20 and answered["outcome"] == "accepted"
    # the spec's three generation-id sites, from the one read
    ids = [c["openrouter_generation_id"] for c in calls if c["status"] == "ok"]
    assert all(ids) and records.metrics["openrouter_generation_ids"] == ids
    assistant = [m for m in records.trajectory["messages"] if m["role"] == "assistant"]
    assert [m["openrouter_generation_id"] for m in assistant] == ids
    assert all("openrouter_generation_id" not in m for body in bodies(upstream) for m in body["messages"])
    assert KEY not in json.dumps([records.metrics, records.trajectory])


def test_user_calls_are_recorded_at_their_user_turn(upstream: FakeProvider, script: Scripted, tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack", user=USER_TASK)
    script.push((200, agent_completion("Please add one to my counter.")),
                (200, agent_completion(None, [tool_call("c1", "add", {"amount": 1})])), (200, agent_completion("Done, it is 1.")),
                error_answer(503, "busy"), (200, agent_completion("And once more, please.")),
                (200, agent_completion("Done again.")), (200, agent_completion("Thanks! ###STOP###")))
    records = run(upstream, task, user_plan=openai_plan(key="user-sim"))
    assert records.termination_reason is TerminationReason.USER_STOP
    user = [(c["turn"], c["status"], c["attempt"]) for c in records.metrics["calls"] if c["role"] == "user"]
    assert user == [(0, "ok", 1), (1, "error", 1), (1, "ok", 2), (2, "ok", 1)]
    agent = [c["turn"] for c in records.metrics["calls"] if c["role"] == "agent"]
    assert agent == [0, 1, 2]


def test_no_simulator_call_after_the_turn_budget(upstream: FakeProvider, script: Scripted, tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack", user=USER_TASK)
    script.push((200, agent_completion("Please add one to my counter.")), (200, agent_completion("Done, it is 1.")),
                (200, agent_completion("an unread user reply")))
    records = run(upstream, task, user_plan=openai_plan(key="user-sim"), max_turns_cap=1)
    assert records.termination_reason is TerminationReason.MAX_TURNS
    assert len(bodies(upstream)) == 2  # the opening and the one agent turn; no reply nobody reads
    assert [c["role"] for c in records.metrics["calls"]] == ["user", "agent"]
    assert records.metrics["user_usage"]["prompt_tokens"] == 20
    assert records.trajectory["messages"][-1]["origin"] == "turn_budget"


def test_a_repaired_tool_call_keeps_its_raw_arguments_and_rung(upstream: FakeProvider, script: Scripted, tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack", turns=["note it"])
    script.push((200, agent_completion(None, [tool_call("c1", "note", '{"text": "hello wor')])), (200, agent_completion("Noted.")))
    records = run(upstream, task)
    assert records.trajectory["tool_calls"][0]["arguments"] == {"text": "hello wor"}  # executed as repaired
    events = records.trajectory["parser_errors"]
    assert len(events) == 1
    assert events[0]["raw_arguments"] == '{"text": "hello wor' and events[0]["repair_rung"] == "repaired_json"
    assert events[0]["accepted"] is True and events[0]["turn"] == 0 and events[0]["tool_name"] == "note"
    assert [r["retry_class"] for r in records.trajectory["retries"]] == []  # a repair is recorded, not resampled


def test_feedback_turns_carry_their_origin_only_in_the_trajectory(upstream: FakeProvider, script: Scripted, tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack", turns=["tell me"])
    script.push((200, agent_completion("A long answer that was cu", finish="length")),
                (200, agent_completion(None, [tool_call("c1", "add", "@@@")])),
                (200, agent_completion(None, [tool_call("c2", "add", {"amount": 1})])), (200, agent_completion("Done.")))
    records = run(upstream, task, loop={"output_length_retry_count": 1, "parser_error_retry_count": 1})
    feedback = [m for m in records.trajectory["messages"] if "origin" in m]
    assert [(m["role"], m["origin"]) for m in feedback] == [("user", "output_length_feedback"),
                                                            ("user", "parser_feedback")]
    assert feedback[0]["content"] == OUTPUT_LENGTH_FEEDBACK
    sent = bodies(upstream)
    assert {"role": "user", "content": OUTPUT_LENGTH_FEEDBACK} in sent[1]["messages"]
    assert all(set(m) <= {"role", "content", "tool_calls", "tool_call_id", "name"} for b in sent for m in b["messages"])
    assert all("origin" not in json.dumps(b) for b in sent)


def test_a_direct_fallback_past_the_gateway_warns_once_and_is_recorded(caplog: pytest.LogCaptureFixture) -> None:
    answered: list[dict[str, Any]] = []

    def fake(**kwargs: Any) -> dict[str, Any]:
        answered.append(kwargs)
        return agent_completion("hi")

    # anthropic is outside the default allow-list: the gateway is configured but its calls go direct
    client = Client(make_plan("anthropic", "claude-a"), completion=fake, env={"ANTHROPIC_API_KEY": KEY},
                    gateway=GatewayConfig(base_url="http://127.0.0.1:9/v1"))
    request = {"messages": [{"role": "user", "content": "hi"}]}
    with caplog.at_level(logging.WARNING, logger="capplan.executor.client"):
        results = [client.generate(request), client.generate(request)]
    warnings = [r.getMessage() for r in caplog.records if r.name == "capplan.executor.client"]
    assert len(warnings) == 1 and "directly to the provider" in warnings[0] and "http://127.0.0.1:9/v1" in warnings[0]
    assert KEY not in warnings[0]
    assert all(r.gateway_route_kind == "direct" and r.gateway_route is None for r in results)
    assert [a.status for a in results[0].attempts] == ["ok"] and len(answered) == 2


class _Spent(Exception):
    status_code = 402


class _Unavailable(Exception):
    status_code = 503


def test_timeout_retries_and_key_rotation_are_attempts_with_their_key_index() -> None:
    answers: list[Any] = [TimeoutError("read timed out"), _Spent("credits spent"), agent_completion("hi")]
    slept: list[float] = []

    def fake(**kwargs: Any) -> Any:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    client = Client(make_plan("openrouter", "vendor/model"), completion=fake, sleep=slept.append,
                    env={"OPENROUTER_API_KEYS": "k-one-rotation-key,k-two-rotation-key"})
    result = client.generate({"messages": [{"role": "user", "content": "hi"}]})
    assert [(a.status, a.error_class, a.key_index) for a in result.attempts] == [
        ("error", "timeout", 0), ("error", "credential", 0), ("ok", None, 1)]
    assert result.attempts[1].wait_s == slept[0] > 0 and result.wait_s == pytest.approx(sum(slept))
    assert result.latency_s == pytest.approx(sum(a.latency_s for a in result.attempts) + result.wait_s)
    assert result.key_index == 1


def test_a_call_that_raises_carries_its_attempts() -> None:
    from capplan.executor.attempts import attempts_of

    def fake(**kwargs: Any) -> Any:
        raise _Unavailable("service unavailable")

    client = Client(make_plan(), completion=fake, sleep=lambda s: None, env={"OPENAI_API_KEY": KEY})
    with pytest.raises(_Unavailable) as raised:
        client.generate({"messages": [{"role": "user", "content": "hi"}]})
    attempts = attempts_of(raised.value)
    assert [a.error_class for a in attempts] == ["server_error"] * 5  # the controller's five attempts
    assert attempts[0].wait_s == 0 and all(a.wait_s >= 4 for a in attempts[1:])

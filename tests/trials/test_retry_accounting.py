"""A refused request is sent once; every send is numbered; every retry is counted by class.

Through the real loop and real litellm against a loopback upstream (``tests/fake_provider.py``
``FakeProvider``) that answers from a queue: a 400 reaches it once (the loop's API-error replay is for
failures a second send can fix); five 500s, the loop's replay and one more 500 before a 200 are
attempts 1 to 7 of one call; three 429s before a 200 are three transport retries. The classes
reach the call records, ``metrics.yaml``, the ``runs.jsonl`` line, the summary row and the
table ``summary.md`` and ``trial report`` share. Sleeps are recorded, never slept.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from capplan.trials.outcome import TerminationReason
from capplan.trials.run_folder.records import Metrics, RunLine, Trajectory
from capplan.trials.runner import RunContext, run_trial
from capplan.trials.spec import TrialRecords
from capplan.trials.run_folder.summary import ROW_HEADER, row_cells, summarize
from tests.fake_provider import FakeProvider, Request, agent_completion, error_answer
from tests.trials.helpers import openai_plan, spec_for, write_task

KEY = "sk-test-retry-accounting-5f0e2a"


class Queue:
    """Answers queued in order, then a plain text completion."""

    def __init__(self) -> None:
        self.answers: deque[tuple[int, dict[str, Any]]] = deque()
        self.lock = threading.Lock()

    def __call__(self, seen: Request) -> tuple[int, Any]:
        with self.lock:
            return self.answers.popleft() if self.answers else (200, agent_completion("fine"))


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeProvider]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_API_KEY", KEY)
        mp.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        mp.delenv("LLM_PROXY_BASE_URL", raising=False)
        server = FakeProvider(name="agent").start()
        try:
            yield server
        finally:
            server.close()


@pytest.fixture
def queue(upstream: FakeProvider) -> Queue:
    upstream.reset(scripts=True)
    answers = Queue()
    upstream.responder = answers
    return answers


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    logger = logging.getLogger("capplan")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    yield
    logger.setLevel(level)


def posts(upstream: FakeProvider) -> int:
    return sum(1 for s in upstream.requests if s.method == "POST")


def run(upstream: FakeProvider, task: Path, slept: list[float]) -> TrialRecords:
    records = run_trial(spec_for(task, openai_plan(), api_base=upstream.root), RunContext(sleep=slept.append))
    Metrics.model_validate(records.metrics)
    Trajectory.model_validate(records.trajectory)
    RunLine.model_validate(records.run_line)
    return records


def test_a_refused_request_is_sent_once(upstream: FakeProvider, queue: Queue, tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack", turns=["hi"])
    queue.answers.extend([error_answer(400, "Invalid value for 'temperature'")] * 3)
    slept: list[float] = []
    records = run(upstream, task, slept)
    assert records.termination_reason is TerminationReason.API_ERROR
    assert posts(upstream) == 1 and slept == []  # not replayed a second later
    assert [(c["status"], c["attempt"], c["error_class"]) for c in records.metrics["calls"]] == [
        ("error", 1, "client_error")]
    assert records.trajectory["retries"] == [] and records.metrics["retries"] == {}


def test_every_send_is_numbered_and_every_retry_counted_by_class(upstream: FakeProvider, queue: Queue,
                                                                 tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack", turns=["hi", "again"])
    # turn 0: three 429s, then an answer; turn 1: five 500s (the controller gives up), the loop's replay,
    # one more 500, then an answer
    queue.answers.extend([error_answer(429, "Rate limit reached for requests")] * 3 + [(200, agent_completion("Hello."))]
                         + [error_answer(500, "upstream exploded")] * 6 + [(200, agent_completion("Hello again."))])
    slept: list[float] = []
    records = run(upstream, task, slept)
    assert records.termination_reason is TerminationReason.USER_STOP
    calls = records.metrics["calls"]
    assert posts(upstream) == 11 == len(calls)
    assert [(c["turn"], c["attempt"], c["status"]) for c in calls] == [
        (0, 1, "error"), (0, 2, "error"), (0, 3, "error"), (0, 4, "ok"),
        *[(1, n, "error") for n in range(1, 7)], (1, 7, "ok")]
    assert [c["retry_class"] for c in calls[:3]] == ["transport_rate_limit"] * 3
    # the fifth 500 ended the controller's call; the loop sent it again (its own class), the sixth was retried
    assert [c["retry_class"] for c in calls[4:10]] == ["transport_server_error"] * 4 + [None, "transport_server_error"]
    expected = {"api_error": 1, "transport_rate_limit": 3, "transport_server_error": 5}
    assert records.metrics["retries"] == expected == records.run_line["retries"]
    row = summarize([records.run_line]).rows[0]
    assert row.retries == expected
    cells = dict(zip(ROW_HEADER, row_cells(row)))
    assert cells["retries"] == "api_error 1, transport_rate_limit 3, transport_server_error 5"


def test_timeouts_are_counted_as_transport_retries(upstream: FakeProvider, tmp_path: Path) -> None:
    upstream.reset(scripts=True)
    release = threading.Event()

    def hold(seen: Request) -> tuple[int, Any]:
        release.wait(timeout=60)  # never answers within the attempt's timeout; released at the end
        return 200, agent_completion("too late")

    upstream.responder = hold
    task = write_task(tmp_path / "pack", turns=["hi"])
    slept: list[float] = []
    try:
        spec = spec_for(task, openai_plan(loop={"api_call_timeout_s": 0.5}), api_base=upstream.root)
        records = run_trial(spec, RunContext(sleep=slept.append))
    finally:
        release.set()
    assert records.termination_reason is TerminationReason.API_TIMEOUT
    calls = records.metrics["calls"]
    # the timeout retry's three attempts: two were sent again, the last one raised
    assert [(c["attempt"], c["error_class"], c["retry_class"]) for c in calls] == [
        (1, "timeout", "transport_timeout"), (2, "timeout", "transport_timeout"), (3, "timeout", None)]
    assert records.metrics["retries"] == {"transport_timeout": 2} == records.run_line["retries"]

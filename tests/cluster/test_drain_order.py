"""A finished Ray trial is journalled after its worker's drains under way: a trial whose every call a
drain took still gets its end line, and its calls stay in its own attempt.

The race, as a loaded machine showed it: the driver drains the workers' call buffers every 0.25 s.
A drain the worker answered while a trial ran holds that trial's calls, and the trial's result none.
When the result reached the driver before that drain's answer, the trial was written with no end
line, and its calls, journalled later, opened a second attempt that never ended (its spend counted
again, as died in flight). Ray's object API is stood in for here, so the order is fixed, not timed.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from capplan.trials.backends import ray_backend
from capplan.trials.backends.ray_backend import RayRunStats, _Attempt, _Drive
from capplan.trials.backends.cluster.worker import TrialResult, WorkerIdentity
from capplan.trials.outcome import TerminationReason, TrialStatus
from capplan.trials.run_folder.call_journal import CallJournal
from capplan.trials.spec import TrialKey, TrialRecords

KEY = "agent/count/0"
EXECUTION = "exec-drained"


class _RayError(Exception):
    pass


class _StandIn:
    """Ray's ``wait`` / ``get`` over answers already known; ``ready`` says which refs ``wait`` finds done."""

    exceptions = SimpleNamespace(RayError=_RayError, RayActorError=_RayError, WorkerCrashedError=_RayError,
                                 ObjectLostError=_RayError)

    def __init__(self, answers: dict[str, Any], ready: set[str]) -> None:
        self.answers = answers
        self.ready = ready
        self.waited: list[tuple[list[str], float]] = []

    def wait(self, refs: list[str], num_returns: int, timeout: float) -> tuple[list[str], list[str]]:
        self.waited.append((list(refs), timeout))
        done = [r for r in refs if r in self.ready]
        return done, [r for r in refs if r not in self.ready]

    def get(self, ref: str) -> Any:
        answer = self.answers[ref]
        if isinstance(answer, Exception):
            raise answer
        return answer


def _entries() -> list[dict[str, Any]]:
    call = {"role": "agent", "turn": 0, "outcome": "accepted", "status": "ok", "attempt": 1, "cost_usd": 0.001,
            "cost_source": "pricing", "latency_s": 0.01, "wait_s": 0.0}
    return [{"kind": "send", "key": KEY, "execution": EXECUTION,
             "send": {"request_id": "r1", "role": "agent", "turn": 0, "attempt": 1}},
            {"key": KEY, "execution": EXECUTION, "call": call, "request_id": "r1"}]


def _records() -> TrialRecords:
    return TrialRecords(key=TrialKey("agent", "count", 0), status=TrialStatus.COMPLETED,
                        termination_reason=TerminationReason.USER_STOP, cost_usd=0.001, trajectory={},
                        metrics={"calls": []}, run_line={"key": KEY})


def _drive(tmp_path: Path, ray: _StandIn, drains: dict[str, int]) -> tuple[_Drive, CallJournal]:
    journal = CallJournal(tmp_path, "run-1", lambda key: 0)
    drive = object.__new__(_Drive)
    identity = WorkerIdentity(holder="h0", node_id="n0", node="vm", pid=1)
    vars(drive).update(
        ray=ray, journal=journal, drains=dict(drains), load=[1], identities=[identity], lost=Counter(),
        backend=SimpleNamespace(stats=RayRunStats()), restarting={},
        in_flight={"trial": _Attempt(spec=SimpleNamespace(key=TrialKey("agent", "count", 0)), worker=0, holder="h0",
                                     submitted=0.0)},
    )
    ray.answers["trial"] = TrialResult(_records(), identity, started_at=0.0, wall_s=0.1, calls=[])
    return drive, journal


def _lines(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text(encoding="utf-8").splitlines()]


def test_a_trial_whose_calls_a_drain_took_is_journalled_before_it_is_written(tmp_path: Path,
                                                                           monkeypatch: Any) -> None:
    monkeypatch.setattr(ray_backend, "redact_records", lambda records: records)
    ray = _StandIn({"drain": _entries()}, ready={"drain"})
    drive, journal = _drive(tmp_path, ray, {"drain": 0})
    records = drive._collect("trial", arrived=0.2, stopping=False)
    assert records is not None and not drive.drains  # the drain was taken before the trial came back
    journal.written(KEY, journal.attempt_of(KEY))  # what RunFolder.write does before the runs.jsonl line
    lines = _lines(tmp_path)
    assert [(line["kind"], line["attempt"]) for line in lines] == [("send", 1), ("call", 1), ("end", 1)]
    assert all(line["execution"] == EXECUTION for line in lines)


def test_only_the_trials_own_worker_is_waited_for_and_a_dead_one_is_passed_over(tmp_path: Path,
                                                                                 monkeypatch: Any) -> None:
    monkeypatch.setattr(ray_backend, "redact_records", lambda records: records)
    ray = _StandIn({"mine": _RayError("the worker died"), "other": []}, ready={"mine"})
    drive, journal = _drive(tmp_path, ray, {"mine": 0, "other": 1})
    assert drive._collect("trial", arrived=0.2, stopping=False) is not None
    assert ray.waited == [(["mine"], ray_backend._SETTLE_S)]  # bounded, and never another worker's drain
    assert drive.drains == {"other": 1}


def test_a_drain_still_out_is_left_for_later_as_before(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(ray_backend, "redact_records", lambda records: records)
    ray = _StandIn({"slow": _entries()}, ready=set())
    drive, journal = _drive(tmp_path, ray, {"slow": 0})
    assert drive._collect("trial", arrived=0.2, stopping=False) is not None
    assert drive.drains == {"slow": 0}  # journalled by the next _drain when it comes
    assert not (tmp_path / "calls.jsonl").exists()

"""The trial-loop benchmark's bare Python loop runs the benchmark's trials, journals them and fails loudly.

``benchmarks/bare_loop.py`` is the floor capplan's runner is compared with: if it ran fewer turns,
or journalled or recorded less than it says, the comparison would flatter it. Run against a loopback
fake provider answering as the benchmark's scripted agent, on the recorded wire.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.bare_loop import USER_TURNS, run_processes, run_trials
from tests.fake_provider import FakeProvider, Reply, agent, error_body

ROOT = Path(__file__).resolve().parents[2]
TURNS = 2 * len(USER_TURNS)  # each user turn: the agent's tool call, then its text


def test_each_trial_takes_the_benchmarks_turns_and_journals_each_call_before_and_after(tmp_path: Path) -> None:
    with FakeProvider(agent) as fake:
        turns = run_trials(fake.base, [0, 1, 2], 2, tmp_path)
        requests = list(fake.requests)
    assert turns == 3 * TURNS
    assert len(requests) == 3 * TURNS
    lines = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    for index in range(3):
        mine = [line for line in lines if line["key"] == f"bare/count/{index}"]
        assert [line["kind"] for line in mine] == ["send", "call"] * TURNS
        assert [line["send"]["request_id"] for line in mine[::2]] == [line["request_id"] for line in mine[1::2]]
        record = json.loads((tmp_path / f"{index}.json").read_text())
        assert len(record["calls"]) == TURNS
        assert record["counter"] == len(USER_TURNS)  # the scripted agent adds 1 per user turn
        assert [m["role"] for m in record["messages"]].count("tool") == len(USER_TURNS)
    # the last request of a trial carries its whole conversation and the tool's strict schema
    last = max(requests, key=lambda request: len(request.body["messages"]))
    # the system prompt, then per user turn: it, the tool call, the tool's answer, the text (the last one's not yet)
    assert len(last.body["messages"]) == 1 + 4 * len(USER_TURNS) - 1
    assert last.body["tools"][0]["function"]["strict"] is True


def test_trials_split_over_processes_run_each_trial_once(tmp_path: Path) -> None:
    with FakeProvider(agent) as fake:
        turns = run_processes(fake.base, 5, 3, 2, tmp_path)
    assert turns == 5 * TURNS
    records = sorted(path.name for path in tmp_path.glob("*/*.json"))
    assert records == sorted(f"{index}.json" for index in range(5))
    assert (tmp_path / "0" / "calls.jsonl").is_file() and (tmp_path / "1" / "calls.jsonl").is_file()


def test_an_error_answer_stops_the_loop_with_the_status(tmp_path: Path) -> None:
    with FakeProvider(Reply(error_body("no such model"), status=404)) as fake:
        with pytest.raises(RuntimeError, match="answered 404"):
            run_trials(fake.base, [0, 1], 2, tmp_path)


def test_a_failed_process_is_reported_not_counted(tmp_path: Path) -> None:
    with FakeProvider(Reply(error_body("no such model"), status=404)) as fake:
        with pytest.raises(RuntimeError, match="bare-loop processes failed: pid [0-9]+ exited with 1"):
            run_processes(fake.base, 2, 2, 2, tmp_path)


@pytest.mark.parametrize("args", [["--trials", "0"], ["--trials", "two"], ["--concurrency", "-3"],
                                  ["--processes", "0"], ["--latency-ms", "0"], ["--latency-ms", "nan"],
                                  ["--trials", "9" * 5000], ["--child-of", "x"], ["--child", "x"],
                                  ["--child", "http://127.0.0.1:9", "out", "0", "2", "1", "9" * 5000]])
def test_bad_arguments_are_refused_before_anything_runs(args: list[str]) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bare_loop.py"), *args],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert "bare_loop.py: error:" in done.stderr and len(done.stderr) < 2000

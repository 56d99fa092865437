"""A provider lying about usage cannot crash ``send`` or a trial run, nor make a run folder unreadable.

Through the real CLI against :class:`~tests.fake_provider.FakeProvider` answering every
call with a well-formed completion whose usage says ``cost: -5000`` and ``completion_tokens: 1e308``.
The last case rebuilds the folder an older capplan left behind (it wrote those figures into the call
journal unchecked, then died before the run line): a resume reads it, counts that spend as unknown,
and finishes the run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from tests.cli_runner import invoke_checked
from tests.cluster.runs import write_pack
from tests.fake_provider import FakeProvider, lying_usage

REPO = Path(__file__).resolve().parents[2]
PLAN = str(REPO / "golden" / "plans" / "gpt-4o.json")
KEY = "sk-hostile-usage-7f3a"
LIE = {"prompt_tokens": 5, "completion_tokens": 1e308, "cost": -5000}


@pytest.fixture
def liar(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    for name in ("LLM_PROXY_BASE_URL", "LLM_PROXY_API_KEY", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeProvider(lying_usage(LIE)) as server:
        yield server


def run(*args: str, expect: int) -> Result:
    result = invoke_checked(*args, expect=expect)
    assert "internal error" not in result.output, result.output
    return result


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_send_says_the_cost_is_unknown_and_why(liar: FakeProvider, tmp_path: Path) -> None:
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}))
    out = run("send", "--plan", PLAN, "--api-base", liar.base, str(request), expect=0).stdout
    assert "cost: unknown (unknown)" in out and "$-5000" not in out and "$inf" not in out
    assert "completion_tokens=unknown" in out
    assert "response_problem: usage.completion_tokens is above the bound of 1000000000 tokens (1e+308)" in out


def trial_run(base: str, tasks: list[str], out: Path, expect: int = 0) -> Result:
    return run("trial", "run", *tasks, "--plan", PLAN, "--api-base", base, "--out", str(out), "--concurrency", "1",
               expect=expect)


def test_a_trial_run_records_the_problem_writes_its_lines_and_resumes(liar: FakeProvider, tmp_path: Path) -> None:
    tasks = [str(p) for p in write_pack(tmp_path / "pack", n_tasks=2, user_turns=1)]
    out = tmp_path / "run"
    trial_run(liar.base, tasks, out)
    runs = lines(out / "runs.jsonl")
    assert len(runs) == 2
    assert all(line["cost_usd"] is None and line["cost_source"] == "unknown" for line in runs)
    calls = [entry["call"] for entry in lines(out / "calls.jsonl") if entry["kind"] == "call"]
    assert len(calls) == liar.count and calls
    assert all(call["cost_usd"] is None for call in calls)
    assert all(any("usage.completion_tokens is above the bound" in p for p in call["response_problems"])
               for call in calls)
    posts = liar.count
    resumed = trial_run(liar.base, tasks, out)
    assert "2 of 2 trial(s) already finished" in resumed.output
    assert liar.count == posts and len(lines(out / "runs.jsonl")) == 2
    run("trial", "report", str(out), expect=0)


def test_a_folder_an_older_capplan_left_with_hostile_figures_resumes(liar: FakeProvider, tmp_path: Path) -> None:
    tasks = [str(p) for p in write_pack(tmp_path / "pack", n_tasks=1, user_turns=1)]
    out = tmp_path / "run"
    trial_run(liar.base, tasks, out)
    # what an older capplan wrote: the provider's figures as given, and nothing after the calls
    # (it died on the run line), so the resume meets them as spend that died in flight
    journal = []
    for entry in lines(out / "calls.jsonl"):
        if entry["kind"] != "call":
            continue
        call = entry["call"]
        call.pop("response_problems")
        call.update(cost_usd=-5000.0, cost_source="litellm")
        # this capplan records a call whose completion count is out of bounds with unknown tokens (null);
        # the older one wrote the counters as given
        call["usage"] = {"prompt_tokens": 12, "completion_tokens": int(1e308), "reasoning_tokens": 0,
                         "cached_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        journal.append(json.dumps(entry))
    (out / "calls.jsonl").write_text("".join(line + "\n" for line in journal), encoding="utf-8")
    for name in ("runs.jsonl", "summary.json", "summary.md"):
        (out / name).unlink()
    for metrics in out.rglob("metrics.yaml"):
        metrics.unlink()
    trial_run(liar.base, tasks, out)
    manifest = json.loads((out / "run.json").read_text(encoding="utf-8"))
    died = manifest["died_in_flight"]
    assert len(died) == 1 and died[0]["agent_cost_usd"] is None and died[0]["unknown_cost_calls"] >= 1
    assert manifest["died_in_flight_usd"] == 0
    assert len(lines(out / "runs.jsonl")) == 1
    run("trial", "report", str(out), expect=0)

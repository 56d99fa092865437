"""Probe mode in trial runs: ``--config`` arms ``rate_limit_probe``; the census lands in ``probe.json``.

Real litellm against the loopback agent server, which answers 429 a few times and then
normally. The driver test injects sleep and both clocks (the probe waits 15 s per 429 by
default), so nothing really waits; the command tests use a tiny interval instead.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest

from capplan.compiler.schemas import generate
from capplan.executor.probe import RateLimitProbeConfig
from tests.fake_provider import FakeProvider, agent
from tests.trials.helpers import openai_plan, write_task
from capplan.trials.backends.local import LocalBackend
from capplan.trials.driver import RunRequest, build_specs, drive
from capplan.trials.report.progress import Progress
from capplan.trials.run_folder.folder import RunFolder
from capplan.trials.runner import RunContext
from tests.cli_runner import invoke

RATE_LIMITED = 3


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-probe-mode-0123456789")
    monkeypatch.delenv("LLM_PROXY_BASE_URL", raising=False)
    with FakeProvider(agent) as srv:
        yield srv


class FakeTime:
    """Sleeping advances both clocks; nothing really waits."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


def census(out: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((out / "probe.json").read_text())
    jsonschema.validate(data, generate("probe-census"))
    return data


def test_probe_mode_absorbs_429s_and_the_census_matches_the_server(server: FakeProvider, tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack", turns=["add one", "thanks"], extra="grader:\n  expected_state: {value: 2}\n")
    plan = tmp_path / "agent.json"
    plan.write_bytes(openai_plan().to_bytes())
    out = tmp_path / "run"
    probe = RateLimitProbeConfig(enabled=True, retry_interval_s=15, jitter_fraction=0.2, bucket_width_s=60)
    server.queue_error(429, "Rate limit reached for requests", code="rate_limit_exceeded", times=RATE_LIMITED)
    specs = build_specs(RunRequest(tasks=[task], plans=[plan], out=out, api_base=server.base, rate_limit_probe=probe))
    assert specs[0].rate_limit_probe == probe.model_dump(mode="json")
    fake = FakeTime()
    context = RunContext(sleep=fake.sleep, clock=fake.clock, wall_clock=fake.clock)
    outcome = drive(specs, RunFolder(out), LocalBackend(context), concurrency=1, max_cost=None,
                    progress=Progress(io.StringIO()), rate_limit_probe=probe)

    assert outcome.finished == 1
    line = json.loads((out / "runs.jsonl").read_text())
    assert (line["status"], line["passed"]) == ("completed", True)
    successes = len(server.bodies()) - RATE_LIMITED
    assert successes >= 2  # the 429s hit the first call; the conversation went on after it
    assert len(fake.slept) == RATE_LIMITED and all(12 <= s <= 18 for s in fake.slept)  # 15 s ± 20 %
    data = census(out)
    [series] = data["series"]  # type: ignore[misc]
    assert (series["role"], series["model"]) == ("agent", "openai/agent-model")
    assert series["successes"] == successes
    assert series["rate_limit_retries"] == RATE_LIMITED
    assert series["rate_limit_wait_s"] == pytest.approx(sum(fake.slept))
    assert series["prompt_tokens"] == 20 * successes and series["completion_tokens"] == 5 * successes
    windows = data["buckets"]
    assert sum(w["successes"] for w in windows) == successes  # type: ignore[union-attr]
    assert sum(w["rate_limit_retries"] for w in windows) == RATE_LIMITED  # type: ignore[union-attr]
    assert all(w["bucket_start"] % 60 == 0 for w in windows)  # type: ignore[union-attr]


def write_config(path: Path, body: str) -> Path:
    path.write_text("models:\n  agent: {provider: openai, name: agent-model}\n" + body)
    return path


def test_trial_run_config_arms_probe_mode_and_resume_sums_the_census(server: FakeProvider, tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack", turns=["add one", "thanks"])
    plan = tmp_path / "agent.json"
    plan.write_bytes(openai_plan().to_bytes())
    out = tmp_path / "run"
    config = write_config(tmp_path / "run.yaml", "rate_limit_probe:\n  enabled: true\n  retry_interval_s: 0.01\n"
                                                 "  jitter_fraction: 0\n")
    args = ["trial", "run", str(task), "--plan", str(plan), "--out", str(out), "--concurrency", "1",
            "--api-base", server.base, "--config", str(config), "--trials", "2"]
    server.queue_error(429, "Rate limit reached for requests", code="rate_limit_exceeded", times=RATE_LIMITED)
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    first_leg = len(server.bodies())
    [series] = census(out)["series"]  # type: ignore[misc]
    assert (series["successes"], series["rate_limit_retries"]) == (first_leg - RATE_LIMITED, RATE_LIMITED)
    assert series["rate_limit_wait_s"] == pytest.approx(0.01 * RATE_LIMITED)

    # trial 1's line (its commit marker) is dropped, as a kill before the append would: the resume reruns it
    # (a resume may not change --trials: that would be another experiment in the same folder)
    runs = out / "runs.jsonl"
    runs.write_bytes(b"".join(runs.read_bytes().splitlines(keepends=True)[:1]))
    server.queue_error(429, "Rate limit reached for requests", code="rate_limit_exceeded", times=1)
    result = invoke(*args)  # trial 1 runs again; trial 0 is skipped
    assert result.exit_code == 0, result.output
    [series] = census(out)["series"]  # type: ignore[misc]
    assert series["rate_limit_retries"] == RATE_LIMITED + 1
    assert series["successes"] == len(server.bodies()) - RATE_LIMITED - 1


def test_trial_run_without_probe_mode_writes_no_census(server: FakeProvider, tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack")
    plan = tmp_path / "agent.json"
    plan.write_bytes(openai_plan().to_bytes())
    config = write_config(tmp_path / "run.yaml", "rate_limit_probe: {enabled: false}\n")
    result = invoke("trial", "run", str(task), "--plan", str(plan), "--out", str(tmp_path / "run"),
                    "--api-base", server.base, "--config", str(config))
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "run" / "probe.json").exists()


def test_a_bad_run_config_is_a_located_error_before_any_call(server: FakeProvider, tmp_path: Path) -> None:
    task = write_task(tmp_path / "pack")
    plan = tmp_path / "agent.json"
    plan.write_bytes(openai_plan().to_bytes())
    config = write_config(tmp_path / "run.yaml", "rate_limit_probe:\n  enabled: true\n  retry_intervl_s: 1\n")
    base = ["trial", "run", str(task), "--plan", str(plan), "--out", str(tmp_path / "run"), "--api-base", server.base]
    result = invoke(*base, "--config", str(config))
    assert result.exit_code == 2
    assert f"{config}:5:3: error[" in result.output and "retry_intervl_s" in result.output
    assert "retry_interval_s" in result.output  # did-you-mean
    limits = write_config(tmp_path / "limits.yaml", "rate_limits:\n  providers:\n    openai: {max_concurrent: 1}\n")
    result = invoke(*base, "--config", str(limits))
    assert result.exit_code == 2
    assert "rate_limits apply only to --backend ray" in result.output
    assert server.bodies() == []

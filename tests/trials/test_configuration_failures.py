"""Configuration failures are not model failures: the first one stops the run, nothing is retried.

Through the real CLI with real litellm against a loopback upstream that refuses every call the
way a misconfigured run is refused: 401, 403, 404, a 500 carrying litellm's "Missing
credentials" text, and a LiteLLM gateway answering 400 "No connected db." to a key it cannot
check. Each is classified at its first occurrence: exactly one request reaches the upstream,
every trial is recorded ``aborted`` / ``configuration_error``, the run exits 1 and
``summary.md`` says why in one line. ``send`` makes one attempt and exits 1 too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from capplan.cli import main
from capplan.executor.gateway.catalog import clear_catalog_cache
from tests.cluster.runs import write_pack
from tests.executor.plans import make_plan
from tests.gateway.fakes import Seen, Upstream

OPENAI_KEY = "sk-config-failure-openai-3c9d"
GATEWAY_KEY = "sk-config-failure-gateway-8e1a"
MISSING_CREDENTIALS = ("litellm.AuthenticationError: Missing credentials. Please pass an `api_key`, or set the "
                       "`OPENAI_API_KEY` environment variable.")

REFUSALS: dict[str, tuple[int, Any]] = {
    "401": (401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                            "code": "invalid_api_key"}}),
    "403": (403, {"error": {"message": "Your key may not use this model", "type": "permission_error"}}),
    "404": (404, {"error": {"message": "The model `agent-model` does not exist", "type": "invalid_request_error",
                            "code": "model_not_found"}}),
    "500-missing-credentials": (500, {"error": {"message": MISSING_CREDENTIALS, "type": "internal_server_error"}}),
}


@pytest.fixture
def upstream(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Upstream]:
    server = Upstream("config")
    clear_catalog_cache()
    for name in ("LLM_PROXY_BASE_URL", "LLM_PROXY_API_KEY", "LLM_PROXY_HEADERS", "LLM_PROXY_PROVIDERS",
                 "OPENROUTER_API_KEY", "OPENROUTER_API_KEYS", "OPENROUTER_KEY_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.chdir(tmp_path)
    try:
        yield server
    finally:
        server.close()
        clear_catalog_cache()


def posts(upstream: Upstream) -> list[Seen]:
    return [s for s in upstream.seen if s.method == "POST"]


def run(*args: str, expect: int) -> Result:
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert result.exit_code == expect, result.output
    assert "Traceback" not in result.output
    return result


def write_plan(tmp_path: Path, provider: str, name: str, key: str) -> str:
    path = tmp_path / f"{key}.json"
    path.write_bytes(make_plan(provider, name, key=key).to_bytes())
    return str(path)


def trial_run(tmp_path: Path, plan: str, *extra: str) -> tuple[Result, Path]:
    tasks = [str(p) for p in write_pack(tmp_path / "pack", n_tasks=3, user_turns=1)]
    out = tmp_path / "runs" / "run"
    result = run("trial", "run", *tasks, "--plan", plan, "--out", str(out), "--concurrency", "1", *extra, expect=1)
    return result, out


def assert_stopped(out: Path, result: Result, secret: str) -> None:
    lines = [json.loads(line) for line in (out / "runs.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 3
    assert {(line["status"], line["termination_reason"]) for line in lines} == {("aborted", "configuration_error")}
    assert all(line["passed"] is None and not line["counts_against_model"] for line in lines)
    summary = (out / "summary.md").read_text(encoding="utf-8")
    stop_lines = [line for line in summary.splitlines() if "Run stopped by a configuration error" in line]
    assert len(stop_lines) == 1 and "3 trial(s)" in stop_lines[0]
    assert "error[CONFIGURATION]: run stopped:" in result.stderr
    assert "retrying in" not in result.stderr  # classified at the first occurrence, never retried
    for path in out.rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(encoding="utf-8", errors="replace")
    assert secret not in result.output


@pytest.mark.parametrize("refusal", sorted(REFUSALS))
def test_a_refused_configuration_stops_the_run_at_the_first_call(upstream: Upstream, tmp_path: Path,
                                                                refusal: str) -> None:
    upstream.script = lambda seen: REFUSALS[refusal]
    plan = write_plan(tmp_path, "openai", "agent-model", "agent")
    result, out = trial_run(tmp_path, plan, "--api-base", upstream.base + "/v1")
    assert len(posts(upstream)) == 1
    assert_stopped(out, result, OPENAI_KEY)
    # the reason names the provider and what to fix
    assert "provider openai" in result.stderr and "check OPENAI_API_KEY" in result.stderr
    trajectories = [p.read_text(encoding="utf-8") for p in (out / "trials").rglob("trajectory.yaml")]
    assert len(trajectories) == 3 and all("reason: configuration_error" in t for t in trajectories)


def test_a_gateway_refusing_its_key_stops_the_run(upstream: Upstream, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    upstream.catalog = ["openrouter/vendor/model"]
    upstream.script = lambda seen: (400, {"error": {"message": "No connected db.", "type": "no_db_connection",
                                                    "param": None, "code": "400"}})
    monkeypatch.setenv("LLM_PROXY_BASE_URL", upstream.base)
    monkeypatch.setenv("LLM_PROXY_API_KEY", GATEWAY_KEY)
    plan = write_plan(tmp_path, "openrouter", "vendor/model", "routed")
    result, out = trial_run(tmp_path, plan)
    assert len(posts(upstream)) == 1
    assert_stopped(out, result, GATEWAY_KEY)
    assert "LLM gateway at" in result.stderr and "check LLM_PROXY_API_KEY" in result.stderr


@pytest.mark.parametrize("refusal", ["401", "500-missing-credentials"])
def test_send_makes_one_attempt_at_a_refused_configuration(upstream: Upstream, tmp_path: Path, refusal: str) -> None:
    upstream.script = lambda seen: REFUSALS[refusal]
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}), encoding="utf-8")
    plan = write_plan(tmp_path, "openai", "agent-model", "agent")
    result = run("send", "--plan", plan, "--api-base", upstream.base + "/v1", str(request), expect=1)
    assert "error[PROVIDER]" in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert "(provider openai at http://127.0.0.1" in line and "check OPENAI_API_KEY" in line
    assert len(posts(upstream)) == 1
    assert OPENAI_KEY not in result.output


def test_a_trial_in_flight_when_the_run_stops_is_recorded_aborted_with_its_calls(
        upstream: Upstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading
    import time

    from capplan.trials.backends import local

    # the run's stop event, set once the driver has taken the refused trial: the slow plan's first
    # answer is held until then (a fixed delay after the refusal raced the driver on a loaded machine)
    stops: list[threading.Event] = []
    run_backend = local.LocalBackend.run

    def run_keeping_the_stop(self: local.LocalBackend, specs: Any, *, concurrency: int,
                             stop: threading.Event) -> Any:
        stops.append(stop)
        return run_backend(self, specs, concurrency=concurrency, stop=stop)

    monkeypatch.setattr(local.LocalBackend, "run", run_keeping_the_stop)

    def script(seen: Seen) -> tuple[int, Any] | None:
        if isinstance(seen.body, dict) and seen.body.get("model") == "refused-model":
            return REFUSALS["401"]
        deadline = time.monotonic() + 120  # bounded: a run that never stops fails below instead of hanging
        while not (stops and stops[0].wait(0.05)) and time.monotonic() < deadline:
            pass
        return None

    upstream.script = script
    slow = write_plan(tmp_path, "openai", "slow-model", "slow")
    refused = write_plan(tmp_path, "openai", "refused-model", "refused")
    tasks = [str(p) for p in write_pack(tmp_path / "pack", n_tasks=1, user_turns=2)]
    out = tmp_path / "runs" / "run"
    result = run("trial", "run", *tasks, "--plan", slow, "--plan", refused, "--out", str(out), "--concurrency", "2",
                 "--api-base", upstream.base + "/v1", expect=1)
    lines = {line["plan_key"]: line for line in map(json.loads, (out / "runs.jsonl").read_text().splitlines())}
    assert {(line["status"], line["termination_reason"]) for line in lines.values()} == {("aborted", "configuration_error")}
    metrics = (out / "trials" / "slow" / "count-0" / "0" / "metrics.yaml").read_text(encoding="utf-8")
    assert "n_calls: 1" in metrics  # the slow trial's one call is kept; it made no further one
    trajectory = (out / "trials" / "slow" / "count-0" / "0" / "trajectory.yaml").read_text(encoding="utf-8")
    assert "run stopped by a configuration error in another trial" in trajectory
    assert len(posts(upstream)) == 2
    assert "provider openai" in result.stderr and "plan refused" in result.stderr

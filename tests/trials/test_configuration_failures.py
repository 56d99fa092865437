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
from click.testing import Result

from capplan.executor.gateway.catalog import clear_catalog_cache
from tests.cli_runner import invoke_checked
from tests.cluster.runs import write_pack
from tests.executor.plans import make_plan
from tests.fake_provider import FakeProvider, Request

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
def upstream(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeProvider]:
    server = FakeProvider(name="config").start()
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


def posts(upstream: FakeProvider) -> list[Request]:
    return [s for s in upstream.requests if s.method == "POST"]


def run(*args: str, expect: int) -> Result:
    return invoke_checked(*args, expect=expect)


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
def test_a_refused_configuration_stops_the_run_at_the_first_call(upstream: FakeProvider, tmp_path: Path,
                                                                refusal: str) -> None:
    upstream.responder = lambda seen: REFUSALS[refusal]
    plan = write_plan(tmp_path, "openai", "agent-model", "agent")
    result, out = trial_run(tmp_path, plan, "--api-base", upstream.base)
    assert len(posts(upstream)) == 1
    assert_stopped(out, result, OPENAI_KEY)
    # the reason names the provider and what to fix
    assert "provider openai" in result.stderr and "check OPENAI_API_KEY" in result.stderr
    trajectories = [p.read_text(encoding="utf-8") for p in (out / "trials").rglob("trajectory.yaml")]
    assert len(trajectories) == 3 and all("reason: configuration_error" in t for t in trajectories)


def test_a_gateway_refusing_its_key_stops_the_run(upstream: FakeProvider, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    upstream.catalog = ["openrouter/vendor/model"]
    upstream.responder = lambda seen: (400, {"error": {"message": "No connected db.", "type": "no_db_connection",
                                                    "param": None, "code": "400"}})
    monkeypatch.setenv("LLM_PROXY_BASE_URL", upstream.root)
    monkeypatch.setenv("LLM_PROXY_API_KEY", GATEWAY_KEY)
    plan = write_plan(tmp_path, "openrouter", "vendor/model", "routed")
    result, out = trial_run(tmp_path, plan)
    assert len(posts(upstream)) == 1
    assert_stopped(out, result, GATEWAY_KEY)
    assert "LLM gateway at" in result.stderr and "check LLM_PROXY_API_KEY" in result.stderr


@pytest.mark.parametrize("refusal", ["401", "500-missing-credentials"])
def test_send_makes_one_attempt_at_a_refused_configuration(upstream: FakeProvider, tmp_path: Path, refusal: str) -> None:
    upstream.responder = lambda seen: REFUSALS[refusal]
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}), encoding="utf-8")
    plan = write_plan(tmp_path, "openai", "agent-model", "agent")
    result = run("send", "--plan", plan, "--api-base", upstream.base, str(request), expect=1)
    assert "error[PROVIDER]" in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert "(provider openai at http://127.0.0.1" in line and "check OPENAI_API_KEY" in line
    assert len(posts(upstream)) == 1
    assert OPENAI_KEY not in result.output


def test_a_trial_in_flight_when_the_run_stops_is_recorded_aborted_with_its_calls(upstream: FakeProvider,
                                                                                  tmp_path: Path) -> None:
    out = tmp_path / "runs" / "run"

    def script(seen: Request) -> tuple[int, Any] | None:
        if isinstance(seen.body, dict) and seen.body.get("model") == "refused-model":
            return REFUSALS["401"]
        # the slow plan's first answer is held until the refused trial's line is written: the run has stopped
        _wait_for_line(out, "refused")
        return None

    upstream.responder = script
    slow = write_plan(tmp_path, "openai", "slow-model", "slow")
    refused = write_plan(tmp_path, "openai", "refused-model", "refused")
    tasks = [str(p) for p in write_pack(tmp_path / "pack", n_tasks=1, user_turns=2)]
    result = run("trial", "run", *tasks, "--plan", slow, "--plan", refused, "--out", str(out), "--concurrency", "2",
                 "--api-base", upstream.base, expect=1)
    lines = {line["plan_key"]: line for line in map(json.loads, (out / "runs.jsonl").read_text().splitlines())}
    # only the refused plan's trial carries the configuration error; the healthy plan's was stopped with the run
    assert (lines["refused"]["status"], lines["refused"]["termination_reason"]) == ("aborted", "configuration_error")
    assert (lines["slow"]["status"], lines["slow"]["termination_reason"]) == ("aborted", "run_stopped")
    metrics = (out / "trials" / "slow" / "count-0" / "0" / "metrics.yaml").read_text(encoding="utf-8")
    assert "n_calls: 1" in metrics  # the slow trial's one call is kept; it made no further one
    assert "run stopped by plan refused's configuration error" in _detail(out, "slow/count-0/0")
    assert len(posts(upstream)) == 2
    assert "provider openai" in result.stderr and "plan refused" in result.stderr


def _detail(out: Path, key: str) -> str:
    from ruamel.yaml import YAML

    data = YAML(typ="safe").load((out / "trials" / key / "trajectory.yaml").read_text(encoding="utf-8"))
    return str(data["termination"]["detail"])


def _wait_for_line(out: Path, plan_key: str, timeout_s: float = 60.0) -> None:
    """Until runs.jsonl holds a line of ``plan_key`` (the driver set its stop before writing it); bounded."""
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        runs = out / "runs.jsonl"
        if runs.is_file() and f'"plan_key": "{plan_key}"' in runs.read_text(encoding="utf-8"):
            return
        time.sleep(0.05)


INVALID_MODEL = {"error": {"message": "/chat/completions: Invalid model name passed in model=vendor/gone. Call "
                                      "`/v1/models` to view available models for your key.",
                           "type": "invalid_request_error", "param": "model", "code": "400"}}


def test_a_gateway_that_serves_no_such_model_stops_only_that_plans_trials_as_configuration(
        upstream: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "runs" / "run"
    upstream.catalog = ["openrouter/vendor/gone", "openrouter/vendor/good"]

    def script(seen: Request) -> tuple[int, Any] | None:
        if isinstance(seen.body, dict) and "gone" in str(seen.body.get("model")):
            return 400, INVALID_MODEL  # the LiteLLM proxy's own words for a model it does not serve
        _wait_for_line(out, "gone")  # the healthy plan's first answer comes after the run has stopped
        return None

    upstream.responder = script
    monkeypatch.setenv("LLM_PROXY_BASE_URL", upstream.root)
    monkeypatch.setenv("LLM_PROXY_API_KEY", GATEWAY_KEY)
    gone = write_plan(tmp_path, "openrouter", "vendor/gone", "gone")
    good = write_plan(tmp_path, "openrouter", "vendor/good", "good")
    tasks = [str(p) for p in write_pack(tmp_path / "pack", n_tasks=1, user_turns=2)]
    # gone/0 and gone/1 and good/0 start; good/1 never starts
    result = run("trial", "run", *tasks, "--plan", gone, "--plan", good, "--out", str(out), "--trials", "2",
                 "--concurrency", "3", expect=1)
    lines = [json.loads(line) for line in (out / "runs.jsonl").read_text(encoding="utf-8").splitlines()]
    labels = {line["key"]: (line["status"], line["termination_reason"]) for line in lines}
    assert labels == {"gone/count-0/0": ("aborted", "configuration_error"),
                      "gone/count-0/1": ("aborted", "configuration_error"),
                      "good/count-0/0": ("aborted", "run_stopped"), "good/count-0/1": ("aborted", "run_stopped")}
    sent = [s.body.get("model") for s in posts(upstream) if isinstance(s.body, dict)]
    assert 1 <= sum("gone" in str(m) for m in sent) <= 2  # each refused trial sent its call once at most
    detail = _detail(out, "good/count-0/0")
    assert "run stopped by plan gone's configuration error" in detail
    assert "the gateway serves no model of this name" in detail
    assert "not started: the run was stopped by plan gone's configuration error" in _detail(out, "good/count-0/1")
    assert "the gateway serves no model of this name" in _detail(out, "gone/count-0/0")
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "2 trial(s) of gone aborted" in summary and "2 trial(s) of good stopped with it (run_stopped" in summary
    assert "error[CONFIGURATION]: run stopped:" in result.stderr
    assert GATEWAY_KEY not in result.output


class _Folder:
    """The part of a run folder the exit code reads: the latest line per trial."""

    def __init__(self, lines: list[dict[str, Any]]) -> None:
        self.lines = {line["key"]: line for line in lines}

    def finished(self) -> dict[str, dict[str, Any]]:
        return self.lines


class _Spec:
    def __init__(self, key: str) -> None:
        self.key = key


@pytest.mark.parametrize("tolerance", [0.7, 0.99, 10.0])
def test_a_run_where_nothing_could_be_graded_exits_1_whatever_the_tolerance(tolerance: float,
                                                                            capsys: pytest.CaptureFixture[str]) -> None:
    from capplan.cli.trial_cmd import _outcome_status

    # an unreachable endpoint: every trial aborted infra_error (the connection never reached a provider)
    keys = [f"agent/count-{i}/0" for i in range(3)]
    folder = _Folder([{"key": k, "status": "aborted", "termination_reason": "infra_error"} for k in keys])
    assert _outcome_status(folder, [_Spec(k) for k in keys], tolerance) == 1
    assert "nothing could be graded" in capsys.readouterr().err
    # one graded trial among them: the tolerance decides, as before
    folder.lines[keys[0]] = {"key": keys[0], "status": "failed", "termination_reason": "api_error"}
    assert _outcome_status(folder, [_Spec(k) for k in keys], tolerance) == 0

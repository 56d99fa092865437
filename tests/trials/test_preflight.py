"""Preflight: a credential any agent or user plan needs is checked before anything is sent.

Through the real CLI (``trial run``, ``send``, ``preview``) with real litellm against a loopback
OpenAI-compatible upstream: an unset variable stops the command with exit 2 and one located
line naming the variable and the plans that need it, and the upstream receives nothing. The
variable litellm itself reads (a binding with no ``api_key_env``) is asked of litellm.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import Result

from capplan.executor.gateway.catalog import clear_catalog_cache
from capplan.executor.plan import Plan
from tests.cli_runner import invoke_checked
from tests.cluster.runs import write_pack
from tests.executor.plans import make_plan
from tests.fake_provider import FakeProvider

REQUEST = {"messages": [{"role": "user", "content": "hi"}]}
BOUND = "CAPPLAN_PREFLIGHT_BOUND_KEY"
GATEWAY_KEY = "sk-preflight-gateway-5e1f0c"


@pytest.fixture
def upstream(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeProvider]:
    server = FakeProvider(name="preflight").start()
    clear_catalog_cache()
    for name in ("OPENAI_API_KEY", BOUND, "LLM_PROXY_BASE_URL", "LLM_PROXY_API_KEY", "LLM_PROXY_HEADERS",
                 "LLM_PROXY_PROVIDERS", "OPENROUTER_API_KEY", "OPENROUTER_API_KEYS", "OPENROUTER_KEY_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.chdir(tmp_path)  # no stray .env file
    try:
        yield server
    finally:
        server.close()
        clear_catalog_cache()


def plan_file(tmp_path: Path, plan: Plan) -> str:
    path = tmp_path / f"{plan.model.key}.json"
    path.write_bytes(plan.to_bytes())
    return str(path)


def bound_plan(upstream: FakeProvider, key: str) -> Plan:
    body = make_plan("openai", "bound-model", key=key).body()
    body["binding"]["binding"] = {**body["binding"]["binding"], "api_key_env": BOUND, "custom_llm_provider": "openai",
                                  "endpoint": upstream.base}
    return Plan.seal(body)


def run(*args: str, expect: int) -> Result:
    return invoke_checked(*args, expect=expect)


def trial(tmp_path: Path, upstream: FakeProvider, *plans: str, user_plan: str | None = None, expect: int) -> tuple[Result, Path]:
    tasks = [str(p) for p in write_pack(tmp_path / "pack", n_tasks=2, user_turns=1)]
    out = tmp_path / "runs" / "run"
    extra = ["--user-plan", user_plan] if user_plan else []
    args = ["trial", "run", *tasks, *(a for p in plans for a in ("--plan", p)), *extra, "--out", str(out),
            "--api-base", upstream.base, "--user-api-base", upstream.base]
    return run(*args, expect=expect), out


def test_trial_run_names_litellm_s_own_variable_and_every_plan_that_needs_it(upstream: FakeProvider, tmp_path: Path) -> None:
    plans = [plan_file(tmp_path, make_plan("openai", name, key=name)) for name in ("gpt-4o", "o3")]
    result, out = trial(tmp_path, upstream, *plans, expect=2)
    assert ("capplan trial run: error[CREDENTIALS]: OPENAI_API_KEY is not set; needed by plans gpt-4o, o3 "
            "(set it in the environment)") in result.stderr
    assert upstream.requests == []
    assert not (out / "runs.jsonl").exists() and not (out / "summary.md").exists()


def test_trial_run_checks_the_user_plan_and_the_binding_s_key_variable(upstream: FakeProvider, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-preflight-openai-0a1b2c")
    agent = plan_file(tmp_path, make_plan("openai", "agent-model", key="agent"))
    user = plan_file(tmp_path, bound_plan(upstream, "simulator"))
    result, _ = trial(tmp_path, upstream, agent, user_plan=user, expect=2)
    assert f"error[CREDENTIALS]: {BOUND} is not set; needed by plan simulator" in result.stderr
    assert "sk-preflight-openai" not in result.output
    assert upstream.requests == []


def test_send_stops_before_anything_is_sent_and_preview_says_so(upstream: FakeProvider, tmp_path: Path) -> None:
    request = tmp_path / "request.json"
    request.write_text(json.dumps(REQUEST), encoding="utf-8")
    plan = plan_file(tmp_path, make_plan("openai", "gpt-4o", key="gpt-4o"))
    result = run("send", "--plan", plan, "--api-base", upstream.base, str(request), expect=2)
    assert "capplan send: error[CREDENTIALS]: OPENAI_API_KEY is not set; needed by plan gpt-4o" in result.stderr
    # a preview sends nothing: it shows the request and notes what sending it would stop at
    result = run("preview", "--plan", plan, "--api-base", upstream.base, str(request), expect=0)
    assert (f"{request}: note: send would stop before sending: OPENAI_API_KEY is not set; needed by plan gpt-4o"
            in result.stderr)
    bound = plan_file(tmp_path, bound_plan(upstream, "bound"))
    result = run("send", "--plan", bound, str(request), expect=2)
    assert f"{BOUND} is not set" in result.stderr and "error[CREDENTIAL" in result.stderr
    result = run("preview", "--plan", bound, str(request), expect=0)
    assert f"note: send would stop before sending: {BOUND} is not set" in result.stderr
    assert upstream.requests == []


def test_the_mock_plan_needs_nothing_and_a_set_key_passes(upstream: FakeProvider, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    request = tmp_path / "request.json"
    request.write_text(json.dumps(REQUEST), encoding="utf-8")
    run("send", "--plan", plan_file(tmp_path, make_plan("mock", "echo-1", key="mock")), str(request), expect=0)
    monkeypatch.setenv(BOUND, "sk-preflight-bound-77aa")
    result = run("send", "--plan", plan_file(tmp_path, bound_plan(upstream, "bound")), str(request), expect=0)
    assert "text: preflight:" in result.stdout
    assert len(upstream.requests) == 1


def test_a_gateway_route_needs_the_gateway_key_and_only_it(upstream: FakeProvider, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    upstream.catalog = ["openrouter/vendor/model"]
    monkeypatch.setenv("LLM_PROXY_BASE_URL", upstream.root)
    request = tmp_path / "request.json"
    request.write_text(json.dumps(REQUEST), encoding="utf-8")
    plan = plan_file(tmp_path, make_plan("openrouter", "vendor/model", key="routed"))
    # a gateway with no key admits by network position: the provider's key is needed, and the gateway's named
    result = run("send", "--plan", plan, str(request), expect=2)
    assert "error[CREDENTIAL" in result.stderr and "OPENROUTER_API_KEY is not set" in result.stderr
    result = run("preview", "--plan", plan, str(request), expect=0)
    assert ("note: send would stop before sending: OPENROUTER_API_KEY is not set; needed by plan routed (set it in "
            "the environment, or set LLM_PROXY_API_KEY (environment or .env) for the gateway") in result.stderr
    assert not [s for s in upstream.requests if s.method == "POST"]
    monkeypatch.setenv("LLM_PROXY_API_KEY", GATEWAY_KEY)  # no OPENROUTER_API_KEY: the gateway stands in for it
    run("preview", "--plan", plan, str(request), expect=0)
    result = run("send", "--plan", plan, str(request), expect=0)
    assert GATEWAY_KEY not in result.output
    assert len([s for s in upstream.requests if s.method == "POST"]) == 1

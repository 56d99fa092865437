"""No key value, gateway key or expanded secret in any log line, result, plan, preview, command
output or exception message, even when the upstream echoes every header it received."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from capplan.executor.client import Client
from capplan.executor.gateway.catalog import clear_catalog_cache
from capplan.executor.plan import Plan
from tests.executor.plans import make_plan
from tests.fake_provider import FakeProvider, Request, chat_completion
from tests.cli_runner import invoke

GATEWAY_KEY = "canary-gateway-key-6f1d2a"
SECRET = "canary-order-secret-83b0c4"
KEYS = ("canary-rotation-key-one-aa11", "canary-rotation-key-two-bb22")
CANARIES = (GATEWAY_KEY, SECRET, *KEYS)
USER = {"messages": [{"role": "user", "content": "hi"}]}


def echo_everything(status: int, message: str) -> Any:
    """An upstream that quotes every header it got back in its error body (the worst case)."""
    def script(seen: Request) -> tuple[int, Any]:
        return status, {"error": {"message": f"{message}; you sent {json.dumps(seen.headers)}", "code": status}}
    return script


@pytest.fixture
def upstream() -> Iterator[FakeProvider]:
    server = FakeProvider(name="canary").start()
    clear_catalog_cache()
    try:
        yield server
    finally:
        server.close()
        clear_catalog_cache()


def gateway_env(upstream: FakeProvider) -> dict[str, str]:
    return {
        "LLM_PROXY_BASE_URL": upstream.root,
        "LLM_PROXY_API_KEY": GATEWAY_KEY,
        "LLM_PROXY_HEADERS": json.dumps({"X-Order-Id": "${secret:ORDER_SECRET}", "X-Team-Id": "research"}),
        "ORDER_SECRET": SECRET,
    }


def plan_for(upstream: FakeProvider) -> Plan:
    plan = make_plan("openrouter", "vendor/canary")
    body = plan.body()
    body["binding"]["binding"] = {**body["binding"]["binding"], "endpoint": upstream.base}
    return Plan.seal(body)


def exception_text(exc: BaseException) -> str:
    parts = []
    link: BaseException | None = exc
    seen: set[int] = set()
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        parts += [str(link), repr(link), repr(getattr(link, "body", None)), str(getattr(link, "message", ""))]
        link = link.__cause__ or link.__context__
    return "\n".join(parts)


def assert_clean(*texts: str) -> None:
    for text in texts:
        for canary in CANARIES:
            assert canary not in text


def logged(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(caplog.text.splitlines() + [r.getMessage() for r in caplog.records])


def test_gateway_call_that_fails_with_everything_echoed(upstream: FakeProvider, caplog: pytest.LogCaptureFixture) -> None:
    upstream.catalog = ["openrouter/vendor/canary"]
    upstream.responder = echo_everything(503, "gateway overloaded")
    sleeps: list[float] = []
    client = Client(plan_for(upstream), env=gateway_env(upstream), sleep=sleeps.append)
    with caplog.at_level(logging.DEBUG):
        preview = json.dumps(client.preview(USER))
        with pytest.raises(Exception) as caught:
            client.generate(USER)
    assert len(sleeps) == 4  # retried: the 503 went through the whole controller and its log lines
    assert upstream.requests[-1].headers["authorization"] == f"Bearer {GATEWAY_KEY}"  # the canaries did go out
    assert upstream.requests[-1].headers["x-order-id"] == SECRET
    assert "<redacted>" in str(caught.value)
    assert_clean(preview, exception_text(caught.value), logged(caplog), client.plan.to_bytes().decode(), repr(client.gateway.config))  # type: ignore[union-attr]


def test_successful_gateway_result_and_trajectory_are_clean(upstream: FakeProvider, caplog: pytest.LogCaptureFixture) -> None:
    upstream.catalog = ["openrouter/vendor/canary"]
    upstream.responder = lambda seen: (200, chat_completion(model="m", content=f"echo {json.dumps(seen.headers)}"))
    with caplog.at_level(logging.DEBUG):
        result = Client(plan_for(upstream), env=gateway_env(upstream)).generate(USER)
    trajectory = json.dumps([{"step": 0, "result": result.to_json()}])
    # the model's own text is data, kept verbatim; everything capplan itself records is clean
    record = {k: v for k, v in result.to_json().items() if k != "text"}
    assert_clean(json.dumps(record), logged(caplog))
    assert result.gateway_route_kind == "exact" and trajectory


def test_rotation_keys_echoed_by_a_per_key_limit(upstream: FakeProvider, caplog: pytest.LogCaptureFixture) -> None:
    upstream.responder = echo_everything(429, "Key limit exceeded")
    client = Client(plan_for(upstream), env={"OPENROUTER_API_KEYS": ",".join(KEYS)}, sleep=lambda s: None)
    with caplog.at_level(logging.DEBUG):
        with pytest.raises(Exception) as caught:
            client.generate(USER)
    assert type(caught.value).__name__ == "AllApiKeysExhausted"
    assert [s.headers["authorization"] for s in upstream.requests] == [f"Bearer {k}" for k in KEYS]
    assert_clean(exception_text(caught.value), logged(caplog))


def test_command_output_is_clean(upstream: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    upstream.catalog = ["openrouter/vendor/canary"]
    upstream.responder = echo_everything(400, "bad request")
    for name, value in gateway_env(upstream).items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    plan_file = tmp_path / "canary.json"
    plan_file.write_bytes(plan_for(upstream).to_bytes())
    request = tmp_path / "request.json"
    request.write_text(json.dumps(USER))
    outputs = [
        invoke("send", "--plan", str(plan_file), str(request)),
        invoke("preview", "--plan", str(plan_file), str(request), "--format", "text"),
        invoke("preview", "--plan", str(plan_file), str(request)),
        invoke("gateway", "check", "--plan", str(plan_file), "--format", "json"),
    ]
    assert [o.exit_code for o in outputs] == [1, 0, 0, 0], [o.output for o in outputs]
    assert "error[PROVIDER]" in outputs[0].output
    assert_clean(*(o.output for o in outputs))

"""A provider or gateway that answers a chat call with a redirect never gets credentials forwarded.

The upstream answers ``POST …/chat/completions`` with a 307 to a second loopback server (another
port, so another origin). Real litellm and capplan send through the SDK route, once through a
binding with its own endpoint and key, once through a gateway with a key and a literal header:
the second server must receive nothing at all, and the call fails as the error it is.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from capplan.executor.gateway.catalog import clear_catalog_cache
from capplan.executor.plan import Plan
from tests.executor.plans import make_plan
from tests.serving import LoopbackHTTPServer, ServedOnLoopback
from tests.cli_runner import invoke

BOUND_KEY = "redirect-bound-key-5a1f0c"
GATEWAY_KEY = "redirect-gateway-key-9d2e"
TEAM_TOKEN = "redirect-team-token-3b7c"


class Recorder(ServedOnLoopback):
    """Records every request; answers each with a 307 to ``target`` when one is set, else 200."""

    def __init__(self, target: str | None = None) -> None:
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                self.rfile.read(length)
                with recorder.lock:
                    recorder.requests.append({"path": self.path, "headers": dict(self.headers)})
                if target is not None:
                    self.send_response(307)
                    self.send_header("Location", target + self.path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                                   "choices": [{"index": 0, "finish_reason": "stop",
                                                "message": {"role": "assistant", "content": "stolen"}}],
                                   "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_GET = _handle

            def log_message(self, *args: Any) -> None:
                pass

        self._serve(LoopbackHTTPServer(("127.0.0.1", 0), Handler))

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture
def servers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[tuple[Recorder, Recorder]]:
    for name in ("LLM_PROXY_BASE_URL", "LLM_PROXY_API_KEY", "LLM_PROXY_HEADERS", "LLM_PROXY_PROVIDERS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("CAPPLAN_REDIRECT_KEY", BOUND_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", "redirect-openai-key-77aa")
    monkeypatch.chdir(tmp_path)
    clear_catalog_cache()
    with Recorder() as elsewhere, Recorder(target=elsewhere.base) as upstream:
        yield upstream, elsewhere
    clear_catalog_cache()


def _send(tmp_path: Path, plan: Plan) -> str:
    plan_file = tmp_path / "plan.json"
    plan_file.write_bytes(plan.to_bytes())
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}))
    result = invoke("send", "--plan", str(plan_file), str(request))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and "stolen" not in result.output
    return result.output


def test_a_bindings_endpoint_that_redirects_gets_no_credential_forwarded(
        servers: tuple[Recorder, Recorder], tmp_path: Path) -> None:
    upstream, elsewhere = servers
    body = make_plan("openai", "redirect-test").body()
    body["binding"]["binding"] = {**body["binding"]["binding"], "api_key_env": "CAPPLAN_REDIRECT_KEY",
                                  "custom_llm_provider": "openai", "endpoint": upstream.base + "/v1"}
    output = _send(tmp_path, Plan.seal(body))
    assert upstream.requests, "the call never reached the upstream"
    assert elsewhere.requests == [], f"the redirect was followed: {elsewhere.requests}"
    assert BOUND_KEY not in output


def test_a_gateway_that_redirects_gets_no_key_or_header_forwarded(
        servers: tuple[Recorder, Recorder], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    upstream, elsewhere = servers
    monkeypatch.setenv("LLM_PROXY_BASE_URL", upstream.base)
    monkeypatch.setenv("LLM_PROXY_API_KEY", GATEWAY_KEY)
    monkeypatch.setenv("LLM_PROXY_HEADERS", json.dumps({"X-Team-Token": TEAM_TOKEN}))
    output = _send(tmp_path, make_plan("openai", "redirect-gw-test"))
    posts = [r for r in upstream.requests if not r["path"].split("?")[0].endswith("/models")]
    assert posts, "the call never reached the gateway"
    assert elsewhere.requests == [], f"the redirect was followed: {elsewhere.requests}"
    assert GATEWAY_KEY not in output and TEAM_TOKEN not in output

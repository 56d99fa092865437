"""Credentials on the wire and in every printed line: the binding's key variable is the call's key,
a missing one stops ``send`` and ``trial run`` before anything is sent, and neither the key nor a
URL credential in ``--api-base`` is printed, even when the provider echoes them in a 401 body."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from capplan.executor.client import Client
from capplan.executor.errors import MissingCredentialError
from capplan.executor.gateway.catalog import clear_catalog_cache
from capplan.core.redaction import REDACTED, Redactor, redact_url
from tests.fake_provider import FakeProvider, Request, chat_completion, unscripted
from tests.executor.plans import make_plan
from tests.cli_runner import invoke

KEY_CANARY = "sk-or-canary-key-5e71c0d9"
URL_CANARY = "sk-url-canary-93ab2f"
QUERY_CANARY = "canary-query-key-4d2e"
CANARIES = (KEY_CANARY, URL_CANARY, QUERY_CANARY)
REQUEST = {"messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def server() -> Iterator[FakeProvider]:
    with FakeProvider(unscripted) as running:
        yield running


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENROUTER_API_KEYS", "OPENROUTER_KEY_FILE", "LLM_PROXY_BASE_URL",
                 "LLM_PROXY_API_KEY", "NOVA_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # no stray .env file


def echo_401(seen: Request) -> dict[str, Any]:
    """The worst provider: its 401 body quotes the key and the URL it was called with."""
    key = (seen.headers.get("authorization") or "").removeprefix("Bearer ")
    return {"error": {"message": f"invalid key {key} (sent to {seen.path})",
                      "type": "authentication_error", "code": 401}}


def _files(tmp_path: Path) -> tuple[str, str]:
    plan, request = tmp_path / "plan.json", tmp_path / "request.json"
    plan.write_bytes(make_plan("openrouter", "vendor/canary").to_bytes())
    request.write_text(json.dumps(REQUEST), encoding="utf-8")
    return str(plan), str(request)


def _assert_clean(*texts: str) -> None:
    for text in texts:
        for canary in CANARIES:
            assert canary not in text


def _logged(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join([caplog.text, *(r.getMessage() for r in caplog.records)])


@pytest.mark.parametrize("text, expected", [
    ("https://user:sk-abc123@host.example/v1", f"https://{REDACTED}@host.example/v1"),
    ("--api-base http://u:p@127.0.0.1:9/?api_key=sk-zz&x=1", f"--api-base http://{REDACTED}@127.0.0.1:9/?api_key={REDACTED}&x=1"),
    ("GET /v1?KEY=abc;token=def#access_token=ghi", f"GET /v1?KEY={REDACTED};token={REDACTED}#access_token={REDACTED}"),
    ("https://h/?ApiKey=Q1&monkey=ok&apikey=Q2", f"https://h/?ApiKey={REDACTED}&monkey=ok&apikey={REDACTED}"),
    ("mail me at a@b.example, n=1", "mail me at a@b.example, n=1"),
])
def test_redact_url(text: str, expected: str) -> None:
    assert redact_url(text) == expected
    assert Redactor().text(text) == expected


def test_a_binding_key_variable_is_the_call_key_without_a_pinned_transport() -> None:
    client = Client(make_plan("openrouter", "vendor/canary"), env={"OPENROUTER_API_KEY": f" {KEY_CANARY} "})
    assert client.build_request(REQUEST)["api_key"] == KEY_CANARY
    assert client.preview(REQUEST)["api_key"] == REDACTED


def test_send_with_url_credentials_and_an_echoing_401_prints_nothing_secret(
    server: FakeProvider, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan, request = _files(tmp_path)
    monkeypatch.setenv("OPENROUTER_API_KEY", KEY_CANARY)
    api_base = f"http://user:{URL_CANARY}@127.0.0.1:{server.port}/v1?api_key={QUERY_CANARY}"
    with caplog.at_level(logging.DEBUG):
        preview = invoke("preview", "--plan", plan, "--api-base", api_base, request)
        preview_text = invoke("preview", "--format", "text", "--plan", plan, "--api-base", api_base, request)
        server.queue(echo_401, status=401)
        sent = invoke("send", "--plan", plan, "--api-base", api_base, request)
    assert preview.exit_code == 0 and preview_text.exit_code == 0, preview.output + preview_text.output
    assert json.loads(preview.stdout)["api_base"] == f"http://{REDACTED}@127.0.0.1:{server.port}/v1?api_key={REDACTED}"
    assert sent.exit_code == 1, sent.output
    assert len(server.requests) == 1  # a 401 is not retried
    # the canaries did go out, and the provider did echo them back
    echoed = json.dumps(echo_401(server.last()))
    assert any(canary in echoed for canary in CANARIES)
    assert "error[PROVIDER]" in sent.stderr and "invalid key" in sent.stderr
    _assert_clean(preview.stdout, preview.stderr, preview_text.stdout, sent.stdout, sent.stderr, _logged(caplog))


def test_send_without_the_key_variable_exits_2_naming_it_and_sends_nothing(
    server: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan, request = _files(tmp_path)
    for value in (None, "  "):
        if value is not None:
            monkeypatch.setenv("OPENROUTER_API_KEY", value)
        sent = invoke("send", "--plan", plan, "--api-base", server.base, request)
        assert sent.exit_code == 2, sent.output
        assert sent.stderr.startswith(f"{request}: error[CREDENTIAL]: OPENROUTER_API_KEY is not set")
        assert "Traceback" not in sent.output
    assert server.requests == []


def test_trial_run_refuses_a_missing_key_before_any_trial(tmp_path: Path) -> None:
    plan, _ = _files(tmp_path)
    pack = Path(__file__).resolve().parents[2] / "examples" / "trials" / "inventory_desk"
    tasks = sorted(str(p) for p in pack.glob("inv-01-*.yaml"))
    assert tasks, "the example trial pack is missing"
    out = tmp_path / "run"
    result = invoke("trial", "run", *tasks, "--plan", plan, "--user-plan", plan, "--out", str(out))
    assert result.exit_code == 2, result.output
    assert "OPENROUTER_API_KEY is not set" in result.stderr
    assert not (out / "runs.jsonl").exists()


def test_rotation_keys_and_the_mock_need_no_key_variable() -> None:
    plan = make_plan("openrouter", "vendor/canary")
    with pytest.raises(MissingCredentialError, match="OPENROUTER_API_KEY"):
        Client(plan, env={}).require_credentials()
    Client(plan, env={"OPENROUTER_API_KEYS": "k-one-rotation,k-two-rotation"}).require_credentials()
    Client(make_plan("mock", "echo"), env={}).require_credentials()


@pytest.mark.parametrize("value", [",,,", ",", " , ,\t"])
def test_a_rotation_variable_of_only_commas_is_refused_not_skipped(value: str) -> None:
    # with the single key set too, skipping the empty list would run on a key nobody chose for rotation
    plan = make_plan("openrouter", "vendor/canary")
    with pytest.raises(MissingCredentialError) as caught:
        Client(plan, env={"OPENROUTER_API_KEYS": value, "OPENROUTER_API_KEY": KEY_CANARY}).require_credentials()
    assert caught.value.message == "OPENROUTER_API_KEYS is set but lists no key (only commas and spaces)"
    assert caught.value.hint == "list the keys separated by commas (k1,k2), or unset it to use OPENROUTER_API_KEY"
    # unset or empty, it is simply not used
    Client(plan, env={"OPENROUTER_API_KEYS": "", "OPENROUTER_API_KEY": KEY_CANARY}).require_credentials()


def test_a_gateway_key_stands_in_for_the_provider_key() -> None:
    upstream = FakeProvider(name="gateway").start()
    clear_catalog_cache()
    try:
        upstream.catalog = ["openrouter/vendor/canary"]
        upstream.responder = lambda seen: (200, chat_completion(model="m", content="ok"))
        plan = make_plan("openrouter", "vendor/canary")
        env = {"LLM_PROXY_BASE_URL": upstream.root, "LLM_PROXY_API_KEY": "gw-key-7c1e55"}
        assert Client(plan, env=env).generate(REQUEST).text == "ok"
        assert upstream.requests[-1].headers["authorization"] == "Bearer gw-key-7c1e55"
        calls = len(upstream.requests)
        with pytest.raises(MissingCredentialError, match="OPENROUTER_API_KEY"):
            Client(plan, env={"LLM_PROXY_BASE_URL": upstream.root}).generate(REQUEST)
        assert [s for s in upstream.requests[calls:] if s.method == "POST"] == []
    finally:
        upstream.close()
        clear_catalog_cache()

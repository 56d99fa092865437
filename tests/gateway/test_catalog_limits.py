"""The catalog read (``GET {base}/models``) against hostile gateways on loopback: one deadline for
the whole read, no credential sent across origins on a redirect, and ``gateway check`` exit 1
when the catalog is unreadable or the key is refused."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from capplan.executor.gateway import catalog
from capplan.executor.gateway.catalog import clear_catalog_cache, fetch_gateway_catalog, read_gateway_catalog
from capplan.executor.gateway.config import EnvSource, resolve_gateway_config
from tests.serving import LoopbackHTTPServer, ServedOnLoopback
from tests.cli_runner import invoke

REPO = Path(__file__).resolve().parents[2]
PLAN = REPO / "golden" / "plans" / "gpt-4o.json"  # an openai plan: routed through a gateway by default
GATEWAY_KEY = "sk-canary-gateway-key-51d0a7"
SECRET = "canary-header-secret-9e3f12"
LITERAL = "canary-team-token-77ab04"
CANARIES = (GATEWAY_KEY, SECRET, LITERAL)
#: The catalog deadline the trickle tests set, the one the others keep (a loaded machine is
#: slow, not hostile), and how long a test waits for a command at most.
DEADLINE_S = 1.0
PATIENT_S = 10.0
WAIT_S = 30.0

Handler = Callable[[BaseHTTPRequestHandler], None]


class Gateway(ServedOnLoopback):
    """A loopback server whose every GET is answered by ``answer``; records each request's headers."""

    def __init__(self, answer: Handler) -> None:
        self.seen: list[dict[str, str]] = []
        self.stop = threading.Event()
        server = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                server.seen.append({k.lower(): v for k, v in self.headers.items()})
                try:
                    answer(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up, as it should

            def log_message(self, *args: Any) -> None:
                pass

        httpd = LoopbackHTTPServer(("127.0.0.1", 0), _Handler)
        self._serve(httpd)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()  # ends any trickle first, so shutdown does not wait on it
        super().__exit__(*exc)


def send_json(handler: BaseHTTPRequestHandler, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
    payload = json.dumps(body).encode("utf-8")
    handler.send_response(status)
    for name, value in {"Content-Type": "application/json", **(headers or {})}.items():
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(payload)))
    handler.end_headers()
    handler.wfile.write(payload)


def catalog_of(*ids: str) -> Handler:
    return lambda handler: send_json(handler, 200, {"object": "list", "data": [{"id": i} for i in ids]})


def trickle(server: Callable[[], Gateway], *, in_headers: bool) -> Handler:
    """A byte every 20 ms, forever (bounded: at most 3 000 bytes, and stopped in teardown)."""
    def answer(handler: BaseHTTPRequestHandler) -> None:
        if in_headers:
            handler.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        else:
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", "1000000")
            handler.end_headers()
            handler.wfile.write(b'{"data": [')
        for _ in range(3000):
            if server().stop.wait(0.02):
                return
            handler.wfile.write(b"a" if in_headers else b" ")
            handler.wfile.flush()
    return answer


@pytest.fixture(autouse=True)
def _fresh_cache(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(catalog, "FETCH_TIMEOUT_S", PATIENT_S)
    clear_catalog_cache()
    yield
    clear_catalog_cache()


def gateway_env(base: str) -> dict[str, str]:
    return {
        "LLM_PROXY_BASE_URL": base,
        "LLM_PROXY_API_KEY": GATEWAY_KEY,
        "LLM_PROXY_HEADERS": json.dumps({"X-Order-Id": "${secret:ORDER_SECRET}", "X-Team-Token": LITERAL}),
        "ORDER_SECRET": SECRET,
    }


def gateway_check(base: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> Result:
    """``capplan gateway check`` in-process with only the gateway variables set, waited on at most WAIT_S."""
    for name in ("LLM_PROXY_REQUEST_ID_HEADER", "LLM_PROXY_PROVIDERS", "LLM_PROXY_PREFERRED_ROUTE",
                 "LLM_PROXY_TRUST_NAMESPACE_WILDCARDS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in gateway_env(base).items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)  # no stray .env
    results: list[Result] = []
    worker = threading.Thread(
        target=lambda: results.append(invoke("gateway", "check", "--plan", str(PLAN), *args)),
        daemon=True,
    )
    worker.start()
    worker.join(WAIT_S)
    assert not worker.is_alive(), f"gateway check still running after {WAIT_S} s"
    result = results[0]
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert "Traceback" not in result.output
    for canary in CANARIES:
        assert canary not in result.output
    return result


def test_a_catalog_is_read_and_check_exits_0(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Gateway(catalog_of("openai/gpt-4o", "other")) as gw:
        result = gateway_check(gw.base, tmp_path, monkeypatch)
    assert result.exit_code == 0, result.output
    assert "ok   catalog: 2 route(s)" in result.output
    assert "exact -> openai/gpt-4o" in result.output
    assert gw.seen[0]["authorization"] == f"Bearer {GATEWAY_KEY}" and gw.seen[0]["x-order-id"] == SECRET


@pytest.mark.parametrize("in_headers", [False, True], ids=["body", "headers"])
def test_a_trickling_catalog_ends_at_the_deadline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_headers: bool) -> None:
    monkeypatch.setattr(catalog, "FETCH_TIMEOUT_S", DEADLINE_S)
    gw: Gateway
    with Gateway(trickle(lambda: gw, in_headers=in_headers)) as gw:
        result = gateway_check(gw.base, tmp_path, monkeypatch, "--format", "json")
    assert result.exit_code == 1, result.output
    assert "error[GATEWAY_CATALOG]" in result.output and f"no complete answer within {DEADLINE_S:g} s" in result.output
    out = json.loads(result.stdout)
    assert out["catalog"]["ok"] is False and out["plans"][0]["kind"] == "untranslated"


def test_a_client_on_a_trickling_gateway_is_built_within_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    # what `send` and `trial run` do first: build a client, which reads the catalog once
    from capplan.executor.client import Client
    from capplan.executor.plan import Plan

    monkeypatch.setattr(catalog, "FETCH_TIMEOUT_S", DEADLINE_S)
    gw: Gateway
    with Gateway(trickle(lambda: gw, in_headers=False)) as gw:
        built: list[Client] = []
        worker = threading.Thread(target=lambda: built.append(Client(Plan.load(PLAN), env=gateway_env(gw.base))),
                                  daemon=True)
        worker.start()
        worker.join(WAIT_S)
        assert not worker.is_alive(), f"client still being built after {WAIT_S} s"
    assert built[0].route is not None and built[0].route.kind == "untranslated"
    assert fetch_gateway_catalog(resolve_gateway_config(EnvSource(gateway_env(gw.base)))) is None  # type: ignore[arg-type]


def test_a_redirect_to_another_origin_gets_no_credential(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Gateway(catalog_of("openai/gpt-4o")) as elsewhere:
        target = f"{elsewhere.base}/models"

        def redirect(handler: BaseHTTPRequestHandler) -> None:
            send_json(handler, 302, {}, {"Location": target})

        with Gateway(redirect) as gw:
            result = gateway_check(gw.base, tmp_path, monkeypatch)
    assert result.exit_code == 1, result.output
    assert "redirect to another origin, not followed" in result.output
    assert len(gw.seen) == 1
    for headers in elsewhere.seen:  # nothing should arrive at all; nothing secret may
        assert "authorization" not in headers and "x-order-id" not in headers and "x-team-token" not in headers
        assert not any(canary in value for value in headers.values() for canary in CANARIES)
    assert elsewhere.seen == []


def test_a_redirect_within_the_origin_is_followed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def answer(handler: BaseHTTPRequestHandler) -> None:
        if handler.path.startswith("/v2/"):
            catalog_of("openai/gpt-4o")(handler)
        else:
            send_json(handler, 307, {}, {"Location": "/v2/models?return_wildcard_routes=true"})

    with Gateway(answer) as gw:
        result = gateway_check(gw.base, tmp_path, monkeypatch)
    assert result.exit_code == 0, result.output
    assert [h["authorization"] for h in gw.seen] == [f"Bearer {GATEWAY_KEY}"] * 2


def test_endless_redirects_within_the_origin_stop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Gateway(lambda handler: send_json(handler, 302, {}, {"Location": "/models"})) as gw:
        result = gateway_check(gw.base, tmp_path, monkeypatch)
    assert result.exit_code == 1 and f"more than {catalog.MAX_REDIRECTS} redirects" in result.output
    assert len(gw.seen) == catalog.MAX_REDIRECTS + 1


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_key_makes_check_exit_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: int) -> None:
    with Gateway(lambda handler: send_json(handler, status, {"error": f"bad key {GATEWAY_KEY}"})) as gw:
        result = gateway_check(gw.base, tmp_path, monkeypatch)
    assert result.exit_code == 1, result.output
    error = [line for line in result.output.splitlines() if "error[GATEWAY_CATALOG]" in line]
    assert len(error) == 1 and "the key was refused" in error[0] and f"HTTP {status}" in error[0]


@pytest.mark.parametrize(("name", "answer", "problem"), [
    ("not-json", lambda h: (h.send_response(200), h.send_header("Content-Length", "3"), h.end_headers(),
                            h.wfile.write(b"<p>")), "answer is not JSON"),
    ("empty", catalog_of(), "the catalog is empty"),
    ("no-data", lambda h: send_json(h, 200, {"models": []}), "no 'data' list"),
    ("deep", lambda h: send_json(h, 200, json.loads("[" * 50 + "]" * 50)), "no 'data' list"),
    ("server-error", lambda h: send_json(h, 500, {"error": "x"}), "HTTP 500"),
])
def test_an_unreadable_catalog_makes_check_exit_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, answer: Handler, problem: str,
) -> None:
    with Gateway(answer) as gw:
        result = gateway_check(gw.base, tmp_path, monkeypatch)
    assert result.exit_code == 1, result.output
    assert "the catalog is unreadable" in result.output and problem in result.output


def test_an_oversized_catalog_is_refused_by_its_declared_length(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalog, "_MAX_BYTES", 1000)

    def answer(handler: BaseHTTPRequestHandler) -> None:
        send_json(handler, 200, {"data": [{"id": "m" * 2000}]})

    with Gateway(answer) as gw:
        config = resolve_gateway_config(EnvSource(gateway_env(gw.base)))
        assert config is not None
        read = read_gateway_catalog(config, timeout=WAIT_S)
    assert read.served is None and read.problem == "answer larger than 1000 bytes"


def test_an_oversized_catalog_without_a_length_is_cut_at_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalog, "_MAX_BYTES", 1000)

    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.protocol_version = "HTTP/1.0"  # no length: the body runs to the end of the connection
        handler.send_response(200)
        handler.send_header("Connection", "close")
        handler.end_headers()
        handler.wfile.write(b'{"data": [' + b" " * 5000 + b"]}")
        handler.close_connection = True

    with Gateway(answer) as gw:
        config = resolve_gateway_config(EnvSource(gateway_env(gw.base)))
        assert config is not None
        read = read_gateway_catalog(config, timeout=WAIT_S)
    assert read.served is None and read.problem == "answer larger than 1000 bytes"

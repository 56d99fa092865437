"""A hostile provider cannot take the machine, outrun the timeout, or crash a run (direct transport).

Each case starts :class:`~tests.fake_provider.FakeProvider` on loopback and sends one
request through the real client in a child process, which reports its own peak memory
(``VmHWM``, else ``ru_maxrss``) and how long the call took; the child runs under an address-space limit, so a
client that held an endless body would fail there (``MemoryError``) instead of taking the machine,
and under a wall-clock limit, so one that a drip kept reading is ended. Both transport paths are
exercised: ``http.client`` (the common case) and httpx (chosen for an endpoint URL with
credentials in it). The bounds asserted on time are generous ceilings on a hang, not speed.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from capplan.executor.binding import DEFAULT_MAX_DECODED_BYTES
from capplan.executor.plan import Plan
from tests.fake_provider import (
    FakeProvider,
    chat_completion,
    drip_body,
    drip_head,
    endless,
    lying_usage,
    raw,
)
from tests.cli_runner import invoke

REPO = Path(__file__).resolve().parents[2]
GPT4O = Plan.load(REPO / "golden" / "plans" / "gpt-4o.json")
MIB = 1024 * 1024
#: The child's address-space limit: far above what a bounded client needs, far below what an unbounded one takes.
CHILD_ADDRESS_SPACE = 3 * 1024 * MIB
#: The peak resident memory a bounded client stays under (its own imports included).
PEAK_MIB = 300
#: A ceiling on one call that must end at its 2 s deadline (or at a limit): a hang, not a speed, is what it catches.
HANG_S = 30.0

CHILD = r"""
import json, resource, sys, time
limit = int(sys.argv[3])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
if "no-h2" in sys.argv[4:]:  # https on http.client, as where the h2 package is not installed
    from capplan.executor.direct import pool
    pool._HTTP2 = False
from capplan.executor.attempts import attempts_of
from capplan.executor.client import Client
from capplan.executor.plan import Plan

client = Client(Plan.load(sys.argv[1]), env={"OPENAI_API_KEY": "sk-hostile-test"}, api_base=sys.argv[2],
                sleep=lambda s: None, timeout_retries=0)
out = {}
started = time.monotonic()
try:
    result = client.generate({"messages": [{"role": "user", "content": "hi"}]})
    out.update(text=result.text, cost_usd=result.cost_usd, problems=list(result.response_problems))
except BaseException as exc:
    out.update(error_type=type(exc).__name__, error=str(exc)[:2000],
               attempts=[a.error_class for a in attempts_of(exc)])
out["wall_s"] = time.monotonic() - started
# the peak of this process's own memory: VmHWM belongs to the address space exec made, while ru_maxrss
# is kept across exec, so it would report the forking test process's peak (hundreds of MiB in a full suite)
peak_kib = None
try:
    with open("/proc/self/status", encoding="ascii") as status:
        peak_kib = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
except (OSError, StopIteration, ValueError):
    pass
out["peak_mib"] = (peak_kib if peak_kib is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) / 1024
print(json.dumps(out))
"""


def plan_file(tmp_path: Path, *, max_response_bytes: int | None = None, max_decoded_bytes: int | None = None,
              timeout_s: float = 300.0) -> Path:
    """The gpt-4o golden plan (direct transport) with the given limits and per-attempt timeout.

    The default timeout is far beyond what reading to a cap takes on a loaded machine, so a cap
    test never turns into a timeout; the drip tests set a short one.
    """
    body = GPT4O.body()
    binding = body["binding"]["binding"]
    if max_response_bytes is not None:
        binding["max_response_bytes"] = max_response_bytes
    if max_decoded_bytes is not None:
        binding["max_decoded_bytes"] = max_decoded_bytes
    body["loop"]["api_call_timeout_s"] = timeout_s
    path = tmp_path / "plan.json"
    path.write_bytes(Plan.seal(body).to_bytes())
    return path


def via(path: str, base: str) -> str:
    """The endpoint for one transport path: credentials in the URL send it through httpx."""
    return base if path == "http.client" else base.replace("http://", "http://probe:probe-pass@")


def call_in_child(plan: Path, base: str, *flags: str, ca_file: str | None = None) -> dict[str, Any]:
    """One ``Client.generate`` in a fresh interpreter; its report (or the test fails on a hang)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        env.pop(name, None)
    if ca_file is not None:
        env["SSL_CERT_FILE"] = ca_file
    done = subprocess.run([sys.executable, "-c", CHILD, str(plan), base, str(CHILD_ADDRESS_SPACE), *flags],
                          capture_output=True, text=True, timeout=120, env=env, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


@pytest.fixture(scope="module")
def bomb_1gib() -> bytes:
    """1 GiB of zeros, gzip-compressed (about 1 MiB): built once, piece by piece, never held inflated."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(MIB)
    return b"".join([*(packer.compress(zeros) for _ in range(1024)), packer.flush()])


PATHS = ["http.client", "httpx"]


def assert_too_large(report: dict[str, Any], field: str, limit: int) -> None:
    assert report.get("error_type") == "ProviderResponseError", report
    assert f"larger than the binding's {field} ({limit} bytes)" in report["error"]
    assert f"raise `{field}` in the binding" in report["error"] and "capplan compile" in report["error"]
    assert report["attempts"] == ["other"]  # recorded on its attempt, and never sent again
    assert report["peak_mib"] < PEAK_MIB, report


@pytest.mark.parametrize("path", PATHS)
def test_an_endless_body_stops_at_the_bindings_cap(tmp_path: Path, path: str) -> None:
    with FakeProvider(endless) as server:
        report = call_in_child(plan_file(tmp_path, max_response_bytes=MIB), via(path, server.base))
    assert_too_large(report, "max_response_bytes", MIB)


def test_an_endless_body_stops_at_the_default_cap(tmp_path: Path) -> None:
    with FakeProvider(endless) as server:
        report = call_in_child(plan_file(tmp_path), server.base)
    assert_too_large(report, "max_response_bytes", 64 * MIB)


@pytest.mark.parametrize("path", PATHS)
def test_a_gzip_bomb_stops_at_the_bindings_decoded_cap(tmp_path: Path, path: str) -> None:
    bomb = gzip.compress(bytes(64 * MIB))
    with FakeProvider(raw(bomb, {"Content-Encoding": "gzip"})) as server:
        report = call_in_child(plan_file(tmp_path, max_decoded_bytes=MIB), via(path, server.base))
    assert_too_large(report, "max_decoded_bytes", MIB)


def test_the_default_decoded_cap_stops_a_gigabyte_bomb(tmp_path: Path, bomb_1gib: bytes) -> None:
    assert len(bomb_1gib) < 2 * MIB  # well inside the default body cap: only the decoded cap can stop it
    with FakeProvider(raw(bomb_1gib, {"Content-Encoding": "gzip"})) as server:
        report = call_in_child(plan_file(tmp_path), server.base)
    assert_too_large(report, "max_decoded_bytes", DEFAULT_MAX_DECODED_BYTES)


@pytest.mark.parametrize("path", PATHS)
def test_a_body_over_the_cap_is_refused_and_one_under_it_is_read(tmp_path: Path, path: str) -> None:
    padded = json.dumps(chat_completion("x" * (MIB - 4096), usage={"prompt_tokens": 3, "completion_tokens": 1}))
    with FakeProvider(raw(padded.encode())) as server:
        under = call_in_child(plan_file(tmp_path, max_response_bytes=MIB), via(path, server.base))
        over = call_in_child(plan_file(tmp_path, max_response_bytes=MIB // 2), via(path, server.base))
    assert under.get("text") == "x" * (MIB - 4096), {k: str(v)[:200] for k, v in under.items()}
    assert_too_large(over, "max_response_bytes", MIB // 2)


@pytest.mark.parametrize("path", PATHS)
def test_a_gzip_answer_within_the_caps_is_decoded(tmp_path: Path, path: str) -> None:
    body = gzip.compress(json.dumps(chat_completion("done", usage={"prompt_tokens": 3, "completion_tokens": 1})).encode())
    with FakeProvider(raw(body, {"Content-Encoding": "gzip"})) as server:
        report = call_in_child(plan_file(tmp_path), via(path, server.base))
    assert report.get("text") == "done", report


@pytest.mark.parametrize("path", PATHS)
def test_a_dripped_body_ends_at_the_attempts_deadline(tmp_path: Path, path: str) -> None:
    # one byte every 0.5 s never lets a 2 s read timeout fire; the attempt's deadline ends it
    with FakeProvider(drip_body) as server:
        report = call_in_child(plan_file(tmp_path, timeout_s=2.0), via(path, server.base))
    assert report.get("error_type") == "ApiTimeoutError", report
    assert report["attempts"] == ["timeout"]
    assert report["wall_s"] < HANG_S, report


def test_dripped_headers_end_at_the_attempts_deadline(tmp_path: Path) -> None:
    # the status line and headers are read through many receives too: the deadline covers them
    with FakeProvider(drip_head) as server:
        report = call_in_child(plan_file(tmp_path, timeout_s=2.0), server.base)
    assert report.get("error_type") == "ApiTimeoutError", report
    assert report["wall_s"] < HANG_S, report


# --- lying usage: in process, through the direct transport ------------------------------------------


@pytest.fixture
def client_for(tmp_path: Path) -> Iterator[Any]:
    from capplan.executor.client import Client

    servers: list[FakeProvider] = []

    def make(answer: Any) -> Any:
        server = FakeProvider(answer).__enter__()
        servers.append(server)
        return Client(Plan.load(plan_file(tmp_path)), env={"OPENAI_API_KEY": "sk-hostile-test"},
                      api_base=server.base, sleep=lambda s: None, timeout_retries=0)

    yield make
    for server in servers:
        server.__exit__(None, None, None)


REQUEST = {"messages": [{"role": "user", "content": "hi"}]}

LIES: dict[str, tuple[Any, str]] = {
    "negative cost": ({"prompt_tokens": 5, "completion_tokens": 1, "cost": -5000}, "usage.cost is negative (-5000)"),
    "infinite cost": ({"prompt_tokens": 5, "completion_tokens": 1, "cost": float("inf")}, "usage.cost is not finite"),
    "absurd cost": ({"prompt_tokens": 5, "completion_tokens": 1, "cost": 1e9}, "usage.cost is above the ceiling"),
    "string cost": ({"prompt_tokens": 5, "completion_tokens": 1, "cost": "NaN"}, "usage.cost is not a number but str"),
    "1e308 tokens": ({"prompt_tokens": 5, "completion_tokens": 1e308}, "usage.completion_tokens is above the bound"),
    "NaN tokens": ({"prompt_tokens": float("nan"), "completion_tokens": 1}, "usage.prompt_tokens is not finite"),
    "string tokens": ({"prompt_tokens": "NaN", "completion_tokens": 1}, "usage.prompt_tokens is not a number but str"),
    "fractional tokens": ({"prompt_tokens": 5, "completion_tokens": 2.5}, "usage.completion_tokens is not a whole"),
}


@pytest.mark.parametrize("lie", sorted(LIES))
def test_usage_out_of_bounds_is_a_recorded_problem_and_the_cost_is_unknown(client_for: Any, lie: str) -> None:
    usage, problem = LIES[lie]
    result = client_for(lying_usage(usage)).generate(REQUEST)
    assert result.text == "done"
    assert result.cost_usd is None and result.cost_source == "unknown"
    assert any(p.startswith(problem) for p in result.response_problems), result.response_problems
    assert None in (result.usage.prompt_tokens, result.usage.completion_tokens) or "cost" in lie


def test_a_priced_cost_above_the_ceiling_is_unknown(tmp_path: Path) -> None:
    from capplan.executor.cost import checked_cost
    from capplan.executor.plan import PricingEntry
    from capplan.executor.usage import Usage

    price = PricingEntry(key="m", input=600.0, output=600.0)
    cost, source, problems = checked_cost({}, Usage(prompt_tokens=10**9, completion_tokens=10**9), price)
    assert (cost, source) == (None, "unknown") and "above the ceiling" in problems[0]
    assert checked_cost({}, Usage(prompt_tokens=1000, completion_tokens=10), price)[:2] == (0.606, "pricing")


def test_an_integer_past_pythons_digit_limit_is_a_provider_error_not_a_crash(client_for: Any) -> None:
    from capplan.executor.errors import ProviderHTTPError

    body = json.dumps(chat_completion("done", usage={"prompt_tokens": 5})).replace('"prompt_tokens": 5', '"prompt_tokens": ' + "9" * 5000)
    with pytest.raises(ProviderHTTPError, match="the response body is not JSON"):
        client_for(raw(body.encode())).generate(REQUEST)


def test_an_answer_past_a_limit_ends_a_trial_turn_as_a_provider_failure() -> None:
    # the provider misbehaved: an api_error like a malformed answer, not a harness error
    from capplan.executor.errors import ProviderResponseError
    from capplan.executor.loop_errors import LoopErrorReason, classify_loop_error

    exc = ProviderResponseError("openai HTTP 200: too large", http_status=200, limit_field="max_response_bytes",
                                limit=MIB)
    assert classify_loop_error(exc, ()).reason is LoopErrorReason.API_ERROR


def test_send_past_the_cap_is_one_located_line_naming_the_limit(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # in process: a finite 2 MiB body, so even a client without the cap only reads 2 MiB

    monkeypatch.setenv("OPENAI_API_KEY", "sk-hostile-test")
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}))
    with FakeProvider(raw(b" " * (2 * MIB))) as server:
        result = invoke("send", "--plan", str(plan_file(tmp_path, max_response_bytes=MIB)),
                        "--api-base", server.base, str(request))
        assert server.count == 1  # not retried
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert f"{request}: error[PROVIDER]: ProviderResponseError: openai HTTP 200: the answer's body is larger than the " \
           f"binding's max_response_bytes ({MIB} bytes)" in result.output


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A self-signed certificate for 127.0.0.1 and its key (the client trusts it through SSL_CERT_FILE)."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is needed to make a test certificate")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = str(folder / "cert.pem"), str(folder / "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    return cert, key


@pytest.mark.parametrize("flags", [("no-h2",), ()], ids=["http.client", "httpx-if-h2"])
def test_https_answers_are_read_and_bounded_the_same_way(tmp_path: Path, certificate: tuple[str, str],
                                                         flags: tuple[str, ...]) -> None:
    # https is the common route: TLS sockets under the deadline, and the caps, on the path each install takes
    answers = [(lying_usage({"prompt_tokens": 3, "completion_tokens": 1}), None, 300.0),
               (drip_body, "ApiTimeoutError", 2.0), (endless, "ProviderResponseError", 300.0)]
    for answer, error, timeout_s in answers:
        with FakeProvider(answer, tls=certificate) as server:
            report = call_in_child(plan_file(tmp_path, max_response_bytes=MIB, timeout_s=timeout_s), server.base,
                                   *flags, ca_file=certificate[0])
        assert report.get("error_type") == error, report
        assert error is not None or report["text"] == "done"
        assert report["wall_s"] < HANG_S or timeout_s > HANG_S, report  # the drip ends at its deadline, not later
        assert report["peak_mib"] < PEAK_MIB, report



@pytest.mark.parametrize("scheme", ["http", "https"])
def test_dripped_headers_end_at_the_deadline_on_the_httpx_path(tmp_path: Path, certificate: tuple[str, str],
                                                               scheme: str) -> None:
    # httpx's timeout is per read; the network backend it reads through is given the time left instead
    tls = certificate if scheme == "https" else None
    with FakeProvider(drip_head, tls=tls) as server:
        base = server.base if scheme == "https" else via("httpx", server.base)
        report = call_in_child(plan_file(tmp_path, timeout_s=2.0), base, ca_file=certificate[0])
    assert report.get("error_type") == "ApiTimeoutError", report
    assert report["wall_s"] < HANG_S, report

"""No credential value in play leaves capplan, whatever its shape, even when the upstream echoes it.

Every credential gets a canary of an unusual shape (no ``sk-`` prefix): litellm's own
``OPENAI_API_KEY`` for the bundled ``openai`` binding (which names no key variable), a binding's
``api_key_env``, rotation keys, ``LLM_PROXY_API_KEY``, a *literal* ``LLM_PROXY_HEADERS`` value and
the password in ``--api-base http://u:PASS@host``. A loopback upstream quotes every header it got
back, in a 401's prose ("Incorrect API key provided: …") and in a 200's completion text. Then
``send``, ``preview`` and ``trial run`` run through real litellm against it, and every output is
grepped for every canary (and for the HTTP Basic form the URL's userinfo travels as): stdout,
stderr, every file of the run folder, every log record.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from capplan.executor.gateway.catalog import clear_catalog_cache
from capplan.executor.plan import Plan
from capplan.executor.provider_keys import litellm_key_variables
from capplan.core.redaction import REDACTED, RedactingStream, Redactor, register_secrets, url_credentials
from tests.cli_runner import invoke
from tests.cluster.runs import write_pack
from tests.executor.plans import make_plan
from tests.fake_provider import FakeProvider, Request, chat_completion
from capplan.trials.outcome import TerminationReason, TrialStatus
from capplan.trials.run_folder.recording import redact_records
from capplan.trials.spec import TrialKey, TrialRecords

OPENAI_KEY = "canary-OPENAI-7f3a9c41e2d0"
BOUND_KEY = "canary.BOUND.2b8d17aa90f3"
BOUND_VARIABLE = "CAPPLAN_CANARY_BOUND_KEY"
ROTATION_KEYS = ("canary_ROTATE_one_13579bdf", "canary_ROTATE_two_2468ace0")
OPENROUTER_KEY = "canary/OPENROUTER/5d0e6a9b"  # the Ray backend's node check wants it beside rotation keys
GATEWAY_KEY = "canary~GATEWAY~90c3e5d4b7"
TEAM_TOKEN = "canary:TEAM:4f61ab0e77c2"
URL_PASSWORD = "canaryPASS8e2f4a61"
URL_BASIC = base64.b64encode(f"u:{URL_PASSWORD}".encode()).decode()  # what an HTTP client sends for u:PASS@
CANARIES = (OPENAI_KEY, BOUND_KEY, *ROTATION_KEYS, OPENROUTER_KEY, GATEWAY_KEY, TEAM_TOKEN, URL_PASSWORD, URL_BASIC)
REQUEST = {"messages": [{"role": "user", "content": "hi"}]}
CAPPLAN = Path(sys.executable).with_name("capplan")


def reject_401(seen: Request) -> tuple[int, Any]:
    """A provider that quotes the key it refused, and every header beside it."""
    key = seen.headers.get("authorization", "").partition(" ")[2]
    return 401, {"error": {"message": f"Incorrect API key provided: {key}. You sent {json.dumps(seen.headers)}",
                           "type": "invalid_request_error", "code": "invalid_api_key"}}


def dump_200(seen: Request) -> tuple[int, Any]:
    """A provider whose completion text is every header it received."""
    model = seen.body.get("model", "m") if isinstance(seen.body, dict) else "m"
    return 200, chat_completion(model=model, content=f"headers: {json.dumps(seen.headers)}")


SCRIPTS: dict[str, Callable[[Request], tuple[int, Any]]] = {"401": reject_401, "200": dump_200}


@pytest.fixture
def upstream(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeProvider]:
    server = FakeProvider(name="canary").start()
    clear_catalog_cache()
    for name in ("LLM_PROXY_BASE_URL", "LLM_PROXY_API_KEY", "LLM_PROXY_HEADERS", "LLM_PROXY_PROVIDERS",
                 "OPENROUTER_API_KEY", "OPENROUTER_KEY_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv(BOUND_VARIABLE, BOUND_KEY)
    monkeypatch.setenv("OPENROUTER_API_KEYS", ",".join(ROTATION_KEYS))
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.chdir(tmp_path)  # no stray .env file
    try:
        yield server
    finally:
        server.close()
        clear_catalog_cache()


def with_binding(plan: Plan, **binding: Any) -> Plan:
    body = plan.body()
    body["binding"]["binding"] = {**body["binding"]["binding"], **binding}
    return Plan.seal(body)


def plans(upstream: FakeProvider) -> dict[str, Plan]:
    """One plan per way a key reaches the call."""
    return {
        # the bundled openai binding: no api_key_env, litellm reads OPENAI_API_KEY itself
        "openai": make_plan("openai", "gpt-test"),
        "bound": with_binding(make_plan("openai", "bound-test"), api_key_env=BOUND_VARIABLE,
                              custom_llm_provider="openai", endpoint=upstream.base),
        "rotation": with_binding(make_plan("openrouter", "vendor/canary", key="vendor-canary"),
                                 endpoint=upstream.base),
    }


def all_text(root: Path) -> str:
    """Every file under ``root``, as text."""
    return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in sorted(root.rglob("*")) if p.is_file())


def logged(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join([caplog.text, *(r.getMessage() for r in caplog.records)])


def assert_clean(where: str, text: str) -> None:
    found = [canary for canary in CANARIES if canary in text]
    assert not found, f"{where} holds {found}"


def run(*args: str, expect: int) -> Result:
    result = invoke(*args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert result.exit_code == expect, result.output
    # at DEBUG litellm logs its own caught tracebacks inside its messages; capplan's would start a line
    assert not any(line.startswith("Traceback") for line in result.output.splitlines()), result.output
    return result


class Session:
    """Runs commands in ``tmp_path`` and collects everything they print and write."""

    def __init__(self, tmp_path: Path, upstream: FakeProvider) -> None:
        self.tmp_path = tmp_path
        self.upstream = upstream
        self.request = tmp_path / "request.json"
        self.request.write_text(json.dumps(REQUEST), encoding="utf-8")
        self.tasks = [str(p) for p in write_pack(tmp_path / "pack", n_tasks=1, user_turns=1)]
        self.outputs: list[tuple[str, str]] = []
        self.runs = 0

    def plan_file(self, name: str, plan: Plan) -> str:
        path = self.tmp_path / f"{name}.json"
        path.write_bytes(plan.to_bytes())
        return str(path)

    def send(self, plan: str, script: str, *extra: str, expect: int) -> Result:
        self.upstream.responder = SCRIPTS[script]
        result = run("send", "--plan", plan, *extra, str(self.request), expect=expect)
        self.outputs.append((f"send {plan} {script}", result.stdout + result.stderr))
        return result

    def preview(self, plan: str, *extra: str) -> None:
        for fmt in ("json", "text"):
            result = run("preview", "--plan", plan, "--format", fmt, *extra, str(self.request), expect=0)
            self.outputs.append((f"preview {plan} {fmt}", result.stdout + result.stderr))

    def trial(self, plan: str, script: str, *extra: str, expect: int = 0) -> Path:
        self.upstream.responder = SCRIPTS[script]
        self.runs += 1
        out = self.tmp_path / "runs" / f"run{self.runs}"
        before = self.files_outside(out)
        result = run("trial", "run", *self.tasks, "--plan", plan, "--out", str(out), *extra, expect=expect)
        assert self.files_outside(out) == before  # nothing written outside the run folder
        self.outputs.append((f"trial run {plan} {script}", result.stdout + result.stderr))
        if out.exists():
            self.outputs.append((f"run folder {out}", all_text(out)))
        return out

    def files_outside(self, out: Path) -> set[Path]:
        return {p for p in self.tmp_path.rglob("*") if p.is_file() and out not in p.parents}

    def sent(self) -> str:
        """Every header the upstream received, so the test shows the canaries really went out."""
        return json.dumps([s.headers for s in self.upstream.requests])

    def assert_clean(self, caplog: pytest.LogCaptureFixture) -> None:
        for where, text in self.outputs:
            assert_clean(where, text)
        assert_clean("log records", logged(caplog))


def test_litellm_names_the_key_variables_of_bindings_that_name_none() -> None:
    # the redactor learns these from litellm; a litellm that stopped answering would fail here first
    assert "OPENAI_API_KEY" in litellm_key_variables("openai/gpt-test")
    assert "ANTHROPIC_API_KEY" in litellm_key_variables("anthropic/claude-test")
    assert {"GEMINI_API_KEY", "GOOGLE_API_KEY"} <= set(litellm_key_variables("gemini/gemini-test"))
    assert "XAI_API_KEY" in litellm_key_variables("xai/grok-test")


def test_redaction_knows_the_echo_forms_and_is_idempotent() -> None:
    redactor = Redactor([TEAM_TOKEN, *url_credentials(f"http://u:{URL_PASSWORD}@h/v1")])
    text = (f"sent {json.dumps({'x-team-token': TEAM_TOKEN})} to http://u:{URL_PASSWORD}@h/v1?api_key=q1 "
            f"as Basic {URL_BASIC}; quoted {TEAM_TOKEN.replace(':', '%3A')}")
    once = redactor.text(text)
    assert_clean("redacted text", once)
    assert redactor.text(once) == once  # command output is redacted again by its stream: no double marks


def test_direct_keys_of_every_kind_never_leave(
    upstream: FakeProvider, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    session = Session(tmp_path, upstream)
    files = {name: session.plan_file(name, plan) for name, plan in plans(upstream).items()}
    base = ("--api-base", upstream.base)
    with caplog.at_level(logging.DEBUG):
        for name, plan in files.items():
            extra = base if name == "openai" else ()
            sent = session.send(plan, "401", *extra, expect=1)
            assert "error[PROVIDER]" in sent.stderr and "Incorrect API key provided" in sent.stderr
            assert REDACTED in sent.stderr
            shown = session.send(plan, "200", *extra, expect=0)
            assert "Bearer <redacted>" in shown.stdout  # the echo was printed, its key was not
            session.preview(plan, *extra)
            for script in ("200", "401"):
                # a 401 is a configuration error: the run stops there, every trial aborted, exit 1
                out = session.trial(plan, script, *extra, expect=1 if script == "401" else 0)
                assert (out / "runs.jsonl").is_file()
    sent_headers = session.sent()
    for canary in (OPENAI_KEY, BOUND_KEY, ROTATION_KEYS[0]):
        assert f"Bearer {canary}" in sent_headers  # each key went out, and came back in every echo
    session.assert_clean(caplog)


def test_url_userinfo_and_its_basic_form_never_leave(
    upstream: FakeProvider, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    session = Session(tmp_path, upstream)
    plan = session.plan_file("openai", plans(upstream)["openai"])
    api_base = ("--api-base", f"http://u:{URL_PASSWORD}@127.0.0.1:{upstream.port}/v1")
    with caplog.at_level(logging.DEBUG):
        session.send(plan, "401", *api_base, expect=1)
        session.send(plan, "200", *api_base, expect=0)
        session.preview(plan, *api_base)
        session.trial(plan, "200", *api_base)
    assert f"Basic {URL_BASIC}" in session.sent()  # the userinfo travelled as a Basic credential
    session.assert_clean(caplog)


def test_gateway_key_and_literal_headers_never_leave(
    upstream: FakeProvider, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    upstream.catalog = ["openrouter/vendor/canary"]
    monkeypatch.setenv("LLM_PROXY_BASE_URL", upstream.root)
    monkeypatch.setenv("LLM_PROXY_API_KEY", GATEWAY_KEY)
    # a literal value, not a ${secret:} reference: it is a credential all the same
    monkeypatch.setenv("LLM_PROXY_HEADERS", json.dumps({"X-Team-Token": TEAM_TOKEN}))
    session = Session(tmp_path, upstream)
    plan = session.plan_file("rotation", plans(upstream)["rotation"])
    with caplog.at_level(logging.DEBUG):
        session.send(plan, "401", expect=1)
        session.send(plan, "200", expect=0)
        session.preview(plan)
        for script in ("200", "401"):
            session.trial(plan, script, expect=1 if script == "401" else 0)  # a refused key stops the run (1)
    sent = session.sent()
    assert f"Bearer {GATEWAY_KEY}" in sent and TEAM_TOKEN in sent
    session.assert_clean(caplog)


def test_trial_run_refusing_api_base_beside_a_gateway_does_not_print_the_password(
    upstream: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_PROXY_BASE_URL", upstream.root)
    session = Session(tmp_path, upstream)
    plan = session.plan_file("openai", plans(upstream)["openai"])
    out = session.trial(plan, "200", "--api-base", f"http://u:{URL_PASSWORD}@127.0.0.1:{upstream.port}/v1", expect=2)
    where, printed = session.outputs[-1]
    assert "error[GATEWAY]" in printed and f"http://{REDACTED}@127.0.0.1" in printed
    assert_clean(where, printed)
    assert not out.exists() and upstream.requests == []


def test_a_key_pasted_into_rate_limits_keys_is_not_printed(upstream: FakeProvider, tmp_path: Path) -> None:
    pasted = "canary-pasted-ROTATION-key-0c9e"
    config = tmp_path / "run.yaml"
    config.write_text(f"models:\n  gpt-test: {{provider: openai, name: gpt-test}}\n"
                      f"rate_limits:\n  keys:\n    {pasted}: {{requests_per_minute: 10}}\n", encoding="utf-8")
    session = Session(tmp_path, upstream)
    plan = session.plan_file("openai", plans(upstream)["openai"])
    out = session.trial(plan, "200", "--api-base", upstream.base, "--backend", "ray",
                        "--config", str(config), expect=2)
    printed = session.outputs[-1][1]
    assert f"{config}:5:5: error[unknown-key-variable]: rate_limits.keys: entry 1 " in printed
    assert pasted not in printed
    assert not out.exists() and upstream.requests == []


def test_a_ray_workers_records_and_streams_are_scrubbed_by_value() -> None:
    """The worker's output path: what it returns (``redact_records``) and what it prints (its streams)."""
    register_secrets([TEAM_TOKEN, OPENAI_KEY])
    echoed = f"headers: {json.dumps({'authorization': f'Bearer {OPENAI_KEY}', 'x-team-token': TEAM_TOKEN})}"
    identity = {"task_id": "count-0", "plan_key": "gpt-test"}
    records = TrialRecords(
        key=TrialKey("gpt-test", "count-0", 0), status=TrialStatus.COMPLETED,
        termination_reason=TerminationReason.USER_STOP, cost_usd=0.0,
        trajectory={"trial": identity, "messages": [{"role": "assistant", "content": echoed}],
                    "final_state": {TEAM_TOKEN: [OPENAI_KEY]}},
        metrics={"trial": identity, "grade": {"detail": f"saw {OPENAI_KEY}"}},
        run_line={"key": "gpt-test/count-0/0"}, probe={"roles": {"agent": {"note": TEAM_TOKEN}}},
    )
    clean = redact_records(records)
    written = json.dumps([clean.trajectory, clean.metrics, clean.run_line, clean.probe])
    assert_clean("worker records", written)
    assert clean.trajectory["messages"][0]["content"].count(REDACTED) == 2
    assert clean.trajectory["trial"] == identity and clean.key == records.key

    sink = io.StringIO()
    stream = RedactingStream(sink)
    stream.write(f"litellm said: Incorrect API key provided: {OPENAI_KEY[:9]}")
    stream.write(f"{OPENAI_KEY[9:]}\nand {TEAM_TOKEN}")  # a value split across writes is still one match
    stream.flush()
    assert sink.getvalue() == f"litellm said: Incorrect API key provided: {REDACTED}\nand {REDACTED}"


def test_ray_backend_keeps_every_canary_out_of_its_output_run_folder_and_worker_logs(
    upstream: FakeProvider, tmp_path: Path
) -> None:
    """The real ``trial run --backend ray``: a local cluster whose workers inherit the canaries.

    Through a gateway with no pinned key, so the calls carry litellm's own ``OPENAI_API_KEY`` and
    the first rotation key, beside the literal ``X-Team-Token``; the upstream dumps them into the
    completions. The cluster keeps its session (every worker's log) under a folder of this test's.
    """
    pytest.importorskip("ray")
    upstream.catalog = ["openai/gpt-test", "openrouter/vendor/canary"]
    upstream.responder = dump_200
    session = Session(tmp_path, upstream)
    both = plans(upstream)
    plan_args = [arg for name in ("openai", "rotation") for arg in ("--plan", session.plan_file(name, both[name]))]
    out = tmp_path / "runs" / "ray"
    ray_tmp = Path(tempfile.mkdtemp(prefix="capplan-ray-", dir="/tmp"))  # short: Ray's socket paths are bounded
    env = {**os.environ, "OPENROUTER_API_KEY": OPENROUTER_KEY, "LLM_PROXY_BASE_URL": upstream.root, "LLM_PROXY_HEADERS": json.dumps({"X-Team-Token": TEAM_TOKEN}),
           "RAY_TMPDIR": str(ray_tmp)}
    process = subprocess.Popen(
        [str(CAPPLAN), "trial", "run", *session.tasks, *plan_args, "--out", str(out), "--backend", "ray",
         "--workers", "1", "--concurrency", "2"],
        env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stdout + stderr
        sent = session.sent()
        assert f"Bearer {OPENAI_KEY}" in sent and f"Bearer {ROTATION_KEYS[0]}" in sent and TEAM_TOKEN in sent
        written = all_text(out)
        assert written.count("Bearer <redacted>") == 2 and "x-team-token" in written  # the dumps were recorded
        logs = [p for p in ray_tmp.rglob("*") if p.is_file() and p.suffix in (".out", ".err", ".log")]
        assert any("worker" in p.name for p in logs)  # the workers' own logs were really read
        for where, text in (("stdout", stdout), ("stderr", stderr), ("run folder", written),
                            ("ray session", "\n".join(p.read_text(errors="replace") for p in logs))):
            assert_clean(where, text)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        shutil.rmtree(ray_tmp, ignore_errors=True)

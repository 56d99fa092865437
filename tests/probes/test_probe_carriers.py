"""``capplan probe`` reasoning-carrier questions: the replay eval's text step on the plan's route.

The routes are loopback emulators (``tests/probes/route_emulators.py``) that read, ignore, refuse
(DeepSeek's first reasoner) or require (DeepSeek's thinking mode) replayed ``reasoning_content``,
each with the provider's public error text. The plan is a ``reasoning_content`` codec replaying
on every turn, on a local llama-server binding, as ``capplan replay report --overlay-route
llamacpp`` files its evidence; the priced plan of the budget and dry-run tests is the bundled
deepseek-v4-flash (OpenRouter). Servers are module-scoped; each test sends ten requests or fewer.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from capplan.compiler.compile import compile_paths
from tests.cli_runner import invoke_checked
from capplan.evals.reasoning_replay.provider import transport
from tests.fake_provider import FakeProvider, Request, chat_completion, drip_body, endless, error_body
from tests.probes.route_emulators import DEEPSEEK_REFUSES, DEEPSEEK_REQUIRES, ReplayMode, replay_route

KEY = "sk-probe-carriers-0123456789"
GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "plans"
DEEPSEEK_V4 = GOLDEN / "deepseek-v4-flash.json"
RUN = "models:\n  local: {provider: llamacpp, name: qwen3-8b}\n"
BASE = """bindings:
  llamacpp:
    endpoint: http://127.0.0.1:8080/v1
    custom_llm_provider: openai
presets:
  local_qwen:
    match: ["qwen3-8b"]
    reasoning_codec:
      name: reasoning_content
      params: {replay: all_turns}
"""
#: every carrier request of a chat plan: two positions, the baseline and four carriers at each
CHAT_REQUESTS = 10


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)  # the llamacpp binding's (custom_llm_provider openai)
    for name in ("LLM_PROXY_BASE_URL", "LLM_PROXY_API_KEY", "OPENROUTER_API_BASE", "OPENROUTER_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("carriers")
    (folder / "run.yaml").write_text(RUN, encoding="utf-8")
    (folder / "base.yaml").write_text(BASE, encoding="utf-8")
    plan = compile_paths(run_config=folder / "run.yaml", overlays=[folder / "base.yaml"]).plans["local"]
    (folder / "local.json").write_bytes(plan.to_bytes())
    return {"run": folder / "run.yaml", "base": folder / "base.yaml", "plan": folder / "local.json"}


@pytest.fixture(scope="module")
def routes() -> Iterator[dict[str, FakeProvider]]:
    modes: tuple[ReplayMode, ...] = ("consume", "ignore", "reject", "require")
    servers = {mode: FakeProvider(replay_route(mode)).start() for mode in modes}
    try:
        yield servers
    finally:
        for server in servers.values():
            server.close()


def probe(plan: Path, server: FakeProvider, *args: Any, expect: int = 0) -> tuple[str, int]:
    """Probe the carriers of ``plan`` on ``server``; the output and how many requests it received."""
    before = len(server.posts())
    result = invoke_checked("probe", "--family", "carriers", plan, "--api-base", server.base, *args, expect=expect)
    return result.output, len(server.posts()) - before


def carriers_of(out: Path, key: str = "local") -> dict[str, dict[str, Any]]:
    record = json.loads((out / f"{key}.probe.json").read_text(encoding="utf-8"))
    return {c["carrier"]: c for c in record["carriers"]["carriers"]}


@pytest.mark.parametrize(("mode", "outcome", "verdict"), [
    ("consume", "consumed", "consumes-all-turns"),
    ("ignore", "accepted", "accepted-ignored"),
    ("reject", "rejected", "rejected"),
    ("require", "required", "required"),
])
def test_each_route_gets_the_evals_verdict_for_its_carrier(inputs: dict[str, Path], routes: dict[str, FakeProvider],
                                                           tmp_path: Path, mode: str, outcome: str, verdict: str) -> None:
    _, sent = probe(inputs["plan"], routes[mode], "--out", tmp_path)
    assert sent == CHAT_REQUESTS  # each request once: no retry, no settings discovery
    found = carriers_of(tmp_path)["reasoning_content"]
    assert (found["outcome"], found["verdict"]) == (outcome, verdict)
    if mode == "reject":
        assert [p["status"] for p in found["positions"]] == [400, 400]
        assert all(p["detail"] == DEEPSEEK_REFUSES for p in found["positions"])
    if mode == "require":
        assert DEEPSEEK_REQUIRES.format(index=2) in found["positions"][0]["detail"]
        # a carrier the route does not read is refused there as the baseline is
        assert carriers_of(tmp_path)["reasoning"]["outcome"] == "rejected"


def test_the_wire_is_the_evals_with_the_plans_settings(inputs: dict[str, Path], routes: dict[str, FakeProvider],
                                                       tmp_path: Path) -> None:
    server = routes["consume"]
    dry = invoke_checked("probe", "--dry-run", "--family", "carriers", inputs["plan"], "--api-base", server.base, expect=0)
    planned = set(re.findall(r"carrier:\S+: .* sha256:([0-9a-f]{64})", dry.output))
    assert len(planned) == CHAT_REQUESTS
    before = len(server.posts())
    probe(inputs["plan"], server, "--out", tmp_path)
    received = server.posts()[before:]
    # the dry run's fingerprints are the bytes that went out
    assert {hashlib.sha256(r.raw).hexdigest() for r in received} == planned
    model = {r.body["model"] for r in received}
    assert len(model) == 1 and all(r.body["max_tokens"] == 16 for r in received)
    carried = [r for r in received if any("reasoning_content" in m for m in r.body["messages"])]
    assert len(carried) == 4  # reasoning_content and all, at two positions


@pytest.mark.parametrize(("mode", "scope"), [("reject", "never"), ("consume", "all_turns"), ("ignore", "never")])
def test_the_replay_overlay_compiles_into_the_codec_scope(inputs: dict[str, Path], routes: dict[str, FakeProvider],
                                                          tmp_path: Path, mode: str, scope: str) -> None:
    probe(inputs["plan"], routes[mode], "--out", tmp_path)
    overlay = tmp_path / "local.replay.overlay.yaml"
    assert overlay.read_text(encoding="utf-8").splitlines()[0].startswith("# capplan overlay snippet")
    plan = compile_paths(run_config=inputs["run"], overlays=[inputs["base"], overlay]).plans["local"]
    params = plan.policies["reasoning_codec"].params
    assert params["replay"] == scope
    assert "local.replay.overlay.yaml reasoning_replay.llamacpp.qwen3-8b.direct" in params["evidence"]
    assert plan.provenance["policies.reasoning_codec"].layer.startswith("replay-evidence:")


def test_check_names_a_rejected_carrier_the_plan_replays(inputs: dict[str, Path],
                                                         routes: dict[str, FakeProvider]) -> None:
    output, _ = probe(inputs["plan"], routes["reject"], "--check", expect=1)
    assert ('local: reasoning_content: plan replays all_turns (no evidence), route rejects it today '
            f'(in-loop rejected HTTP 400 {json.dumps(DEEPSEEK_REFUSES)}') in output
    assert "drift found" in output
    agreed, _ = probe(inputs["plan"], routes["consume"], "--check", expect=0)
    assert "no drift" in agreed


def test_a_provider_that_changes_its_mind_is_drift_against_the_measured_scope(
        inputs: dict[str, Path], routes: dict[str, FakeProvider], tmp_path: Path) -> None:
    probe(inputs["plan"], routes["reject"], "--out", tmp_path)
    measured = compile_paths(run_config=inputs["run"],
                             overlays=[inputs["base"], tmp_path / "local.replay.overlay.yaml"]).plans["local"]
    plan = tmp_path / "measured.json"
    plan.write_bytes(measured.to_bytes())
    output, _ = probe(plan, routes["consume"], "--check", expect=1)
    assert "local: reasoning_content: plan replays never (evidence: rejected (external:local.replay.overlay.yaml" in output
    assert "route reads it on every turn today (in-loop consumed +" in output


def test_a_route_that_requires_a_carrier_the_plan_never_replays_is_drift(
        inputs: dict[str, Path], routes: dict[str, FakeProvider], tmp_path: Path) -> None:
    probe(inputs["plan"], routes["ignore"], "--out", tmp_path)  # ignored: the plan learns to replay never
    measured = compile_paths(run_config=inputs["run"],
                             overlays=[inputs["base"], tmp_path / "local.replay.overlay.yaml"]).plans["local"]
    plan = tmp_path / "measured.json"
    plan.write_bytes(measured.to_bytes())
    output, _ = probe(plan, routes["require"], "--check", expect=1)
    assert "local: reasoning_content: plan replays never (evidence: accepted-ignored" in output
    assert "route requires it today (in-loop required " in output


def flaky(request: Request) -> tuple[int, dict[str, Any]] | None:
    """Reads reasoning_content, but answers 429 to ``reasoning`` and 500 to ``reasoning_details``."""
    messages = request.body.get("messages", []) if isinstance(request.body, dict) else []
    if any("reasoning_details" in m for m in messages):
        return 500, error_body("The server had an error while processing your request.", type="server_error")
    if any("reasoning" in m for m in messages):
        return 429, error_body("Rate limit reached for requests", type="requests")
    answer = replay_route("consume")(request)
    return answer if answer is not None else (200, chat_completion("OK"))


def test_429_and_500_are_not_measured_never_retried_and_never_a_claim(inputs: dict[str, Path], tmp_path: Path) -> None:
    with FakeProvider(flaky) as server:
        _, sent = probe(inputs["plan"], server, "--out", tmp_path)
    assert sent == CHAT_REQUESTS
    found = carriers_of(tmp_path)
    assert found["reasoning"]["outcome"] == "not measured" and "rate limited" in found["reasoning"]["reason"]
    assert found["reasoning_details"]["outcome"] == "not measured" and "HTTP 500" in found["reasoning_details"]["reason"]
    assert found["reasoning_content"]["verdict"] == "consumes-all-turns"
    overlay = (tmp_path / "local.replay.overlay.yaml").read_text(encoding="utf-8")
    assert '"reasoning_content"' in overlay
    assert '"reasoning":' not in overlay and '"reasoning_details":' not in overlay and '"all":' not in overlay


def test_max_requests_stops_the_eval_and_half_a_measurement_claims_nothing(
        inputs: dict[str, Path], routes: dict[str, FakeProvider], tmp_path: Path) -> None:
    _, sent = probe(inputs["plan"], routes["consume"], "--out", tmp_path, "--max-requests", "3")
    assert sent == 3
    record = json.loads((tmp_path / "local.probe.json").read_text(encoding="utf-8"))["carriers"]
    assert record["sent"] == 3 and "over budget" in record["stopped"]
    # reasoning_content was read in the loop; across turns was never asked: in-loop-only would be a guess
    assert all(c["outcome"] == "not measured" for c in record["carriers"])
    assert sum(r["sent"] for r in record["requests"]) == 3
    assert not (tmp_path / "local.replay.overlay.yaml").exists()


def test_the_dry_run_prices_every_carrier_request_and_max_cost_stops_before_passing_it(
        routes: dict[str, FakeProvider], tmp_path: Path) -> None:
    server = routes["consume"]
    dry = invoke_checked("probe", "--dry-run", "--family", "carriers", DEEPSEEK_V4, "--api-base", server.base,
                         expect=0).output
    costs = [float(c) for c in re.findall(r"carrier:\S+: .* worst case \$([0-9.]+)", dry)]
    assert len(costs) == CHAT_REQUESTS and all(c > 0 for c in costs)
    total = float(re.findall(r"worst-case cost \$([0-9.]+)", dry)[0])
    assert total == pytest.approx(sum(costs), abs=1e-5)
    before = len(server.posts())
    budget = sum(costs[:3]) + costs[3] / 2
    invoke_checked("probe", "--family", "carriers", DEEPSEEK_V4, "--api-base", server.base, "--out", tmp_path,
                   "--max-cost", repr(budget), expect=0)
    received = server.posts()[before:]
    assert len(received) == 3
    # sent exactly as trials send: the plan's key and its OpenRouter model name
    assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in received)
    assert {r.body["model"] for r in received} == {"deepseek/deepseek-v4-flash"}
    record = json.loads((tmp_path / "deepseek-v4-flash.probe.json").read_text(encoding="utf-8"))
    assert "--max-cost" in record["carriers"]["stopped"]
    assert KEY not in (tmp_path / "deepseek-v4-flash.probe.json").read_text(encoding="utf-8")


def test_a_plan_whose_codec_reads_no_reasoning_is_skipped_with_the_reason(routes: dict[str, FakeProvider]) -> None:
    dry = invoke_checked("probe", "--dry-run", "--family", "carriers", GOLDEN / "gpt-4o.json",
                         "--api-base", routes["consume"].base, expect=0).output
    assert "carriers: skipped: its reasoning codec is none" in dry
    assert "0 request(s) planned" in dry


def endless_for_carried(request: Request) -> Any:
    """Reads nothing; answers a request that carries reasoning_content with a body that never ends."""
    messages = request.body.get("messages", []) if isinstance(request.body, dict) else []
    if any("reasoning_content" in m for m in messages):
        return endless
    return replay_route("ignore")(request)


def test_an_endless_answer_is_cut_at_the_bound_and_not_measured(inputs: dict[str, Path], tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    bound = 1024 * 1024  # the transport's own bound is 32 MiB; a smaller one keeps the test fast
    monkeypatch.setattr(transport, "MAX_BODY_BYTES", bound)
    with FakeProvider(endless_for_carried) as server:
        _, sent = probe(inputs["plan"], server, "--out", tmp_path)
    assert sent == CHAT_REQUESTS
    found = carriers_of(tmp_path)
    for carrier in ("reasoning_content", "all"):
        assert found[carrier]["outcome"] == "not measured"
        assert f"over {bound} bytes" in found[carrier]["reason"]
    assert found["reasoning"]["verdict"] == "accepted-ignored"  # the other answers were still read


def test_a_dripped_answer_is_cut_at_the_transports_deadline() -> None:
    # every read gets a byte within the socket timeout; the body as a whole has its own deadline
    with FakeProvider(drip_body) as server:
        reply = transport.send("POST", server.base + "/chat/completions", b"{}", {}, timeout=1.0)
    assert reply.status == 0 and not reply.ok
    assert "within 1s" in reply.error

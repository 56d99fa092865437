"""``capplan probe`` through a real LiteLLM proxy whose upstream refuses one parameter.

The lane is the gateway tests' own (``tests/gateway/conftest.py``, one proxy per session):
capplan → a recording tap → a real LiteLLM proxy → a loopback upstream. Its deployment
``openai/gpt-gw`` sends to the upstream as ``gpt-gw-upstream``; here that upstream answers
``temperature: 0`` with OpenAI's real 400 (the corpus rule ``openai.temperature_default_only``)
and takes everything else. The probe is pointed at the gateway the way trials are
(``LLM_PROXY_BASE_URL`` and ``LLM_PROXY_API_KEY``), with a chat plan whose binding is OpenAI's.

What the proxy does to the refusal, as the tests pin it: the status stays 400, and the upstream's
message arrives whole inside litellm's own wording (``litellm.BadRequestError: OpenAIException - …``
before it, ``LiteLLM: model group 'openai/gpt-gw' failed with the error above. No fallback was
attempted.`` after it), and the evidence quotes that text as the gateway wrote it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from capplan.conformance.corpus import load_corpus
from capplan.core.canonical import canonical_bytes, sha256_hex
from capplan.executor.gateway.catalog import clear_catalog_cache
from capplan.executor.plan import Plan
from tests.cli_runner import invoke_checked
from tests.fake_provider import Reply, Request, openai_answer
from tests.gateway.conftest import MASTER_KEY, Gateway, session_gateway
from tests.probes.snippet_view import snippet_rules

ROOT = Path(__file__).resolve().parents[2]
#: the gateway's name for the deployment, and the upstream model it sends to (tests/gateway/conftest.py)
ROUTE = "openai/gpt-gw"
UPSTREAM_MODEL = "gpt-gw-upstream"
KEY = "gpt-gw"
#: the questions besides temperature 0 this chat route is asked (a later question family adds more)
ACCEPTED = ["max_tokens=16", "reasoning_effort=minimal", "reasoning_effort=xhigh", "tool_choice=none",
            "tool_choice=auto", "tool_choice=required", "tool_choice=named", "parallel_tool_calls=true",
            "parallel_tool_calls=false", "seed=1", "stop=END", "response_format=json_object",
            "response_format=json_schema_strict"]


def openai_temperature_text() -> str:
    """OpenAI's exact refusal of ``temperature: 0`` on chat completions, from the conformance corpus."""
    rule = next(r for r in load_corpus().rules if r.id == "openai.temperature_default_only")
    message: str = rule.error["error"]["message"]
    return message.replace("{value}", "0.0")


TEXT = openai_temperature_text()


def refuse_temperature_zero(request: Request) -> Reply | None:
    """The upstream: OpenAI's 400 for ``temperature: 0``, the default answer for everything else."""
    body = request.body if isinstance(request.body, dict) else {}
    if body.get("temperature") == 0:
        return Reply({"error": {"message": TEXT, "type": "invalid_request_error", "param": "temperature",
                                "code": "unsupported_value"}}, 400)
    return openai_answer(request)


@pytest.fixture
def lane(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory,
         monkeypatch: pytest.MonkeyPatch) -> Iterator[Gateway]:
    """The session's gateway lane, its upstream refusing temperature 0, and the gateway in the environment."""
    gateway = session_gateway(pytestconfig, tmp_path_factory)
    gateway.front.reset()
    for fake in (gateway.a, gateway.b, gateway.direct):
        fake.reset(scripts=True)
    gateway.a.responder = refuse_temperature_zero
    clear_catalog_cache()
    monkeypatch.setenv("LLM_PROXY_BASE_URL", gateway.front.base)
    monkeypatch.setenv("LLM_PROXY_API_KEY", MASTER_KEY)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE", "LLM_PROXY_PROVIDERS", "LLM_PROXY_HEADERS",
                 "LLM_PROXY_PREFERRED_ROUTE", "LLM_PROXY_TRUST_NAMESPACE_WILDCARDS"):
        monkeypatch.delenv(name, raising=False)
    try:
        yield gateway
    finally:
        gateway.a.reset(scripts=True)
        clear_catalog_cache()


def gateway_plan(folder: Path, transport: str) -> Path:
    """A chat plan for the deployment the gateway serves as ``openai/gpt-gw``: the bundled gpt-4o plan's
    policies and binding, with no temperature of its own (so only the question about it sends one)."""
    body = Plan.load(ROOT / "golden" / "plans" / "gpt-4o.json").body()
    body["model"] = {**body["model"], "key": KEY, "name": "gpt-gw", "model_id": ROUTE, "wire_model": ROUTE}
    body["request_defaults"] = {**body["request_defaults"], "temperature": None}
    body["wire"] = {**body["wire"], "transport": transport}
    path = folder / f"{KEY}-{transport}.json"
    path.write_bytes(Plan.seal(body).to_bytes())
    return path


def questions(folder: Path) -> dict[str, dict[str, Any]]:
    record = json.loads((folder / f"{KEY}.probe.json").read_text(encoding="utf-8"))
    return {q["id"]: q for q in record["questions"]} | {"": record}


@pytest.mark.parametrize("transport", ["direct", "litellm"])
def test_a_refusal_behind_the_gateway_is_evidence_about_the_gateway_route(
        lane: Gateway, tmp_path: Path, transport: str) -> None:
    out = tmp_path / "out"
    result = invoke_checked("probe", gateway_plan(tmp_path, transport), "--out", out, expect=0)
    found = questions(out)
    record = found.pop("")
    # the evidence names the route the gateway chose, and the gateway's own URL as the endpoint
    assert record["route"] == {"protocol": "openai-chat", "endpoint": lane.front.base + "/chat/completions",
                               "model": ROUTE, "transport": transport, "gateway_route": ROUTE}
    # what arrived at the upstream: every question the probe sent, once, under the deployment's model
    front = lane.front.posts()
    upstream = lane.a.posts("/chat/completions")
    sent = [q for q in found.values() if q["outcome"] in ("accepted", "refused")]
    assert len(front) == len(upstream) == len(sent) == record["sent"] >= len(ACCEPTED) + 1
    assert {r.body["model"] for r in upstream} == {UPSTREAM_MODEL}
    assert [r.body.get("temperature") for r in upstream].count(0) == 1
    assert not lane.b.requests and not lane.direct.requests
    # the one refusal: status 400, the provider's sentence whole inside the proxy's wording
    temperature = found.pop("temperature=0")
    assert (temperature["outcome"], temperature["status"]) == ("refused", 400)
    detail = temperature["detail"]
    assert detail == (f"litellm.BadRequestError: OpenAIException - {TEXT}\n\n"
                      f"LiteLLM: model group '{ROUTE}' failed with the error above. No fallback was attempted.")
    assert MASTER_KEY not in detail and "upstream-key" not in detail
    # its fingerprint is the body the gateway received (the request as capplan sent it)
    refused_call = next(p for p in front if p.body.get("temperature") == 0)
    assert refused_call.status == 400
    assert temperature["fingerprint"] == sha256_hex(canonical_bytes(refused_call.body))
    # every other value was accepted: the upstream took it, and the proxy passed the answer back
    assert {qid: found[qid]["outcome"] for qid in ACCEPTED} == dict.fromkeys(ACCEPTED, "accepted")
    assert [qid for qid, q in found.items() if q["outcome"] == "refused"] == []
    assert "temperature=0: refused, HTTP 400" in result.output
    # the snippet holds exactly that refusal, its evidence naming the gateway route and quoting the text
    rules = snippet_rules(out / f"{KEY}.overlay.yaml")
    assert list(rules) == [("temperature", "0.0")]
    rule = rules[("temperature", "0.0")]
    assert rule["action"] == "reject"
    for part in (record["date"], f"via gateway route {ROUTE}", lane.front.base, temperature["fingerprint"],
                 "HTTP 400", json.dumps(detail)):
        assert part in rule["evidence"], part


def test_check_through_the_gateway_names_the_refusal_the_plan_does_not_know(lane: Gateway, tmp_path: Path) -> None:
    plan = gateway_plan(tmp_path, "direct")
    # two requests are enough to ask: the plan's own (the baseline), then temperature 0
    drifted = invoke_checked("probe", "--check", plan, "--max-requests", "2", expect=1)
    lines = drifted.stdout.splitlines()
    line = next(x for x in lines if x.startswith(f"{KEY}: temperature 0:"))
    assert line.startswith(f"{KEY}: temperature 0: route refuses it with 400 \"litellm.BadRequestError: ")
    assert line.endswith(": plan has no rule") and TEXT in json.loads(line[line.index('"'):line.rindex('"') + 1])
    assert f"not compared: {KEY}: seed 1: not measured (over budget: --max-requests 2 reached)" in lines
    assert lines[-1] == "drift found"
    # the route takes temperature 0 again: the same plan agrees with it
    lane.a.responder = openai_answer
    agreed = invoke_checked("probe", "--check", plan, "--max-requests", "2", expect=0)
    assert agreed.stdout.splitlines()[-1] == "no drift"
    assert [r.body.get("temperature") for r in lane.a.posts("/chat/completions")] == [None, 0.0, None, 0.0]

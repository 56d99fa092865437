"""Answers that say the setup is wrong are classified from data, sent once, and never graded; Retry-After is capped.

The direct transport against one loopback server (``FakeProvider``): a LiteLLM proxy's 400
"Invalid model name" and 400 "no healthy deployments" and its 500 relaying a refused key (the
gateway's rules), OpenRouter's 400 "is not a valid model ID" (the binding's rule from
providers.yaml), an HTML page with status 200 and a 200 JSON body without ``choices`` (protocol
facts). Each reaches the server once and is a configuration error of the named class. A 429 asking
for 300 s waits the binding's ``retry_after_max_s``; both numbers are on the attempt record.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from capplan.executor import golden_wire
from capplan.executor.attempts import attempts_of
from capplan.executor.client import Client
from capplan.executor.gateway.config import GatewayConfig
from capplan.executor.loop_errors import LoopErrorReason
from capplan.executor.plan import Plan
from tests.fake_provider import FakeProvider, Reply, json_reply, unscripted
from tests.cli_runner import invoke

ROOT = Path(__file__).resolve().parents[2]
KEYS = {"OPENROUTER_API_KEY": "sk-or-rules-5d1f", "OPENAI_API_KEY": "sk-oa-rules-77c2"}
CONVERSATION = {"messages": [{"role": "user", "content": "hello"}]}
PLANS = {p.model.key: p for p in (Plan.load(path) for path in golden_wire.plan_files(ROOT))}

#: the LiteLLM proxy's own texts (litellm 1.110.2, cited in executor/gateway/failure_rules.py)
INVALID_MODEL = {"error": {"message": "/chat/completions: Invalid model name passed in model=vendor/gone. Call "
                                      "`/v1/models` to view available models for your key.",
                           "type": "invalid_request_error", "param": "model", "code": "400"}}
NO_DEPLOYMENT = {"error": {"message": "litellm.BadRequestError: You passed in model=vendor/gone. There are no healthy "
                                      "deployments for this model", "type": None, "param": None, "code": "400"}}
AUTH_IN_500 = {"error": {"message": "litellm.AuthenticationError: AuthenticationError: OpenrouterException - "
                                    "User not found.", "type": None, "param": None, "code": "500"}}
HTML = Reply(raw=b"<!DOCTYPE html><html><body>Sign in to the guest network</body></html>", status=200,
                headers={"X-Portal": "guest"})
NO_CHOICES = json_reply({"id": "x", "object": "chat.completion", "model": "m"})


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProvider]:
    with FakeProvider(unscripted) as srv:
        yield srv


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    logger = logging.getLogger("capplan")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    yield
    logger.setLevel(level)


def _client(plan: Plan, server: FakeProvider, sleeps: list[float], *, gateway: bool = False) -> Client:
    if gateway:
        config = GatewayConfig(base_url=server.base)
        return Client(plan, env=dict(KEYS), gateway=config, sleep=sleeps.append)
    return Client(plan, env=dict(KEYS), api_base=server.base, sleep=sleeps.append)


def _refused(client: Client, server: FakeProvider, answer: Reply) -> BaseException:
    server.script(*([answer] * 5))
    with pytest.raises(Exception) as caught:
        client.generate(CONVERSATION)
    return caught.value


CASES = {
    # name: (plan, through the gateway, answer, class, what the problem says)
    "gateway-invalid-model-name": ("kimi-k3", True, json_reply(INVALID_MODEL, 400), "configuration",
                                   "the gateway serves no model of this name"),
    "gateway-no-healthy-deployment": ("kimi-k3", True, json_reply(NO_DEPLOYMENT, 400), "configuration",
                                      "no deployment of this model"),
    "gateway-auth-error-in-a-500": ("kimi-k3", True, json_reply(AUTH_IN_500, 500), "configuration",
                                    "refused its credentials"),
    "openrouter-unknown-model-id": ("kimi-k3", False, json_reply(
        {"error": {"message": "moonshotai/kimi-k3-typo is not a valid model ID", "code": 400}}, 400),
        "configuration", "OpenRouter serves no model of this id"),
    "html-page-with-200": ("gpt-4o", False, HTML, "infrastructure", "not JSON from its first character"),
    "200-without-choices": ("gpt-4o", False, NO_CHOICES, "infrastructure", "a 200 answer with no choices"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_setup_failure_is_sent_once_and_is_a_configuration_error(server: FakeProvider, case: str) -> None:
    key, via_gateway, answer, failure_class, problem = CASES[case]
    sleeps: list[float] = []
    client = _client(PLANS[key], server, sleeps, gateway=via_gateway)
    if via_gateway:
        assert client.route is not None and client.route.via_gateway
    exc = _refused(client, server, answer)
    assert len(server.requests) == 1 and sleeps == []  # never retried as transient
    decision = client.classify_loop_error(exc)
    assert decision.reason is LoopErrorReason.CONFIGURATION_ERROR and decision.excluded
    assert f"({failure_class}: " in decision.message and problem in decision.message
    assert [(a.status, a.error_class) for a in attempts_of(exc)] == [("error", failure_class)]


def test_the_gateway_rules_apply_only_to_calls_through_the_gateway(server: FakeProvider) -> None:
    # the same 400 from a provider reached directly is a refused request (not retried), not a setup verdict
    sleeps: list[float] = []
    exc = _refused(_client(PLANS["kimi-k3"], server, sleeps), server, json_reply(INVALID_MODEL, 400))
    assert len(server.requests) == 1
    assert _client(PLANS["kimi-k3"], server, sleeps).classify_loop_error(exc).reason is LoopErrorReason.API_ERROR


def test_a_rule_is_data_on_the_plans_binding_with_its_evidence() -> None:
    rules = PLANS["kimi-k3"].binding.binding.failure_rules
    assert [(r.status, r.failure_class) for r in rules] == [(400, "configuration")]
    assert "github.com/OpenRouterTeam" in rules[0].evidence
    dumped = json.loads(PLANS["kimi-k3"].to_bytes())["binding"]["binding"]["failure_rules"][0]
    assert dumped["class"] == "configuration" and dumped["evidence"] == rules[0].evidence


def _capped(plan: Plan, cap: float) -> Plan:
    body = plan.body()
    body["binding"]["binding"]["retry_after_max_s"] = cap
    return Plan.seal(body)


OK = json_reply({"id": "g", "object": "chat.completion", "model": "m",
                  "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "later"}}],
                  "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}})
ASK_300 = json_reply({"error": {"message": "Rate limit exceeded", "code": 429}}, 429, {"Retry-After": "300"})


@pytest.mark.parametrize(("cap", "waited"), [(None, 60.0), (7.5, 7.5)])
def test_a_retry_after_of_300_s_waits_at_most_the_bindings_cap(server: FakeProvider, cap: float | None,
                                                               waited: float) -> None:
    plan = PLANS["kimi-k3"] if cap is None else _capped(PLANS["kimi-k3"], cap)
    sleeps: list[float] = []
    server.script(ASK_300, OK)
    result = _client(plan, server, sleeps).generate(CONVERSATION)
    assert result.text == "later" and len(server.requests) == 2
    assert sleeps == [waited]  # the default binding cap is 60 s; never the 300 asked for
    first, second = result.attempts
    assert (first.status, first.retry_after_s) == ("error", 300.0)  # what the provider asked for, as sent
    assert (second.status, second.wait_s, second.retry_after_s) == ("ok", waited, None)  # what was waited


@pytest.mark.parametrize("value", ["inf", "nan", "-5", "Wed, 21 Oct 2015 07:28:00 GMT"])
def test_a_retry_after_that_is_no_usable_number_is_not_recorded(server: FakeProvider, value: str) -> None:
    sleeps: list[float] = []
    answer = json_reply({"error": {"message": "slow down", "code": 429}}, 429, {"Retry-After": value})
    server.script(answer, OK)
    result = _client(PLANS["kimi-k3"], server, sleeps).generate(CONVERSATION)
    assert result.attempts[0].retry_after_s is None
    assert sleeps == [4.0]  # the controller's own first wait


def test_a_binding_cap_beyond_300_s_is_refused() -> None:
    body: dict[str, Any] = PLANS["kimi-k3"].body()
    body["binding"]["binding"]["retry_after_max_s"] = 301
    with pytest.raises(ValueError, match="retry_after_max_s"):
        Plan.seal(body)


def test_send_names_the_setup_problem_on_its_one_line(server: FakeProvider, tmp_path: Path) -> None:
    request = tmp_path / "request.json"
    request.write_text(json.dumps(CONVERSATION), encoding="utf-8")
    plan = ROOT / "golden" / "plans" / "kimi-k3.json"
    server.script(json_reply({"error": {"message": "moonshotai/kimi-k3 is not a valid model ID", "code": 400}}, 400))
    result = invoke("send", "--plan", str(plan), "--api-base", server.base, str(request),
                    env={"OPENROUTER_API_KEY": KEYS["OPENROUTER_API_KEY"], "LLM_PROXY_BASE_URL": ""})
    assert result.exit_code == 1, result.output
    (line,) = result.stderr.strip().splitlines()
    assert "error[PROVIDER]" in line and "configuration: OpenRouter serves no model of this id" in line
    assert "check OPENROUTER_API_KEY, the endpoint and the model name" in line
    assert len(server.requests) == 1 and KEYS["OPENROUTER_API_KEY"] not in result.output


def test_an_overlays_rules_replace_the_bindings_and_a_bad_one_is_a_located_error(tmp_path: Path) -> None:
    overlay = tmp_path / "overlay.yaml"
    rule = ('{status: 404, contains: "No endpoints found for this model", class: configuration, '
            'problem: no provider serves this model, evidence: "OpenRouter error page (2026-12-04)"}')
    overlay.write_text(f"bindings:\n  openrouter:\n    retry_after_max_s: 20\n    failure_rules:\n      - {rule}\n"
                       '      - {status: 400, pattern: "(unclosed [a-z", class: configuration, problem: bad, '
                       'evidence: "nowhere at all, today"}\n', encoding="utf-8")
    out = tmp_path / "plans"
    args = ["compile", "--model", "kimi-k3", "--presets-file", str(overlay), "--out", str(out)]
    refused = invoke(*args)
    assert refused.exit_code == 2 and not out.exists()
    assert (f"{overlay}:6:23: error[wrong-type]: bindings.openrouter.failure_rules[1].pattern: not a regular "
            "expression: unterminated character set") in refused.stderr
    overlay.write_text("\n".join(overlay.read_text(encoding="utf-8").splitlines()[:-1]) + "\n", encoding="utf-8")
    assert invoke(*args).exit_code == 0
    binding = Plan.load(out / "kimi-k3.json").binding.binding
    assert binding.retry_after_max_s == 20.0
    assert [r.problem for r in binding.failure_rules] == ["no provider serves this model"]  # the list is replaced

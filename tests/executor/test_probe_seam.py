"""The executor's seams for ``capplan probe``: a build with one value rule bypassed, and a send never retried."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from capplan.executor.client import Client
from capplan.executor.errors import ProviderHTTPError
from capplan.executor.plan import Plan
from capplan.executor.request_builder import UnderTest
from capplan.executor.value_rules import RejectedValueError
from tests.fake_provider import FakeProvider, json_reply

GPT4O = Path(__file__).resolve().parents[2] / "golden" / "plans" / "gpt-4o.json"
ENV = {"OPENAI_API_KEY": "sk-seam-test-0123456789"}
TOOL = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}


def ruled_plan() -> Plan:
    """gpt-4o with temperature 0 and tool_choice required both rejected."""
    body = Plan.load(GPT4O).body()
    reject = {"action": "reject", "with": None, "evidence": "2026-01-01 a test's claim"}
    body["param_value_rules"] = {"temperature": {"0.0": reject}, "tool_choice": {"required": reject}}
    body["request_defaults"] = {**body["request_defaults"], "temperature": None}
    return Plan.seal(body)


def request(**fields: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 16, **fields}


def test_a_bypassed_rule_lets_the_value_through_and_every_other_rule_still_holds() -> None:
    client = Client(ruled_plan(), env=ENV)
    with pytest.raises(RejectedValueError):
        client.build(request(temperature=0.0))
    probe = UnderTest(frozenset({"temperature"}), {"temperature": 0.0})
    assert client.build(request(temperature=0.0), under_test=probe).kwargs["temperature"] == 0.0
    # the tool_choice rule is not the one under test: it still refuses
    with pytest.raises(RejectedValueError, match="tool_choice"):
        client.build(request(temperature=0.0, tools=[TOOL], tool_choice="required"), under_test=probe)
    # nothing of the probe's build is remembered for the next ordinary one
    with pytest.raises(RejectedValueError):
        client.build(request(temperature=0.0))


def test_a_forced_key_goes_on_the_wire_where_the_params_policy_leaves_it_out() -> None:
    gpt5 = Client(Plan.load(GPT4O.parent / "gpt-5.json"), env=ENV)
    assert "temperature" not in gpt5.build(request(temperature=0.0)).kwargs  # supports_sampling_params: false
    forced = gpt5.build(request(temperature=0.0), under_test=UnderTest(forced={"temperature": 0.0})).kwargs
    assert forced["temperature"] == 0.0 and "input" in forced  # still mapped to the Responses shape


def test_send_once_never_retries() -> None:
    with FakeProvider() as server:
        server.script(json_reply({"error": {"message": "overloaded"}}, 503))
        client = Client(Plan.load(GPT4O), env=ENV, api_base=server.base)
        with pytest.raises(ProviderHTTPError) as caught:
            client.send_once(client.build(request()))
        assert caught.value.status_code == 503
        assert len(server.posts()) == 1  # the default answer after it was never asked for

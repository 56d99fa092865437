"""Client wiring, retries with an injected sleep, the offline mock provider, the policy set."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from capplan.executor.client import Client
from capplan.executor.errors import PolicyConstructionError
from capplan.executor.mock_provider import MockObject, complete, example_arguments, is_mock
from capplan.executor.plan import Plan
from capplan.executor.policy_set import PolicySet
from tests.executor.plans import make_plan

LOOKUP = {
    "type": "function",
    "function": {
        "name": "lookup",
        "parameters": {
            "type": "object",
            "$defs": {"Kind": {"type": "string", "enum": ["a", "b"]}},
            "properties": {"id": {"type": "string", "minLength": 6}, "kind": {"$ref": "#/$defs/Kind"}, "n": {"type": "integer", "minimum": 3}, "opt": {"type": "string"}},
            "required": ["id", "kind", "n"],
        },
    },
}
REQUEST = {"system": "s", "messages": [{"role": "user", "content": "hi"}], "tools": [LOOKUP]}


class _Flaky(Exception):
    status_code = 503


def test_retries_transient_failures_without_waiting() -> None:
    attempts: list[int] = []
    slept: list[float] = []

    def completion(**kwargs: Any) -> dict[str, Any]:
        attempts.append(1)
        if len(attempts) < 3:
            raise _Flaky("upstream hiccup")
        return {"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}], "usage": {}}

    result = Client(make_plan(), completion=completion, sleep=slept.append, env={}).generate({"messages": [{"role": "user", "content": "x"}]})
    assert result.text == "ok" and len(attempts) == 3 and slept == [4, 4]


def test_generate_sends_the_built_kwargs() -> None:
    seen: dict[str, Any] = {}

    def completion(**kwargs: Any) -> dict[str, Any]:
        seen.update(kwargs)
        return {"choices": [{"message": {"content": "ok"}}]}

    client = Client(make_plan("nova", "busan-v1"), completion=completion, env={"NOVA_API_KEY": "sk-n"})
    client.generate({"messages": [{"role": "user", "content": "x"}]})
    assert seen == client.build_request({"messages": [{"role": "user", "content": "x"}]})
    assert seen["api_key"] == "sk-n" and client.preview({"messages": [{"role": "user", "content": "x"}]})["api_key"] == "<redacted>"


def test_mock_provider_is_deterministic_and_offline() -> None:
    client = Client(make_plan("mock", "echo"), env={})
    first, second = client.generate(REQUEST), client.generate(REQUEST)
    assert first.tool_calls == second.tool_calls and first.usage == second.usage
    (call,) = first.tool_calls
    assert call.name == "lookup"
    assert call.arguments == {"id": "mmmmmm", "kind": "a", "n": 3}
    assert first.validation_errors == () and first.parser_errors == ()
    assert first.usage.prompt_tokens > 0 and first.usage.completion_tokens > 0
    assert first.finish_reason == "tool_calls"


def test_mock_answers_in_text_after_a_tool_result() -> None:
    request = {
        **REQUEST,
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "lookup", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c", "content": "found"},
        ],
    }
    result = Client(make_plan("mock", "echo"), env={}).generate(request)
    assert result.tool_calls == () and result.text.startswith("mock reply ")
    other = Client(make_plan("mock", "echo"), env={}).generate({**request, "system": "different"})
    assert other.text != result.text


def test_mock_never_imports_litellm(tmp_path: Path) -> None:
    import subprocess

    plan_path = tmp_path / "mock.json"
    plan_path.write_bytes(make_plan("mock", "echo").to_bytes())
    code = (
        "import sys; from capplan.executor.client import Client; "
        f"r = Client.from_plan_file({str(plan_path)!r}).generate({REQUEST!r}); "
        "assert 'litellm' not in sys.modules, 'litellm imported'; print(r.tool_calls[0].name)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "lookup"


def test_mock_object_reads_both_ways() -> None:
    obj = MockObject(a=1)
    assert obj.a == obj["a"] == 1 and getattr(obj, "missing", None) is None
    assert is_mock("mock") and is_mock("Mock/x") and not is_mock("openai")
    response = complete({"model": "m", "messages": [{"role": "user", "content": "x"}], "api_key": "secret"})
    assert response == complete({"model": "m", "messages": [{"role": "user", "content": "x"}], "api_key": "other"})


def test_example_arguments_cover_common_shapes() -> None:
    schema = {
        "type": "object",
        "properties": {
            "u": {"anyOf": [{"type": "null"}, {"type": "number", "exclusiveMinimum": 1}]},
            "l": {"type": "array", "minItems": 2, "items": {"type": "boolean"}},
            "c": {"const": "x"},
            "t": {"type": ["null", "string"]},
        },
        "required": ["u", "l", "c", "t"],
    }
    assert example_arguments(schema) == {"u": 2.0, "l": [False, False], "c": "x", "t": "mmmm"}


def test_policy_set_builds_each_slot_once_with_plan_params() -> None:
    plan = make_plan(policies={"message_assembly_policy": ("nova", {"empty_assistant_filler": " "})})
    policies = PolicySet.from_plan(plan)
    assert policies.message_assembly_policy.empty_assistant_filler == " "
    assert type(policies.schema_sanitizer).name == "passthrough"


def test_policy_set_refuses_bad_params_and_missing_slots() -> None:
    with pytest.raises(PolicyConstructionError, match="message_assembly_policy policy 'nova' refuses"):
        PolicySet.from_plan(make_plan(policies={"message_assembly_policy": ("nova", {"empty_assistant_filler": ""})}))
    body = make_plan().body()
    del body["policies"]["cache_policy"]
    with pytest.raises(PolicyConstructionError, match="cache_policy"):
        PolicySet.from_plan(Plan.seal(body))


def test_from_plan_file_verifies_the_plan(tmp_path: Path) -> None:
    from capplan.executor.plan import PlanLoadError

    path = tmp_path / "p.json"
    data = json.loads(make_plan().to_bytes())
    data["effective_preset"] = "edited"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(PlanLoadError, match="fingerprint mismatch"):
        Client.from_plan_file(path)

"""What a builder remembers between builds (the system/tool head, the settings tail) never leaks.

A build reuses the enriched and cache-marked system prompt and tools, and the parameter,
value-rule and transport keys of the same settings. These tests hold the contracts that make
that invisible: every build's kwargs (and every nested dict or list of the remembered keys) are
its own, credentials are read on every build, substitutions are logged on every build, and
settings that compare equal but go on the wire differently are never confused.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
from typing import Any

import pytest

from capplan.executor.client import Client
from capplan.executor.messages import ChatRequest
from tests.executor.plans import make_plan

LOOKUP = {
    "type": "function",
    "function": {"name": "lookup", "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}},
}
ANTHROPIC = {"content_policy": "anthropic", "reasoning_codec": "anthropic", "cache_policy": "anthropic_ephemeral"}
THINKING = {"reasoning_via_thinking_kwarg": True, "reasoning_budget_default": 512, "supports_seed": False}
OPENROUTER = {"provider_order": ["anthropic"], "allow_fallbacks": False, "data_collection": "deny"}

# every remembered key with a nested value, across the plans below
PLANS = {
    "anthropic-thinking": make_plan(
        "anthropic", "claude-x", policies=ANTHROPIC, params=THINKING,
        request_defaults={"reasoning": {"mode": "budget"}}, allowed_openai_params=("tools", "tool_choice"),
    ),
    "openrouter-extra-body": make_plan(
        "openrouter", "anthropic/claude-x", openrouter=OPENROUTER, params={"reasoning_via_extra_body": True},
        request_defaults={"reasoning": {"mode": "adaptive", "effort_hint": "high"}},
    ),
}
REQUEST = {
    "system": "Be brief.",
    "tools": [LOOKUP],
    "tool_choice": {"type": "function", "function": {"name": "lookup"}},
    "messages": [{"role": "user", "content": "find 7"}],
}


def _vandalise(value: Any) -> None:
    """Edit every dict and list inside ``value`` in place."""
    if isinstance(value, dict):
        for item in list(value.values()):
            _vandalise(item)
        value["vandal"] = True
    elif isinstance(value, list):
        for item in value:
            _vandalise(item)
        value.append("vandal")


@pytest.mark.parametrize("name", list(PLANS))
def test_builds_never_edit_the_shared_fragment_and_the_top_level_dict_is_each_builds_own(name: str) -> None:
    plan = PLANS[name]
    client = Client(plan, env={"OPENROUTER_API_KEY": "sk-or"})
    request = ChatRequest.model_validate(REQUEST)
    first = client.build(request).kwargs
    nested = {key: value for key, value in first.items() if isinstance(value, (dict, list)) and key not in ("messages", "tools")}
    assert nested, "the plan should give the tail nested values"
    snapshot = copy.deepcopy(nested)
    for _ in range(3):  # rebuilt, previewed, and built from another client of the plan
        client.build(ChatRequest.model_validate(REQUEST))
        client.preview(request)
        Client(plan, env={"OPENROUTER_API_KEY": "sk-or"}).build(request)
    assert {key: first[key] for key in nested} == snapshot
    # the kwargs dict and its two lists are each build's own
    first["messages"].append({"role": "user", "content": "vandal"})
    first["tools"].append("vandal")
    first["model"] = "vandal"
    first.pop("timeout")
    fresh = Client(plan, env={"OPENROUTER_API_KEY": "sk-or"}).build(request).kwargs
    again = client.build(ChatRequest.model_validate(REQUEST)).kwargs
    assert json.dumps(again, sort_keys=True) == json.dumps(fresh, sort_keys=True)
    assert "vandal" not in json.dumps(again)


@pytest.mark.parametrize("name", list(PLANS))
def test_a_transport_editing_every_nested_value_never_reaches_the_next_request(name: str) -> None:
    sent: list[dict[str, Any]] = []

    def completion(**kwargs: Any) -> dict[str, Any]:
        sent.append(copy.deepcopy(kwargs))
        for key, value in kwargs.items():
            if key not in ("messages", "tools"):
                _vandalise(value)
        return {"choices": [{"message": {"content": "ok"}}]}

    client = Client(PLANS[name], completion=completion, env={"OPENROUTER_API_KEY": "sk-or"})
    request = ChatRequest.model_validate(REQUEST)
    client.generate(request)
    client.generate(request)
    assert len(sent) == 2 and sent[0] == sent[1]
    assert "vandal" not in json.dumps(client.build(request).kwargs)


def test_credentials_are_read_on_every_build() -> None:
    env = {"OPENROUTER_API_KEY": "sk-first"}
    client = Client(make_plan("openrouter", "x/y"), env=env)
    request = ChatRequest.model_validate({"messages": [{"role": "user", "content": "x"}]})
    assert client.build(request).kwargs["api_key"] == "sk-first"
    env["OPENROUTER_API_KEY"] = "sk-second"
    assert client.build(request).kwargs["api_key"] == "sk-second"
    del env["OPENROUTER_API_KEY"]
    assert "api_key" not in client.build(request).kwargs


def test_every_build_that_substitutes_a_value_logs_it(caplog: pytest.LogCaptureFixture) -> None:
    evidence = "2026-08-01, measured"
    plan = make_plan(rules={"reasoning_effort": {"high": {"action": "override", "with": "low", "evidence": evidence}}})
    client = Client(plan, env={})
    request = ChatRequest.model_validate(
        {"messages": [{"role": "user", "content": "x"}], "reasoning": {"mode": "adaptive", "effort_hint": "high"}}
    )
    with caplog.at_level(logging.WARNING, logger="capplan.value_rules"):
        built = [client.build(request) for _ in range(3)]
    overrides = [r for r in caplog.records if "overridden" in r.getMessage()]
    assert len(overrides) == 3
    assert all(b.kwargs["reasoning_effort"] == "low" and len(b.value_substitutions) == 1 for b in built)


def test_settings_equal_as_keys_but_not_on_the_wire_are_told_apart() -> None:
    client = Client(make_plan(), env={})
    request = ChatRequest.model_validate({"messages": [{"role": "user", "content": "x"}], "temperature": 0.0})
    assert '"temperature": 0.0' in json.dumps(client.build(request).kwargs)
    # 0.0 == -0.0 and 1.0 == 1 as dict keys; each goes on the wire as itself (model_copy skips validation)
    assert '"temperature": -0.0' in json.dumps(client.build(request.model_copy(update={"temperature": -0.0})).kwargs)
    assert '"temperature": 1.0' in json.dumps(client.build(request.model_copy(update={"temperature": 1.0})).kwargs)
    assert '"temperature": 1,' in json.dumps(client.build(request.model_copy(update={"temperature": 1})).kwargs)


def test_each_settings_combination_builds_what_a_fresh_client_builds() -> None:
    plan = PLANS["anthropic-thinking"]
    client = Client(plan, env={})
    variants: list[dict[str, Any]] = [
        {},
        {"max_tokens": 64},
        {"reasoning": {"mode": "budget", "budget_tokens": 1024}},
        {"reasoning": {"mode": "off"}, "temperature": 0.5, "top_p": 0.9},
        {"tool_choice": "required", "parallel_tool_calls": False},
        {"system": "Other."},
        {"tools": [LOOKUP, dict(LOOKUP, function={**LOOKUP["function"], "name": "other"})], "tool_choice": "auto"},
    ]
    for _ in range(2):  # the second round is served from what the first remembered
        for variant in variants:
            request = {**REQUEST, **variant}
            expected = json.dumps(Client(plan, env={}).build(request).kwargs, sort_keys=True)
            assert json.dumps(client.build(request).kwargs, sort_keys=True) == expected, variant


def test_a_build_is_a_complete_built_request() -> None:
    from capplan.executor.request_builder import BuiltRequest

    built = Client(PLANS["anthropic-thinking"], env={}).build(ChatRequest.model_validate(REQUEST))
    assert set(vars(built)) == {field.name for field in dataclasses.fields(BuiltRequest)}
    assert built == dataclasses.replace(built)


def test_the_converter_skips_only_policy_calls_whose_answer_it_knows() -> None:
    from capplan.executor.message_convert import MessageConverter
    from capplan.executor.policies.content_policy import OpenAIContent
    from capplan.executor.policies.message_assembly_policy import FillEmptyAssistantAssembly, NullMessageAssembly
    from capplan.executor.policy_set import PolicySet

    class Shouting(OpenAIContent):
        def render_tool_result(self, text: str, images: Any = ()) -> str:
            return text.upper()

    class Stamped(NullMessageAssembly):
        def assistant_content(self, content: str | None, *, has_tool_calls: bool) -> str | None:
            return f"[{content}]"

    messages = ChatRequest.model_validate({"messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": {"a": 1}}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "done"},
    ]}).messages
    policies = PolicySet.from_plan(make_plan())

    def wire(**replaced: Any) -> list[dict[str, Any]]:
        converter = MessageConverter(dataclasses.replace(policies, **replaced))
        return [converter.message(m) for m in messages]

    plain = wire()
    assert plain[1]["content"] == "" and plain[2]["content"] == "done"
    assert plain[1]["tool_calls"][0]["function"]["arguments"] == '{"a": 1}'
    assert wire(content_policy=Shouting())[2]["content"] == "DONE"
    assert wire(message_assembly_policy=Stamped())[1]["content"] == "[]"
    assert wire(message_assembly_policy=FillEmptyAssistantAssembly(" "))[1]["content"] == " "


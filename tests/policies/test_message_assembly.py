"""Message assembly: the empty-assistant filler and the policy that leaves content alone."""

from __future__ import annotations

from typing import Any

import pytest

from capplan.executor.policies.message_assembly_policy import (
    FillEmptyAssistantAssembly,
    MessageAssemblyPolicy,
    NullMessageAssembly,
)
from capplan.executor.registry import policy_class


@pytest.mark.parametrize(("name", "cls"), [("null", NullMessageAssembly), ("nova", FillEmptyAssistantAssembly)])
def test_registry_names_resolve(name: str, cls: type[MessageAssemblyPolicy]) -> None:
    assert policy_class("message_assembly_policy", name) is cls and cls.name == name


def test_null_policy_never_fills() -> None:
    policy = NullMessageAssembly()
    assert (policy.inject_empty_assistant_filler, policy.empty_assistant_filler) == (False, "")
    assert policy.assistant_content("", has_tool_calls=True) == ""
    assert policy.assistant_content(None, has_tool_calls=True) is None


def test_filler_defaults_to_the_nova_phrase() -> None:
    policy = FillEmptyAssistantAssembly()
    assert policy.inject_empty_assistant_filler is True
    assert policy.empty_assistant_filler == "I'll help you with that."


@pytest.mark.parametrize("content", ["", None, "   ", "\n\t"])
def test_filler_replaces_empty_content_on_tool_call_turns(content: str | None) -> None:
    # the per-instance string, built as a plan builds it: from JSON-able params
    policy = FillEmptyAssistantAssembly(**{"empty_assistant_filler": " "})
    assert policy.assistant_content(content, has_tool_calls=True) == " "


@pytest.mark.parametrize(("content", "has_tool_calls"), [("", False), (None, False), ("Calling it.", True)])
def test_filler_leaves_other_turns_alone(content: str | None, has_tool_calls: bool) -> None:
    assert FillEmptyAssistantAssembly().assistant_content(content, has_tool_calls=has_tool_calls) == content


def test_fillers_are_per_instance() -> None:
    assert FillEmptyAssistantAssembly("a").empty_assistant_filler == "a"
    assert FillEmptyAssistantAssembly("b").empty_assistant_filler == "b"


@pytest.mark.parametrize(("filler", "error"), [("", ValueError), (None, TypeError), (3, TypeError)])
def test_unusable_fillers_are_refused(filler: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="empty_assistant_filler"):
        FillEmptyAssistantAssembly(filler)


def test_unknown_constructor_params_are_refused() -> None:
    with pytest.raises(TypeError):
        FillEmptyAssistantAssembly(filler="x")  # type: ignore[call-arg]

"""Cache policies: the worked example byte for byte, and every rule of the marker contract."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from regen_cache_golden import GOLDEN, REGEN_COMMAND, TOOL_CALL, worked_example

from capplan.core.canonical import canonical_bytes
from capplan.executor.policies.cache_policy import AnthropicEphemeralCache, CachePolicy, NoCache
from capplan.executor.registry import policy_class

MARK = {"type": "ephemeral"}


def marked(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text, "cache_control": MARK}]


def count_markers(value: Any) -> int:
    if isinstance(value, dict):
        return ("cache_control" in value) + sum(count_markers(v) for v in value.values())
    if isinstance(value, list):
        return sum(count_markers(v) for v in value)
    return 0


@pytest.mark.parametrize(("name", "cls"), [("none", NoCache), ("anthropic_ephemeral", AnthropicEphemeralCache)])
def test_registry_names_resolve(name: str, cls: type[CachePolicy]) -> None:
    assert policy_class("cache_policy", name) is cls and cls.name == name


# --- the spec's worked example ---------------------------------------------------------------


def test_worked_example_matches_the_golden_byte_for_byte() -> None:
    assert GOLDEN.exists(), f"golden missing: run `{REGEN_COMMAND}`"
    assert canonical_bytes(worked_example()) == GOLDEN.read_bytes(), (
        f"{GOLDEN.name} is stale: review the policy change, then run `{REGEN_COMMAND}`"
    )


def test_golden_is_the_spec_example_output() -> None:
    """The spec's "Output sent to litellm.completion", transcribed with a concrete tool-call id."""
    spec_output = {
        "messages": [
            {"role": "system", "content": marked("You are a helpful assistant.")},
            {"role": "user", "content": marked("task")},
            {"role": "assistant", "content": "thinking", "tool_calls": [TOOL_CALL]},
            {"role": "tool", "tool_call_id": "call_1", "content": marked("result")},
        ],
        "tools": [
            {"type": "function", "function": {"name": "a", "parameters": {}}},
            {"type": "function", "function": {"name": "b", "parameters": {}}, "cache_control": MARK},
        ],
    }
    assert json.loads(GOLDEN.read_text()) == spec_output
    assert count_markers(spec_output) == 4  # system + tools + first user + tail tool result


# --- apply: system and tools -----------------------------------------------------------------


def test_string_system_becomes_one_marked_block() -> None:
    system, tools, messages = AnthropicEphemeralCache().apply("be brief", None, [])
    assert system == marked("be brief") and tools is None and messages == []


def test_list_system_marks_only_the_last_block_and_replaces_a_prior_marker() -> None:
    blocks = [
        {"type": "text", "text": "one", "cache_control": MARK},
        {"type": "text", "text": "two", "cache_control": {"type": "ephemeral", "ttl": "1h"}},
    ]
    original = copy.deepcopy(blocks)
    system, _, _ = AnthropicEphemeralCache().apply(blocks, None, [])
    assert system == [blocks[0], {"type": "text", "text": "two", "cache_control": MARK}]
    assert blocks == original


@pytest.mark.parametrize("system", [None, "", []])
def test_empty_system_is_left_alone(system: Any) -> None:
    assert AnthropicEphemeralCache().apply(system, None, [])[0] == system


@pytest.mark.parametrize("system", [42, {"text": "x"}, ("a",)])
def test_unknown_system_type_is_refused(system: Any) -> None:
    with pytest.raises(TypeError, match="system prompt must be"):
        AnthropicEphemeralCache().apply(system, None, [])


def test_last_tool_is_marked_and_a_caller_marker_is_replaced() -> None:
    tools = [{"type": "function", "function": {"name": "a"}}, {"type": "function", "function": {"name": "b"}, "cache_control": {"type": "x"}}]
    original = copy.deepcopy(tools)
    _, got, _ = AnthropicEphemeralCache().apply(None, tools, [])
    assert got == [tools[0], {"type": "function", "function": {"name": "b"}, "cache_control": MARK}]
    assert tools == original


@pytest.mark.parametrize("tools", [None, []])
def test_no_tools_no_marker(tools: Any) -> None:
    assert AnthropicEphemeralCache().apply(None, tools, [])[1] == tools


def test_apply_is_idempotent() -> None:
    policy = AnthropicEphemeralCache()
    once = policy.apply("s", [{"name": "t"}], [])
    twice = policy.apply(*once)
    assert twice == once and count_markers(list(twice)) == 2


# --- apply_messages: anchors -----------------------------------------------------------------


def roles(*spec: str) -> list[dict[str, Any]]:
    return [{"role": role, "content": f"{role}{i}"} for i, role in enumerate(spec)]


def marked_positions(messages: list[dict[str, Any]]) -> list[int]:
    return [i for i, m in enumerate(messages) if count_markers(m)]


@pytest.mark.parametrize(
    ("conversation", "expected"),
    [
        (("system", "user", "assistant", "tool"), [1, 3]),  # tail tool + last user
        (("system", "user", "assistant", "user"), [1, 3]),  # tail user + the user before it
        (("system", "user", "assistant", "tool", "assistant"), [1]),  # assistant tail: last user only
        (("user",), [0]),  # one user message: it is the tail, no other user exists
        (("system", "user", "user", "user"), [2, 3]),  # only the two most recent
        (("system", "assistant", "tool"), [2]),  # no user message at all
        (("system",), []),
        ((), []),
    ],
)
def test_anchor_selection(conversation: tuple[str, ...], expected: list[int]) -> None:
    got = AnthropicEphemeralCache().apply_messages(roles(*conversation))
    assert marked_positions(got) == expected
    assert count_markers(got) == len(expected) <= 2


def test_marker_wraps_string_content_and_leaves_other_keys() -> None:
    messages = [{"role": "tool", "tool_call_id": "c", "content": "result", "name": "t"}]
    assert AnthropicEphemeralCache().apply_messages(messages) == [
        {"role": "tool", "tool_call_id": "c", "content": marked("result"), "name": "t"}
    ]


def test_list_content_marks_its_last_block_once() -> None:
    content: list[dict[str, Any]] = [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}, "cache_control": {"type": "old"}},
    ]
    got = AnthropicEphemeralCache().apply_messages([{"role": "user", "content": content}])
    assert got[0]["content"] == [content[0], {**content[1], "cache_control": MARK}]
    assert count_markers(got) == 1


@pytest.mark.parametrize("empty", ["", None, []])
def test_empty_anchor_keeps_its_place_unmarked(empty: Any) -> None:
    messages = [{"role": "user", "content": "early"}, {"role": "user", "content": "late"}, {"role": "tool", "content": empty}]
    got = AnthropicEphemeralCache().apply_messages(messages)
    # the anchors are the tail (empty, so unmarked) and "late"; "early" is not promoted in its place
    assert marked_positions(got) == [1]
    assert got[2] == messages[2]


def test_assistant_and_system_messages_are_never_marked() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "sys"},
        {"role": "assistant", "content": "a", "tool_calls": [TOOL_CALL]},
    ]
    assert AnthropicEphemeralCache().apply_messages(messages) == messages


def test_apply_messages_copies_instead_of_mutating() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "q"}]},
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": "again"},
    ]
    original = copy.deepcopy(messages)
    got = AnthropicEphemeralCache().apply_messages(messages)
    assert messages == original
    assert got is not messages and got[1] is messages[1]


def test_apply_messages_is_idempotent() -> None:
    policy = AnthropicEphemeralCache()
    once = policy.apply_messages(roles("system", "user", "assistant", "tool"))
    assert policy.apply_messages(once) == once


@pytest.mark.parametrize("content", [42, {"type": "text", "text": "x"}, ["not a block"]])
def test_unmarkable_content_is_refused(content: Any) -> None:
    with pytest.raises(TypeError):
        AnthropicEphemeralCache().apply_messages([{"role": "user", "content": content}])


# --- NoCache ---------------------------------------------------------------------------------


def test_no_cache_returns_inputs_verbatim() -> None:
    system, tools, messages = "s", [{"name": "t"}], [{"role": "user", "content": "u"}]
    got = NoCache().apply(system, tools, messages)
    assert got[0] is system and got[1] is tools and got[2] is messages
    assert NoCache().apply_messages(messages) is messages


# --- the whole request's budget: Anthropic counts a caller's markers too -----------------------


def test_a_callers_system_markers_leave_fewer_message_anchors() -> None:
    policy = AnthropicEphemeralCache()
    caller = [{"type": "text", "text": "a", "cache_control": MARK}, {"type": "text", "text": "b", "cache_control": MARK},
              {"type": "text", "text": "c"}]
    system, tools, _ = policy.apply(caller, [{"type": "function", "function": {"name": "t"}}], [])
    messages = policy.apply_messages([{"role": "system", "content": system}, *roles("user", "assistant", "tool")])
    assert count_markers(system) == 3 and count_markers(tools) == 1
    assert marked_positions(messages) == [0]  # only the system message: its three and the tool's make four
    assert count_markers(messages) + count_markers(tools) == 4


def test_one_breakpoint_left_goes_to_the_tail() -> None:
    caller = [{"type": "text", "text": "a", "cache_control": MARK}, {"type": "text", "text": "b", "cache_control": MARK}]
    messages = AnthropicEphemeralCache().apply_messages(
        [{"role": "system", "content": caller}, *roles("user", "assistant", "tool")])
    assert marked_positions(messages) == [0, 3] and count_markers(messages) == 3  # with the tool's: four


def test_a_list_anchors_own_markers_count_against_the_budget() -> None:
    parts = [{"type": "text", "text": f"p{i}", "cache_control": MARK} for i in range(2)] + [{"type": "text", "text": "last"}]
    messages = AnthropicEphemeralCache().apply_messages(
        [{"role": "system", "content": marked("s")}, {"role": "user", "content": "early"}, {"role": "user", "content": parts}])
    # system 1 + tool 1 leave two: the tail's own two markers take them, so neither its last part nor "early" is marked
    assert messages[2]["content"] == parts and messages[1]["content"] == "early"


def test_markers_beyond_the_limit_are_refused_before_the_provider_sees_them() -> None:
    caller = [{"type": "text", "text": str(i), "cache_control": MARK} for i in range(4)]
    with pytest.raises(ValueError, match="at most 4 in the whole request"):
        AnthropicEphemeralCache().apply_messages([{"role": "system", "content": caller}, *roles("user")])

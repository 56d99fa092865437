"""The simulator's private request: role flip, skipping, coalescing, greeting, refusals."""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest

from capplan.trials.usersim.request import (
    SIMULATOR_GREETING,
    UnanswerableTranscript,
    build_request,
    dialogue_text,
    flip_transcript,
    opening_request,
)


def user(content: Any) -> dict[str, Any]:
    return {"role": "user", "content": content}


def agent(content: Any, **extra: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": content, **extra}


TOOL_CALL = [{"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]


def test_roles_flip() -> None:
    transcript = [agent("Hello, how can I help?"), user("My order is late."), agent("Which one?")]
    assert build_request(transcript) == [
        {"role": "user", "content": "Hello, how can I help?"},
        {"role": "assistant", "content": "My order is late."},
        {"role": "user", "content": "Which one?"},
    ]


def test_caller_seeded_opening_gets_a_synthetic_greeting_and_is_kept() -> None:
    transcript = [user("My order is late."), agent("Which order?")]
    assert build_request(transcript) == [
        {"role": "user", "content": SIMULATOR_GREETING},
        {"role": "assistant", "content": "My order is late."},
        {"role": "user", "content": "Which order?"},
    ]


def test_bootstrapped_opening_replays_the_dispatched_greeting() -> None:
    greeting = "Good morning, this is Acme support."
    assert opening_request(greeting=greeting) == [{"role": "user", "content": greeting}]
    transcript = [user("Hi, my card was declined."), agent("Sorry to hear that.")]
    request = build_request(transcript, greeting=greeting)
    assert request[0] == {"role": "user", "content": greeting}
    assert request[1] == {"role": "assistant", "content": "Hi, my card was declined."}


def test_system_and_tool_turns_are_skipped() -> None:
    transcript = [
        {"role": "system", "content": "You are a support agent."},
        user("Where is my parcel?"),
        agent(None, tool_calls=TOOL_CALL),
        {"role": "tool", "tool_call_id": "c1", "content": '{"status": "in transit"}'},
        agent("It is in transit."),
    ]
    assert build_request(transcript) == [
        {"role": "user", "content": SIMULATOR_GREETING},
        {"role": "assistant", "content": "Where is my parcel?"},
        {"role": "user", "content": "It is in transit."},
    ]


def test_agent_text_is_kept_and_its_tool_calls_dropped() -> None:
    transcript = [user("Refund please."), agent("Let me check.", tool_calls=TOOL_CALL)]
    request = build_request(transcript)
    assert request[-1] == {"role": "user", "content": "Let me check."}
    assert all(set(message) == {"role", "content"} for message in request)


def test_adjacent_turns_coalesce_so_roles_alternate() -> None:
    transcript = [
        user("Hi."),
        user("   "),
        user("My order is late."),
        agent("Let me look."),
        agent(None, tool_calls=TOOL_CALL),
        {"role": "tool", "tool_call_id": "c1", "content": "{}"},
        agent("Found it: it ships tomorrow."),
    ]
    request = build_request(transcript)
    assert request == [
        {"role": "user", "content": SIMULATOR_GREETING},
        {"role": "assistant", "content": "Hi.\n\nMy order is late."},
        {"role": "user", "content": "Let me look.\n\nFound it: it ships tomorrow."},
    ]
    roles = [message["role"] for message in request]
    assert all(a != b for a, b in itertools.pairwise(roles))


def test_words_are_never_altered() -> None:
    text = "  Sure —  order #12 \n\n (and thanks) "
    request = build_request([agent("Hello"), user(text), agent("ok")])
    assert request[1]["content"] == text


def test_multi_part_content_uses_its_text_parts() -> None:
    transcript = [
        user("Hi."),
        agent(
            [
                {"type": "text", "text": "Here is"},
                {"type": "image_url", "image_url": {}},
                {"type": "text", "text": "your label."},
            ]
        ),
    ]
    assert build_request(transcript)[-1] == {"role": "user", "content": "Here is\nyour label."}


def test_the_simulator_opening_is_never_trimmed_in_a_long_transcript() -> None:
    transcript: list[dict[str, Any]] = [user("OPENING: I need a refund for order 7.")]
    for turn in range(200):
        transcript += [agent(f"agent {turn}"), user(f"user {turn}")]
    transcript.append(agent("Anything else?"))
    request = build_request(transcript)
    assert request[0] == {"role": "user", "content": SIMULATOR_GREETING}
    assert request[1] == {"role": "assistant", "content": "OPENING: I need a refund for order 7."}
    assert len(request) == 2 + 2 * 200 + 1


def test_the_transcript_is_not_modified() -> None:
    transcript = [user("Hi."), user("Still there?"), agent("Yes."), agent("How can I help?")]
    before = copy.deepcopy(transcript)
    request = build_request(transcript)
    assert transcript == before
    assert SIMULATOR_GREETING not in [m["content"] for m in transcript]
    request[1]["content"] = "mutated"
    assert transcript == before


@pytest.mark.parametrize(
    ("transcript", "why"),
    [
        ([], "no agent turn"),
        ([{"role": "system", "content": "sys"}], "no agent turn"),
        ([user("Hi, my order is late.")], "no agent turn"),
        ([user("Hi."), agent(None, tool_calls=TOOL_CALL)], "carries no dialogue text"),
        ([user("Hi."), agent("   \n\t")], "carries no dialogue text"),
        ([user("Hi."), agent("")], "carries no dialogue text"),
        (
            [user("Hi."), agent("Checking."), agent(None, tool_calls=TOOL_CALL)],
            "carries no dialogue text",
        ),
        ([user("Hi."), agent([{"type": "image_url", "image_url": {}}])], "carries no dialogue"),
        ([user("Hi."), agent("Which order?"), user("Order 7.")], "spoke after"),
    ],
)
def test_unanswerable_transcripts_raise(transcript: list[dict[str, Any]], why: str) -> None:
    with pytest.raises(UnanswerableTranscript, match=why):
        build_request(transcript)


def test_unanswerable_is_a_runtime_error() -> None:
    assert issubclass(UnanswerableTranscript, RuntimeError)


def test_a_trailing_whitespace_user_turn_does_not_make_it_unanswerable() -> None:
    request = build_request([user("Hi."), agent("Which order?"), user("  ")])
    assert request[-1] == {"role": "user", "content": "Which order?"}


@pytest.mark.parametrize(
    ("message", "error", "match"),
    [
        ({"role": "critic", "content": "x"}, ValueError, "unknown role 'critic'"),
        ({"content": "x"}, ValueError, "no string 'role'"),
        ({"role": "assistant", "content": 5}, TypeError, r"transcript\[1\]\.content is a int"),
        ({"role": "assistant", "content": ["x"]}, TypeError, r"content\[0\] is a str"),
        (
            {"role": "assistant", "content": [{"type": "text", "text": None}]},
            TypeError,
            r"content\[0\]\.text is NoneType",
        ),
    ],
)
def test_malformed_messages_are_refused_with_their_index(
    message: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        build_request([user("Hi."), message, agent("ok")])


def test_a_blank_greeting_is_refused() -> None:
    with pytest.raises(ValueError, match="greeting is blank"):
        build_request([user("Hi."), agent("Hello.")], greeting=" ")
    with pytest.raises(ValueError, match="greeting is blank"):
        opening_request(greeting="")


def test_flip_alone_keeps_an_assistant_side_start() -> None:
    # The greeting is build_request's concern; flip_transcript only mirrors.
    assert flip_transcript([user("Hi.")]) == [{"role": "assistant", "content": "Hi."}]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, None),
        ("", None),
        (" \n", None),
        ("x", "x"),
        ([], None),
        ([{"type": "text", "text": " a"}], " a"),
    ],
)
def test_dialogue_text(content: Any, expected: str | None) -> None:
    assert dialogue_text({"role": "user", "content": content}, index=0) == expected

"""A request body's JSON through the message-list memory: exactly json.dumps, turn after turn."""

from __future__ import annotations

import json
import random
import threading
from typing import Any

import pytest

from capplan.executor.direct.body_json import MessageListEncoder, body_bytes
from tests.trials.test_record_yaml import _TRICKY


def _reference(body: Any) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _message(rng: random.Random, i: int) -> dict[str, Any]:
    role = rng.choice(["user", "assistant", "tool"])
    message: dict[str, Any] = {"role": role, "content": rng.choice(_TRICKY + [None, f"turn {i} ünï 🙂"])}
    if role == "assistant" and rng.random() < 0.5:
        message["tool_calls"] = [{"id": f"c{i}", "type": "function",
                                  "function": {"name": "add", "arguments": json.dumps({"n": i, "f": 1.5e-7})}}]
    return message


@pytest.mark.fast_side
@pytest.mark.parametrize("seed", range(10))
def test_a_growing_conversation_is_encoded_exactly_as_json_dumps(seed: int) -> None:
    rng = random.Random(seed)
    encoder = MessageListEncoder()
    history: list[dict[str, Any]] = [{"role": "system", "content": "You keep a counter."}]
    for turn in range(40):
        history = history + [_message(rng, turn) for _ in range(rng.randrange(0, 4))]  # a new list, the same dicts
        body = {"messages": history, "tools": [{"type": "function"}], "model": "m", "temperature": 0.0, "n": None}
        assert body_bytes(body, encoder) == _reference(body)
        assert body_bytes(body, encoder) == _reference(body)  # a retry sends the same list again
    # each turn extended the text of the turn before, which it replaced: one entry per conversation
    assert len(encoder._entries) == 1


def test_a_message_replaced_by_an_equal_one_in_another_key_order_is_encoded_again() -> None:
    encoder = MessageListEncoder()
    first = {"role": "user", "content": "hi"}
    body = {"messages": [first, {"role": "assistant", "content": "ok"}]}
    assert body_bytes(body, encoder) == _reference(body)
    reordered = {"content": "hi", "role": "user"}  # == first, another text
    body = {"messages": [reordered, body["messages"][1], {"role": "user", "content": "more"}]}
    assert body_bytes(body, encoder) == _reference(body)


def test_branches_from_one_prefix_and_an_emptied_history() -> None:
    encoder = MessageListEncoder()
    base = [{"role": "user", "content": str(i)} for i in range(5)]
    a = base + [{"role": "assistant", "content": "a"}]
    b = base + [{"role": "assistant", "content": "b"}]
    for messages in (base, a, b, base, a, [], base[:2]):
        assert body_bytes({"messages": messages}, encoder) == _reference({"messages": messages})


def test_bodies_it_does_not_take_are_plain_json_dumps() -> None:
    encoder = MessageListEncoder()
    for body in ({"model": "m"}, {"messages": ("a", "b")}, {1: "int key", "messages": [{"role": "user"}]},
                 {"messages": []}):
        assert body_bytes(body, encoder) == _reference(body)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        body_bytes({"messages": [{"role": object()}]}, encoder)  # what json.dumps refuses, refused alike


def test_it_stays_exact_and_bounded_under_threads() -> None:
    encoder = MessageListEncoder(size=8)
    failures: list[str] = []

    def conversation(seed: int) -> None:
        rng = random.Random(seed)
        history: list[dict[str, Any]] = []
        for turn in range(60):
            history = history + [_message(rng, turn)]
            if body_bytes({"messages": history}, encoder) != _reference({"messages": history}):
                failures.append(f"conversation {seed}, turn {turn}")

    threads = [threading.Thread(target=conversation, args=(seed,)) for seed in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not failures
    assert len(encoder._entries) <= 8 + len(threads)  # racing writers may leave one extra entry each


@pytest.mark.fast_side
@pytest.mark.parametrize("seed", range(5))
def test_a_growing_responses_input_is_encoded_exactly_as_json_dumps(seed: int) -> None:
    rng = random.Random(seed)
    encoder = MessageListEncoder()
    items: list[dict[str, Any]] = []
    for turn in range(30):
        new: list[dict[str, Any]] = [{"type": "reasoning", "id": f"rs_{turn}", "summary": [],
                                      "encrypted_content": rng.choice(_TRICKY + ["gAAA.eyJ9"])},
                                     {"type": "function_call", "call_id": f"call_{turn}", "name": "add",
                                      "arguments": json.dumps({"n": turn})},
                                     {"type": "function_call_output", "call_id": f"call_{turn}",
                                      "output": rng.choice(_TRICKY)}]
        items = items + new[: rng.randrange(1, 4)]  # a new list, the same item dicts
        body = {"model": "gpt-5", "instructions": "Count.", "input": items, "store": False,
                "include": ["reasoning.encrypted_content"]}
        assert body_bytes(body, encoder) == _reference(body)
    assert len(encoder._entries) == 1  # each turn's text extended the one before
    assert body_bytes({"model": "m", "input": "just text"}, encoder) == _reference({"model": "m", "input": "just text"})

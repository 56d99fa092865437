"""A long conversation costs per turn what its new messages cost, and sends the same bytes as the plain path.

The speed paths for long histories (the direct transport's clean-history memo, the narrow copy of the
kwargs litellm receives; ``benchmarks/history_cost.py``) must change nothing on the wire: a conversation
grown turn by turn, as a trial grows it, is sent once in the fast mode and once in the reference mode
(every speed path off), by the real client to a loopback server, and every request's bytes must match.
Through real litellm the history the request builder shares between turns must come back untouched.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from capplan.core import reference_mode as switch
from capplan.executor.client import Client
from capplan.executor.direct.messages import CleanHistoryMemo, _needs_rewrite
from capplan.executor.litellm_copy import litellm_own_copy, shallow_history
from capplan.executor.messages import ChatRequest
from capplan.executor.plan import Plan
from tests.fake_provider import FakeProvider

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-history-cost"
TURNS = 40  # 4 messages a turn: 161 messages at the end, enough for every memo to carry many turns
LITELLM_TURNS = 12  # litellm costs ~10 ms a call: enough turns that a write into the shared history shows
IMAGE = "data:image/png;base64,iVBORw0KGgo="


def _plan(name: str, transport: str) -> Plan:
    body = Plan.load(ROOT / "golden" / "plans" / f"{name}.json").body()
    body["wire"] = {**body["wire"], "transport": transport}
    return Plan.seal(body)


def _turn(turn: int, *, image: bool = False) -> list[dict[str, Any]]:
    call = f"call_{turn}"
    user: Any = f"add {turn + 1} more, then say the value (step {turn}, ünï 🙂)"
    if image:
        user = [{"type": "text", "text": user}, {"type": "image_url", "image_url": {"url": IMAGE, "detail": "low"}}]
    return [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": call, "type": "function", "function": {"name": "add", "arguments": f'{{"amount": {turn}}}'}}]},
        {"role": "tool", "tool_call_id": call, "content": f'{{"value": {turn}}}'},
        {"role": "assistant", "content": f"The counter is now {turn}."},
        {"role": "user", "content": user},
    ]


FIRST = {
    "system": "You keep a counter.",
    "tools": [{"type": "function", "function": {"name": "add", "description": "Add to the counter.", "parameters": {
        "type": "object", "properties": {"amount": {"type": "integer"}}, "required": ["amount"]}}}],
    "messages": [{"role": "user", "content": "add one"}],
}


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProvider]:
    with FakeProvider() as fake:
        yield fake


@pytest.fixture
def keyed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)  # the openai SDK under litellm reads the process environment
    monkeypatch.delenv("LLM_PROXY_BASE_URL", raising=False)


def _in_mode(reference: bool) -> Any:
    class _Mode:
        def __enter__(self) -> None:
            self.saved = switch._decided
            switch._decided = reference

        def __exit__(self, *exc: Any) -> None:
            switch._decided = self.saved

    return _Mode()


def _grow(client: Client, server: FakeProvider, *, turns: int = TURNS, image_at: int | None = None,
          check_shared: bool = False) -> list[bytes]:
    """Send a conversation turn by turn (``ChatRequest.extended``, as the trial loop does); every body's bytes."""
    server.reset()
    request = ChatRequest.model_validate(FIRST)
    for turn in range(turns):
        request = request.extended(_turn(turn, image=turn == image_at))
        if check_shared:
            # the builder's cached dicts, shared with the build generate makes: litellm must leave them as they are
            shared = client.build(request).kwargs
            before = copy.deepcopy(shared)
        client.generate(request)
        if check_shared:
            assert shared == before, f"turn {turn}: litellm changed the history the next turn is built from"
    return [r.raw for r in server.requests]


def _both_modes(plan: Plan, server: FakeProvider, **grow: Any) -> tuple[list[bytes], list[bytes]]:
    sent = {}
    for reference in (False, True):
        with _in_mode(reference):
            sent[reference] = _grow(Client(plan, api_base=server.base, env={"OPENAI_API_KEY": KEY},
                                           sleep=lambda s: None), server, **grow)
    assert len(sent[False]) == grow.get("turns", TURNS)
    return sent[False], sent[True]


@pytest.mark.parametrize("image_at", [None, 7], ids=["text", "image_midway"])
def test_a_long_chat_history_sends_the_same_bytes_in_both_modes_on_the_direct_transport(
        server: FakeProvider, keyed: None, image_at: int | None) -> None:
    fast, reference = _both_modes(_plan("gpt-4o", "direct"), server, image_at=image_at)
    assert fast == reference
    if image_at is not None:  # the image part is rewritten as litellm does (a new dict), on every later turn too
        assert fast[-1].count(b'"image_url":{"url":"' + IMAGE.encode()) == 1


def test_a_long_responses_history_sends_the_same_bytes_in_both_modes_on_the_direct_transport(
        server: FakeProvider, keyed: None) -> None:
    fast, reference = _both_modes(_plan("gpt-5", "direct"), server)
    assert fast == reference
    assert fast[-1].count(b'"function_call_output"') == TURNS


@pytest.mark.parametrize("name", ["gpt-4o", "gpt-5"], ids=["chat", "responses"])
def test_litellm_gets_a_narrow_copy_and_sends_the_same_bytes_as_with_a_deep_one(
        server: FakeProvider, keyed: None, name: str) -> None:
    fast, reference = _both_modes(_plan(name, "litellm"), server, turns=LITELLM_TURNS, check_shared=True)
    assert fast == reference


def test_the_narrow_copy_owns_everything_litellm_writes_into() -> None:
    message = {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function"}]}
    tools = [{"type": "function", "function": {"name": "add"}}]
    kwargs = {"model": "openai/m", "messages": [message], "tools": tools, "extra_body": {"x": [1]}}
    out = shallow_history(kwargs)
    assert out == kwargs and out is not kwargs
    assert out["messages"] is not kwargs["messages"] and out["messages"][0] is not message
    assert out["tools"][0]["function"] is not tools[0]["function"] and out["extra_body"]["x"] is not kwargs["extra_body"]["x"]
    out["messages"][0]["tool_calls"] = []  # what litellm's validate_and_fix_openai_messages does
    assert message["tool_calls"] == [{"id": "c", "type": "function"}]
    # a native route, and the reference mode, keep the whole deep copy
    native = litellm_own_copy({**kwargs, "model": "anthropic/claude"}, "litellm")
    assert native["messages"][0]["tool_calls"] is not message["tool_calls"]
    with _in_mode(True):
        assert litellm_own_copy(kwargs, "openai-chat")["messages"][0]["tool_calls"] is not message["tool_calls"]
    with _in_mode(False):
        assert litellm_own_copy(kwargs, "openai-chat")["messages"][0]["tool_calls"] is message["tool_calls"]


@pytest.mark.parametrize("reference", [False, True], ids=["fast", "reference"])
def test_the_clean_history_memo_answers_as_the_whole_scan(reference: bool) -> None:
    with _in_mode(reference):
        _memo_answers_as_the_whole_scan(reference)


def _memo_answers_as_the_whole_scan(reference: bool) -> None:
    memo = CleanHistoryMemo()
    history: list[Any] = [{"role": "user", "content": "hi"}]
    for turn in range(30):
        history = history + _turn(turn, image=turn in (12, 20))  # a new list, the same dicts, as the builder hands out
        assert memo.needs_rewrite(history) is _needs_rewrite(history)
        assert memo.needs_rewrite(history) is _needs_rewrite(history)  # a retry sends the same list again
        if turn == 5:  # one conversation, one entry: each turn's list replaced the one before (none kept in reference)
            assert len(memo._entries) == (0 if reference else 1)
    clean = [{"role": "user", "content": "a"}, {"role": "tool", "content": "b"}]
    assert memo.needs_rewrite(clean) is False
    # an entry vouches only for its very objects: an equal-looking list holding a media part is scanned
    swapped = [clean[0], {"role": "tool", "content": [{"type": "image_url", "image_url": {"url": IMAGE}}]}]
    assert memo.needs_rewrite(swapped) is True
    assert memo.needs_rewrite([*clean, {"role": "user", "content": [{"type": "file", "file": {}}]}]) is True
    assert memo.needs_rewrite([]) is False

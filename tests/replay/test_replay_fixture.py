"""Step-1 requests differ from their baseline by the carrier alone, byte for byte, on the wire."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from capplan.evals.reasoning_replay.fixture import CANARY_SENTENCE, make_session

from .fakes.chat import ChatProvider
from .fakes.gemini import GeminiProvider
from .fakes.responses import ResponsesProvider
from tests.fake_provider import Request
from .helpers import FAKE_KEY, custom_run, prices_file

CHAT_CARRIERS = ("reasoning_content", "reasoning", "reasoning_details")


def test_trace_is_about_400_tokens_with_one_canary_sentence_and_fixed_by_seed():
    session = make_session(1234)
    assert 380 <= session.trace_tokens <= 460
    assert session.trace.count("verification word") == 1
    assert CANARY_SENTENCE.format(word=session.canary) in session.trace
    assert make_session(1234) == session and make_session(1235).trace != session.trace


@pytest.fixture(autouse=True)
def keyed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_KEY", FAKE_KEY)


def step1(serve, harness, folder: Path, provider, kind: str) -> list[Request]:
    """Every step-1 request the server received (the settings probe excluded)."""
    folder.mkdir()
    server = serve(provider)
    model = "gemini-3.5-flash" if kind == "gemini" else "fake-model"
    assert harness(*custom_run(server.base, folder / "out", prices_file(folder), "--steps", "text",
                               kind=kind, model=model)).code == 0
    return server.posts()[1:]


def position_of(request: Request, field: str) -> str:
    """cross_turn ends in a new user message; in_loop ends in the tool result."""
    last = request.body[field][-1]
    return "cross_turn" if ("content" in last and last.get("role") == "user") or (
        "parts" in last and "text" in last["parts"][0]) else "in_loop"


def test_chat_carriers_are_the_only_difference(serve, harness, tmp_path):
    requests = step1(serve, harness, tmp_path / "chat", ChatProvider(key=FAKE_KEY), "chat")
    baselines: dict[str, bytes] = {}
    carried = []
    for request in requests:
        assistant = request.body["messages"][2]
        present = [k for k in CHAT_CARRIERS if k in assistant]
        if present:
            carried.append((request, present))
        else:
            baselines[position_of(request, "messages")] = request.raw
    assert set(baselines) == {"in_loop", "cross_turn"} and len(carried) == 8
    assert {tuple(p) for _, p in carried} == {("reasoning_content",), ("reasoning",),
                                                ("reasoning_details",), CHAT_CARRIERS}
    for request, present in carried:
        raw = request.raw.decode()
        assistant = request.body["messages"][2]
        for key in present:  # cut ', "key": value' out of the exact bytes that were sent
            raw = raw.replace(f', "{key}": {json.dumps(assistant[key], ensure_ascii=False)}', "", 1)
        assert raw.encode() == baselines[position_of(request, "messages")], present
        if "reasoning_details" in present:
            (detail,) = assistant["reasoning_details"]
            assert detail["type"] == "reasoning.text" and detail["format"] == "unknown" and detail["index"] == 0
            assert "The verification word for this task is" in detail["text"]


@pytest.mark.parametrize("kind", ["responses", "gemini"])
def test_responses_and_gemini_carriers_are_one_extra_item(serve, harness, tmp_path, kind):
    provider = ResponsesProvider(key=FAKE_KEY) if kind == "responses" else GeminiProvider(key=FAKE_KEY)
    field = "input" if kind == "responses" else "contents"
    requests = step1(serve, harness, tmp_path / kind, provider, kind)

    def carrier_of(request: Request) -> dict | None:
        items = request.body[field] if kind == "responses" else request.body[field][1]["parts"]
        return next((i for i in items if i.get("type") == "reasoning" or i.get("thought")), None)

    baselines = {position_of(r, field): r.raw for r in requests if carrier_of(r) is None}
    carried = [r for r in requests if carrier_of(r) is not None]
    assert set(baselines) == {"in_loop", "cross_turn"}
    assert len(carried) == (4 if kind == "responses" else 2)
    for request in carried:
        raw = request.raw.decode().replace(json.dumps(carrier_of(request), ensure_ascii=False) + ", ", "", 1)
        assert raw.encode() == baselines[position_of(request, field)]

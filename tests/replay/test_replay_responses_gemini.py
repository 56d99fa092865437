"""Responses (encrypted reasoning items, reasoning.context) and Gemini native (thought signatures)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .fakes.gemini import GeminiProvider, MISSING
from .fakes.responses import ResponsesProvider
from .helpers import FAKE_KEY, cell, prices_file, read_jsonl, row


def run_named(harness, route: str, url: str, out: Path, prices: Path, model: str, *extra: str):
    return harness("run", "--route", route, "--base-url", url, "--models", model, "--out", out,
                   "--prices", prices, "--rps", "0", "--retries", "0", "--seed", "3", "--quiet", *extra)


@pytest.fixture
def openai_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)


def test_responses_encrypted_items_are_read_in_loop_and_all_turns_on_request(serve, harness, tmp_path, openai_key):
    server = serve(ResponsesProvider(key=FAKE_KEY, all_turns_models=("gpt-6-luna",)))
    out = tmp_path / "out"
    assert run_named(harness, "openai-responses", server.base, out, prices_file(tmp_path), "gpt-6-luna").code == 0
    assert harness("report", "--out", out).code == 0
    r = row(out, "gpt-6-luna")
    for variant in ("summary_item", "content_item"):
        assert cell(r, "text", "in_loop", variant)["class"] == "consumed"
        assert cell(r, "text", "cross_turn", variant)["delta"] == 0
    assert cell(r, "opaque", "in_loop", "verbatim")["class"] == "consumed"
    assert cell(r, "opaque", "cross_turn", "verbatim")["delta"] == 0
    # all_turns keeps the earlier turn's encrypted reasoning: consumed across the turn boundary
    assert cell(r, "opaque", "cross_turn", "verbatim+all_turns")["class"] == "consumed"
    assert r["verdict"] == "consumes-all-turns"
    # the replayed items are the server's own encrypted blobs with their ids, as the plan's codec sends
    # them: the reasoning item right before its function_call, which has its id back
    verbatim = [p.body for p in server.posts("/responses") if any(
        i.get("type") == "reasoning" and i.get("encrypted_content") for i in p.body["input"])]
    assert verbatim
    for body in verbatim:
        at = next(n for n, i in enumerate(body["input"]) if i.get("type") == "reasoning")
        assert body["input"][at]["id"] == "rs_live_1" and "status" not in body["input"][at]
        assert body["input"][at + 1] == {"type": "function_call", "call_id": "call_resp_1", "name": "get_weather",
                                         "arguments": '{"city":"Paris"}', "id": "fc_live_1"}
    # the stripped baseline sends the call by call_id alone: by its id it would need its reasoning item
    stripped = [p.body for p in server.posts("/responses") if any(
        i.get("type") == "function_call" for i in p.body["input"]) and not any(
        i.get("type") == "reasoning" for i in p.body["input"])]
    assert stripped and all("id" not in i for b in stripped for i in b["input"] if i.get("type") == "function_call")
    contexts = {p.body.get("reasoning", {}).get("context") for p in server.posts("/responses")}
    assert "all_turns" in contexts


def test_responses_all_turns_refused_with_400_on_models_without_it(serve, harness, tmp_path, openai_key):
    server = serve(ResponsesProvider(key=FAKE_KEY))
    out = tmp_path / "out"
    assert run_named(harness, "openai-responses", server.base, out, prices_file(tmp_path), "gpt-6-mini",
                     "--steps", "opaque").code == 0
    harness("report", "--out", out)
    r = row(out, "gpt-6-mini")
    c = cell(r, "opaque", "cross_turn", "verbatim+all_turns")
    assert c["status"] == 400 and "reasoning.context" in c["error"]
    assert r["verdict"] == "in-loop-only"


def test_gemini_signatures_in_loop_only_with_dummy_signature_as_third_request(serve, harness, tmp_path, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", FAKE_KEY)
    server = serve(GeminiProvider(key=FAKE_KEY))
    out = tmp_path / "out"
    done = run_named(harness, "gemini-native", server.base, out, prices_file(tmp_path), "gemini-3.5-flash")
    assert done.code == 0, done.err
    harness("report", "--out", out)
    r = row(out, "gemini-3.5-flash")
    # thought text in history is never fed back
    assert cell(r, "text", "in_loop", "thought_part")["delta"] == 0
    # the unsigned in-loop call is refused; the dummy-signature request stands in as baseline
    stripped = [c for c in read_jsonl(out / "calls.jsonl") if c["step"] == "opaque"
                and c["variant"] == "stripped" and c["position"] == "in_loop"]
    assert stripped[-1]["status"] == 400 and stripped[-1]["error"] == MISSING
    verbatim = cell(r, "opaque", "in_loop", "verbatim")
    assert verbatim["class"] == "consumed" and verbatim["baseline"] == "dummy_signature"
    assert cell(r, "opaque", "cross_turn", "verbatim")["delta"] == 0
    assert cell(r, "opaque", "cross_turn", "dummy_signature")["delta"] == 0
    assert r["verdict"] == "in-loop-only"
    # the key travels in a header, never in the URL
    assert all("key=" not in p.path and p.headers["x-goog-api-key"] == FAKE_KEY for p in server.posts())

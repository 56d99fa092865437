"""Step 1 and step 2 on chat servers whose templates read, drop, ignore or reject replayed reasoning."""

from __future__ import annotations

from pathlib import Path

import pytest

from .fakes.chat import ChatProvider
from .helpers import FAKE_KEY, cell, custom_run, prices_file, read_jsonl, row

TEXT_CARRIERS = ("reasoning_content", "reasoning", "reasoning_details", "all")


@pytest.fixture
def keyed(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("FAKE_KEY", FAKE_KEY)
    return FAKE_KEY


def measure(serve, harness, tmp_path: Path, provider: ChatProvider, *extra: str) -> Path:
    server = serve(provider)
    out = tmp_path / "out"
    done = harness(*custom_run(server.base, out, prices_file(tmp_path), *extra))
    assert done.code == 0, done.err
    assert harness("report", "--out", out).code == 0
    return out


def trace_tokens(out: Path) -> float:
    return read_jsonl(out / "runs.jsonl")[0]["trace_tokens"]


def test_template_reading_every_turn_consumes_all_turns(serve, harness, tmp_path, keyed):
    out = measure(serve, harness, tmp_path, ChatProvider(key=FAKE_KEY))
    r = row(out, "fake-model")
    t = trace_tokens(out)
    assert r["verdict"] == "consumes-all-turns" and r["complete"]
    for position in ("in_loop", "cross_turn"):
        for variant in TEXT_CARRIERS:
            c = cell(r, "text", position, variant)
            assert c["class"] == "consumed" and c["delta"] >= 0.5 * t, c
            assert c["canary"] == "Y"  # the fake model read the word from its prompt
        verbatim = cell(r, "opaque", position, "verbatim")
        assert verbatim["class"] == "consumed" and verbatim["delta"] > 25


def test_qwen3_template_keeps_reasoning_only_after_the_last_user_message(serve, harness, tmp_path, keyed):
    qwen3 = ChatProvider(key=FAKE_KEY, reads=("reasoning_content",), scope="after_last_user",
                         turn1_fields=("reasoning_content",))
    out = measure(serve, harness, tmp_path, qwen3)
    r = row(out, "fake-model")
    assert r["verdict"] == "in-loop-only"
    assert cell(r, "text", "in_loop", "reasoning_content")["class"] == "consumed"
    assert cell(r, "text", "in_loop", "all")["class"] == "consumed"
    # the template does not know the other fields, wherever they sit
    assert cell(r, "text", "in_loop", "reasoning")["delta"] == 0
    assert cell(r, "text", "in_loop", "reasoning_details")["delta"] == 0
    for variant in TEXT_CARRIERS:
        c = cell(r, "text", "cross_turn", variant)
        assert c["delta"] == 0 and c["class"] == "ignored" and c["canary"] == "n"
    assert cell(r, "opaque", "in_loop", "verbatim")["class"] == "consumed"
    assert cell(r, "opaque", "cross_turn", "verbatim")["delta"] == 0


def test_server_that_ignores_the_fields_is_accepted_ignored(serve, harness, tmp_path, keyed):
    out = measure(serve, harness, tmp_path, ChatProvider(key=FAKE_KEY, reads=()))
    r = row(out, "fake-model")
    assert r["verdict"] == "accepted-ignored"
    assert all(c["delta"] == 0 and c["status"] == 200 for c in r["cells"])


def test_field_rejected_with_400_is_recorded_with_the_exact_error(serve, harness, tmp_path, keyed):
    message = "Extra inputs are not permitted: reasoning_details"
    strict = ChatProvider(key=FAKE_KEY, reads=("reasoning_content",), rejects={"reasoning_details": message})
    out = measure(serve, harness, tmp_path, strict, "--steps", "text")
    r = row(out, "fake-model")
    for position in ("in_loop", "cross_turn"):
        for variant in ("reasoning_details", "all"):
            c = cell(r, "text", position, variant)
            assert (c["class"], c["status"], c["error"]) == ("rejected", 400, message)
    assert cell(r, "text", "cross_turn", "reasoning_content")["class"] == "consumed"
    assert r["verdict"] == "consumes-all-turns"
    calls = [c for c in read_jsonl(out / "calls.jsonl") if c.get("variant") == "reasoning_details"]
    assert calls and all(c["status"] == 400 and c["error"] == message for c in calls)


def test_server_rejecting_every_carrier_is_rejected(serve, harness, tmp_path, keyed):
    fields = {name: f"unknown field {name}" for name in ("reasoning_content", "reasoning", "reasoning_details")}
    out = measure(serve, harness, tmp_path, ChatProvider(key=FAKE_KEY, rejects=fields), "--steps", "text")
    r = row(out, "fake-model")
    assert r["verdict"] == "rejected"
    assert {c["status"] for c in r["cells"]} == {400}


def test_turn1_effort_escalates_until_a_carrier_appears(serve, harness, tmp_path, keyed):
    lazy = ChatProvider(key=FAKE_KEY, turn1_min_effort="high")
    server = serve(lazy)
    out = tmp_path / "out"
    assert harness(*custom_run(server.base, out, prices_file(tmp_path), "--steps", "opaque",
                               "--effort-param", "reasoning")).code == 0
    turn1 = [r.body for r in server.posts() if not any(m["role"] == "tool" for m in r.body["messages"])]
    assert [b["reasoning"]["effort"] for b in turn1] == ["low", "medium", "high"]
    records = [c for c in read_jsonl(out / "calls.jsonl") if c["step"] == "opaque_turn1"]
    assert [c["turn1"]["carriers"] for c in records][-1] == ["reasoning_content", "reasoning_details"]
    assert records[0]["turn1"]["carriers"] == []


def test_turn1_without_carrier_leaves_the_opaque_cells_empty(serve, harness, tmp_path, keyed):
    silent = ChatProvider(key=FAKE_KEY, turn1_fields=())
    server = serve(silent)
    out = tmp_path / "out"
    assert harness(*custom_run(server.base, out, prices_file(tmp_path), "--steps", "opaque")).code == 0
    states = [s for s in read_jsonl(out / "cells.jsonl") if s["step"] == "opaque"]
    assert states[-1]["state"] == "no-carrier" and states[-1]["final"]
    assert "low, medium, high" in states[-1]["reason"]
    assert not [c for c in read_jsonl(out / "calls.jsonl") if c["step"] == "opaque"]


def test_a_parameter_refused_by_the_baseline_is_dropped_for_every_request(serve, harness, tmp_path, keyed):
    picky = ChatProvider(key=FAKE_KEY, rejects_params={
        "temperature": "Unsupported parameter: 'temperature' is not supported with this model."})
    server = serve(picky)
    out = tmp_path / "out"
    assert harness(*custom_run(server.base, out, prices_file(tmp_path), "--steps", "text")).code == 0
    sent = server.posts()
    assert "temperature" in sent[0].body and all("temperature" not in r.body for r in sent[1:])
    (meta,) = [c for c in read_jsonl(out / "calls.jsonl") if c["step"] == "meta"]
    assert meta["knobs"]["temperature"] is None and meta["knobs"]["effort"] == "low"


def test_opaque_alone_without_a_carrier_is_not_measured_with_the_reason(serve, harness, tmp_path, keyed):
    # every turn 1 answered 200 in text: nothing to replay, which says nothing about a baseline
    chatty = ChatProvider(key=FAKE_KEY, turn1_tool="unforced")
    out = measure(serve, harness, tmp_path, chatty, "--steps", "opaque")
    r = row(out, "fake-model")
    assert r["verdict"] == "not-measured"
    assert "no tool call with a reasoning carrier" in r["notes"][0] and "--turn1-tool-choice" in r["notes"][0]
    assert r["turn1"]["status"] == 200 and r["turn1"]["tool_choice"] == "auto"


@pytest.mark.parametrize(("choice", "sent"), [
    ("required", "required"),
    ("tool", {"type": "function", "function": {"name": "get_weather"}}),
])
def test_a_forced_turn1_tool_call_reaches_step_2_and_is_recorded(serve, harness, tmp_path, keyed, choice, sent):
    chatty = ChatProvider(key=FAKE_KEY, turn1_tool="unforced", fingerprint="b7000-abc")
    server = serve(chatty)
    out = tmp_path / "out"
    done = harness(*custom_run(server.base, out, prices_file(tmp_path), "--steps", "opaque",
                               "--turn1-tool-choice", choice))
    assert done.code == 0, done.err
    turn1 = [r.body for r in server.posts() if not any(m["role"] == "tool" for m in r.body["messages"])]
    assert turn1 and all(b["tool_choice"] == sent for b in turn1)
    # turn 2 is the measured request: it is sent as the eval defines it, with no forced choice
    assert all("tool_choice" not in r.body for r in server.posts() if r.body not in turn1)
    assert harness("report", "--out", out, "--overlay", "--overlay-route", "llamacpp").code == 0
    r = row(out, "fake-model")
    assert r["verdict"] == "consumes-all-turns" and r["tool_choice"] == choice
    assert r["turn1"]["tool_choice"] == choice and r["fingerprint"] == "b7000-abc"
    snippet = (out / "overlay_snippet.yaml").read_text()
    assert '\n  "llamacpp":\n    "fake-model":\n' in snippet
    assert f'tool_choice: "{choice}"' in snippet and 'fingerprint: "b7000-abc"' in snippet


def test_a_route_refusing_the_forced_choice_is_asked_again_without_it(serve, harness, tmp_path, keyed):
    picky = ChatProvider(key=FAKE_KEY, rejects_params={"tool_choice": "tool_choice is not supported"})
    server = serve(picky)
    out = tmp_path / "out"
    assert harness(*custom_run(server.base, out, prices_file(tmp_path), "--steps", "opaque",
                               "--turn1-tool-choice", "required")).code == 0
    records = [c for c in read_jsonl(out / "calls.jsonl") if c["step"] == "opaque_turn1"]
    assert [(c["status"], c["tool_choice"]) for c in records] == [(400, "required"), (200, "auto")]
    assert harness("report", "--out", out).code == 0
    assert row(out, "fake-model")["verdict"] == "consumes-all-turns"


def test_the_snippet_compiles_into_the_measured_replay_scope(serve, harness, tmp_path, keyed):
    # measured -> snippet -> operator overlay -> plan: a Qwen3-style template gets in_loop
    from capplan.compiler.compile import compile_paths

    qwen3 = ChatProvider(key=FAKE_KEY, reads=("reasoning_content",), scope="after_last_user",
                         turn1_fields=("reasoning_content",), fingerprint="b7000-qwen3")
    out = measure(serve, harness, tmp_path, qwen3, "--steps", "text")
    snippet = tmp_path / "measured.yaml"
    assert harness("report", "--out", out, "--overlay", str(snippet), "--overlay-route", "llamacpp").code == 0
    run = tmp_path / "run.yaml"
    run.write_text("models:\n  local: {provider: llamacpp, name: fake-model}\n")
    base = tmp_path / "base.yaml"
    base.write_text("bindings:\n  llamacpp: {endpoint: 'http://127.0.0.1:8080/v1', custom_llm_provider: openai}\n"
                    "presets:\n  local:\n    match: [fake-model]\n    reasoning_codec: reasoning_content\n")
    plan = compile_paths(run_config=run, overlays=[base, snippet]).plans["local"]
    params = plan.policies["reasoning_codec"].params
    assert params["replay"] == "in_loop" and params["evidence"].startswith("in-loop-only (external:measured.yaml")

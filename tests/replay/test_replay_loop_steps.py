"""The opt-in multi-step in-loop position: a tool loop of three steps, the trace on each.

A template that keeps the whole current tool loop (every assistant step since the last user
message, as Qwen3's does) reads all three traces: ``consumed``. One that keeps only the step right
before the request reads one of them: ``partial``, with a note saying so. The earlier steps'
share is what tells the two apart; the one-step ``in_loop`` position cannot.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from capplan.evals.reasoning_replay.fixture import LOOP_STEPS, make_session
from capplan.evals.reasoning_replay.wire.carriers import synthetic

from .fakes.chat import ChatProvider
from .helpers import FAKE_KEY, cell, custom_run, prices_file, read_jsonl, row

ALL = ("--positions", "in_loop,cross_turn,loop_steps")


@pytest.fixture(autouse=True)
def keyed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_KEY", FAKE_KEY)


def measure(serve, harness, tmp_path: Path, provider: ChatProvider, *extra: str) -> tuple[dict, float]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    server = serve(provider)
    out = tmp_path / "out"
    done = harness(*custom_run(server.base, out, prices_file(tmp_path), "--steps", "text", *extra))
    assert done.code == 0, done.err
    assert harness("report", "--out", out).code == 0
    return row(out, "fake-model"), read_jsonl(out / "runs.jsonl")[0]["trace_tokens"]


def test_a_template_reading_the_whole_loop_consumes_every_step(serve, harness, tmp_path):
    qwen3 = ChatProvider(key=FAKE_KEY, reads=("reasoning_content",), scope="after_last_user")
    r, t = measure(serve, harness, tmp_path, qwen3, *ALL)
    assert r["verdict"] == "in-loop-only"
    loop = cell(r, "text", "loop_steps", "reasoning_content")
    single = cell(r, "text", "in_loop", "reasoning_content")
    assert loop["class"] == "consumed" and single["class"] == "consumed"
    # three traces reached the prompt: the earlier two steps' share is twice the last one's
    assert loop["delta"] == LOOP_STEPS * single["delta"] > 0.5 * LOOP_STEPS * t
    assert cell(r, "text", "loop_steps", "reasoning")["delta"] == 0  # a field the template does not read
    assert any("reads every step of the 3-step tool loop" in n for n in r["notes"])


def test_a_template_reading_only_the_last_step_is_partial_in_the_loop(serve, harness, tmp_path):
    last = ChatProvider(key=FAKE_KEY, reads=("reasoning_content",), scope="last_step")
    r, t = measure(serve, harness, tmp_path, last, *ALL)
    assert r["verdict"] == "in-loop-only"  # the one-step position cannot tell it from the whole loop
    single = cell(r, "text", "in_loop", "reasoning_content")
    loop = cell(r, "text", "loop_steps", "reasoning_content")
    assert single["class"] == "consumed"
    # the earlier steps add nothing: the loop's delta is the last step's alone
    assert loop["class"] == "partial" and loop["delta"] == single["delta"]
    assert loop["delta"] < 0.5 * LOOP_STEPS * t
    assert any("text:loop_steps:reasoning_content partial" in n and "last step only" in n for n in r["notes"])


def test_the_loop_alone_decides_in_loop_only_and_all_turns_templates_consume_it(serve, harness, tmp_path):
    r, _ = measure(serve, harness, tmp_path / "a", ChatProvider(key=FAKE_KEY, reads=("reasoning_content",),
                                                              scope="after_last_user"),
                   "--positions", "loop_steps")
    assert r["verdict"] == "in-loop-only" and {c["position"] for c in r["cells"]} == {"loop_steps"}
    r, _ = measure(serve, harness, tmp_path / "b", ChatProvider(key=FAKE_KEY), *ALL)
    assert r["verdict"] == "consumes-all-turns"
    assert cell(r, "text", "loop_steps", "all")["class"] == "consumed"


def test_the_default_run_keeps_the_methods_two_positions(serve, harness, tmp_path):
    r, _ = measure(serve, harness, tmp_path, ChatProvider(key=FAKE_KEY, reads=("reasoning_content",)))
    assert {c["position"] for c in r["cells"]} == {"in_loop", "cross_turn"}


@pytest.mark.parametrize("kind", ["chat", "responses", "gemini"])
def test_each_loop_carrier_differs_from_its_baseline_by_the_carriers_alone(kind: str) -> None:
    trace = make_session(7).trace
    variant = {"chat": "reasoning_content", "responses": "summary_item", "gemini": "thought_part"}[kind]
    base = json.dumps(synthetic(kind, "loop_steps", "none", trace, "probe?"))
    carried = json.dumps(synthetic(kind, "loop_steps", variant, trace, "probe?"))
    piece = {"chat": ', "reasoning_content": ' + json.dumps(trace),
             "responses": json.dumps({"type": "reasoning", "summary": [{"type": "summary_text", "text": trace}]}) + ", ",
             "gemini": json.dumps({"text": trace, "thought": True}) + ", "}[kind]
    assert carried.count(piece) == LOOP_STEPS
    assert carried.replace(piece, "") == base
    # three steps, each its own call, the probe in the last result only
    assert base.count("probe?") == 1 and base.count("Lyon") == 2 and base.count("Nice") == 2  # call and result

"""xAI refuses a user turn about "earlier reasoning" with a 403: the position reruns with the
neutral wording, and deltas only ever pair requests with the same wording."""

from __future__ import annotations

import pytest

from capplan.evals.reasoning_replay.analysis.signals import measure

from .fakes.chat import REFUSAL, ChatProvider
from .helpers import FAKE_KEY, cell, prices_file, read_jsonl, row


def test_refused_baseline_reruns_the_position_with_the_alt_wording(serve, harness, tmp_path, monkeypatch):
    monkeypatch.setenv("XAI_API_KEY", FAKE_KEY)
    server = serve(ChatProvider(key=FAKE_KEY, refuse="earlier reasoning", reads=("reasoning_content",)))
    out = tmp_path / "out"
    done = harness("run", "--route", "xai-chat", "--base-url", server.base, "--models", "grok-5",
                   "--out", out, "--prices", prices_file(tmp_path), "--rps", "0", "--retries", "0",
                   "--quiet")
    assert done.code == 0, done.err
    assert harness("report", "--out", out).code == 0
    calls = read_jsonl(out / "calls.jsonl")
    refused = [c for c in calls if c.get("status") == 403]
    assert refused and {c["position"] for c in refused} == {"cross_turn"}
    assert all(c["error"] == REFUSAL and c["probe"] == "std" and c["variant"] in ("none", "stripped")
               for c in refused)
    r = row(out, "grok-5")
    assert {c["probe"] for c in r["cells"] if c["position"] == "cross_turn"} == {"alt"}
    assert {c["probe"] for c in r["cells"] if c["position"] == "in_loop"} == {"std"}
    alt = {c["variant"]: c["prompt_tokens"] for c in calls
           if c.get("step") == "text" and c.get("position") == "cross_turn" and c.get("probe") == "alt"}
    assert cell(r, "text", "cross_turn", "reasoning_content")["delta"] == alt["reasoning_content"] - alt["none"]
    assert r["verdict"] == "consumes-all-turns"
    # nothing asked with the refused wording after the switch
    cross = [p.body["messages"][-1]["content"] for p in server.posts() if p.body["messages"][-1]["role"] == "user"]
    assert sum("earlier reasoning" in text for text in cross) == len(refused)


def record(variant: str, probe: str, tokens: int, status: int = 200) -> dict:
    return {"step": "text", "position": "cross_turn", "variant": variant, "probe": probe,
            "lane": "direct", "status": status, "ok": status == 200,
            "prompt_tokens": tokens if status == 200 else None, "error": "" if status == 200 else REFUSAL}


@pytest.mark.parametrize("std_baseline_status", [403, 200])
def test_deltas_never_pair_different_wordings(std_baseline_status):
    records = [record("none", "std", 100, std_baseline_status), record("reasoning_content", "std", 500),
               record("none", "alt", 130), record("reasoning_content", "alt", 131)]
    (signal,) = measure(records, "direct", "text", "cross_turn", trace_tokens=400)
    assert (signal.probe, signal.delta, signal.klass) == ("alt", 1, "ignored")

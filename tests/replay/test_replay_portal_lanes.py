"""The Portal route: catalogue filtering, portal-max, lanes, --want-direct, and key rotation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .fakes.portal import PortalProvider
from .helpers import cell, matrix, read_jsonl, row

OLD_KEY = "nous-agent-key-OLD-0123456789abcdef"
NEW_KEY = "nous-agent-key-NEW-fedcba9876543210"


@pytest.fixture
def portal(home: Path, serve):
    auth = home / ".hermes" / "auth.json"
    auth.write_text(json.dumps({"providers": {"nous": {"agent_key": OLD_KEY}}}))
    provider = PortalProvider(auth_file=auth, old_key=OLD_KEY, new_key=NEW_KEY)
    return provider, serve(provider)


def nous_run(harness, url: str, out: Path, models: str, *extra: str):
    return harness("run", "--route", "nous", "--base-url", url, "--models", models, "--out", out,
                   "--rps", "0", "--retries", "0", "--seed", "11", "--workers", "1", "--quiet", *extra)


def test_models_lists_reasoning_text_ids_and_says_why_others_are_skipped(portal, harness):
    provider, server = portal
    listed = harness("models", "--route", "nous", "--base-url", server.base, "--json")
    assert listed.code == 0, listed.err
    data = json.loads(listed.out)
    assert data["test"] == ["qwen/qwen3.8-plus", "z-ai/glm-5.3", "x-ai/grok-4.7"]  # cheapest first
    assert dict(data["skip"]) == {
        "~x-ai/grok-latest": "alias of a listed id",
        "z-ai/glm-5.3:batch": "batch twin of a listed id",
        "google/imagen-5": "output is not text only",
        "meta/llama-5-instruct": "no reasoning parameter (not a reasoning model)",
    }
    # the old key got a 401, auth.json was re-read once and the rotated key used
    assert provider.rotations == 1
    text = harness("models", "--route", "nous", "--base-url", server.base)
    assert "# --models qwen/qwen3.8-plus,z-ai/glm-5.3,x-ai/grok-4.7" in text.out
    assert "out $15.00/M" in text.out


def test_portal_max_selects_by_output_price(portal, harness, tmp_path):
    provider, server = portal
    out = tmp_path / "out"
    done = nous_run(harness, server.base, out, "portal-max:2.5", "--steps", "text",
                    "--positions", "in_loop", "--variants", "reasoning_content")
    assert done.code == 0, done.err
    started = read_jsonl(out / "runs.jsonl")[0]
    assert started["models"] == ["qwen/qwen3.8-plus", "z-ai/glm-5.3"]


def test_want_direct_resamples_until_direct_and_keys_results_by_lane(portal, harness, tmp_path):
    provider, server = portal
    provider.schedule = {"x-ai/grok-4.7": ["openrouter", "openrouter", "direct"],
                         "z-ai/glm-5.3": ["openrouter"]}
    out = tmp_path / "out"
    done = nous_run(harness, server.base, out, "x-ai/grok-4.7,z-ai/glm-5.3",
                    "--want-direct", "x-ai/grok-4.7,z-ai/glm-5.3", "--lane-attempts", "4")
    assert done.code == 0, done.err
    assert harness("report", "--out", out).code == 0
    # the direct upstream renders reasoning_content only after the last user message
    direct = row(out, "x-ai/grok-4.7", "direct", route="nous")
    assert direct["verdict"] == "in-loop-only" and "chatcmpl-" in direct["id_prefixes"]
    assert cell(direct, "text", "in_loop", "reasoning_content")["class"] == "consumed"
    assert cell(direct, "text", "cross_turn", "reasoning_content")["delta"] == 0
    # the OpenRouter lane of the same id behaves differently and is its own row
    gen = row(out, "x-ai/grok-4.7", "openrouter", route="nous")
    assert gen["verdict"] == "consumes-all-turns" and gen["id_prefixes"] == ["gen-"]
    # glm never left OpenRouter: its direct cell is not a pass, whatever OpenRouter did
    never = row(out, "z-ai/glm-5.3", "direct", route="nous")
    assert never["verdict"] == "direct-lane-not-reached" and never["cells"] == []
    assert row(out, "z-ai/glm-5.3", "openrouter")["verdict"] == "consumes-all-turns"
    glm_text = [c for c in read_jsonl(out / "calls.jsonl") if c["model"] == "z-ai/glm-5.3" and c["step"] == "text"]
    assert max(c["attempt"] for c in glm_text) == 3  # four samples per request, then give up
    # OpenRouter reports usage.cost; the direct lane is priced from the Portal list
    sources = {(c["model"], c["source"]) for c in read_jsonl(out / "cost.jsonl") if c["status"] == 200}
    assert ("x-ai/grok-4.7", "provider") in sources and ("x-ai/grok-4.7", "price-list") in sources


def test_lane_switches_get_a_same_lane_baseline(portal, harness, tmp_path):
    provider, server = portal
    provider.schedule = {"qwen/qwen3.8-plus": ["openrouter", "direct"]}
    out = tmp_path / "out"
    assert nous_run(harness, server.base, out, "qwen/qwen3.8-plus", "--steps", "text",
                    "--positions", "in_loop").code == 0
    harness("report", "--out", out)
    lanes = {r["lane"]: r for r in matrix(out)}
    assert set(lanes) == {"openrouter", "direct"}
    for lane, r in lanes.items():
        assert r["cells"] and all(c["delta"] is not None for c in r["cells"]), (lane, r["cells"])
    # alternating lanes (the settings probe took the first slot): each carrier is judged
    # by the template of the lane it landed on
    assert cell(lanes["direct"], "text", "in_loop", "reasoning")["delta"] == 0
    assert cell(lanes["direct"], "text", "in_loop", "all")["class"] == "consumed"
    assert cell(lanes["openrouter"], "text", "in_loop", "reasoning_content")["delta"] == 0
    assert cell(lanes["openrouter"], "text", "in_loop", "reasoning_details")["class"] == "consumed"
    backfilled = [c for c in read_jsonl(out / "calls.jsonl") if c.get("variant") == "none" and c["attempt"] >= 100]
    assert backfilled and backfilled[-1]["lane"] == "openrouter"


def test_access_token_is_the_fallback_key(home, serve, harness):
    auth = home / ".hermes" / "auth.json"
    auth.write_text(json.dumps({"providers": {"nous": {"access_token": NEW_KEY}}}))
    server = serve(PortalProvider(auth_file=auth, old_key=OLD_KEY, new_key=NEW_KEY))
    assert harness("models", "--route", "nous", "--base-url", server.base, "--json").code == 0


def test_a_401_rereads_auth_json_once_after_waiting_for_an_unchanged_key(home, serve, harness, tmp_path, monkeypatch):
    from capplan.evals.reasoning_replay.provider import credentials

    from .fakes.chat import ChatProvider

    (home / ".hermes" / "auth.json").write_text(json.dumps({"providers": {"nous": {"agent_key": OLD_KEY}}}))
    server = serve(ChatProvider(key=NEW_KEY))  # never accepts the key in the file
    waits: list[float] = []
    monkeypatch.setattr(credentials, "REFRESH_WAIT_SECONDS", 15.0)
    monkeypatch.setattr(credentials.time, "sleep", waits.append)
    out = tmp_path / "out"
    (tmp_path / "p.json").write_text('{"x-ai/grok-4.7": [3, 15]}')
    done = nous_run(harness, server.base, out, "x-ai/grok-4.7", "--steps", "text", "--prices",
                    str(tmp_path / "p.json"))
    assert done.code == 1  # a 401 is worth retrying later, so the cells stay open
    assert len(server.posts()) == 2 and waits == [15.0]  # one request, one re-read after 15 s
    states = read_jsonl(out / "cells.jsonl")
    assert states and all(s["state"] == "baseline-failed" and not s["final"] for s in states)
    assert "HTTP 401" in states[0]["reason"]


def test_nous_without_a_key_names_capplans_key_variable(harness):
    # no NOUS_API_KEY and no Hermes login: the message speaks of the route's key variable, as capplan's others do
    done = harness("models", "--route", "nous")
    assert done.code == 2
    assert done.err.strip() == ("error: NOUS_API_KEY is not set (or empty); the nous route reads its API key from it: "
                                "export NOUS_API_KEY=<key>, or pass --key-env VAR to read another variable")
    assert "hermes" not in done.err and "Portal" not in done.err


def test_nous_reads_NOUS_API_KEY_before_a_hermes_login(home, serve, harness, monkeypatch):
    auth = home / ".hermes" / "auth.json"
    provider = PortalProvider(auth_file=auth, old_key=OLD_KEY, new_key=NEW_KEY)
    server = serve(provider)
    monkeypatch.setenv("NOUS_API_KEY", NEW_KEY)  # no auth.json at all
    listed = harness("models", "--route", "nous", "--base-url", server.base, "--json")
    assert listed.code == 0, listed.err
    assert json.loads(listed.out)["test"] == ["qwen/qwen3.8-plus", "z-ai/glm-5.3", "x-ai/grok-4.7"]
    assert provider.rotations == 0 and not auth.exists()
    assert [r.headers.get("authorization") for r in server.requests] == [f"Bearer {NEW_KEY}"] * len(server.requests)

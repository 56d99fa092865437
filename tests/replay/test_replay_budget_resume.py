"""The budget of an output folder (shared by every run in it) and resuming finished work."""

from __future__ import annotations

import json

from .fakes.chat import ChatProvider
from .helpers import FAKE_KEY, custom_run, prices_file, read_jsonl, row

# USD per 1M tokens, so that one worst-case reservation is about $1.5-2 and a real call ~$0.25
EXPENSIVE = {"fake-model": [1000.0, 2000.0]}


def spent(out) -> float:
    return sum(c["usd"] for c in read_jsonl(out / "cost.jsonl"))


def test_budget_stops_before_a_call_that_could_exceed_it_and_a_rerun_resumes(serve, harness, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", FAKE_KEY)
    server = serve(ChatProvider(key=FAKE_KEY))
    out, prices = tmp_path / "out", prices_file(tmp_path, EXPENSIVE)
    first = harness(*custom_run(server.base, out, prices, "--budget", "3", "--workers", "1"))
    assert first.code == 1
    assert "budget reached" in first.err and "rerun" in first.out
    assert 0 < spent(out) <= 3
    sent = len(server.posts())
    assert sent == len(read_jsonl(out / "cost.jsonl")) == len([c for c in read_jsonl(out / "calls.jsonl")
                                                                if c.get("step") != "meta"])
    states = {s["cell"]: s for s in read_jsonl(out / "cells.jsonl")}
    assert {s["state"] for s in states.values()} >= {"budget-exhausted"}
    assert not any(s["final"] for s in states.values() if s["state"] == "budget-exhausted")
    # the report shows what exists, marked incomplete, never a verdict from missing cells
    assert harness("report", "--out", out).code == 0
    assert not row(out, "fake-model")["complete"]

    # a cap the folder has already spent: earlier runs count, so nothing is sent
    again = harness(*custom_run(server.base, out, prices, "--budget", f"{spent(out):.6f}"))
    assert again.code == 1 and len(server.posts()) == sent
    assert "budget reached" in again.err

    before = (out / "calls.jsonl").read_text()
    finished = {k for k, s in states.items() if s["final"]}
    resumed = harness(*custom_run(server.base, out, prices, "--budget", "100"))
    assert resumed.code == 0, resumed.err
    assert (out / "calls.jsonl").read_text().startswith(before)  # earlier records untouched
    new = read_jsonl(out / "calls.jsonl")[before.count("\n"):]
    assert not {c.get("cell") for c in new} & finished  # finished cells were not measured again
    assert not [c for c in new if c["step"] in ("params", "meta")]  # settings found once per folder
    harness("report", "--out", out)
    r = row(out, "fake-model")
    assert r["complete"] and r["verdict"] == "consumes-all-turns"
    assert spent(out) <= 100


def test_rerun_of_a_finished_folder_sends_nothing(serve, harness, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", FAKE_KEY)
    server = serve(ChatProvider(key=FAKE_KEY))
    out, prices = tmp_path / "out", prices_file(tmp_path)
    assert harness(*custom_run(server.base, out, prices)).code == 0
    sent = len(server.posts())
    again = harness(*custom_run(server.base, out, prices))
    assert again.code == 0 and len(server.posts()) == sent
    assert "3/3 cells finished" in again.out


def test_rerun_keeps_the_folders_seed_and_refuses_another(serve, harness, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", FAKE_KEY)
    server = serve(ChatProvider(key=FAKE_KEY))
    out, prices = tmp_path / "out", prices_file(tmp_path)
    assert harness(*custom_run(server.base, out, prices, "--steps", "text")).code == 0
    args = custom_run(server.base, out, prices, "--steps", "text")
    args[args.index("--seed") + 1] = "8"
    refused = harness(*args)
    assert refused.code == 2 and "started with --seed 7" in refused.err


def test_progress_reports_cells_and_spend(serve, harness, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", FAKE_KEY)
    server = serve(ChatProvider(key=FAKE_KEY))
    out = tmp_path / "out"
    args = [a for a in custom_run(server.base, out, prices_file(tmp_path)) if a != "--quiet"]
    done = harness(*args)
    assert done.code == 0
    lines = [line for line in done.err.splitlines() if line.startswith("[")]
    assert len(lines) == 3 and lines[-1].startswith("[  3/3] $")
    assert "/$10.00" in lines[-1]
    assert json.loads((out / "runs.jsonl").read_text().splitlines()[-1])["event"] == "end"

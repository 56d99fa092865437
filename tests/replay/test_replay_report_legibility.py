"""The report reads on its own: legends that fit, a key for every colour, lanes only where they exist,
why a cell was not measured, and no fake spend on one's own loopback server."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from capplan.evals.reasoning_replay.analysis import heatmap

from .fakes.chat import ChatProvider
from .helpers import FAKE_KEY, custom_run, prices_file, read_jsonl, row

SVG = "{http://www.w3.org/2000/svg}"


def _svg(table):
    return ET.fromstring(heatmap.render(table, "t"))


def _unmeasured_row():
    return {"route": "custom", "model": "m", "lane": "-", "lanes": False, "verdict": "baseline-failed",
            "complete": True, "cells": [], "notes": []}


def test_the_width_covers_the_legend_even_with_nothing_measured():
    root = _svg([_unmeasured_row()])
    width = int(root.get("width"))
    texts = [t for t in root.iter(f"{SVG}text")]
    footnote = next(t for t in texts if (t.text or "").startswith("numbers:"))
    assert width >= int(footnote.get("x")) + len(footnote.text) * heatmap.CHAR_W
    for rect in root.iter(f"{SVG}rect"):
        assert int(rect.get("x")) + int(float(rect.get("width"))) <= width


def test_every_verdict_has_a_legend_entry_and_baseline_failed_is_not_the_error_colour():
    root = _svg([_unmeasured_row()])
    texts = {t.text for t in root.iter(f"{SVG}text")}
    assert set(heatmap.VERDICT_COLOURS) <= texts
    assert "not measured" in texts  # the key for a blank cell
    assert heatmap.VERDICT_COLOURS["baseline-failed"] != heatmap.CLASS_COLOURS["error"]
    assert len(set(heatmap.VERDICT_COLOURS.values())) == len(heatmap.VERDICT_COLOURS)


def test_a_custom_endpoint_has_no_lane_and_unmeasured_cells_say_why(serve, harness, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", FAKE_KEY)
    out = tmp_path / "out"
    # turn 1 answers with a tool call but no reasoning carrier: the opaque cells cannot be measured
    server = serve(ChatProvider(key=FAKE_KEY, reads=("reasoning_content",), turn1_fields=()))
    prices = prices_file(tmp_path)
    assert harness(*custom_run(server.base, out, prices)).code == 0
    done = harness("report", "--out", out)
    assert done.code == 0
    line = next(x for x in (out / "matrix.md").read_text().splitlines() if x.startswith("| custom"))
    assert "| - (one endpoint) |" in line and "chatcmpl" not in line
    assert "opaque:all not measured: turn 1 returned no tool call with a reasoning carrier" in line
    assert row(out, "fake-model")["lanes"] is False
    svg = (out / "heatmap.svg").read_text()
    assert "custom · fake-model · direct" not in svg and "custom · fake-model" in svg
    assert 'stroke-dasharray="3,2"' in svg  # the blank opaque cells, drawn as the legend shows them


def test_a_dummy_key_on_a_loopback_custom_route_costs_nothing(serve, harness, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", FAKE_KEY)
    out = tmp_path / "out"
    server = serve(ChatProvider(key=FAKE_KEY, reads=("reasoning_content",)))
    argv = custom_run(server.base, out, prices_file(tmp_path))
    cut = argv.index("--prices")
    assert harness(*argv[:cut], *argv[cut + 2:]).code == 0  # no --prices: a llama.cpp-style local run
    costs = read_jsonl(out / "cost.jsonl")
    assert costs and {c["source"] for c in costs} <= {"local-server", "provider"}
    assert sum(c["usd"] for c in costs) == 0

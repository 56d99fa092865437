"""report: matrix.md / matrix.json, the SVG heatmap and the capplan overlay snippet."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from ruamel.yaml import YAML

from .fakes.chat import ChatProvider
from .helpers import FAKE_KEY, custom_run, prices_file
from tests.cli_runner import invoke

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def measured(serve, harness, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", FAKE_KEY)
    out = tmp_path / "out"
    qwen3 = serve(ChatProvider(key=FAKE_KEY, reads=("reasoning_content",), scope="after_last_user",
                               rejects={"reasoning_details": "Extra inputs are not permitted"}))
    ignoring = serve(ChatProvider(key=FAKE_KEY, reads=()))
    prices = prices_file(tmp_path, {"qwen3-template": [1, 2], "ignores-all": [1, 2]})
    assert harness(*custom_run(qwen3.base, out, prices, model="qwen3-template")).code == 0
    assert harness(*custom_run(ignoring.base, out, prices, model="ignores-all")).code == 0
    return out


def test_matrix_files_and_printed_table(measured, harness):
    done = harness("report", "--out", measured)
    assert done.code == 0
    markdown = (measured / "matrix.md").read_text()
    assert done.out.strip() == markdown.strip()
    lines = {line.split(" | ")[1]: line for line in markdown.splitlines() if line.startswith("| custom")}
    assert "| in-loop-only |" in lines["qwen3-template"] and "rd=400" in lines["qwen3-template"]
    assert "| accepted-ignored |" in lines["ignores-all"]
    data = json.loads((measured / "matrix.json").read_text())
    assert {r["model"]: r["verdict"] for r in data["rows"]} == {"qwen3-template": "in-loop-only",
                                                              "ignores-all": "accepted-ignored"}
    assert data["seed"] == 7 and data["runs"] == 2 and data["spent"] > 0


def test_heatmap_is_an_svg_with_one_coloured_cell_per_measurement(measured, harness):
    assert harness("report", "--out", measured).code == 0
    root = ET.parse(measured / "heatmap.svg").getroot()
    assert root.tag == f"{SVG}svg"
    rects = root.findall(f"{SVG}rect")
    tips = [r.find(f"{SVG}title").text for r in rects if r.find(f"{SVG}title") is not None
            and not r.find(f"{SVG}title").text.endswith(": not measured")]
    rows = json.loads((measured / "matrix.json").read_text())["rows"]
    assert len(tips) == sum(len(r["cells"]) for r in rows)
    fills = {r.get("fill") for r in rects}
    assert {"#1a9850", "#d9d9d9", "#d73027"} <= fills  # consumed, ignored, rejected
    texts = " ".join(t.text or "" for t in root.iter(f"{SVG}text"))
    assert "in-loop-only" in texts and "accepted-ignored" in texts


def test_overlay_snippet_is_yaml_with_dated_evidence(measured, harness, tmp_path):
    target = tmp_path / "evidence.yaml"
    assert harness("report", "--out", measured, "--overlay", target).code == 0
    data = YAML(typ="safe").load(target.read_text())
    entry = data["reasoning_replay"]["custom"]["ignores-all"]["direct"]
    assert entry["verdict"] == "accepted-ignored" and entry["complete"] is True
    assert entry["carriers"]["reasoning_details"] == {"in_loop": "ignored +0", "cross_turn": "ignored +0"}
    assert entry["evidence"].startswith(entry["measured"] + ", custom route, direct lane, ignores-all")
    assert "reasoning_details accepted and ignored in-loop (+0) and accepted and ignored cross-turn (+0)" in entry["evidence"]
    qwen = data["reasoning_replay"]["custom"]["qwen3-template"]["direct"]
    assert qwen["carriers"]["reasoning_details"]["in_loop"] == "rejected 400"
    assert "reasoning_content consumed in-loop" in qwen["evidence"]
    # the default location is inside the folder
    assert harness("report", "--out", measured, "--overlay").code == 0
    assert (measured / "overlay_snippet.yaml").exists()


def test_overlay_snippet_lints_clean_as_a_capplan_overlay(measured, harness, tmp_path):
    target = tmp_path / "evidence.yaml"
    assert harness("report", "--out", measured, "--overlay", target).code == 0
    result = invoke("lint", "--kind", "overlay", str(target))
    assert result.exit_code == 0, result.output

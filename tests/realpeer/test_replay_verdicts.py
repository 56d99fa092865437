"""The replay eval against real chat templates served by llama.cpp: the verdicts the presets rest on.

Each template model is served by its own llama-server; ``capplan replay run`` measures it (step 1
synthetic carriers, step 2 with the turn-1 tool call forced by ``--turn1-tool-choice required``),
and the verdict must be the one the bundled preset for that family cites. The canary cannot be
recalled by random weights; the prompt-token deltas are the template's doing alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from capplan.evals.reasoning_replay.commands.cli import main as harness
from tests.realpeer.peer import LlamaServer
from tests.replay.helpers import matrix

pytestmark = pytest.mark.realpeer

#: template model -> (verdict, what reasoning_content gets in loop, across turns)
EXPECTED: dict[str, tuple[str, str, str]] = {
    "qwen3": ("in-loop-only", "consumed", "ignored"),
    "glm-4.6": ("in-loop-only", "consumed", "ignored"),
    "kimi-k2-thinking": ("in-loop-only", "consumed", "ignored"),
    "glm-4.7-flash": ("consumes-all-turns", "consumed", "consumed"),
    "seed-oss": ("consumes-all-turns", "consumed", "consumed"),
    "deepseek-v4": ("consumes-all-turns", "consumed", "consumed"),
    "deepseek-r1-distill": ("accepted-ignored", "ignored", "ignored"),
    "kimi-k2": ("accepted-ignored", "ignored", "ignored"),
}


def measure(model: str, out: Path, *extra: str) -> dict[str, Any]:
    with LlamaServer(model) as server:
        code = harness(["run", "--route", "custom", "--kind", "chat", "--base-url", server.base,
                        "--models", model, "--out", str(out), "--workers", "1", "--rps", "0",
                        "--max-tokens", "4", "--turn1-max-tokens", "48", "--retries", "0", *extra])
    assert code == 0, f"harness run exited {code}"
    assert harness(["report", "--out", str(out), "--overlay", "--overlay-route", "llamacpp", "--no-heatmap"]) == 0
    (row,) = [r for r in matrix(out) if r["model"] == model]
    return row


def cells(row: dict[str, Any], variant: str) -> dict[str, str]:
    return {c["position"]: c["class"] for c in row["cells"] if c["step"] == "text" and c["variant"] == variant}


@pytest.mark.parametrize("model", sorted(EXPECTED))
def test_each_template_gets_the_verdict_its_preset_cites(model: str, tmp_path: Path) -> None:
    verdict, in_loop, cross_turn = EXPECTED[model]
    row = measure(model, tmp_path / "out", "--steps", "text")
    assert row["verdict"] == verdict, row
    assert cells(row, "reasoning_content") == {"in_loop": in_loop, "cross_turn": cross_turn}, row["cells"]
    # llama.cpp reads reasoning_content only: the other shapes are dropped silently with a 200
    for variant in ("reasoning", "reasoning_details"):
        got = {c["status"] for c in row["cells"] if c["step"] == "text" and c["variant"] == variant}
        assert got == {200} and set(cells(row, variant).values()) == {"ignored"}, row["cells"]
    assert row["fingerprint"], "llama-server reports a system_fingerprint"
    snippet = (tmp_path / "out" / "overlay_snippet.yaml").read_text(encoding="utf-8")
    assert f'"llamacpp":\n    "{model}":' in snippet and f'verdict: "{verdict}"' in snippet


def test_turn_1_forced_by_tool_choice_returns_the_tool_call(tmp_path: Path) -> None:
    # unforced, the model answers in text (here: nothing) and step 2 has nothing to continue from
    row = measure("qwen3", tmp_path / "auto", "--steps", "opaque", "--positions", "in_loop")
    assert row["verdict"] == "not-measured" and row["turn1"]["has_tool_call"] is False, row
    assert "--turn1-tool-choice required" in row["notes"][0]
    forced = measure("qwen3", tmp_path / "forced", "--steps", "opaque", "--positions", "in_loop",
                     "--turn1-tool-choice", "required")
    assert forced["tool_choice"] == "required" and forced["turn1"]["has_tool_call"] is True, forced
    assert forced["turn1"]["status"] == 200

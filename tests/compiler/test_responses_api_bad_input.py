"""A hostile ``responses_api`` block in an overlay: a located error, exit 2, no traceback, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from capplan.core.input_limits import MAX_CONFIG_BYTES, MAX_NESTING
from tests.cli_runner import invoke

PLANTED = "sk-proj-PLANTEDcanary0123456789abcdefABCDEF"

GOOD = """\
providers:
  openai:
    responses_api:
      routes: [openai]
      reasoning_codec: openai_responses
      encrypted_reasoning: true
      evidence: "2025-05-11 https://cookbook.openai.com/examples/responses_api/reasoning_items"
"""

CASES = {
    "wrong_type": GOOD.replace("routes: [openai]", "routes: openai"),
    "unknown_route": GOOD.replace("routes: [openai]", "routes: [openrouter]"),
    "wrong_field_type": GOOD.replace("encrypted_reasoning: true", "encrypted_reasoning: [yes]"),
    "unknown_codec": GOOD.replace("reasoning_codec: openai_responses", "reasoning_codec: openai_respones"),
    "blank_evidence": GOOD.replace('evidence: "2025', 'evidence: " "\n      x_: "2025'),
    "huge_evidence": GOOD.replace('evidence: "2025', 'evidence: "' + "x" * 5000),
    "truncated": GOOD[: GOOD.index("encrypted_reasoning") + 12],
    "deep": GOOD.replace("reasoning_codec: openai_responses",
                         "reasoning_codec: " + "[" * (MAX_NESTING + 5) + "]" * (MAX_NESTING + 5)),
    "planted_key": GOOD.replace("encrypted_reasoning: true", f"encrypted_reasoning: true\n      {PLANTED}: 1"),
    "huge": GOOD + "# " + "x" * (MAX_CONFIG_BYTES + 10) + "\n",
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_hostile_responses_api_block_is_a_located_error(tmp_path: Path, case: str) -> None:
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(CASES[case], encoding="utf-8")
    out = tmp_path / "plans"
    before = sorted(tmp_path.rglob("*"))
    result = invoke("compile", "--model", "gpt-5", "--presets-file", overlay, "--out", out)
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    assert f"{overlay}:" in result.stderr and "error[" in result.stderr
    if case == "unknown_codec":
        assert "hint: did you mean 'openai_responses'?" in result.stderr
    assert PLANTED not in result.output  # a key that looks like a credential is never echoed
    assert sorted(tmp_path.rglob("*")) == before  # nothing written


def test_the_good_block_compiles_onto_the_responses_route(tmp_path: Path) -> None:
    # the cases above break a block that is otherwise accepted
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(GOOD, encoding="utf-8")
    result = invoke("compile", "--model", "gpt-5", "--presets-file", overlay, "--out", tmp_path / "plans")
    assert result.exit_code == 0, result.output
    plan = json.loads((tmp_path / "plans" / "gpt-5.json").read_text(encoding="utf-8"))
    assert plan["wire"]["protocol"] == "openai-responses"

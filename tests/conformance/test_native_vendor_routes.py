"""DeepSeek's and Moonshot's own APIs, sent through litellm's providers for them, are held to their rules.

litellm's ``deepseek`` and ``moonshot`` providers post OpenAI chat completions, so a plan compiled
for either route runs against the chat emulator on that route, through litellm pointed at it.
"""

from __future__ import annotations

import json
from pathlib import Path

from capplan.conformance.routes import Target, target_of
from capplan.executor.plan import Plan
from tests.cli_runner import invoke

RUN_CONFIG = """\
models:
  deepseek-native:
    provider: deepseek
    name: deepseek-v4-flash
  kimi-native:
    provider: moonshot
    name: kimi-k2-thinking
"""


def compiled(tmp_path: Path) -> Path:
    (tmp_path / "run.yaml").write_text(RUN_CONFIG, encoding="utf-8")
    result = invoke("compile", "--config", str(tmp_path / "run.yaml"), "--out", str(tmp_path / "plans"))
    assert result.exit_code == 0, result.output
    return tmp_path / "plans"


def test_native_deepseek_and_moonshot_plans_are_held_to_their_vendors_rules(tmp_path: Path) -> None:
    plans = compiled(tmp_path)
    assert target_of(Plan.load(plans / "deepseek-native.json")) == Target("openai-chat", "deepseek", "deepseek-v4-flash", "litellm")
    assert target_of(Plan.load(plans / "kimi-native.json")) == Target("openai-chat", "moonshot", "kimi-k2-thinking", "litellm")
    result = invoke("conformance", str(plans), "--format", "json")
    report = json.loads(result.stdout)
    cells = {(cell["plan"], cell["rule_id"]): cell for cell in report["cells"]}
    # every step of every tool loop replays its reasoning_content on the vendor's own route
    assert cells[("deepseek-native", "deepseek.v4_reasoning_content_missing")]["status"] == "accepted"
    assert cells[("kimi-native", "moonshot.kimi_reasoning_content_missing")]["status"] == "accepted"
    assert not [cell for cell in report["cells"] if cell["status"] == "rejected"]
    # a finding the run reports, never hides: litellm's moonshot provider refuses the effort
    # parameter a thinking request of this plan carries, before anything is sent (exit 1)
    scenarios = {s["scenario"]: s for plan in report["plans"] if plan["plan"] == "kimi-native" for s in plan["scenarios"]}
    assert scenarios["thinking_on"]["status"] == "error"
    assert "moonshot does not support parameters: ['reasoning_effort']" in scenarios["thinking_on"]["detail"]
    assert result.exit_code == 1

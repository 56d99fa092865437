"""``capplan conformance`` end to end: exit codes, formats, located bad input, and broken overlays failing.

The command runs in-process (click's runner) on real plans against the shipped emulators; the
broken overlays are compiled by ``capplan compile`` itself.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import Result

from capplan.conformance.emulators import emulators
from capplan.executor.plan import Plan
from tests.cli_runner import invoke

ROOT = Path(__file__).resolve().parents[2]
PLANS = ROOT / "golden" / "plans"


def capplan(*args: str) -> Result:
    return invoke(*args)


def needs(protocol: str) -> None:
    if protocol not in emulators():
        pytest.skip(f"no {protocol} emulator in this tree yet")


def test_list_rules_json_names_every_rule_with_its_sources() -> None:
    result = capplan("conformance", "--list-rules", "--format", "json")
    assert result.exit_code == 0, result.output
    rules = json.loads(result.stdout)["rules"]
    for rule in rules:
        assert rule["sources"] and all(s["url"].startswith("http") and s["observed"] for s in rule["sources"])


def test_an_unknown_rule_id_is_located_with_a_suggestion() -> None:
    needs("openai-chat")
    result = capplan("conformance", "--rules", "openai.temperature_defualt_only", str(PLANS / "gpt-5.json"))
    assert result.exit_code == 2
    assert "--rules:1:1: error[RULE]: no conformance rule matches 'openai.temperature_defualt_only'" in result.stderr
    assert "openai.temperature_default_only" in result.stderr  # did you mean
    assert "Traceback" not in result.output


def test_a_corrupt_rules_file_is_located(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text("corpus_version: 1\nrules:\n  - id: Not An Id\n    title: x\n", encoding="utf-8")
    result = capplan("conformance", "--corpus", str(rules), "--list-rules")
    assert result.exit_code == 2
    assert f"{rules}:3:" in result.stderr and "Traceback" not in result.output


def test_a_corrupt_plan_is_located(tmp_path: Path) -> None:
    plan = tmp_path / "gpt-5.json"
    plan.write_text((PLANS / "gpt-5.json").read_text(encoding="utf-8").replace('"gpt-5"', '"gpt-6"', 1), encoding="utf-8")
    result = capplan("conformance", str(plan))
    assert result.exit_code == 2
    assert str(plan) in result.stderr and "Traceback" not in result.output


def test_a_plan_for_a_protocol_no_emulator_speaks_is_exit_2(tmp_path: Path) -> None:
    body = Plan.load(PLANS / "claude-opus-4.7.json").body()
    body["wire"] = {**body["wire"], "provider": "bedrock"}
    body["model"] = {**body["model"], "provider": "bedrock", "wire_model": "bedrock/anthropic.claude-opus-4-7"}
    plan = tmp_path / "claude-bedrock.json"
    plan.write_bytes(Plan.seal(body).to_bytes())
    result = capplan("conformance", str(plan))
    assert result.exit_code == 2
    assert f"{plan}:1:1: error[CONFORMANCE]: no emulator speaks litellm:bedrock" in result.stderr


def test_plans_that_keep_every_rule_exit_0_in_every_format() -> None:
    needs("openai-chat")
    needs("openai-responses")
    plans = [str(PLANS / "gpt-5.json"), str(PLANS / "gpt-4o.json")]
    text = capplan("conformance", *plans)
    assert text.exit_code == 0, text.output
    assert "gpt-5" in text.stdout and "0 rejected" in text.stdout
    as_json = capplan("conformance", "--format", "json", *plans)
    assert as_json.exit_code == 0
    data = json.loads(as_json.stdout)
    assert data["summary"]["rejected"] == 0 and data["summary"]["exit_code"] == 0
    cells = {(c["plan"], c["rule_id"]): c for c in data["cells"]}
    # gpt-5 is held to the Responses API's rules, gpt-4o to chat completions
    assert cells[("gpt-5", "responses.temperature_unsupported")]["status"] == "accepted"
    assert cells[("gpt-5", "responses.reasoning_without_following_item")]["status"] == "accepted"
    assert cells[("gpt-5", "openai.temperature_default_only")]["status"] == "not_applicable"
    assert {c["status"] for c in data["cells"]} <= {"accepted", "not_applicable"}
    github = capplan("conformance", "--format", "github", *plans)
    assert github.exit_code == 0 and "::error" not in github.stdout


def _compile(tmp_path: Path, overlay: str, model: str) -> Path:
    (tmp_path / "overlay.yaml").write_text(overlay, encoding="utf-8")
    out = tmp_path / "plans"
    result = capplan("compile", "--presets-file", str(tmp_path / "overlay.yaml"), "--model", model, "--out", str(out))
    assert result.exit_code == 0, result.output
    return out / f"{model}.json"


def test_temperature_0_forced_on_gpt5_fails_with_the_providers_text(tmp_path: Path) -> None:
    needs("openai-chat")
    # on chat completions (the Responses route answers with its own text, tests/conformance/test_diff_flips.py)
    chat = (ROOT / "examples" / "overlays" / "chat-completions.yaml").read_text(encoding="utf-8")
    plan = _compile(tmp_path, chat.replace("  openai:\n", "  openai:\n    params:\n      supports_sampling_params: true\n"),
                    "gpt-5")
    result = capplan("conformance", str(plan), "--rules", "openai.*")
    assert result.exit_code == 1, result.output
    assert ("gpt-5 x openai.temperature_default_only: HTTP 400 \"Unsupported value: 'temperature' does not support 0.0 "
            "with this model. Only the default (1) value is supported.\" (scenario temperature_zero, request 0)") in result.stdout
    github = capplan("conformance", str(plan), "--rules", "openai.*", "--format", "github")
    assert github.exit_code == 1
    assert f"::error file={str(plan).replace(':', '%3A')},line=1,col=1,title=capplan conformance openai.temperature_default_only::" in github.stdout


def test_claudes_codec_none_with_thinking_on_fails_with_the_providers_text(tmp_path: Path) -> None:
    needs("anthropic-messages")
    plan = _compile(tmp_path, "providers:\n  anthropic:\n    reasoning_codec: none\n", "claude-opus-4.7")
    result = capplan("conformance", str(plan), "--rules", "anthropic.thinking_at_loop_tail", "--format", "json")
    assert result.exit_code == 1, result.output
    (rejected,) = [c for c in json.loads(result.stdout)["cells"] if c["status"] == "rejected"]
    assert rejected["rule_id"] == "anthropic.thinking_at_loop_tail" and rejected["scenario"] == "tool_loop"
    assert "Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is enabled, a final " \
           "`assistant` message must start with a thinking block" in rejected["detail"]


def test_a_folder_of_plans_is_read_without_its_manifest(tmp_path: Path) -> None:
    needs("openai-chat")
    folder = tmp_path / "plans"
    folder.mkdir()
    shutil.copy(PLANS / "gpt-4o.json", folder)
    shutil.copy(PLANS / "manifest.json", folder)
    result = capplan("conformance", str(folder), "--format", "json")
    assert result.exit_code == 0, result.output
    assert [p["plan"] for p in json.loads(result.stdout)["plans"]] == ["gpt-4o"]


def test_no_plans_compiles_the_bundled_catalogue_in_memory() -> None:
    needs("openai-responses")
    result = capplan("conformance", "--rules", "responses.temperature_unsupported", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    golden = sorted(p.stem for p in PLANS.glob("*.json") if p.name != "manifest.json")
    assert sorted(p["plan"] for p in data["plans"]) == golden
    assert all(p["where"] == f"bundled:catalogue.yaml (model {p['plan']})" for p in data["plans"])
    accepted = sorted(c["plan"] for c in data["cells"] if c["status"] == "accepted")
    assert accepted == ["gpt-5", "o3"]  # the two OpenAI reasoning models; no other plan is held to the rule
